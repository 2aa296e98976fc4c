"""A vcjob without its PodGroup or pods gets what Volcano's job controller would have created."""
from __future__ import annotations

import uuid

from tests.load.conftest import WriteDump, load
from vpolicy.model import snapshot
from vpolicy.model.snapshot import PodGroupPhase

CLASSES = """\
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
"""


def job(spec: str, *, uid: str = "u1", status: str = "") -> str:
    text = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: train\n  namespace: ml\n"
    text += f"  uid: {uid}\n" if uid else ""
    text += "spec:\n" + "".join(f"  {line}\n" for line in spec.splitlines())
    return text + (f"status:\n  state: {{phase: {status}}}\n" if status else "")


TWO_TASKS = """\
queue: research
priorityClassName: high
tasks:
- name: ps
  replicas: 1
  template:
    spec:
      containers:
      - resources: {requests: {cpu: "1", memory: 1Gi}}
- name: worker
  replicas: 3
  minAvailable: 2
  template:
    metadata:
      labels: {role: worker}
    spec:
      priorityClassName: high
      containers:
      - resources: {requests: {cpu: "2"}, limits: {nvidia.com/gpu: "1"}}
"""


def test_a_missing_podgroup_is_derived_from_the_job(write_dump: WriteDump) -> None:
    cluster = load(write_dump(job(TWO_TASKS) + CLASSES))
    (group,) = cluster.podgroups
    assert (group.key, group.uid, group.queue, group.priority_class_name) == (
        "ml/train-u1", "ml/train-u1", "research", "high")
    assert (group.min_member, dict(group.min_task_member)) == (3, {"ps": 1, "worker": 2})
    assert group.phase is PodGroupPhase.PENDING
    # minResources: the first 3 pods, the higher-priority worker task first (2 of its minAvailable),
    # then ps's one.
    assert group.min_resources == {"cpu": 5000, "memory": 2**30, "nvidia.com/gpu": 2000, "pods": 3}


def test_pods_of_a_pending_podgroup_are_deferred_until_enqueue(write_dump: WriteDump) -> None:
    cluster = load(write_dump(job(TWO_TASKS) + CLASSES))
    assert cluster.pods == ()
    assert [p.key for p in cluster.deferred_pods] == [
        "ml/train-ps-0", "ml/train-worker-0", "ml/train-worker-1", "ml/train-worker-2"]


def test_pods_are_derived_once_the_podgroup_has_left_pending(write_dump: WriteDump) -> None:
    podgroup = """\
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: train-u1, namespace: ml}
spec: {minMember: 3, queue: research}
status: {phase: Inqueue}
"""
    cluster = load(write_dump(job(TWO_TASKS) + CLASSES + podgroup))
    assert [g.key for g in cluster.podgroups] == ["ml/train-u1"]
    assert cluster.deferred_pods == ()
    worker = cluster.pods[1]
    assert (worker.key, worker.uid, worker.group, worker.role, worker.status) == (
        "ml/train-worker-0", "ml/train-worker-0", "train-u1", "worker", snapshot.TaskStatus.PENDING)
    assert (worker.scheduler_name, worker.priority, worker.priority_class_name) == ("volcano", 1000, "high")
    assert worker.resreq == {"cpu": 2000, "nvidia.com/gpu": 1000, "pods": 1}
    assert worker.annotations[snapshot.GROUP_NAME_ANNOTATION] == "train-u1"
    assert worker.labels == {"role": "worker", "volcano.sh/job-name": "train", "volcano.sh/task-spec": "worker"}
    assert cluster.pods[0].priority_class_name == "high"  # ps inherits the job's class


def test_a_podgroup_owned_by_the_job_is_found_by_its_owner_reference(write_dump: WriteDump) -> None:
    podgroup = """\
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: legacy-name
  namespace: ml
  ownerReferences: [{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: train, uid: u1}]
status: {phase: Running}
"""
    cluster = load(write_dump(job(TWO_TASKS) + podgroup))
    assert [g.name for g in cluster.podgroups] == ["legacy-name"]
    assert {p.group for p in cluster.pods} == {"legacy-name"}


def test_nothing_is_derived_when_the_jobs_pods_are_in_the_dump(write_dump: WriteDump) -> None:
    pod = """\
---
apiVersion: v1
kind: Pod
metadata:
  name: train-ps-0
  namespace: ml
  annotations: {scheduling.k8s.io/group-name: train-u1}
spec: {containers: []}
status: {phase: Running}
"""
    cluster = load(write_dump(job(TWO_TASKS) + pod))
    assert [p.key for p in cluster.pods] == ["ml/train-ps-0"]
    assert cluster.deferred_pods == ()
    assert cluster.podgroups[0].phase is PodGroupPhase.INQUEUE  # its pods exist, so it was enqueued


def test_a_finished_job_gets_a_podgroup_but_no_pods(write_dump: WriteDump) -> None:
    cluster = load(write_dump(job(TWO_TASKS, status="Completed")))
    assert cluster.podgroups[0].phase is PodGroupPhase.COMPLETED
    assert (cluster.pods, cluster.deferred_pods) == ((), ())


def test_a_running_job_gets_a_running_podgroup_and_its_pods(write_dump: WriteDump) -> None:
    cluster = load(write_dump(job(TWO_TASKS, status="Running")))
    assert cluster.podgroups[0].phase is PodGroupPhase.RUNNING
    assert len(cluster.pods) == 4


def test_job_min_available_defaults_to_the_sum_of_task_min_available(write_dump: WriteDump) -> None:
    spec = """\
tasks:
- {name: a, replicas: 2, template: {spec: {containers: [{resources: {requests: {cpu: "1"}}}]}}}
- {name: b, replicas: 3, minAvailable: 1, template: {spec: {containers: [{resources: {requests: {cpu: "3"}}}]}}}
"""
    (group,) = load(write_dump(job(spec))).podgroups
    assert (group.min_member, dict(group.min_task_member)) == (3, {"a": 2, "b": 1})
    assert group.min_resources == {"cpu": 5000, "pods": 3}
    assert group.queue == "default"


def test_min_resources_fill_up_from_spare_replicas_when_min_available_asks_for_more(write_dump: WriteDump) -> None:
    spec = """\
minAvailable: 4
tasks:
- {name: a, replicas: 2, minAvailable: 1, template: {spec: {containers: [{resources: {requests: {cpu: "1"}}}]}}}
- {name: b, replicas: 3, minAvailable: 1, template: {spec: {containers: [{resources: {requests: {cpu: "3"}}}]}}}
"""
    (group,) = load(write_dump(job(spec))).podgroups
    # a: 1 + b: 1 from minAvailable, then a's spare replica, then one of b's.
    assert group.min_resources == {"cpu": 1000 * 2 + 3000 * 2, "pods": 4}


def test_a_job_without_uid_gets_a_stable_podgroup_name(write_dump: WriteDump) -> None:
    path = write_dump(job(TWO_TASKS, uid=""))
    expected = uuid.uuid5(uuid.UUID("6f1c2b1e-7a0d-4c55-9a53-3f0b1b8f5a10"), "ml/train")
    assert load(path).podgroups[0].name == f"train-{expected}"
    assert load(path).podgroups[0].name == load(path).podgroups[0].name


def test_a_template_scheduler_name_wins_over_the_jobs(write_dump: WriteDump) -> None:
    spec = """\
schedulerName: custom
tasks:
- {name: a, replicas: 1, template: {spec: {containers: []}}}
- {name: b, replicas: 1, template: {spec: {schedulerName: other, containers: []}}}
"""
    cluster = load(write_dump(job(spec, status="Running")))
    assert [p.scheduler_name for p in cluster.pods] == ["custom", "other"]

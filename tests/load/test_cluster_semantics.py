"""Kubernetes objects mean what they mean to Volcano: requests, task status, priorities, defaults."""
from __future__ import annotations

import pytest

from tests.load.conftest import WriteDump, load
from vpolicy.model import snapshot
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import TaskStatus


def pod_dump(spec: str = "containers: []", *, metadata: str = "", status: str = "") -> str:
    text = f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n{metadata}spec:\n"
    text += "".join(f"  {line}\n" for line in spec.splitlines())
    return text + (f"status:\n  {status}\n" if status else "")


@pytest.mark.parametrize("phase, node_name, deleting, expected", [
    pytest.param("Pending", "", False, TaskStatus.PENDING, id="pending-unbound"),
    pytest.param("Pending", "n1", False, TaskStatus.BOUND, id="pending-with-node-is-bound"),
    pytest.param("Running", "n1", False, TaskStatus.RUNNING, id="running"),
    pytest.param("Running", "n1", True, TaskStatus.RELEASING, id="running-being-deleted"),
    pytest.param("Pending", "n1", True, TaskStatus.RELEASING, id="bound-being-deleted"),
    pytest.param("Succeeded", "n1", True, TaskStatus.SUCCEEDED, id="succeeded-stays-succeeded"),
    pytest.param("Failed", "n1", False, TaskStatus.FAILED, id="failed"),
    pytest.param("Unknown", "n1", False, TaskStatus.UNKNOWN, id="unknown"),
    pytest.param(None, "", False, TaskStatus.PENDING, id="no-phase-is-pending"),
])
def test_task_status_follows_phase_node_and_deletion(
        write_dump: WriteDump, phase: str | None, node_name: str, deleting: bool, expected: TaskStatus) -> None:
    metadata = "  deletionTimestamp: '2024-05-01T00:00:00Z'\n" if deleting else ""
    spec = f"nodeName: {node_name}\ncontainers: []" if node_name else "containers: []"
    (pod,) = load(write_dump(pod_dump(spec, metadata=metadata, status=f"phase: {phase}" if phase else ""))).pods
    assert pod.status is expected
    assert pod.node_name == node_name


@pytest.mark.parametrize("spec, expected", [
    pytest.param("containers: []", {"pods": 1}, id="empty-pod-requests-one-pod-slot"),
    pytest.param("""\
containers:
- resources: {requests: {cpu: 500m, memory: 1Gi}}
- resources: {requests: {cpu: "1", nvidia.com/gpu: 2}}""",
                 {"cpu": 1500, "memory": 2**30, "nvidia.com/gpu": 2000, "pods": 1}, id="containers-are-summed"),
    pytest.param("""\
containers:
- resources: {limits: {cpu: "2", memory: 1Gi}, requests: {memory: 512Mi}}""",
                 {"cpu": 2000, "memory": 2**29, "pods": 1}, id="limits-stand-in-for-missing-requests"),
    pytest.param("""\
containers:
- resources: {limits: {cpu: "2"}, requests: {cpu: "0"}}""",
                 {"pods": 1}, id="an-explicit-zero-request-is-kept"),
    pytest.param("""\
initContainers:
- resources: {requests: {cpu: "4", memory: 1Gi}}
- resources: {requests: {cpu: "1", memory: 8Gi}}
containers:
- resources: {requests: {cpu: "2", memory: 2Gi}}""",
                 {"cpu": 4000, "memory": 8 * 2**30, "pods": 1}, id="init-containers-are-maxed-per-resource"),
    pytest.param("""\
initContainers:
- restartPolicy: Always
  resources: {requests: {cpu: "1"}}
- resources: {requests: {cpu: "4"}}
containers:
- resources: {requests: {cpu: "2"}}""",
                 {"cpu": 5000, "pods": 1}, id="sidecars-add-to-containers-and-later-inits"),
    pytest.param("""\
overhead: {cpu: 250m}
containers:
- resources: {requests: {cpu: "1"}}""",
                 {"cpu": 1250, "pods": 1}, id="overhead-is-added"),
    pytest.param("""\
overhead: {cpu: 250m}
initContainers:
- resources: {requests: {cpu: "4"}}
containers:
- resources: {requests: {cpu: "1"}}""",
                 {"cpu": 4000, "pods": 1}, id="overhead-goes-with-containers-before-the-init-max"),
])
def test_pod_requests_are_the_kubernetes_effective_request_plus_one_pod(
        write_dump: WriteDump, spec: str, expected: dict[str, int]) -> None:
    (pod,) = load(write_dump(pod_dump(spec))).pods
    assert pod.resreq == expected


PRIORITY_CLASSES = """\
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


@pytest.mark.parametrize("spec, annotations, expected", [
    pytest.param("priority: 7", "", 7, id="spec-priority"),
    pytest.param("priority: 7\npriorityClassName: high", "", 7, id="spec-priority-wins-over-class"),
    pytest.param("priorityClassName: high", "", 1000, id="class-value-when-admission-has-not-run"),
    pytest.param("priorityClassName: unknown", "", 1, id="unknown-class-defaults-to-one"),
    pytest.param("containers: []", "", 1, id="nil-priority-is-one"),
    pytest.param("priority: 7", "volcano.sh/task-priority: '42'", 42, id="task-priority-annotation-overrides"),
])
def test_task_priority_is_spec_priority_or_one_unless_annotated(
        write_dump: WriteDump, spec: str, annotations: str, expected: int) -> None:
    metadata = f"  annotations: {{{annotations}}}\n" if annotations else ""
    (pod,) = load(write_dump(pod_dump(spec, metadata=metadata) + PRIORITY_CLASSES)).pods
    assert pod.priority == expected


def test_a_task_priority_annotation_that_is_not_an_integer_is_ignored_with_a_warning(write_dump: WriteDump) -> None:
    cluster = load(write_dump(pod_dump("priority: 3", metadata="  annotations: {volcano.sh/task-priority: high}\n")))
    assert cluster.pods[0].priority == 3
    assert cluster.warnings == ("cluster.yaml:4:9: pod default/p: ignoring volcano.sh/task-priority='high' "
                                "(not a 32-bit integer), as Volcano does",)


def test_pod_fields_the_scheduler_reads_are_kept(write_dump: WriteDump) -> None:
    path = write_dump("""\
        apiVersion: v1
        kind: Pod
        metadata:
          name: w-0
          namespace: ml
          creationTimestamp: "2024-05-01T00:00:10Z"
          labels: {app: w}
          annotations:
            scheduling.k8s.io/group-name: pg
            volcano.sh/task-spec: worker
        spec:
          schedulerName: volcano
          preemptionPolicy: Never
          schedulingGates: [{name: wait}]
          nodeSelector: {disktype: ssd}
          tolerations:
          - {key: gpu, operator: Exists, effect: NoSchedule}
          - {operator: Exists}
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - {key: zone, operator: In, values: [a, b]}
                  matchFields:
                  - {key: metadata.name, operator: NotIn, values: [n9]}
                - matchExpressions:
                  - {key: cores, operator: Gt, values: ["8"]}
              preferredDuringSchedulingIgnoredDuringExecution:
              - weight: 20
                preference:
                  matchExpressions:
                  - {key: fast, operator: Exists}
          containers:
          - resources:
              limits: {volcano.sh/vgpu-number: 2, volcano.sh/vgpu-memory: 3000}
          - resources:
              limits: {volcano.sh/vgpu-number: 1}
        status:
          phase: Pending
          nominatedNodeName: n3
        """)
    (pod,) = load(path).pods
    assert (pod.key, pod.uid, pod.group, pod.role, pod.scheduler_name) == (
        "ml/w-0", "ml/w-0", "pg", "worker", "volcano")
    assert (pod.creation, pod.preemption_policy, pod.scheduling_gated, pod.nominated_node) == (
        1714521610.0, "Never", True, "n3")
    assert pod.node_selector == {"disktype": "ssd"}
    assert pod.tolerations == (snapshot.Toleration(key="gpu", operator="Exists", effect="NoSchedule"),
                               snapshot.Toleration(operator="Exists"))
    assert pod.required_affinity == (
        snapshot.NodeSelectorTerm((snapshot.SelectorRequirement("zone", "In", ("a", "b")),
                                   snapshot.SelectorRequirement("metadata.name", "NotIn", ("n9",), field=True))),
        snapshot.NodeSelectorTerm((snapshot.SelectorRequirement("cores", "Gt", ("8",)),)),
    )
    assert pod.preferred_affinity == (
        snapshot.PreferredTerm(20, snapshot.NodeSelectorTerm((snapshot.SelectorRequirement("fast", "Exists"),))),)
    # per container, never summed: Volcano makes one device request per container (resourcereqs)
    assert pod.vgpu_limits == ({"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 3000},
                               {"volcano.sh/vgpu-number": 1})
    assert pod.resreq["volcano.sh/vgpu-number"] == 3000


def test_pod_defaults_match_an_unadmitted_pod(write_dump: WriteDump) -> None:
    (pod,) = load(write_dump(pod_dump())).pods
    assert (pod.namespace, pod.uid, pod.scheduler_name, pod.group, pod.creation, pod.phase) == (
        "default", "default/p", "", "", 0.0, "Pending")


NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
"""


@pytest.mark.parametrize("extra, ready", [
    pytest.param("", True, id="no-conditions-counts-as-ready"),
    pytest.param("status:\n  conditions: [{type: Ready, status: 'True'}]\n", True, id="ready-true"),
    pytest.param("status:\n  conditions: [{type: Ready, status: 'False'}]\n", False, id="ready-false"),
    pytest.param("status:\n  conditions: [{type: Ready, status: Unknown}]\n", False, id="ready-unknown"),
    pytest.param("status:\n  conditions: [{type: MemoryPressure, status: 'False'}]\n", False, id="no-ready-condition"),
])
def test_node_readiness_comes_from_the_ready_condition(write_dump: WriteDump, extra: str, ready: bool) -> None:
    (node,) = load(write_dump(NODE + extra)).nodes
    assert node.ready is ready


def test_allocatable_falls_back_to_capacity(write_dump: WriteDump) -> None:
    (node,) = load(write_dump(NODE + "status:\n  capacity: {cpu: '2', pods: '10'}\n")).nodes
    assert node.allocatable == {"cpu": 2000, "pods": 10}
    assert node.capacity == node.allocatable


def test_a_node_without_resources_is_kept_with_a_warning(write_dump: WriteDump) -> None:
    cluster = load(write_dump(NODE))
    assert cluster.nodes[0].allocatable == {}
    assert cluster.warnings == ("cluster.yaml:3:18: node n1 has neither status.allocatable nor status.capacity: "
                                "no pod fits on it",)


def test_node_taints_labels_and_unschedulable_are_kept(write_dump: WriteDump) -> None:
    path = write_dump(NODE.replace("{name: n1}", "{name: n1, labels: {gpu: 'yes'}}") + """\
spec:
  unschedulable: true
  taints:
  - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
  - {key: dedicated, effect: NoExecute}
""")
    (node,) = load(path).nodes
    assert node.unschedulable and node.labels == {"gpu": "yes"}
    assert node.taints == (snapshot.Taint("nvidia.com/gpu", "present", "NoSchedule"),
                           snapshot.Taint("dedicated", "", "NoExecute"))


@pytest.mark.parametrize("spec, status, expected", [
    pytest.param("{}", "", (1, "default", None, snapshot.PodGroupPhase.PENDING), id="defaults"),
    pytest.param("{minMember: 0}", "", (0, "default", None, snapshot.PodGroupPhase.PENDING), id="explicit-zero"),
    pytest.param("{minMember: 3, queue: q, minResources: {cpu: '2'}}", "{phase: Inqueue}",
                 (3, "q", {"cpu": 2000}, snapshot.PodGroupPhase.INQUEUE), id="set"),
    pytest.param("{minResources: {}}", "{phase: ''}", (1, "default", {}, snapshot.PodGroupPhase.PENDING),
                 id="empty-min-resources-is-not-absent"),
])
def test_podgroup_fields_and_defaults(write_dump: WriteDump, spec: str, status: str,
                                      expected: tuple[object, ...]) -> None:
    text = f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {{name: pg}}\nspec: {spec}\n"
    (group,) = load(write_dump(text + (f"status: {status}\n" if status else ""))).podgroups
    assert (group.min_member, group.queue, group.min_resources, group.phase) == expected


def test_podgroup_min_task_member_conditions_and_class_are_kept(write_dump: WriteDump) -> None:
    path = write_dump("""\
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata: {name: pg, namespace: ml, uid: u1, creationTimestamp: "1970-01-01T00:01:00Z"}
        spec: {minTaskMember: {ps: 1, worker: 2}, priorityClassName: high}
        status:
          conditions:
          - {type: Unschedulable, status: "True", reason: NotEnoughResources, message: 1/2 tasks}
        """)
    (group,) = load(path).podgroups
    assert (group.key, group.uid, group.creation, group.priority_class_name) == ("ml/pg", "u1", 60.0, "high")
    assert group.min_task_member == {"ps": 1, "worker": 2}
    assert group.conditions == (snapshot.Condition("Unschedulable", "True", "NotEnoughResources", "1/2 tasks"),)


def test_queue_fields_and_webhook_defaults(write_dump: WriteDump) -> None:
    path = write_dump("""\
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: a}
        spec: {weight: 0}
        ---
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: b, annotations: {volcano.sh/hierarchy: root/b}}
        spec:
          weight: 3
          parent: root
          priority: 2
          reclaimable: false
          capability: {cpu: "8"}
          deserved: {cpu: "4"}
          guarantee: {resource: {cpu: "1"}}
        status: {state: Closed}
        """)
    a, b = load(path).queues[:2]
    assert (a.weight, a.reclaimable, a.capability, a.deserved, a.guarantee, a.state) == (
        1, True, None, None, Resources(), snapshot.QueueState.OPEN)
    assert (b.weight, b.parent, b.priority, b.reclaimable, b.state) == (3, "root", 2, False, snapshot.QueueState.CLOSED)
    assert (b.capability, b.deserved, b.guarantee) == (
        Resources({"cpu": 8000}), Resources({"cpu": 4000}), Resources({"cpu": 1000}))
    assert b.annotations == {"volcano.sh/hierarchy": "root/b"}


def test_priority_classes_keep_value_and_global_default(write_dump: WriteDump) -> None:
    path = write_dump("""\
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: normal}
        value: 100
        globalDefault: true
        """)
    cluster = load(path)
    assert cluster.priority_classes == (snapshot.PriorityClass("normal", 100, global_default=True),)
    assert cluster.job_priority(snapshot.PodGroup(namespace="d", name="g", uid="u")) == 100

"""Volcano Jobs (`batch.volcano.sh`): what Volcano's job controller would have created for them.

A dump may hold a vcjob without its PodGroup or its pods (hand-written inputs, or a dump taken before
the controller ran). `derive` fills the gap the way the job controller does (reference §14):

- PodGroup: named `<job>-<job uid>`; an existing one is found by that name or by an ownerReference to
  the job. A derived one has minMember = spec.minAvailable (default: the sum of the tasks'
  minAvailable, each defaulting to its replicas, as the job webhook sets them), minTaskMember per task,
  the job's queue (default `default`) and priorityClassName, and minResources = the requests of the
  first minAvailable pods, tasks of higher priority class first (`CalcPGMinResources` /
  `CalcFirstCountResources`). Its phase is Running/Completed when the job status says so, Inqueue
  when the job's pods are in the dump, else Pending.
- Pods: only when none of the job's pods is in the dump (matched by group annotation or the
  `volcano.sh/job-name` label/annotation) and the job is not finishing or finished. They are named
  `<job>-<task>-<index>`, carry the group and task annotations, the job's schedulerName unless the
  template sets one (default `volcano`), and the template's requests. **Volcano creates them only
  after the PodGroup leaves Pending**, so for a Pending PodGroup they are returned as *deferred*: the
  snapshot keeps them apart from its pods, and the engine's enqueue decides.
- Identities: a job without metadata.uid gets a UUID derived from `<namespace>/<name>` (so the
  PodGroup name looks like a real one and is stable); derived objects get uid `<namespace>/<name>`.

Reading objects is `vpolicy.load.kinds`'s job; assembling the snapshot is `vpolicy.load.cluster`'s.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

from vpolicy.load import kinds, topology
from vpolicy.load.fields import View
from vpolicy.model import resources, snapshot
from vpolicy.model.hypernodes import NetworkTopology, SubGroupPolicy
from vpolicy.model.numa import POD_POLICY_ANNOTATION
from vpolicy.model.resources import Resources
from vpolicy.source import Span

JOB_NAME_KEY = "volcano.sh/job-name"
DEFAULT_JOB_SCHEDULER = "volcano"
# Any fixed namespace makes uuid5 deterministic; this one only has to stay the same across releases.
_UID_NAMESPACE = uuid.UUID("6f1c2b1e-7a0d-4c55-9a53-3f0b1b8f5a10")
# The most pods one vcjob may ask for (a task's replicas, and all its tasks' together). Kubernetes
# supports at most 150,000 pods in a whole cluster (its documented scalability limits), so no real dump
# holds a larger job; a larger number is a typo (`replicas: 1000000000`), and deriving its pods one by
# one would run for hours.
PARTITION_ID = "volcano.sh/partition-id"  # the pod label the job controller writes for partitionPolicy
MAX_JOB_PODS = 100_000
MAX_PODS_HELP = f"a job has at most {MAX_JOB_PODS} pods; Kubernetes supports 150000 in a whole cluster"
# Job phases in which the controller kills pods rather than creating them.
_NO_NEW_PODS = frozenset({"Completing", "Completed", "Terminating", "Terminated", "Aborting", "Aborted", "Failed"})


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    replicas: int
    min_available: int  # after the webhook's default (= replicas)
    spec: kinds.PodSpec
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    origin: Span
    # spec.tasks[].partitionPolicy, as the job controller turns it into the PodGroup's subGroupPolicy:
    # pods of the task in groups of partitionSize (label volcano.sh/partition-id = index // size)
    partition: SubGroupPolicy | None = None


@dataclass(frozen=True, slots=True)
class Job:
    meta: kinds.Meta
    min_available: int  # after the webhook's default (= sum of task min_available)
    queue: str
    priority_class_name: str
    scheduler_name: str
    phase: str
    tasks: tuple[Task, ...]
    network_topology: NetworkTopology | None = None  # spec.networkTopology, copied to the PodGroup

    @property
    def podgroup_name(self) -> str:
        return f"{self.meta.name}-{self.meta.uid}"


@dataclass(frozen=True, slots=True)
class Derived:
    podgroups: tuple[snapshot.PodGroup, ...] = ()
    pods: tuple[snapshot.Pod, ...] = ()
    deferred_pods: tuple[snapshot.Pod, ...] = ()


def read_job(obj: View) -> Job | None:
    meta = kinds.read_meta(obj, namespaced=True)
    spec = obj.mapping("spec", required=True)
    status = obj.mapping("status")
    state = status.mapping("state") if status else None
    phase = state.text("phase") if state else ""
    if spec is None or meta is None:
        return None
    if not obj.node["metadata"].get("uid"):
        meta = replace(meta, uid=str(uuid.uuid5(_UID_NAMESPACE, f"{meta.namespace}/{meta.name}")))
    tasks = _read_tasks(spec)
    total_min = sum(t.min_available for t in tasks)
    min_available = spec.integer("minAvailable", default=total_min, minimum=0)
    replicas = sum(t.replicas for t in tasks)
    if replicas > MAX_JOB_PODS:  # a task above the limit is reported by _read_tasks; then no pod is derived
        if all(t.replicas <= MAX_JOB_PODS for t in tasks):
            spec.bad_value("tasks", f"the tasks' replicas add up to {replicas}, more than {MAX_JOB_PODS}",
                           MAX_PODS_HELP)
        return None
    if min_available > replicas:
        spec.bad_value("minAvailable", f"{min_available} is more than the {replicas} replicas of all tasks",
                       "lower minAvailable or add replicas")
    return Job(meta=meta, min_available=min_available,
               queue=spec.text("queue") or snapshot.DEFAULT_QUEUE,
               priority_class_name=spec.text("priorityClassName"),
               scheduler_name=spec.text("schedulerName") or DEFAULT_JOB_SCHEDULER, phase=phase, tasks=tasks,
               network_topology=topology.read_network_topology(spec))


def derive(jobs: Sequence[Job], *, podgroups: Sequence[tuple[snapshot.PodGroup, kinds.Meta]],
           pods: Sequence[snapshot.Pod], class_values: Mapping[str, int]) -> Derived:
    """The PodGroups and pods the job controller would have made that the dump lacks."""
    new_groups: list[snapshot.PodGroup] = []
    new_pods: list[snapshot.Pod] = []
    deferred: list[snapshot.Pod] = []
    for job in jobs:
        members = [pod for pod in pods if _belongs(pod, job)]
        group = _find_podgroup(job, podgroups)
        if group is None:
            # Pods already in the dump name their group; follow them rather than Volcano's naming.
            name = next((pod.group for pod in members if pod.group), job.podgroup_name)
            group = _derive_podgroup(job, name, pods_present=bool(members), class_values=class_values)
            new_groups.append(group)
        present = bool(members)
        if present or job.phase in _NO_NEW_PODS:
            continue
        made = [_derive_pod(job, task, index, group.name, class_values)
                for task in job.tasks for index in range(task.replicas)]
        (deferred if group.phase is snapshot.PodGroupPhase.PENDING else new_pods).extend(made)
    return Derived(podgroups=tuple(new_groups), pods=tuple(new_pods), deferred_pods=tuple(deferred))


def _read_tasks(spec: View) -> tuple[Task, ...]:
    tasks: list[Task] = []
    seen: set[str] = set()
    for index, item in enumerate(spec.mappings("tasks")):
        name = item.text("name") or f"default{index}"  # the job webhook's default task name
        if name in seen:
            item.bad_value("name", f'task name "{name}" is used twice in this job', "give every task its own name")
        seen.add(name)
        replicas = item.integer("replicas", default=0, minimum=0)
        if replicas > MAX_JOB_PODS:
            item.bad_value("replicas", f"must be at most {MAX_JOB_PODS}, got {replicas}", MAX_PODS_HELP)
        minimum = item.optional_integer("minAvailable", minimum=0)
        if minimum is None:
            policy = item.mapping("partitionPolicy")
            if policy is not None and policy.has("minPartitions"):
                minimum = policy.integer("minPartitions", default=0) * policy.integer("partitionSize", default=1)
        if minimum is not None and minimum > replicas and replicas <= MAX_JOB_PODS:
            item.bad_value("minAvailable", f"{minimum} is more than the task's {replicas} replicas",
                           "lower minAvailable or raise replicas")
            minimum = replicas
        template = item.mapping("template", required=True)
        meta = template.mapping("metadata") if template else None
        tasks.append(Task(
            name=name, replicas=replicas, min_available=replicas if minimum is None else minimum,
            spec=kinds.read_pod_spec(template.mapping("spec") if template else None),
            labels=meta.text_map("labels") if meta else {},
            annotations=_with_topology_policy(meta.text_map("annotations") if meta else {}, item),
            origin=item.value_span("name") if item.has("name") else item.span(),
            partition=_partition(name, item.mapping("partitionPolicy"))))
    if not tasks and not spec.has("tasks"):
        spec.missing("tasks")
    return tuple(tasks)


def _with_topology_policy(annotations: Mapping[str, str], task: View) -> Mapping[str, str]:
    """A task's topologyPolicy becomes its pods' `volcano.sh/numa-topology-policy`, as the job controller
    writes it (numa-aware reads the annotation)."""
    policy = task.text("topologyPolicy")
    return {**annotations, POD_POLICY_ANNOTATION: policy} if policy else annotations


def _partition(task: str, policy: View | None) -> SubGroupPolicy | None:
    """A task's partitionPolicy as the subGroupPolicy entry Volcano's job controller writes for it: named
    after the task, its pods (label volcano.sh/task-spec) grouped by volcano.sh/partition-id."""
    if policy is None:
        return None
    return SubGroupPolicy(name=task, network_topology=topology.read_network_topology(policy),
                          sub_group_size=policy.integer("partitionSize", default=1, minimum=1),
                          min_sub_groups=policy.integer("minPartitions", default=0, minimum=0),
                          match_labels={snapshot.TASK_SPEC_ANNOTATION: task}, match_label_keys=(PARTITION_ID,))


def _belongs(pod: snapshot.Pod, job: Job) -> bool:
    if pod.namespace != job.meta.namespace:
        return False
    return (pod.group == job.podgroup_name or pod.labels.get(JOB_NAME_KEY) == job.meta.name
            or pod.annotations.get(JOB_NAME_KEY) == job.meta.name)


def _find_podgroup(job: Job, podgroups: Iterable[tuple[snapshot.PodGroup, kinds.Meta]]) -> snapshot.PodGroup | None:
    for group, meta in podgroups:
        if group.namespace != job.meta.namespace:
            continue
        if group.name == job.podgroup_name or ("Job", job.meta.name) in meta.owners:
            return group
    return None


def _derive_podgroup(job: Job, name: str, *, pods_present: bool,
                     class_values: Mapping[str, int]) -> snapshot.PodGroup:
    if job.phase == "Running":
        phase = snapshot.PodGroupPhase.RUNNING
    elif job.phase == "Completed":
        phase = snapshot.PodGroupPhase.COMPLETED
    else:
        phase = snapshot.PodGroupPhase.INQUEUE if pods_present else snapshot.PodGroupPhase.PENDING
    return snapshot.PodGroup(
        namespace=job.meta.namespace, name=name, uid=f"{job.meta.namespace}/{name}", queue=job.queue,
        min_member=job.min_available, min_task_member={t.name: t.min_available for t in job.tasks},
        min_resources=_min_resources(job, class_values), priority_class_name=job.priority_class_name,
        phase=phase, creation=job.meta.creation, annotations=job.meta.annotations, labels=job.meta.labels,
        origin=job.meta.origin, network_topology=job.network_topology,
        sub_group_policy=tuple(t.partition for t in job.tasks if t.partition is not None))


def _min_resources(job: Job, class_values: Mapping[str, int]) -> Resources:
    """Requests of the first minAvailable pods, higher-priority tasks first (the job controller's rule)."""
    ranked = sorted(job.tasks, key=lambda t: -class_values.get(t.spec.priority_class_name, 0))
    counts: dict[str, int] = {}
    wanted = job.min_available
    if wanted < sum(t.min_available for t in ranked):
        for task in ranked:  # CalcFirstCountResources: whole tasks in priority order, cut at minAvailable
            take = min(task.replicas, wanted)
            counts[task.name] = take
            wanted -= take
            if wanted <= 0:
                break
    else:
        for task in ranked:  # CalcPGMinResources: every task's minAvailable, then fill from spare replicas
            take = min(task.min_available, wanted)
            counts[task.name] = take
            wanted -= take
        for task in ranked:
            take = min(task.replicas - task.min_available, wanted)
            counts[task.name] = counts.get(task.name, 0) + max(take, 0)
            wanted -= max(take, 0)
    return resources.total(t.spec.resreq.times(counts.get(t.name, 0)) for t in job.tasks)


def _derive_pod(job: Job, task: Task, index: int, group: str, class_values: Mapping[str, int]) -> snapshot.Pod:
    name = f"{job.meta.name}-{task.name}-{index}"
    annotations = {**job.meta.annotations, **task.annotations, snapshot.GROUP_NAME_ANNOTATION: group,
                   snapshot.TASK_SPEC_ANNOTATION: task.name, JOB_NAME_KEY: job.meta.name}
    labels = {**task.labels, JOB_NAME_KEY: job.meta.name, snapshot.TASK_SPEC_ANNOTATION: task.name}
    if task.partition is not None and task.partition.sub_group_size:
        labels[PARTITION_ID] = str(index // task.partition.sub_group_size)
    class_name = task.spec.priority_class_name or job.priority_class_name
    priority = task.spec.priority if task.spec.priority is not None else class_values.get(class_name, 1)
    spec = task.spec
    return snapshot.Pod(
        namespace=job.meta.namespace, name=name, uid=f"{job.meta.namespace}/{name}", resreq=spec.resreq,
        status=snapshot.TaskStatus.PENDING, phase="Pending", priority=priority, priority_class_name=class_name,
        scheduler_name=spec.scheduler_name or job.scheduler_name, group=group, role=task.name,
        labels=labels, annotations=annotations, node_selector=spec.node_selector,
        required_affinity=spec.required_affinity, preferred_affinity=spec.preferred_affinity,
        tolerations=spec.tolerations, creation=job.meta.creation, preemption_policy=spec.preemption_policy,
        scheduling_gated=spec.scheduling_gated, vgpu_limits=spec.vgpu_limits, relations=spec.relations,
        guaranteed=spec.guaranteed, container_cpus=kinds.pinned_cpus(spec.guaranteed, spec),
        container_gpus=kinds.pinned_gpus(spec.guaranteed, spec), origin=task.origin)

"""The scheduling world as plain, immutable data: what one session starts from.

A `ClusterSnapshot` is what both the file loader (`vpolicy.load.cluster`) and the live adapter's cache
produce; the engine never sees Kubernetes objects. Kubernetes names are kept (Node, Pod, PodGroup,
Queue, PriorityClass); Volcano's derived notions (task status, job priority) are computed here once so
every consumer agrees. This module does no parsing and no scheduling.

Invariants: every pod's `resreq` includes `pods: 1`; resources are exact ints (see `resources`);
`origin` is where the object was read (a Span for files, `kind/ns/name` for live objects).
"""
from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import Mapping

from vpolicy.model.budgets import PodDisruptionBudget, ResourceQuota
from vpolicy.model.numa import NumaHold, NumaTopology
from vpolicy.model.affinity import NO_RELATIONS, PodRelations
from vpolicy.model.volumes import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from vpolicy.model.hypernodes import HyperNode, NetworkTopology, SubGroupPolicy
from vpolicy.model.resources import Resources, ZERO
from vpolicy.source import Span

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"


class TaskStatus(enum.Enum):
    """Volcano's task states (reference §1); the in-session ones are only set by the engine."""

    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"

    # Members are singletons compared by identity; Enum's own __hash__ is a Python function, and the
    # engine hashes statuses in every set lookup of every status change.
    __hash__ = object.__hash__


ALLOCATED_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED})
READY_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
SCHEDULED_STATUSES = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED, TaskStatus.SUCCEEDED})
# Tasks that occupy node resources (they are in node.Used).
OCCUPYING_STATUSES = ALLOCATED_STATUSES | {TaskStatus.RELEASING, TaskStatus.PIPELINED}


class PodGroupPhase(enum.Enum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class QueueState(enum.Enum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # "" matches every effect


@dataclass(frozen=True, slots=True)
class SelectorRequirement:
    """One nodeSelectorTerm matchExpression (or matchFields on metadata.name)."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...] = ()
    field: bool = False  # matchFields rather than matchExpressions


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    requirements: tuple[SelectorRequirement, ...]


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    term: NodeSelectorTerm


# How a dump carries a node's measured usage (what a metrics exporter, or whoever writes the dump,
# leaves on the node): percent, percent, RFC 3339. The live scheduler reads a metrics source instead.
USAGE_CPU_ANNOTATION = "usage.volcano.sh/cpu-usage-avg"
USAGE_MEMORY_ANNOTATION = "usage.volcano.sh/mem-usage-avg"
USAGE_TIME_ANNOTATION = "usage.volcano.sh/metrics-time"


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """A node's measured load, as Volcano's metrics client leaves it in NodeInfo.ResourceUsage: CPU and
    memory used, in percent, averaged over the metrics period, and when it was measured (epoch seconds)."""

    cpu: float
    memory: float
    at: float


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    allocatable: Resources
    capacity: Resources = ZERO
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    # status.images: (names, sizeBytes) of each image the node holds, for nodeorder's image locality
    images: tuple[tuple[tuple[str, ...], int], ...] = ()
    origin: Span | str | None = field(default=None, compare=False)
    # the node's load from a metrics source (usage, rescheduling); None: none measured
    usage: NodeUsage | None = None


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod as the scheduler sees it (Volcano's TaskInfo before the session changes its status)."""

    namespace: str
    name: str
    uid: str
    resreq: Resources  # includes pods: 1
    status: TaskStatus
    node_name: str = ""
    phase: str = "Pending"
    priority: int = 1  # pod.spec.priority, 1 when nil (Volcano), or the task-priority annotation
    priority_class_name: str = ""
    # spec.schedulerName; "" when the dump does not say (hand-written files, Volcano's unit tests): the
    # engine then treats the pod as its own. An API server always fills it (default-scheduler).
    scheduler_name: str = ""
    group: str = ""  # PodGroup name from the group-name annotation ("" = no group)
    role: str = ""  # task name within the job (volcano.sh/task-spec)
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_affinity: tuple[NodeSelectorTerm, ...] = ()  # ORed terms; empty = no constraint
    preferred_affinity: tuple[PreferredTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    # pod (anti-)affinity, topology spread, host ports, images: what relates the pod to others
    relations: PodRelations = NO_RELATIONS
    creation: float = 0.0  # creationTimestamp as epoch seconds
    preemption_policy: str = "PreemptLowerPriority"
    nominated_node: str = ""
    scheduling_gated: bool = False
    # the vGPU limits of each container that names one, in container order (Volcano's resourcereqs reads
    # them per container, never their sum), see deviceshare
    vgpu_limits: tuple[Mapping[str, int], ...] = ()
    # lastTransitionTime of the pod's PodScheduled=True condition, epoch seconds (0: none); cdp's
    # cooldown runs from it
    scheduled_at: float = 0.0
    # QoS class Guaranteed (status.qosClass, else computed as kubelet does), and each container's whole
    # CPUs requested (0: none or a fraction), by container name, in order: what numa-aware pins (empty
    # for a pod that is not Guaranteed: the kubelet pins none of its CPUs)
    guaranteed: bool = False
    container_cpus: tuple[tuple[str, int], ...] = ()
    container_gpus: tuple[int, ...] = ()  # each container's nvidia.com/gpu, in container_cpus' order (ditto)
    # how many of its containers ask no cpu, no memory: kube-scheduler's resource scores give each such
    # container 100m / 200Mi (NonMissingContainerRequests); None: not read from containers (a pod made by
    # hand), taken as one container missing whatever the pod's request lacks
    containers_without_request: tuple[int, int] | None = None
    origin: Span | str | None = field(default=None, compare=False)
    # cpu and memory limits (containers summed, an init container's if larger), and status.startTime
    # (epoch seconds, 0: not started): what usage's load estimate of a recently placed pod reads
    limits: Resources = ZERO
    started_at: float = 0.0
    # Derived once when the pod is made (every session's TaskInfo reads them): `namespace/name`; a
    # best-effort request (nothing asked beyond `pods`); volcano.sh/preemptable from annotations, else
    # labels, preemptable unless it says false; the index in the name that orders a job's tasks.
    key: str = field(init=False, repr=False, compare=False)
    best_effort: bool = field(init=False, repr=False, compare=False)
    preemptable: bool = field(init=False, repr=False, compare=False)
    order_index: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        raw = self.annotations.get(PREEMPTABLE_KEY, self.labels.get(PREEMPTABLE_KEY))
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")
        object.__setattr__(self, "best_effort", self.resreq.is_empty())
        object.__setattr__(self, "preemptable", raw is None or raw.strip().lower() not in ("false", "0", "f"))
        object.__setattr__(self, "order_index", name_index(self.name))


def name_index(name: str) -> int | None:
    """Volcano orders tasks by the integer after the last '-' when the name has >= 3 dash parts."""
    parts = name.split("-")
    if len(parts) >= 3 and parts[-1].isdigit():
        return int(parts[-1])
    return None


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    uid: str
    queue: str = DEFAULT_QUEUE
    min_member: int = 1
    min_task_member: Mapping[str, int] = field(default_factory=dict)
    min_resources: Resources | None = None
    priority_class_name: str = ""
    phase: PodGroupPhase = PodGroupPhase.PENDING
    conditions: tuple[Condition, ...] = ()
    creation: float = 0.0
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    origin: Span | str | None = field(default=None, compare=False)
    network_topology: NetworkTopology | None = None  # spec.networkTopology (see model.hypernodes)
    sub_group_policy: tuple[SubGroupPolicy, ...] = ()  # spec.subGroupPolicy

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Queue:
    name: str
    weight: int = 1
    capability: Resources | None = None
    deserved: Resources | None = None
    guarantee: Resources = ZERO
    reclaimable: bool = True
    parent: str = ""
    priority: int = 0
    state: QueueState = QueueState.OPEN
    creation: float = 0.0
    annotations: Mapping[str, str] = field(default_factory=dict)
    # spec.affinity.nodeGroupAffinity / nodeGroupAntiAffinity (the nodegroup plugin): node group names
    # (node label volcano.sh/nodegroup-name), required and preferred during scheduling
    has_node_group_affinity: bool = False  # spec.affinity is set (even with empty lists)
    node_group_required: tuple[str, ...] = ()
    node_group_preferred: tuple[str, ...] = ()
    node_group_anti_required: tuple[str, ...] = ()
    node_group_anti_preferred: tuple[str, ...] = ()
    origin: Span | str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool = False


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Everything one session reads. Order of each tuple is the order objects were read."""

    nodes: tuple[Node, ...] = ()
    pods: tuple[Pod, ...] = ()
    podgroups: tuple[PodGroup, ...] = ()
    queues: tuple[Queue, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()
    namespaces: tuple[str, ...] = ()
    # Namespace labels by name, for pod affinity terms' namespaceSelector
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # what kube-scheduler's VolumeZone and VolumeBinding filters read (vpolicy.model.volumes)
    persistent_volumes: tuple[PersistentVolume, ...] = ()
    persistent_volume_claims: tuple[PersistentVolumeClaim, ...] = ()
    storage_classes: tuple[StorageClass, ...] = ()
    csi_nodes: tuple[CSINode, ...] = ()  # storage.k8s.io CSINodes: per-driver attach limits (NodeVolumeLimits)
    conf_text: str | None = None  # a volcano-scheduler.conf found in a ConfigMap of the dump
    conf_origin: Span | None = None  # a literal block (`|`): its first content line; else the value
    # Line L, column C of conf_text is dump line L + conf_line_offset, column C + conf_col_offset
    # (1-based both sides). None when the value is not a literal block, so only conf_origin is exact.
    conf_line_offset: int | None = None
    conf_col_offset: int = 0
    warnings: tuple[str, ...] = ()
    # Pods Volcano's job controller will create for a vcjob once its PodGroup leaves Pending
    # (reference §14): derived from the job's task templates, not yet part of `pods`.
    deferred_pods: tuple[Pod, ...] = ()
    hypernodes: tuple[HyperNode, ...] = ()  # topology.volcano.sh HyperNodes (see model.hypernodes)
    pdbs: tuple[PodDisruptionBudget, ...] = ()  # policy/v1 PodDisruptionBudgets (the pdb plugin)
    resource_quotas: tuple[ResourceQuota, ...] = ()  # v1 ResourceQuotas (the resourcequota plugin)
    numatopologies: tuple[NumaTopology, ...] = ()  # nodeinfo.volcano.sh Numatopologies (numa-aware)
    # CPUs and GPUs numa-aware gave pods in earlier sessions, held until their Numatopology shows them:
    # a live scheduler passes on each session's Decisions.numa_holds (none from a dump)
    numa_holds: tuple[NumaHold, ...] = ()

    def job_priority(self, pg: PodGroup) -> int:
        """PodGroup priorityClassName's value; else the globalDefault class; else 0 (reference §1)."""
        by_name = _priority_index(self.priority_classes)
        if pg.priority_class_name in by_name:
            return by_name[pg.priority_class_name].value
        for pc in self.priority_classes:
            if pc.global_default:
                return pc.value
        return 0


@functools.lru_cache(maxsize=8)
def _priority_index(classes: tuple[PriorityClass, ...]) -> dict[str, PriorityClass]:
    """PriorityClasses by name, built once per snapshot's classes (asked for every podgroup)."""
    return {pc.name: pc for pc in classes}

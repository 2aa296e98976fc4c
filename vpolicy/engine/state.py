"""Live session state: the snapshot's objects as Volcano's TaskInfo/JobInfo/QueueInfo/NodeInfo.

The snapshot is immutable; a session needs mutable views whose aggregates (node idle, job ready count,
queue allocated) follow every tentative placement. These classes hold that state and expose it under
the attribute names of `vpolicy.lang.builtins` so compiled rules read them directly. Status changes go
through `SessionState.set_status`, the single place that keeps the aggregates consistent.

This module does not decide anything (see `actions`) and does not undo (see `statement`).
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from vpolicy.engine.devices import DeviceLedger
from vpolicy.engine.numa import NumaLedger
from vpolicy.engine.pod_relations import NO_TASK_RELATIONS, PodIndex, TaskRelations
from vpolicy.engine.topology import open_topology
from vpolicy.model import snapshot as snap
from vpolicy.model.budgets import PodDisruptionBudget, ResourceQuota
from vpolicy.model.numa import POD_POLICY_ANNOTATION as NUMA_POLICY_ANNOTATION
from vpolicy.model.resources import CPU, MEMORY, ZERO, Resources, names, total
from vpolicy.model.snapshot import ALLOCATED_STATUSES, READY_STATUSES, TaskStatus

# What plugins count as a job's and a queue's "allocated": Volcano's event handlers add a task on
# Allocate *and* on Pipeline, and remove it on Evict, so pipelined placements count within a session.
SHARE_STATUSES = ALLOCATED_STATUSES | {TaskStatus.PIPELINED}
_ON_NODE_STATUSES = ALLOCATED_STATUSES | {TaskStatus.RELEASING, TaskStatus.PIPELINED}
_ON_NODE_AT_OPEN = ALLOCATED_STATUSES | {TaskStatus.RELEASING}  # a snapshot holds nothing pipelined


# strconv.ParseBool's true spellings (Volcano reads volcano.sh/preemptable with it)
_GO_TRUE = frozenset({"1", "t", "true"})


def _revocable_zone(annotations: Any) -> str:
    """Volcano's GetPodRevocableZone: `*` for the annotation volcano.sh/revocable-zone `*` (any other value:
    none), else `*` for volcano.sh/preemptable true; else ""."""
    zone = annotations.get("volcano.sh/revocable-zone")
    if zone is not None:
        return "*" if zone == "*" else ""
    preemptable = annotations.get(snap.PREEMPTABLE_KEY)
    return "*" if preemptable is not None and preemptable.strip().lower() in _GO_TRUE else ""


class TaskInfo:
    __slots__ = ("pod", "job", "status", "node_name", "uid", "name", "namespace", "key", "resreq",
                 "priority", "role", "best_effort", "preemptable", "labels", "annotations", "order_index",
                 "priority_class_name", "node_selector", "original_status", "evicted", "eviction_occurred",
                 "last_placement", "scheduled_at", "revocable_zone", "relations")

    def __init__(self, pod: snap.Pod, job: "JobInfo | None"):
        self.pod = pod
        self.job = job
        self.status = pod.status
        self.original_status = pod.status
        self.node_name = pod.node_name
        self.uid = pod.uid
        self.name = pod.name
        self.namespace = pod.namespace
        self.key = pod.key
        self.resreq = pod.resreq
        self.priority = pod.priority
        self.role = pod.role
        self.best_effort = pod.best_effort
        self.preemptable = pod.preemptable
        self.labels = pod.labels
        self.annotations = pod.annotations
        self.priority_class_name = pod.priority_class_name
        self.node_selector = pod.node_selector
        self.order_index = pod.order_index
        self.scheduled_at = pod.scheduled_at
        self.revocable_zone = _revocable_zone(pod.annotations)
        self.evicted = False
        # pipelined where evictions for it made the room (Volcano's TransactionContext.EvictionOccurred):
        # only such a pod is given status.nominatedNodeName
        self.eviction_occurred = False
        # (allocate | pipeline, node) of the last placement a discarded statement undid: Volcano's
        # LastTransaction, which Statement.Discard keeps, so the pod reads as Schedulable, not Undetermined
        self.last_placement: tuple[str, str] | None = None
        self.relations: TaskRelations = NO_TASK_RELATIONS  # pod (anti-)affinity and spread, as DSL terms

    @property
    def evicted_this_session(self) -> bool:
        """Releasing because this session evicted it (a pod of the snapshot may be releasing already).
        Volcano's Statement.Evict runs the predicates plugin's DeallocateFunc, which takes such a pod
        out of kube-scheduler's NodeInfo (predicates.go:249-285 at v1.10.0, main the same): node scores,
        the pod count, pod (anti-)affinity, spread and host ports no longer see it."""
        return self.status is TaskStatus.RELEASING and self.original_status is not TaskStatus.RELEASING

    # the DSL's term lists (engine.pod_relations fills them when the session's pods have any)
    @property
    def pod_affinity(self) -> list[Any]:
        return self.relations.pod_affinity

    @property
    def pod_anti_affinity(self) -> list[Any]:
        return self.relations.pod_anti_affinity

    @property
    def preferred_pod_affinity(self) -> list[Any]:
        return self.relations.preferred_pod_affinity

    @property
    def preferred_pod_anti_affinity(self) -> list[Any]:
        return self.relations.preferred_pod_anti_affinity

    @property
    def spread_constraints(self) -> list[Any]:
        return self.relations.spread_constraints

    @property
    def images(self) -> list[str]:
        return list(self.pod.relations.images)

    @property
    def queue(self) -> "QueueInfo | None":
        return self.job.queue if self.job else None

    @property
    def guaranteed(self) -> bool:
        return self.pod.guaranteed

    @property
    def limits(self) -> Resources:
        return self.pod.limits

    @property
    def started_at(self) -> float:
        return self.pod.started_at

    @property
    def topology_policy(self) -> str:
        return self.pod.annotations.get(NUMA_POLICY_ANNOTATION, "")

    @property
    def container_cpus(self) -> tuple[tuple[str, int], ...]:
        return self.pod.container_cpus

    # kube-scheduler's resource scores give each container without a cpu / memory request 100m / 200Mi
    @property
    def containers_without_cpu_request(self) -> int:
        counted = self.pod.containers_without_request
        return counted[0] if counted is not None else int(not self.resreq.get(CPU, 0))

    @property
    def containers_without_memory_request(self) -> int:
        counted = self.pod.containers_without_request
        return counted[1] if counted is not None else int(not self.resreq.get(MEMORY, 0))

    @property
    def container_gpus(self) -> tuple[int, ...]:
        return self.pod.container_gpus

    @property
    def status_name(self) -> str:
        return self.status.value

    def __repr__(self) -> str:
        return f"Task({self.key}, {self.status.value}, {self.node_name or '-'})"


class JobInfo:
    def __init__(self, pg: snap.PodGroup, queue: "QueueInfo", priority: int):
        self.pg = pg
        self.queue = queue
        self.priority = priority
        self.name = pg.name
        self.namespace = pg.namespace
        self.key = pg.key
        self.uid = pg.uid
        self.min_available = pg.min_member
        self.min_task_member = dict(pg.min_task_member)
        self.has_min_resources = pg.min_resources is not None
        self.min_resources = pg.min_resources or ZERO
        self.phase = pg.phase.value
        self.creation = pg.creation
        self.tasks: list[TaskInfo] = []
        self.counts: dict[TaskStatus, int] = {}
        self.ready = 0  # tasks in READY_STATUSES, kept by track()
        self.pending_be = 0
        self.allocated: Resources = ZERO
        self.fit_errors: dict[str, dict[str, str]] = {}  # task key -> node -> reason
        self.job_errors: list[str] = []  # job-level reasons (invalid, queue, enqueue)
        self.failed_roles: set[str] = set()
        self.unschedulable_condition = False
        self.enqueued_now = False
        # network topology, bound by engine.topology when the session opens
        self.topology_mode = ""  # hard | soft | "" (no networkTopology)
        self.highest_tier_allowed = 0
        self.allocated_hypernode = ""  # live: grows with the job's placements
        self.sub_groups: list[Any] = []  # spec.subGroupPolicy's sub-groups (engine.topology.SubGroupInfo)
        self.min_sub_groups: dict[str, int] = {}  # policy name -> minSubGroups
        self.annotations = pg.annotations
        self.labels = pg.labels
        raw = pg.annotations.get(snap.PREEMPTABLE_KEY, pg.labels.get(snap.PREEMPTABLE_KEY))
        self.preemptable = raw is not None and raw.strip().lower() in _GO_TRUE  # Volcano's extractPreemptable
        self.quotas: list[ResourceQuota] = []  # its namespace's ResourceQuotas (SessionState fills them)

    # counts: kept per status by SessionState.set_status, so rules read them in O(1) -----------------
    def count(self, statuses: Iterable[TaskStatus]) -> int:
        return sum(self.counts.get(s, 0) for s in set(statuses))

    def track(self, task: TaskInfo, delta: int) -> None:
        status = task.status
        self.counts[status] = self.counts.get(status, 0) + delta
        if status in READY_STATUSES:
            self.ready += delta
        if task.best_effort and status is TaskStatus.PENDING:
            self.pending_be += delta

    @property
    def ready_count(self) -> int:
        return self.ready

    @property
    def pipelined_count(self) -> int:
        return self.counts.get(TaskStatus.PIPELINED, 0)

    @property
    def pending_count(self) -> int:
        return self.counts.get(TaskStatus.PENDING, 0)

    @property
    def pending_best_effort_count(self) -> int:
        return self.pending_be

    @property
    def valid_task_count(self) -> int:
        return self.count(READY_STATUSES | {TaskStatus.PENDING, TaskStatus.PIPELINED})

    @property
    def task_count(self) -> int:
        return len(self.tasks)

    @property
    def roles(self) -> list[str]:
        seen = dict.fromkeys(t.role for t in self.tasks)
        seen.update(dict.fromkeys(self.min_task_member))
        return list(seen)

    def role_count(self, role: str, statuses: frozenset[TaskStatus]) -> int:
        return sum(1 for t in self.tasks if t.role == role and t.status in statuses)

    def __repr__(self) -> str:
        return f"Job({self.key})"


class QueueInfo:
    def __init__(self, queue: snap.Queue):
        self.spec = queue
        self.name = queue.name
        self.weight = queue.weight
        self.priority = queue.priority
        self.state = queue.state.value
        self.open = queue.state is snap.QueueState.OPEN
        self.reclaimable = queue.reclaimable
        self.has_capability = queue.capability is not None
        self.capability = queue.capability or ZERO
        self.has_deserved = queue.deserved is not None
        self.deserved = queue.deserved or ZERO
        self.guarantee = queue.guarantee
        self.creation = queue.creation
        self.has_node_group_affinity = queue.has_node_group_affinity
        self.node_group_required = list(queue.node_group_required)
        self.node_group_preferred = list(queue.node_group_preferred)
        self.node_group_anti_required = list(queue.node_group_anti_required)
        self.node_group_anti_preferred = list(queue.node_group_anti_preferred)
        self.parent: QueueInfo | None = None
        self.children: list[QueueInfo] = []
        self.jobs: list[JobInfo] = []
        self.allocated: Resources = ZERO
        self.inqueue: Resources = ZERO
        self.version = 0  # grows with every change of allocated, for memoised aggregates
        self.changes = 0  # grows with every status change of a task of one of its jobs (engine.victim_memo)
        self._elastic: tuple[int, Resources] | None = None

    @property
    def ancestors(self) -> list["QueueInfo"]:
        out, q = [], self.parent
        while q is not None and q not in out:
            out.append(q)
            q = q.parent
        return out

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def descendants(self) -> list["QueueInfo"]:
        out: list[QueueInfo] = []
        stack = list(self.children)
        while stack:
            q = stack.pop()
            if q not in out:
                out.append(q)
                stack.extend(q.children)
        return out

    @property
    def tree_allocated(self) -> Resources:
        return total([self.allocated, *(q.allocated for q in self.descendants())])

    @property
    def tree_inqueue(self) -> Resources:
        return total([self.inqueue, *(q.inqueue for q in self.descendants())])

    @property
    def elastic(self) -> Resources:
        """Allocation beyond each job's minResources, summed (Volcano's GetElasticResources)."""
        if self._elastic is None or self._elastic[0] != self.version:
            value = total((j.allocated - j.min_resources).clamp_min_zero() for j in self.jobs)
            self._elastic = (self.version, value)
        return self._elastic[1]

    @property
    def request(self) -> Resources:
        pending = total(t.resreq for j in self.jobs for t in j.tasks if t.status is TaskStatus.PENDING)
        return self.allocated + pending

    def __repr__(self) -> str:
        return f"Queue({self.name})"


class NodeInfo:
    def __init__(self, node: snap.Node):
        self.spec = node
        self.name = node.name
        self.allocatable = node.allocatable
        self.labels = node.labels
        self.annotations = node.annotations
        self.unschedulable = node.unschedulable
        self.used: Resources = ZERO
        self.releasing: Resources = ZERO
        self.pipelined: Resources = ZERO
        self.tasks: list[TaskInfo] = []
        # tasks on the node without a cpu / a memory request (kube-scheduler's NonZeroRequested defaults)
        self.pods_without_cpu_request = 0
        self.pods_without_memory_request = 0
        # tasks this session evicted here: Volcano's Statement.Evict runs the predicates plugin's
        # DeallocateFunc, which takes the pod out of the kube NodeInfo its pod-count check reads
        # (predicates.go, v1.10.0 and main), while releasing pods of the snapshot stay in it
        self.evicted_here = 0
        # their requests: the same DeallocateFunc takes them out of what kube-scheduler's scores read
        # (NodeResourcesFit, BalancedAllocation), while `used` and `releasing` still hold them
        self.evicted: Resources = ZERO
        self.gpus: Any = None  # the node's GPU cards in the session (engine.devices.NodeGpus); None: no inventory
        self.numa: Any = None  # its free CPUs per NUMA node (engine.numa.NodeNuma); None: no Numatopology
        self.hypernode = ""  # its lowest HyperNode (engine.topology binds it)
        self.hypernodes: list[Any] = []  # the HyperNodes holding it, lowest tier first
        self._future: tuple[Resources, Resources, Resources, Resources] | None = None

    @property
    def idle(self) -> Resources:
        return self.allocatable - self.used

    @property
    def future_idle(self) -> Resources:
        """Idle, plus what releasing tasks will free, less what pipelined tasks will take. preempt asks
        it of a node for every candidate set it weighs, so it is kept until one of the three sums is
        replaced (Resources are never changed in place: every change assigns a new one)."""
        kept = self._future
        if kept is not None and kept[0] is self.used and kept[1] is self.releasing and kept[2] is self.pipelined:
            return kept[3]
        value = self.allocatable - self.used + self.releasing - self.pipelined
        self._future = (self.used, self.releasing, self.pipelined, value)
        return value

    @property
    def pod_count(self) -> int:
        """The pods kube-scheduler's NodeInfo holds: every task here but those this session evicted."""
        return len(self.tasks) - self.evicted_here

    @property
    def max_pods(self) -> int:
        return self.allocatable.get("pods", 0)

    @property
    def capacity(self) -> Resources:
        """status.capacity (allocatable where the node lists no capacity)."""
        return self.spec.capacity or self.allocatable

    # The node's measured load (snapshot.NodeUsage); without one, Volcano's empty ResourceUsage: 0% at
    # the zero time, which its plugins read as stale.
    @property
    def cpu_usage(self) -> float:
        return self.spec.usage.cpu if self.spec.usage is not None else 0.0

    @property
    def memory_usage(self) -> float:
        return self.spec.usage.memory if self.spec.usage is not None else 0.0

    @property
    def metrics_time(self) -> float:
        return self.spec.usage.at if self.spec.usage is not None else 0.0

    def __repr__(self) -> str:
        return f"Node({self.name})"


_USAGE = ("used", "releasing", "pipelined", "idle", "future", "evicted")
# How each way of holding a request moves the usage rows.
_MOVES = {
    "used": {"used": 1, "idle": -1, "future": -1},
    "releasing": {"used": 1, "releasing": 1, "idle": -1},  # future = idle + releasing: unchanged
    "evicted": {"used": 1, "releasing": 1, "idle": -1, "evicted": 1},  # releasing as this session evicted it
    "pipelined": {"pipelined": 1, "future": -1},
}


class NodeArrays:
    """Every Ready node's resources as rows of numpy arrays, kept in step with NodeInfo.

    Rules evaluated over many nodes at once (see `vpolicy.compile.vectorize`) and the resource-fit
    check read these instead of asking each NodeInfo; `version[i]` grows whenever node i changes, so
    cached per-node answers know when they are stale.
    """

    def __init__(self, nodes: list[NodeInfo], extra_dims: Iterable[str]):
        names: dict[str, None] = {}
        for n in nodes:
            names.update(dict.fromkeys(n.allocatable))
        names.update(dict.fromkeys(extra_dims))
        self.dims = list(names)
        self.index = {d: i for i, d in enumerate(self.dims)}
        self.row = {n.name: i for i, n in enumerate(nodes)}
        self.infos = nodes
        shape = (len(nodes), len(self.dims))
        self.allocatable = np.zeros(shape)
        # used, releasing, pipelined, idle, future and evicted of a node side by side, so one placement
        # moves all six rows in one operation (`move`); the named arrays are views into it
        self._usage = np.zeros((len(nodes), len(_USAGE), len(self.dims)))
        self.used, self.releasing, self.pipelined, self.idle_now, self.future, self.evicted = (
            self._usage[:, k, :] for k in range(len(_USAGE)))
        self.pod_count = np.zeros(len(nodes))
        # per node: its tasks without a cpu request, without a memory request (NodeInfo's two counts)
        self.without_request = np.zeros((len(nodes), 2))
        self.version = np.zeros(len(nodes), dtype=np.int64)
        # every row change in order (a row appears once per change): per-task-class answers kept by
        # the placement catch up by reading the entries added since they last looked
        self.changed: list[int] = []
        for i, n in enumerate(nodes):
            self.allocatable[i] = self.vector(n.allocatable)
        self._vectors: dict[Resources, np.ndarray] = {}
        self._moves: dict[tuple[Resources, str, int], np.ndarray] = {}

    def move(self, i: int, res: Resources, kind: str, sign: int) -> None:
        """Row i gains (sign 1) or loses (-1) a request held as `kind` (used, releasing: used and
        releasing, pipelined); idle (allocatable - used) and future (idle + releasing - pipelined)
        move with it, by the same exact integer amounts."""
        key = (res, kind, sign)
        delta = self._moves.get(key)
        if delta is None:
            vec = sign * self.cached_vector(res)
            delta = np.zeros((len(_USAGE), len(self.dims)))
            for name, factor in _MOVES[kind].items():
                delta[_USAGE.index(name)] = factor * vec
            self._moves[key] = delta
        self._usage[i] += delta

    def vector(self, res: Resources) -> np.ndarray:
        out = np.zeros(len(self.dims))
        for k, v in res.items():
            i = self.index.get(k)
            if i is not None:
                out[i] = v
        return out

    def cached_vector(self, res: Resources) -> np.ndarray:
        vec = self._vectors.get(res)
        if vec is None:
            vec = self._vectors[res] = self.vector(res)
        return vec

    def unknown_dims(self, res: Resources) -> list[str]:
        """Requested dimensions no node has at all (so no node can fit them)."""
        return [k for k, v in res.items() if v > 0 and k not in self.index]

    def idle(self) -> np.ndarray:
        return self.idle_now

    def future_idle(self) -> np.ndarray:
        return self.future


class ClusterInfo:
    def __init__(self, state: "SessionState"):
        self._state = state
        # network topology (engine.topology binds them when the session opens)
        self.hypernodes: list[Any] = []
        self.hypernode_tiers: list[int] = []
        self.min_tier = 0
        self.max_tier = 0
        self.topology: Any = None

    @property
    def total(self) -> Resources:
        return self._state.total

    @property
    def queues(self) -> list[QueueInfo]:
        return list(self._state.queues.values())

    @property
    def nodes(self) -> list[NodeInfo]:
        return list(self._state.nodes.values())

    @property
    def jobs(self) -> list[JobInfo]:
        return list(self._state.jobs.values())

    @property
    def used(self) -> Resources:
        return total(n.used for n in self._state.nodes.values())

    @property
    def inqueue(self) -> Resources:
        return total(q.inqueue for q in self._state.queues.values())

    @property
    def pdbs(self) -> tuple[PodDisruptionBudget, ...]:
        return self._state.snapshot.pdbs

    @property
    def quotas(self) -> tuple[ResourceQuota, ...]:
        return self._state.snapshot.resource_quotas


class SessionState:
    """All live objects of one session, built from a snapshot (Volcano's OpenSession snapshot step)."""

    def __init__(self, snapshot: snap.ClusterSnapshot, *, scheduler_names: tuple[str, ...] = ("volcano",)):
        self.snapshot = snapshot
        self.nodes: dict[str, NodeInfo] = {n.name: NodeInfo(n) for n in snapshot.nodes if n.ready}
        self.queues: dict[str, QueueInfo] = {q.name: QueueInfo(q) for q in snapshot.queues}
        for q in self.queues.values():
            parent_name = q.spec.parent or (snap.ROOT_QUEUE if q.name != snap.ROOT_QUEUE else "")
            parent = self.queues.get(parent_name)
            if parent is not None and parent is not q:
                q.parent = parent
                parent.children.append(q)
        self.jobs: dict[str, JobInfo] = {}
        job: JobInfo | None
        for pg in snapshot.podgroups:
            queue = self.queues.get(pg.queue)
            if queue is None:
                continue  # Volcano drops jobs whose queue does not exist
            job = JobInfo(pg, queue, snapshot.job_priority(pg))
            if snapshot.resource_quotas:
                job.quotas = [q for q in snapshot.resource_quotas if q.namespace == pg.namespace]
            self.jobs[pg.key] = job
            queue.jobs.append(job)
        self.version = 0  # grows with every status change: answers computed at one version stay valid
        # the job of every task status change, in order: what an answer read of a job is unchanged
        # while its job is not logged after it (engine.victim_reuse)
        self.job_log: list[JobInfo] = []
        self.tasks: dict[str, TaskInfo] = {}
        self.other_pods: list[TaskInfo] = []  # pods of no job: they only consume node resources
        for pod in snapshot.pods:
            job = self.jobs.get(f"{pod.namespace}/{pod.group}") if pod.group else None
            if job is not None and not pod.node_name and pod.scheduler_name not in ("", *scheduler_names):
                job = None  # an unassigned pod of another scheduler is not Volcano's (reference §1)
            task = TaskInfo(pod, job)
            if job is not None:
                job.tasks.append(task)
                job.track(task, 1)
                self.tasks[task.uid] = task
            else:
                self.other_pods.append(task)
            node = self.nodes.get(pod.node_name) if pod.node_name else None
            if node is not None and pod.status in _ON_NODE_AT_OPEN:
                node.tasks.append(task)
        for node in self.nodes.values():  # summed once per node: what _add_to_node would add pod by pod
            if node.tasks:
                node.used = total(t.resreq for t in node.tasks)
                node.releasing = total(t.resreq for t in node.tasks if t.status is TaskStatus.RELEASING)
        for job in self.jobs.values():
            job.allocated = total(t.resreq for t in job.tasks if t.status in ALLOCATED_STATUSES)
            job.queue.allocated = job.queue.allocated + job.allocated
        self.total = total(n.allocatable for n in self.nodes.values())
        self.devices = DeviceLedger.open(self.nodes)  # GPU card usage, following set_status
        self.numa = NumaLedger.open(self.nodes, snapshot.numatopologies,  # CPUs pinned, likewise
                                    snapshot.numa_holds)
        self.cluster = ClusterInfo(self)
        self.arrays = NodeArrays(list(self.nodes.values()), names(p.resreq for p in snapshot.pods))
        self.pod_index = PodIndex(self)  # pods per topology domain, for affinity and spread rules
        for node in self.nodes.values():
            self._sync_arrays(node)
        self._init_inqueue()
        self.topology = open_topology(self)  # HyperNodes, and each job's and node's place among them

    def _init_inqueue(self) -> None:
        """Inqueue accounting (proportion/capacity/overcommit): reserved minResources of admitted jobs."""
        inqueue, running = snap.PodGroupPhase.INQUEUE.value, snap.PodGroupPhase.RUNNING.value  # once, not per job
        for job in self.jobs.values():
            if not job.has_min_resources:
                continue
            if job.phase == inqueue:
                job.queue.inqueue = job.queue.inqueue + job.min_resources
            elif job.phase == running and job.ready_count - job.count(
                    {TaskStatus.SUCCEEDED}) >= job.min_available:
                job.queue.inqueue = job.queue.inqueue + (job.min_resources - job.allocated).clamp_min_zero()

    # node bookkeeping -----------------------------------------------------------------------------
    def _add_to_node(self, task: TaskInfo, node: NodeInfo) -> None:
        self._move_on_node(task, node, 1)

    def _remove_from_node(self, task: TaskInfo, node: NodeInfo) -> None:
        self._move_on_node(task, node, -1)

    def _move_on_node(self, task: TaskInfo, node: NodeInfo, sign: int) -> None:
        """Add (sign 1) or remove (-1) a task's request on its node, in NodeInfo and in the arrays.

        The arrays move by the same integer amounts as the Resources (float sums of integers are exact
        far beyond any cluster's size), so they are changed in place rather than rebuilt from dicts."""
        if sign > 0:
            node.tasks.append(task)
        else:
            node.tasks.remove(task)
        evicted = task.evicted_this_session
        # kube-scheduler's NodeInfo counts neither the requests nor the pods this session evicted
        # (counted per container: kube-scheduler's NonZeroRequested defaults each container's missing request)
        no_cpu, no_memory = (0, 0) if evicted else (task.containers_without_cpu_request,
                                                   task.containers_without_memory_request)
        node.pods_without_cpu_request += sign * no_cpu
        node.pods_without_memory_request += sign * no_memory
        request = task.resreq if sign > 0 else -task.resreq
        pipelined = task.status is TaskStatus.PIPELINED
        releasing = task.status is TaskStatus.RELEASING
        if evicted:
            node.evicted_here += sign
            node.evicted = node.evicted + request
        if pipelined:
            node.pipelined = node.pipelined + request
        else:
            node.used = node.used + request
            if releasing:
                node.releasing = node.releasing + request
        arrays = getattr(self, "arrays", None)
        if arrays is None:
            return  # still building: the arrays are filled once every pod is placed
        i = arrays.row[node.name]
        # dimensions no node has are left out, as in `vector`
        arrays.move(i, task.resreq, "pipelined" if pipelined else "evicted" if evicted else "releasing" if releasing
                    else "used", sign)
        arrays.pod_count[i] = node.pod_count
        if no_cpu or no_memory:
            arrays.without_request[i] += (sign * no_cpu, sign * no_memory)
        arrays.version[i] += 1
        arrays.changed.append(i)
        self.pod_index.move(task, i, sign)

    def _sync_arrays(self, node: NodeInfo) -> None:
        arrays = getattr(self, "arrays", None)
        if arrays is None:
            return  # still building: the arrays are filled once every pod is placed
        i = arrays.row[node.name]
        arrays.used[i] = arrays.vector(node.used)
        arrays.releasing[i] = arrays.vector(node.releasing)
        arrays.pipelined[i] = arrays.vector(node.pipelined)
        arrays.evicted[i] = arrays.vector(node.evicted)
        arrays.pod_count[i] = node.pod_count
        arrays.without_request[i] = (node.pods_without_cpu_request, node.pods_without_memory_request)
        arrays.idle_now[i] = arrays.allocatable[i] - arrays.used[i]
        arrays.future[i] = arrays.idle_now[i] + arrays.releasing[i] - arrays.pipelined[i]
        arrays.version[i] += 1
        arrays.changed.append(i)

    def _restatus_in_place(self, task: TaskInfo, status: TaskStatus) -> None:
        """Allocated -> Binding and the like: same node, same usage, same share; only the job's counts
        change. The task still moves to the end of its node's list, as a remove and re-add would, and
        then the node's version grows: answers kept per node version (victims listed in the node's
        order, a fold over its pods) would otherwise read the old order."""
        node = self.nodes.get(task.node_name) if task.node_name else None
        if node is not None and node.tasks and node.tasks[-1] is not task and task in node.tasks:
            node.tasks.remove(task)  # (a task already last, as one just placed mostly is, stays)
            node.tasks.append(task)
            arrays = getattr(self, "arrays", None)
            if arrays is not None:
                row = arrays.row[node.name]
                arrays.version[row] += 1
                arrays.changed.append(row)
        job = task.job
        if job is not None:
            job.track(task, -1)
            job.queue.changes += 1
            self.job_log.append(job)
        task.status = status
        if job is not None:
            job.track(task, 1)
        self.devices.on_status(task)
        self.numa.on_status(task)

    def set_status(self, task: TaskInfo, status: TaskStatus, node_name: str | None = None) -> None:
        """Move a task to `status` (and `node_name`, "" to unplace), keeping every aggregate in step."""
        self.version += 1
        job = task.job
        if (task.status in ALLOCATED_STATUSES and status in ALLOCATED_STATUSES
                and (node_name is None or node_name == task.node_name)):
            self._restatus_in_place(task, status)
            return
        was_allocated = task.status in SHARE_STATUSES
        old_node = self.nodes.get(task.node_name) if task.node_name else None
        if old_node is not None and task in old_node.tasks:
            self._remove_from_node(task, old_node)
        if job is not None:
            job.track(task, -1)
            job.queue.changes += 1
            self.job_log.append(job)
        task.status = status
        if job is not None:
            job.track(task, 1)
        if node_name is not None:
            task.node_name = node_name
        new_node = self.nodes.get(task.node_name) if task.node_name else None
        if new_node is not None and status in _ON_NODE_STATUSES:
            self._add_to_node(task, new_node)
        is_allocated = status in SHARE_STATUSES
        if job is not None and was_allocated != is_allocated:
            delta = task.resreq if is_allocated else -task.resreq
            job.allocated = job.allocated + delta
            q: QueueInfo = job.queue
            q.allocated = q.allocated + delta
            q.version += 1
        self.devices.on_status(task)
        self.numa.on_status(task)

"""The discrete-event simulation: a workload's jobs arrive, a session runs each period, pods run and finish.

One `simulate(...)` call runs one policy over one cluster and one expanded workload:

- Time advances in steps of `period` (1 s by default) from 0. Every step first applies what is due:
  pods whose eviction grace ended leave their node (a restarted job's pods come back Pending), jobs
  whose duration is over finish (their pods and PodGroup go), queue events open or close queues,
  jobs arrive (a PodGroup in phase Pending with `pods` Pending pods), and a vcjob's deferred pods
  appear once its PodGroup has left Pending (as Volcano's job controller does).
- Then one session runs over an immutable snapshot of that state, and its decisions are applied as a
  cluster would: bound pods are Running from the bind time on; pipelined pods stay Pending, nominated
  to the node when their own evictions made the room; evicted pods are Releasing (still on their
  node) until the next step, and their job follows its `on_evict` policy — `restart` kills the job's
  other pods too and recreates all of them Pending (Volcano's RestartJob), `fail` ends the job
  (AbortJob); PodGroup phases are written back.
- A job has started when `min_available` of its pods run; it finishes `duration` after that start.
- Fast-forward: unless a session evicted or newly pipelined pods (whose consequences play out over
  the next periods), the next session is the next step on which something is due (an arrival, a
  finish, a queue event, a pod done releasing), so a simulated day costs about one session per
  event, not 86,400. A session's own binds and phases need no second look: it counted them already.

What is observed (allocation, fragmentation, demand per queue, job times, evictions) goes into a
`RunResult`; `vpolicy.sim.metrics` turns it into numbers. The clock is simulated (`workload.start` +
t is the session's `now`); nothing here reads the wall clock except to time the run, or prints.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Protocol

from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.model import snapshot as snap
from vpolicy.model.decisions import Decisions
from vpolicy.model.resources import ZERO, Resources
from vpolicy.sim import metrics
from vpolicy.sim.workload import Existing, JobSpec, OnEvict, QueueEvent, Workload

GPU = metrics.GPU
# What the ExtendedResourceToleration admission plugin adds to every pod that requests a GPU, so GPU
# pods of a workload may use nodes tainted for GPU pods only, as they would in a real cluster.
GPU_TOLERATION = snap.Toleration(key=GPU, operator="Exists", effect="NoSchedule")
SCHEDULER_NAME = "volcano"
# A safety net against a policy whose decisions never settle: at most this many sessions per run.
MAX_SESSIONS = 2_000_000


class Decide(Protocol):
    """One session: the snapshot and the clock in, decisions out (`run_session` with a policy; tests
    script their own)."""

    def __call__(self, snapshot: snap.ClusterSnapshot, *, now: float) -> Decisions: ...


class Recorder(Protocol):
    """Where each session's snapshot and decisions go (`vpolicy.sim.record.SessionRecorder`)."""

    def write(self, snapshot: snap.ClusterSnapshot, decisions: Decisions, *, now: float) -> None: ...


@dataclass(slots=True)
class JobRecord:
    """One job's life in a run: times in seconds after the start."""

    key: str
    queue: str
    arrival: float
    pods: int
    gpus_per_pod: float
    origin: str  # "workload" or "cluster"
    first_start: float | None = None
    finish: float | None = None  # completed (or failed) at
    failed: bool = False
    restarts: int = 0


@dataclass(frozen=True, slots=True)
class EvictionRecord:
    time: float
    pod: str
    job: str
    action: str  # preempt | reclaim | ...
    for_job: str
    lost_gpu_hours: float  # work thrown away by this eviction (the job's, on restart or fail)


@dataclass(frozen=True, slots=True)
class QueueSample:
    allocated: Resources
    request: Resources  # allocated + pending pods' requests
    pending_jobs: int
    running_jobs: int


@dataclass(frozen=True, slots=True)
class Sample:
    """The cluster from `time` until the next sample."""

    time: float
    cpu_allocated: int  # millicores
    memory_allocated: int  # bytes
    gpu_allocated: int  # milli-GPUs
    gpu_fragmented: int  # milli-GPUs free on nodes that cannot host the smallest pending GPU pod
    pending_jobs: int
    running_jobs: int
    jain: float | None  # Jain's index of allocated/deserved over queues with demand; None: undefined
    queues: dict[str, QueueSample] = field(default_factory=dict)


@dataclass(slots=True)
class RunResult:
    label: str
    source: str
    end: float  # the run covers [0, end)
    capacity: Resources
    samples: list[Sample] = field(default_factory=list)
    jobs: dict[str, JobRecord] = field(default_factory=dict)
    evictions: list[EvictionRecord] = field(default_factory=list)
    sessions: int = 0
    wall_s: float = 0.0
    session_ms: float = 0.0


@dataclass(slots=True)
class _Job:
    """A job's live state: its spec, which pods it has now, when this attempt started."""

    key: str
    queue: str
    min_available: int
    duration: float | None
    on_evict: OnEvict
    record: JobRecord
    templates: list[snap.Pod] = field(default_factory=list)  # pods to recreate on restart
    pods: list[str] = field(default_factory=list)  # keys of its pods in the cluster now
    started: float | None = None
    restarting: bool = False  # its pods are releasing; recreate them when they are gone
    ended: bool = False  # finished or failed; its pods are releasing or gone


def session_of(policy: CompiledPolicy) -> Decide:
    """The engine's session under `policy`, without the post-action solver (reasons are not simulated)."""
    def decide(snapshot: snap.ClusterSnapshot, *, now: float) -> Decisions:
        return run_session(snapshot, policy, now=now, solver_budget=0).decisions

    return decide


def simulate(cluster: snap.ClusterSnapshot, jobs: tuple[JobSpec, ...], policy: CompiledPolicy | Decide, *,
             workload: Workload, label: str = "", period: float = 1.0, until: float | None = None,
             recorder: Recorder | None = None, progress: Callable[[float], None] | None = None) -> RunResult:
    """Run `policy` over `cluster` with the expanded `jobs` of `workload`; deterministic for its inputs."""
    if period <= 0:
        raise ValueError("period must be positive")
    decide = session_of(policy) if isinstance(policy, CompiledPolicy) else policy
    sim = _Simulation(cluster, jobs, workload, period)
    horizon = until if until is not None else workload.duration
    result = RunResult(label=label, source=policy.source if isinstance(policy, CompiledPolicy) else label,
                       end=0.0, capacity=sim.capacity)
    started = time.perf_counter()
    t = 0.0
    previous: tuple[object, ...] | None = None
    while result.sessions < MAX_SESSIONS:
        sim.advance(t, result)
        snapshot = sim.snapshot()
        decisions = decide(snapshot, now=workload.start + t)
        result.sessions += 1
        result.session_ms += float(decisions.stats.get("session_ms", 0.0))  # type: ignore[arg-type]  # reason: stats values are numbers here
        if recorder is not None:
            recorder.write(snapshot, decisions, now=workload.start + t)
        changed = sim.apply(decisions, t, result)
        signature = sim.signature()
        if signature == previous:  # decisions that undo themselves are no change
            changed = False
        previous = signature
        result.samples.append(sim.sample(t))
        if progress is not None:
            progress(t)
        due = t + period if changed or sim.releasing else sim.next_due(t)
        if due is None:
            result.end = t if horizon is None else max(t, horizon)
            break
        due = _on_grid(due, period)
        if horizon is not None and due >= horizon:
            result.end = horizon
            break
        t = due
    sim.close(result)
    result.wall_s = time.perf_counter() - started
    return result


def _on_grid(t: float, period: float) -> float:
    return math.ceil(round(t / period, 9)) * period


class _Simulation:
    def __init__(self, cluster: snap.ClusterSnapshot, jobs: tuple[JobSpec, ...], workload: Workload,
                 period: float):
        self.period = period
        self.start = workload.start
        self.nodes = tuple(n for n in cluster.nodes)
        self.capacity = sum((n.allocatable for n in self.nodes if n.ready and not n.unschedulable), start=ZERO)
        self.queues: dict[str, snap.Queue] = {q.name: q for q in cluster.queues}
        self.classes = list(cluster.priority_classes)
        self.namespaces = cluster.namespaces
        # A pod bound in the dump runs from the start; one being deleted is gone after one period.
        self.pods: dict[str, snap.Pod] = {p.key: _running(p) for p in cluster.pods}
        self.groups: dict[str, snap.PodGroup] = {g.key: g for g in cluster.podgroups}
        self.deferred: list[snap.Pod] = list(cluster.deferred_pods)
        self.pod_started: dict[str, float] = {p.key: 0.0 for p in cluster.pods if p.node_name}
        self.release_at: dict[str, float] = {p.key: period for p in cluster.pods
                                             if p.status is snap.TaskStatus.RELEASING}
        self.pipelined: dict[str, str] = {}  # what the last session pipelined, pod key -> node
        self.finished: list[JobRecord] = []
        self.jobs: dict[str, _Job] = {}
        self.pod_job: dict[str, str] = {}
        self.arrivals = list(jobs)
        self.next_arrival = 0
        self.events: list[QueueEvent] = list(workload.events)
        self.next_event = 0
        self._existing(cluster, workload.existing)

    # setup ----------------------------------------------------------------------------------------
    def _existing(self, cluster: snap.ClusterSnapshot, existing: Existing) -> None:
        for group in cluster.podgroups:
            members = [p for p in (*cluster.pods, *cluster.deferred_pods)
                       if p.group == group.name and p.namespace == group.namespace]
            record = JobRecord(group.key, group.queue, 0.0, len(members),
                               _gpus(members[0].resreq) if members else 0.0, "cluster-pending")
            job = _Job(group.key, group.queue, group.min_member, existing.duration, existing.on_evict, record,
                       templates=[_fresh(p) for p in members],
                       pods=[p.key for p in cluster.pods if p.group == group.name and p.namespace == group.namespace])
            running = sum(1 for k in job.pods if self.pods[k].status in snap.ALLOCATED_STATUSES)
            if running >= max(job.min_available, 1):
                job.started = record.first_start = 0.0
                record.origin = "cluster"
            self.jobs[group.key] = job
            for key in job.pods:
                self.pod_job[key] = group.key

    def _arrive(self, spec: JobSpec, t: float) -> None:
        priority_class = self._priority_class(spec.priority)
        value = next((pc.value for pc in self.classes if pc.name == priority_class), None)
        if value is None:
            value = next((pc.value for pc in self.classes if pc.global_default), 1)
        tolerations = spec.tolerations
        if spec.requests.get(GPU, 0) > 0 and GPU_TOLERATION not in tolerations:
            tolerations = (*tolerations, GPU_TOLERATION)
        creation = self.start + t
        group = snap.PodGroup(
            namespace=spec.namespace, name=spec.name, uid=f"{spec.key}#pg", queue=spec.queue,
            min_member=spec.min_available, min_resources=spec.requests.without("pods").times(spec.min_available),
            priority_class_name=priority_class, phase=snap.PodGroupPhase.PENDING, creation=creation,
            origin=f"workload job {spec.key}")
        templates = [snap.Pod(
            namespace=spec.namespace, name=f"{spec.name}-{spec.task}-{i}", uid="", resreq=spec.requests,
            status=snap.TaskStatus.PENDING, priority=value, priority_class_name=priority_class,
            scheduler_name=SCHEDULER_NAME, group=spec.name, role=spec.task,
            annotations={snap.GROUP_NAME_ANNOTATION: spec.name, snap.TASK_SPEC_ANNOTATION: spec.task},
            node_selector=spec.node_selector, tolerations=tolerations, creation=creation,
            origin=f"workload job {spec.key}") for i in range(spec.pods)]
        record = JobRecord(spec.key, spec.queue, spec.arrival, spec.pods, _gpus(spec.requests), "workload")
        job = _Job(spec.key, spec.queue, spec.min_available, spec.duration, spec.on_evict, record, templates)
        self.groups[spec.key] = group
        self.jobs[spec.key] = job
        self._create_pods(job, attempt=0)

    def _priority_class(self, priority: str | int | None) -> str:
        if priority is None:
            return ""
        if isinstance(priority, str):
            return priority
        name = f"sim-priority-{priority}"  # a bare value: a class of that value, made on first use
        if all(pc.name != name for pc in self.classes):
            self.classes.append(snap.PriorityClass(name, priority))
        return name

    def _create_pods(self, job: _Job, *, attempt: int) -> None:
        job.pods = []
        for template in job.templates:
            pod = replace(template, uid=f"{template.key}#{attempt}")
            self.pods[pod.key] = pod
            self.pod_job[pod.key] = job.key
            job.pods.append(pod.key)

    # one step -------------------------------------------------------------------------------------
    def advance(self, t: float, result: RunResult) -> None:
        """Apply everything due at or before t, in the order a cluster would see it."""
        for key in [k for k, at in self.release_at.items() if at <= t]:
            del self.release_at[key]
            self._remove_pod(key)
        for job in list(self.jobs.values()):
            if job.restarting and not any(k in self.release_at for k in job.pods):
                job.restarting = False
                self._create_pods(job, attempt=job.record.restarts)
                self._set_phase(job.key, snap.PodGroupPhase.PENDING)
            elif job.ended and not any(k in self.release_at for k in job.pods):
                self._drop_job(job)
        for job in list(self.jobs.values()):
            if job.started is not None and job.duration is not None and job.started + job.duration <= t:
                job.record.finish = job.started + job.duration
                for key in job.pods:
                    self._remove_pod(key)
                self._drop_job(job)
        while self.next_event < len(self.events) and self.events[self.next_event].at <= t:
            event = self.events[self.next_event]
            self.next_event += 1
            if event.queue in self.queues:
                self.queues[event.queue] = replace(self.queues[event.queue], state=event.state)
        while self.next_arrival < len(self.arrivals) and self.arrivals[self.next_arrival].arrival <= t:
            self._arrive(self.arrivals[self.next_arrival], t)
            self.next_arrival += 1
        if self.deferred:
            keep = []
            for pod in self.deferred:
                group = self.groups.get(f"{pod.namespace}/{pod.group}")
                if group is not None and group.phase is not snap.PodGroupPhase.PENDING:
                    self.pods[pod.key] = pod
                    job = self.jobs[group.key]
                    job.pods.append(pod.key)
                    self.pod_job[pod.key] = job.key
                elif group is not None:
                    keep.append(pod)
            self.deferred = keep

    def snapshot(self) -> snap.ClusterSnapshot:
        return snap.ClusterSnapshot(nodes=self.nodes, pods=tuple(self.pods.values()),
                                    podgroups=tuple(self.groups.values()), queues=tuple(self.queues.values()),
                                    priority_classes=tuple(self.classes), namespaces=self.namespaces)

    def apply(self, d: Decisions, t: float, result: RunResult) -> bool:
        """Write the session's decisions into the cluster; True when the next period needs a session.

        That is after an eviction (the victims release next period) or a new pipelining (the pods wait
        for that room; those whose own evictions made it are nominated to the node, as Volcano does).
        Binds and PodGroup phases are written back too, but alone they call for no session before the
        next event: the session that made them already counted the bound pods
        as allocated and acted on the phases (enqueue runs before allocate), so a session over its own
        binds decides nothing new.
        """
        changed = False
        for key, status in d.podgroups.items():
            group = self.groups.get(key)
            if group is not None and group.phase.value != status.phase:
                self.groups[key] = replace(group, phase=snap.PodGroupPhase(status.phase))
        for key, node in d.binds.items():
            pod = self.pods.get(key)
            if pod is None:
                continue
            self.pods[key] = replace(pod, status=snap.TaskStatus.RUNNING, phase="Running", node_name=node,
                                     nominated_node="")
            self.pod_started[key] = t
        for key, node in d.pipelined.items():
            pod = self.pods.get(key)
            if pod is None:
                continue
            changed = changed or self.pipelined.get(key) != node
            nominated = d.nominated.get(key)
            if nominated is not None and pod.nominated_node != nominated:
                self.pods[key] = replace(pod, nominated_node=nominated)
        self.pipelined = dict(d.pipelined)
        for eviction in d.evictions:
            if eviction.pod in self.pods and eviction.pod not in self.release_at:
                self._evict(eviction.pod, t, result, action=eviction.action, for_job=eviction.for_job)
                changed = True
        for job in self.jobs.values():
            if job.started is None and not job.ended and not job.restarting:
                running = sum(1 for k in job.pods if self.pods[k].status is snap.TaskStatus.RUNNING)
                if running >= max(job.min_available, 1):
                    job.started = t
                    if job.record.first_start is None:
                        job.record.first_start = t
                    # What the next session's close would write back (its pods are scheduled now).
                    group = self.groups.get(job.key)
                    if group is not None and group.phase in (snap.PodGroupPhase.PENDING, snap.PodGroupPhase.INQUEUE):
                        self.groups[job.key] = replace(group, phase=snap.PodGroupPhase.RUNNING)
        return changed

    def _evict(self, key: str, t: float, result: RunResult, *, action: str, for_job: str) -> None:
        job_key = self.pod_job.get(key)
        job = self.jobs.get(job_key) if job_key else None
        victims = [key]
        if job is not None and not job.ended and not job.restarting:
            victims = [k for k in job.pods if self.pods[k].node_name and k not in self.release_at]
            if key not in victims:
                victims.append(key)
        lost = sum(_gpus(self.pods[k].resreq) * max(0.0, t - self.pod_started.get(k, t)) for k in victims
                   if self.pods[k].status is snap.TaskStatus.RUNNING) / 3600.0
        result.evictions.append(EvictionRecord(t, key, job_key or "", action, for_job, lost))
        for victim in victims:
            self.pods[victim] = replace(self.pods[victim], status=snap.TaskStatus.RELEASING)
            self.release_at[victim] = t + self.period
        for victim in job.pods if job is not None and not job.ended and not job.restarting else ():
            if victim not in self.release_at:  # pods of the job not yet placed go with it, at once
                self._remove_pod(victim)
        if job is None or job.ended or job.restarting:
            return
        job.started = None
        if job.on_evict == "restart":
            job.record.restarts += 1
            job.restarting = True
        else:
            job.record.failed = True
            job.record.finish = t
            job.ended = True

    def _remove_pod(self, key: str) -> None:
        self.pods.pop(key, None)
        self.pod_started.pop(key, None)
        self.release_at.pop(key, None)

    def _drop_job(self, job: _Job) -> None:
        for key in job.pods:
            self._remove_pod(key)
            self.pod_job.pop(key, None)
        self.groups.pop(job.key, None)
        self.deferred = [p for p in self.deferred if f"{p.namespace}/{p.group}" != job.key]
        del self.jobs[job.key]
        self.finished.append(job.record)

    def _set_phase(self, key: str, phase: snap.PodGroupPhase) -> None:
        group = self.groups.get(key)
        if group is not None:
            self.groups[key] = replace(group, phase=phase)

    # observation ----------------------------------------------------------------------------------
    @property
    def releasing(self) -> bool:
        return bool(self.release_at)

    def signature(self) -> tuple[object, ...]:
        return (tuple((k, p.status, p.node_name, p.nominated_node) for k, p in self.pods.items()),
                tuple((k, g.phase) for k, g in self.groups.items()))

    def next_due(self, t: float) -> float | None:
        due: list[float] = []
        if self.next_arrival < len(self.arrivals):
            due.append(self.arrivals[self.next_arrival].arrival)
        if self.next_event < len(self.events):
            due.append(self.events[self.next_event].at)
        due.extend(j.started + j.duration for j in self.jobs.values()
                   if j.started is not None and j.duration is not None)
        later = [d for d in due if d > t]
        return min(later) if later else (t + self.period if any(d <= t for d in due) else None)

    def sample(self, t: float) -> Sample:
        used: dict[str, Resources] = {}
        allocated = ZERO
        by_queue: dict[str, list[Resources]] = {}
        pending_gpu: list[Resources] = []
        for key, pod in self.pods.items():
            job = self.jobs.get(self.pod_job.get(key, ""))
            queue = job.queue if job is not None else ""
            if pod.node_name and pod.status in snap.OCCUPYING_STATUSES | {snap.TaskStatus.RUNNING}:
                used[pod.node_name] = used.get(pod.node_name, ZERO) + pod.resreq
                allocated = allocated + pod.resreq
                if queue:
                    by_queue.setdefault(queue, [ZERO, ZERO])[0] += pod.resreq
            elif pod.status is snap.TaskStatus.PENDING:
                if queue:
                    by_queue.setdefault(queue, [ZERO, ZERO])[1] += pod.resreq
                if pod.resreq.get(GPU, 0) > 0:
                    pending_gpu.append(pod.resreq)
        free = [n.allocatable - used.get(n.name, ZERO) for n in self.nodes if n.ready and not n.unschedulable]
        fragmented = metrics.fragmented_gpus(free, pending_gpu)
        counts: dict[str, list[int]] = {}
        pending = running = 0
        for job in self.jobs.values():
            if job.ended:
                continue
            is_running = job.started is not None
            running += is_running
            pending += not is_running
            counts.setdefault(job.queue, [0, 0])[0 if not is_running else 1] += 1
        queues = {}
        for name in sorted(set(by_queue) | set(counts)):
            alloc, waiting = by_queue.get(name, [ZERO, ZERO])
            c = counts.get(name, [0, 0])
            queues[name] = QueueSample(alloc, alloc + waiting, c[0], c[1])
        demands = [metrics.QueueDemand(name, self.queues[name].weight if name in self.queues else 1, q.allocated,
                                       q.request, self.queues[name].capability if name in self.queues else None)
                   for name, q in queues.items()]
        return Sample(time=t, cpu_allocated=allocated.get("cpu", 0), memory_allocated=allocated.get("memory", 0),
                      gpu_allocated=allocated.get(GPU, 0), gpu_fragmented=fragmented, pending_jobs=pending,
                      running_jobs=running, jain=metrics.jain_of_queues(demands, self.capacity), queues=queues)

    def close(self, result: RunResult) -> None:
        """Hand every job's record to the result, in arrival order (finished ones first seen first)."""
        for record in (*self.finished, *(j.record for j in self.jobs.values())):
            result.jobs[record.key] = record


def _running(pod: snap.Pod) -> snap.Pod:
    if pod.status is snap.TaskStatus.BOUND:
        return replace(pod, status=snap.TaskStatus.RUNNING, phase="Running")
    return pod


def _fresh(pod: snap.Pod) -> snap.Pod:
    """A pod as its controller would recreate it: Pending, on no node."""
    return replace(pod, status=snap.TaskStatus.PENDING, phase="Pending", node_name="", nominated_node="")


def _gpus(resreq: Resources) -> float:
    return resreq.get(GPU, 0) / 1000

"""The cheapest change that lets a pending pod (or podgroup) run, checked by re-running the engine.

Candidates, each a small edit of the snapshot (`dataclasses.replace`, nothing else changes):

- `min-member`: a lower minMember for the job (fewer replicas needed together);
- `request`: a smaller request on one resource for the job's pending pods;
- `queue`: the job moved to another open leaf queue;
- `capability`: a larger capability (on one resource) for the job's queue and the ancestors that cap it;
- `wait`: named running jobs end (their pods leave the snapshot);
- `preempt`: named running jobs of lower priority are evicted, when the policy has an evicting action
  (preempt or reclaim);
- `stop`: the same jobs ended by a person (stopped or deleted), when the policy has none: the scheduler
  would never evict them, so the fix must not read as something it could do.

A podgroup with no pods yet (a Volcano Job's, whose controller creates them once it is enqueued) is
fixed when the engine enqueues it; only the changes enqueue reads can do that (queue, capability on its
minResources, ending jobs, and minMember for a policy that reads it).

The solver narrows the numeric searches: when no configured action can free resources (no preempt or
reclaim), a job's best case is to be served first on the resources the session opens with, so a
candidate whose `explain_pending` encoding is unsat there is skipped unrun (minMember values, the
ceiling of a request search). Every candidate reported was judged by running the exact engine on the
edited snapshot and placing the target; numeric searches are binary searches that assume a smaller
request (or a larger capability, up to what the cluster has) never hurts. Fixes are ordered by `cost`
(see docs/explain.md): the fraction by which the fix changes the one number it touches, 1 for moving
queue, 0.25 per pod for ending jobs (+0.25 when preempting).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Iterator

from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.placement import Placement
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.session import CompiledPolicy, SessionResult, run_session
from vpolicy.engine.state import SessionState, TaskInfo
from vpolicy.engine.statement import Outcome
from vpolicy.harness import explain_pending, explain_render as render
from vpolicy.model import snapshot as snap
from vpolicy.model.decisions import Decisions
from vpolicy.model.resources import CPU, MEMORY, PODS, Resources, total
from vpolicy.model.snapshot import ALLOCATED_STATUSES, ClusterSnapshot, PodGroupPhase, TaskStatus
from vpolicy.solve import cores
from vpolicy.solve.backend_z3 import Z3Backend

_MAX_JOB_TRIES = 12  # single running jobs tried as "wait"/"preempt"/"stop" fixes
_MAX_QUEUE_TRIES = 10
_STEP = {CPU: 100, MEMORY: 64 << 20}  # request search granularity: 100m cpu, 64Mi memory; others 1 unit


@dataclass(frozen=True, slots=True)
class Fix:
    kind: str  # min-member | request | queue | capability | wait | preempt | stop
    text: str
    cost: float
    change: dict[str, object]

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "text": self.text, "cost": round(self.cost, 4), "change": self.change}


@dataclass(slots=True)
class Search:
    """One fix search: the session explained, the target, and the engine re-runs made so far."""

    snapshot: ClusterSnapshot
    policy: CompiledPolicy
    result: SessionResult
    job_key: str
    target: TaskInfo | None
    now: float = 0.0
    deadline: float = 0.0
    runs: int = 0
    backend: Z3Backend | None = None
    _initial: SessionResult | None = None

    @property
    def evicts(self) -> bool:
        """Whether the policy has an action that evicts running pods (preempt, reclaim)."""
        return bool({"preempt", "reclaim"} & set(self.policy.actions))

    @property
    def prunes(self) -> bool:
        """The solver may rule candidates out only when no action can free resources (see `evicts`):
        then the job's best case is to be served first, on the free resources the session opens with."""
        return not self.evicts

    def initial(self) -> SessionResult:
        """The session as it opens, before any action: the job's best case when nothing is evicted,
        with the job served first (enqueued, as enqueue would, when its podgroup is still Pending)."""
        if self._initial is None:
            state = SessionState(self.snapshot)
            rt = Runtime(self.policy.tiers, state, now=self.now)
            ctx = ActionContext(rt, state, Placement(rt, state), Outcome(), self.policy.actions)
            self._initial = SessionResult(Decisions(), state, ctx)
            _enqueue_first(self._initial, self.job_key)
        return self._initial

    def hopeless(self) -> bool:
        """True when the solver proves the job cannot fit even in its best case (see `prunes`)."""
        if not self.prunes:
            return False
        initial = self.initial()
        if self.job_key not in initial.state.jobs:
            return False
        target = None
        if self.target is not None:
            target = next((t for t in initial.state.jobs[self.job_key].tasks if t.uid == self.target.uid), None)
        verdict = explain_pending.analyse(initial, self.job_key, target=target if target and target.best_effort else None,
                                          backend=self.backend, rlimit=cores.CHECK_RLIMIT // 4).verdict
        return verdict == "conflict"

    def expired(self) -> bool:
        return time.perf_counter() > self.deadline

    @property
    def podless(self) -> bool:
        """The target is a podgroup with no pods yet: its Volcano Job's controller creates them once
        enqueue admits it, so being enqueued is what a fix must achieve."""
        return self.target is None and not _job_pods(self.snapshot, self.job_key)

    def succeeds(self, edited: ClusterSnapshot) -> bool:
        """Does the engine, on `edited`, place the target (a pod), make the job ready or pipelined, or
        (a podgroup with no pods yet) enqueue it?"""
        self.runs += 1
        outcome = run_session(edited, self.policy, now=self.now, solver_budget=0)
        doc = outcome.decisions
        if self.target is not None:
            return self.target.key in doc.binds or self.target.key in doc.pipelined
        job = outcome.state.jobs.get(self.job_key)
        if job is None:
            return False
        if self.podless:
            return job.phase != PodGroupPhase.PENDING.value
        placed = any(t.key in doc.binds or t.key in doc.pipelined for t in job.tasks)
        return placed and job.ready_count + job.pipelined_count >= job.min_available


def _enqueue_first(opening: SessionResult, job_key: str) -> None:
    """Admit `job_key` in `opening` as enqueue would if it came first: otherwise a podgroup still Pending
    carries the "not enqueued" gate into every best-case question, and each candidate reads as hopeless
    (a request search would stop at its first step). A job enqueue refuses even first stays Pending."""
    job = opening.state.jobs.get(job_key)
    if job is None or job.phase not in (PodGroupPhase.PENDING.value, "") or "enqueue" not in opening.context.actions:
        return
    if not job.has_min_resources or opening.context.runtime.job_enqueueable(job):
        job.queue.inqueue = job.queue.inqueue + job.min_resources
        job.phase = PodGroupPhase.INQUEUE.value


def search(snapshot: ClusterSnapshot, policy: CompiledPolicy, result: SessionResult, job_key: str, *,
           target: TaskInfo | None = None, now: float = 0.0, budget_s: float = 10.0) -> tuple[list[Fix], int]:
    """Every fix found within the budget, cheapest first, and the number of engine runs it took."""
    s = Search(snapshot, policy, result, job_key, target, now, time.perf_counter() + budget_s, 0, Z3Backend())
    fixes: list[Fix] = []
    for finder in (_min_member, _requests, _queues, _capability, _ending_jobs):
        if s.expired():
            break
        fixes.extend(finder(s))
    fixes.sort(key=lambda f: (f.cost, f.kind, f.text))
    return fixes, s.runs


def apply(snapshot: ClusterSnapshot, fix: Fix) -> ClusterSnapshot:
    """The snapshot with `fix` made (what the search ran the engine on)."""
    c = fix.change
    if fix.kind == "min-member":
        return _with_podgroup(snapshot, str(c["podgroup"]), min_member=int(c["minMember"]))  # type: ignore[call-overload]  # reason: JSON-shaped change
    if fix.kind == "queue":
        return _with_podgroup(snapshot, str(c["podgroup"]), queue=str(c["queue"]))
    if fix.kind == "request":
        keys = set(c["pods"])  # type: ignore[call-overload]  # reason: JSON-shaped change
        pods = [p for p in snapshot.pods if p.key in keys]
        return _edit_pods(snapshot, pods, str(c["resource"]), int(c["request"]))  # type: ignore[call-overload]  # reason: JSON-shaped change
    if fix.kind == "capability":
        names = set(c["queues"])  # type: ignore[call-overload]  # reason: JSON-shaped change
        queues = [q for q in snapshot.queues if q.name in names]
        return _raise(snapshot, queues, str(c["resource"]), int(c["increase"]))  # type: ignore[call-overload]  # reason: JSON-shaped change
    if fix.kind in ("wait", "preempt", "stop"):
        return _without_jobs(snapshot, list(c["jobs"]))  # type: ignore[call-overload]  # reason: JSON-shaped change
    raise ValueError(f"unknown fix kind {fix.kind!r}")


# Edits ----------------------------------------------------------------------------------------------

def _with_podgroup(snapshot: ClusterSnapshot, key: str, **changes: object) -> ClusterSnapshot:
    return replace(snapshot, podgroups=tuple(replace(pg, **changes) if pg.key == key else pg  # type: ignore[arg-type]  # reason: field names checked by replace
                                             for pg in snapshot.podgroups))


def _job_pods(snapshot: ClusterSnapshot, key: str) -> list[snap.Pod]:
    return [p for p in snapshot.pods if p.group and f"{p.namespace}/{p.group}" == key]


def _pending_pods(s: Search) -> list[snap.Pod]:
    return [p for p in _job_pods(s.snapshot, s.job_key) if p.status is TaskStatus.PENDING and not p.node_name]


# min-member ------------------------------------------------------------------------------------------

def _min_member(s: Search) -> Iterator[Fix]:
    old = next(pg.min_member for pg in s.snapshot.podgroups if pg.key == s.job_key)
    if old <= 1:
        return
    tried = 0
    for m in range(old - 1, 0, -1):
        if s.expired() or tried >= 4:
            return
        with _edited_min_member(s, m):
            if s.hopeless():
                continue  # the solver proves it: no placement of m tasks even on the opening free resources
        tried += 1
        if s.succeeds(_with_podgroup(s.snapshot, s.job_key, min_member=m)):
            yield Fix("min-member", f"lower minMember of {s.job_key} from {old} to {m} (fewer replicas placed together)",
                      (old - m) / old, {"podgroup": s.job_key, "minMember": m, "was": old})
            return


@contextmanager
def _edited_min_member(s: Search, m: int) -> Iterator[None]:
    job = s.initial().state.jobs.get(s.job_key)
    if job is None:
        yield
        return
    old = job.min_available
    job.min_available = m
    try:
        yield
    finally:
        job.min_available = old


@contextmanager
def _edited_requests(s: Search, keys: set[str], dim: str, value: int) -> Iterator[None]:
    job = s.initial().state.jobs.get(s.job_key)
    tasks = [t for t in job.tasks if t.key in keys] if job is not None else []
    saved = [t.resreq for t in tasks]
    for t in tasks:
        t.resreq = _capped(t.resreq, dim, value)
    try:
        yield
    finally:
        for t, r in zip(tasks, saved):
            t.resreq = r


# requests --------------------------------------------------------------------------------------------

def _requests(s: Search) -> Iterator[Fix]:
    pods = _pending_pods(s)
    if s.target is not None:
        pods = [p for p in pods if p.role == s.target.pod.role] or pods
    dims = sorted({d for p in pods for d in p.resreq.dims()} - {PODS})
    for dim in dims:
        if s.expired():
            return
        current = max(p.resreq.get(dim, 0) for p in pods)
        step = _STEP.get(dim, 1000 if dim not in (MEMORY, "ephemeral-storage") else 1 << 20)
        if current <= step or not s.succeeds(_edit_requests(s, pods, dim, step)):
            continue
        lo, hi = 1, _ceiling(s, pods, dim, step, current)  # in steps; lo is known good
        while lo < hi and not s.expired():  # the largest request the engine accepts (smaller never hurts)
            mid = (lo + hi + 1) // 2
            if s.succeeds(_edit_requests(s, pods, dim, mid * step)):
                lo = mid
            else:
                hi = mid - 1
        value = lo * step
        names = ", ".join(p.key for p in pods[:3]) + (f" and {len(pods) - 3} more" if len(pods) > 3 else "")
        yield Fix("request", f"request {dim} {render.quantity(dim, value)} instead of "
                             f"{render.quantity(dim, current)} per pod ({names})",
                  (current - value) / current,
                  {"pods": [p.key for p in pods], "resource": dim, "request": value, "was": current})


def _ceiling(s: Search, pods: list[snap.Pod], dim: str, step: int, current: int) -> int:
    """The largest request (in steps, below `current`) the solver does not rule out in the job's best case;
    without pruning (preempt/reclaim configured), just below `current`."""
    lo, hi = 1, (current - 1) // step
    if not s.prunes:
        return hi
    keys = {p.key for p in pods}
    while lo < hi and not s.expired():
        mid = (lo + hi + 1) // 2
        with _edited_requests(s, keys, dim, mid * step):
            ruled_out = s.hopeless()
        if ruled_out:
            hi = mid - 1
        else:
            lo = mid
    return lo


def _edit_requests(s: Search, pods: list[snap.Pod], dim: str, value: int) -> ClusterSnapshot:
    return _edit_pods(s.snapshot, pods, dim, value)


def _edit_pods(snapshot: ClusterSnapshot, pods: list[snap.Pod], dim: str, value: int) -> ClusterSnapshot:
    keys = {p.key for p in pods}
    return replace(snapshot, pods=tuple(
        replace(p, resreq=_capped(p.resreq, dim, value)) if p.key in keys else p for p in snapshot.pods))


def _capped(res: Resources, dim: str, value: int) -> Resources:
    return Resources({**res.to_dict(), dim: min(res.get(dim, 0), value)})


# queues ----------------------------------------------------------------------------------------------

def _leaf_queues(snapshot: ClusterSnapshot) -> list[snap.Queue]:
    parents = {q.parent or (snap.ROOT_QUEUE if q.name != snap.ROOT_QUEUE else "") for q in snapshot.queues}
    return [q for q in snapshot.queues if q.name not in parents and q.name != snap.ROOT_QUEUE
            and q.state is snap.QueueState.OPEN]


def _queues(s: Search) -> Iterator[Fix]:
    pg = next(p for p in s.snapshot.podgroups if p.key == s.job_key)
    for queue in _leaf_queues(s.snapshot)[:_MAX_QUEUE_TRIES]:
        if queue.name == pg.queue or s.expired():
            continue
        if s.succeeds(_with_podgroup(s.snapshot, s.job_key, queue=queue.name)):
            yield Fix("queue", f"submit {s.job_key} to queue {queue.name} instead of {pg.queue}", 1.0,
                      {"podgroup": s.job_key, "queue": queue.name, "was": pg.queue})


# capability ------------------------------------------------------------------------------------------

def _chain(snapshot: ClusterSnapshot, name: str) -> list[snap.Queue]:
    by_name = {q.name: q for q in snapshot.queues}
    out: list[snap.Queue] = []
    q = by_name.get(name)
    while q is not None and q not in out:
        out.append(q)
        parent = q.parent or (snap.ROOT_QUEUE if q.name != snap.ROOT_QUEUE else "")
        q = by_name.get(parent)
    return out


def _capability(s: Search) -> Iterator[Fix]:
    pg = next(p for p in s.snapshot.podgroups if p.key == s.job_key)
    chain = _chain(s.snapshot, pg.queue)
    demand = _demand(s, pg)
    for dim in sorted(demand.dims() - {PODS}):
        capped = [q for q in chain if q.capability is not None and dim in q.capability
                  and not (dim in (CPU, MEMORY) and q.capability[dim] <= 0)]
        if not capped or s.expired():
            continue
        step = _STEP.get(dim, 1000)
        need = demand.get(dim, 0)
        # never above what the cluster has: no queue can use more, and in a capacity hierarchy a child's
        # capability above its parent's (a root without one holds the cluster) stops the whole session
        room = _cluster_total(s.snapshot, dim) - max(q.capability.get(dim, 0) for q in capped if q.capability)
        top = min(max(1, -(-need // step)), room // step)
        if top < 1 or not s.succeeds(_raise(s.snapshot, capped, dim, top * step)):
            continue
        lo, hi = 1, top  # smallest number of steps that works; hi is known good
        while lo < hi and not s.expired():
            mid = (lo + hi) // 2
            if s.succeeds(_raise(s.snapshot, capped, dim, mid * step)):
                hi = mid
            else:
                lo = mid + 1
        delta = hi * step
        first = capped[0]
        old = first.capability[dim] if first.capability else 0
        others = f" (and {', '.join(q.name for q in capped[1:])})" if len(capped) > 1 else ""
        yield Fix("capability", f"raise capability {dim} of queue {first.name} from {render.quantity(dim, old)} to "
                                f"{render.quantity(dim, old + delta)}{others}", delta / max(old, 1),
                  {"queues": [q.name for q in capped], "resource": dim, "increase": delta})


def _cluster_total(snapshot: ClusterSnapshot, dim: str) -> int:
    return sum(n.allocatable.get(dim, 0) for n in snapshot.nodes)


def _demand(s: Search, pg: snap.PodGroup) -> Resources:
    """What the job asks of its queue: its pending pods' requests, or, for a podgroup with no pods yet,
    the minResources enqueue checks."""
    if s.podless:
        return pg.min_resources or Resources()
    return total(p.resreq for p in _pending_pods(s))


def _raise(snapshot: ClusterSnapshot, queues: list[snap.Queue], dim: str, delta: int) -> ClusterSnapshot:
    names = {q.name for q in queues}

    def bigger(q: snap.Queue) -> snap.Queue:
        cap = q.capability or Resources()
        return replace(q, capability=Resources({**cap.to_dict(), dim: cap.get(dim, 0) + delta}))
    return replace(snapshot, queues=tuple(bigger(q) if q.name in names else q for q in snapshot.queues))


# ending or preempting running jobs ------------------------------------------------------------------------

def _ending_jobs(s: Search) -> Iterator[Fix]:
    pg = next(p for p in s.snapshot.podgroups if p.key == s.job_key)
    mine = s.snapshot.job_priority(pg)
    running: dict[str, list[snap.Pod]] = {}
    for pod in s.snapshot.pods:
        key = f"{pod.namespace}/{pod.group}" if pod.group else ""
        if key and key != s.job_key and pod.node_name and pod.status in ALLOCATED_STATUSES:
            running.setdefault(key, []).append(pod)
    priority = {p.key: s.snapshot.job_priority(p) for p in s.snapshot.podgroups}
    order = sorted(running, key=lambda k: (len(running[k]), k))[:_MAX_JOB_TRIES]
    found_single = False
    for key in order:
        if s.expired():
            return
        if s.succeeds(_without_jobs(s.snapshot, [key])):
            found_single = True
            yield _ending_fix([key], running, priority, mine, evicts=s.evicts)
    if found_single or s.expired() or not order:
        return
    chosen: list[str] = []
    for key in sorted(order, key=lambda k: -len(running[k])):  # greedily, biggest first, then prune
        chosen.append(key)
        if s.succeeds(_without_jobs(s.snapshot, chosen)):
            break
        if s.expired():
            return
    else:
        return
    for key in list(chosen):
        if len(chosen) > 1 and not s.expired():
            trial = [k for k in chosen if k != key]
            if s.succeeds(_without_jobs(s.snapshot, trial)):
                chosen = trial
    yield _ending_fix(chosen, running, priority, mine, evicts=s.evicts)


def _ending_fix(keys: list[str], running: dict[str, list[snap.Pod]], priority: dict[str, int], mine: int, *,
                evicts: bool) -> Fix:
    """Ending `keys` as a fix, worded as who would end them: the scheduler preempting lower-priority
    jobs (only when the policy has an evicting action), a person stopping them (when it has none), or
    the jobs finishing on their own. A person's stop costs what waiting does: the same pods leave."""
    pods = sum(len(running[k]) for k in keys)
    change: dict[str, object] = {"jobs": keys, "pods": pods}
    where = "; ".join(f"{k}: {len(running[k])} pod{'s' if len(running[k]) != 1 else ''} on "
                      f"{', '.join(sorted({p.node_name for p in running[k]}))}" for k in keys)
    if not all(priority.get(k, 0) < mine for k in keys):
        return Fix("wait", f"wait for {', '.join(keys)} to end ({where})", 0.25 * pods, change)
    prios = ", ".join(f"{k} priority {priority.get(k, 0)}" for k in keys)
    if evicts:
        return Fix("preempt", f"preempt lower-priority {', '.join(keys)} ({prios} < {mine}; {where})",
                   0.25 * pods + 0.25, change)
    return Fix("stop", f"stop or delete lower-priority {', '.join(keys)} (this policy's actions do not preempt; "
                       f"{prios} < {mine}; {where})", 0.25 * pods, change)


def _without_jobs(snapshot: ClusterSnapshot, keys: list[str]) -> ClusterSnapshot:
    gone = set(keys)
    return replace(snapshot,
                   pods=tuple(p for p in snapshot.pods if not (p.group and f"{p.namespace}/{p.group}" in gone)),
                   podgroups=tuple(pg for pg in snapshot.podgroups if pg.key not in gone))

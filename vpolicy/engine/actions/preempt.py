"""preempt: starving jobs evict lower-order work inside their own queue (reference §4.3).

Phase A: between jobs of one queue, a statement per preemptor job, committed only when the job is then
pipelined. Phase B: between tasks of one starving job. Victims are what the policy's `preemptable`
rules allow (intersection within a tier, first tier with victims), evicted lowest-order first and only
until the preemptor fits; a node where it never fits gets its evictions rolled back.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vpolicy.engine import optimize
from vpolicy.engine.actions import preempt_plan
from vpolicy.engine.actions.context import ActionContext, unresolvable_before, unresolvable_rows_before
from vpolicy.engine.actions.role_fit_memo import ENABLE_KEY
from vpolicy.engine.actions.evict_common import fits_with, ordered_victims, useful_candidates
from vpolicy.engine.heap import PriorityQueue, Queue
from vpolicy.engine.placement import SPEC_READS, fits, task_key
from vpolicy.engine.state import JobInfo, NodeInfo, QueueInfo, TaskInfo
from vpolicy.engine.statement import Statement
from vpolicy.engine.victim_reuse import FailMemo
from vpolicy.model.snapshot import TaskStatus

_PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
# the two phases, named on the failure memo and on each pipeline operation (`Operation.phase`)
OTHER_JOBS, SAME_JOB = "other-jobs", "same-job"


def run(ctx: ActionContext) -> None:
    ctx.forget_node_memos()
    ctx.victim_fails = FailMemo(ctx.runtime, "preemptable", ctx.placement.arrays, ctx.state.job_log)
    ctx.preempt_role_failures.clear()
    rt = ctx.runtime
    hosts, runs_victims = _preemptable(ctx)
    nowhere = np.zeros(len(ctx.placement.node_list), dtype=bool)
    queues: PriorityQueue[QueueInfo] = PriorityQueue(rt.queue_before)
    preemptors: dict[str, PriorityQueue[JobInfo]] = {}
    tasks: dict[str, Queue[TaskInfo]] = {}
    # every starving job of every queue: Volcano runs the within-job phase over all of them after each
    # queue's between-jobs phase (preempt.go Execute, v1.10.0 and main: `for _, job := range
    # underRequest` inside `for _, queue := range queues`), in its jobs map's order (here the snapshot's)
    under_request: list[JobInfo] = []
    seen: set[str] = set()
    for job in ctx.schedulable_jobs():
        if job.queue.name not in seen:
            seen.add(job.queue.name)
            queues.push(job.queue)
        if job.topology_mode:  # Volcano's preempt acts for no job with a networkTopology (its issue 4374)
            continue
        if rt.job_starving(job):
            pending = ctx.pending_tasks(job, best_effort=None)  # a best-effort task preempts too
            if not pending:
                continue
            under_request.append(job)
            preemptors.setdefault(job.queue.name, PriorityQueue(rt.job_before)).push(job)
            tasks[job.key] = rt.task_queue(pending)

    if ctx.optimize and ctx.witness is not None:
        ctx.victim_plan = preempt_plan.victim_plan(ctx, hosts, nowhere, between=_other_job_same_queue,
                                                   within=_same_job, same_job=SAME_JOB)
    while not queues.empty():
        queue = queues.pop()
        jobs = preemptors.get(queue.name)
        while jobs is not None and not jobs.empty():
            if ctx.out_of_time():
                return  # only an optimize run stops early, and never_worse then keeps Volcano's
            job = jobs.pop()
            stmt = ctx.statement()
            assigned = False
            while rt.job_starving(job) and not tasks[job.key].empty():
                preemptor = tasks[job.key].pop()
                if preempt_one(ctx, stmt, preemptor, _other_job_same_queue(preemptor), memo=OTHER_JOBS,
                               hosts=hosts.get(queue.name, nowhere), own_tasks=job.key in runs_victims):
                    assigned = True
            if rt.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()
                continue
            if assigned:
                jobs.push(job)

        for job in under_request:
            # with nothing of its own to preempt no node offers a same-job victim: only room will do
            own_hosts = hosts.get(job.queue.name, nowhere) if job.key in runs_victims else nowhere
            # the job's worksheet is replaced, so a later queue's between-jobs phase pops what this one
            # left (preempt.go: `preemptorTasks[job.UID] = ...`, "preemptor numbers lose when in same job")
            own = tasks[job.key] = rt.task_queue(ctx.pending_tasks(job, best_effort=None))
            while not own.empty():
                if ctx.out_of_time():
                    return
                preemptor = own.pop()
                stmt = ctx.statement()
                assigned = preempt_one(ctx, stmt, preemptor, _same_job(preemptor), memo=SAME_JOB, hosts=own_hosts)
                stmt.commit()
                if not assigned:
                    break


def _preemptable(ctx: ActionContext) -> tuple[dict[str, np.ndarray], set[str]]:
    """What can be a victim as the action starts: queue name -> a mask over the node rows where the
    queue runs something preemptable, and the keys of the jobs that run something preemptable. Within
    the action tasks only stop running (evicted; a discard puts them back where they were), so no
    other node can ever offer one of the queue's tasks as a victim (the node walk skips them
    unscanned), and no other job ever offers one of its own."""
    row = ctx.placement.arrays.row
    hosts: dict[str, np.ndarray] = {}
    runs_victims: set[str] = set()
    for job in ctx.state.jobs.values():
        for task in job.tasks:
            # a pod may name a node the snapshot does not hold: no victim of preempt there
            if task.node_name in row and task.status in _PREEMPTABLE_STATUSES:
                mask = hosts.get(job.queue.name)
                if mask is None:
                    mask = hosts[job.queue.name] = np.zeros(len(ctx.placement.node_list), dtype=bool)
                mask[row[task.node_name]] = True
                runs_victims.add(job.key)
    return hosts, runs_victims


def _other_job_same_queue(preemptor: TaskInfo) -> Callable[[TaskInfo], bool]:
    """The between-jobs phase's victim filter: evictable tasks of another job of the preemptor's queue."""
    job = preemptor.job
    assert job is not None

    def keep(t: TaskInfo) -> bool:
        # identity tests first: most tasks on a node belong to other queues
        return t.job is not None and t.job.queue is job.queue and t.job is not job and _evictable(t, preemptor)
    return keep


def _same_job(preemptor: TaskInfo) -> Callable[[TaskInfo], bool]:
    """The within-job phase's victim filter: evictable tasks of the preemptor's own job."""
    job = preemptor.job

    def keep(t: TaskInfo) -> bool:
        return t.job is job and _evictable(t, preemptor)
    return keep


def _evictable(task: TaskInfo, preemptor: TaskInfo) -> bool:
    status = task.status  # identity tests: hashing an Enum member runs Python code
    if not (status is TaskStatus.RUNNING or status is TaskStatus.BOUND) or not task.preemptable:
        return False
    return not (preemptor.best_effort and not task.best_effort)


def preempt_one(ctx: ActionContext, stmt: Statement, preemptor: TaskInfo, keep, *, memo: str,  # type: ignore[no-untyped-def]  # reason: predicate closure
                hosts: np.ndarray, own_tasks: bool = True) -> bool:
    """Evict for one task on the best node that works; `memo` names the victim filter `keep`, so a
    failure is remembered for the task's identical siblings until the session state changes, and each
    node's candidates are kept for them until that node changes; only `hosts` (a mask over the node
    rows) can hold a victim. `own_tasks` False says the preemptor's job runs nothing preemptable: its
    between-jobs filter then keeps on each node what it keeps for any job of the queue, so the node
    answers are shared with the queue's other preemptors of the same spec."""
    if preemptor.pod.preemption_policy == "Never" or preemptor.job is None:
        return False
    queue = preemptor.job.queue
    if ctx.victim_plan is not None and optimize.evict_planned(
            ctx, stmt, preemptor, callback="preemptable", keep=keep, action="preempt",
            fits=lambda n: _fits(ctx, queue, preemptor, n)):
        return True  # before the failure memo: the plan may hold for this sibling where another failed
    spec = task_key(preemptor, SPEC_READS)
    key = ("preempt", memo, preemptor.job.key, spec)
    # a sibling's failure holds for this task only if an earlier action's fit errors keep the same
    # nodes out for both (`Placement.preempt_rows`)
    failure_key = (*key, unresolvable_before(ctx, preemptor))
    if ctx.eviction_failed_before(failure_key):
        return False
    # the failure depends on the job (the rules read it), the node answers only on the filter
    shared = memo == OTHER_JOBS and not own_tasks
    kind = ("preempt", memo, ("queue", queue.name), spec) if shared else key
    done = _preempt_one(ctx, stmt, preemptor, keep, kind, hosts, phase=memo)
    if not done:
        ctx.remember_eviction_failure(failure_key)
    return done


def _preempt_one(ctx: ActionContext, stmt: Statement, preemptor: TaskInfo, keep,  # type: ignore[no-untyped-def]  # reason: predicate closure
                 kind: tuple[object, ...], hosts: np.ndarray, *, phase: str) -> bool:
    assert preemptor.job is not None
    queue = preemptor.job.queue
    among = _queue_tasks(ctx, queue)
    first = optimize.witness_first(ctx, preemptor) if ctx.optimize else None
    if first is not None and _preempt_on(ctx, stmt, preemptor, keep, kind, first, among, phase=phase):
        return True
    missed = ctx.optimize and optimize.missed_by_volcano(ctx, preemptor)
    if missed and not optimize.gpus(preemptor.resreq):
        return False
    # scored over every node first: a normalised score depends on the set it is computed over; then
    # only nodes that can offer a victim or already hold the preemptor (FutureIdle) are worth a visit
    placement = ctx.placement
    # a task of a role is checked first: its failures feed the role's cache whatever happens next
    allowed = allowed_rows(ctx, preemptor) if preemptor.role else None
    worth = hosts | placement.fits_future(preemptor)
    if not worth.any():
        return False
    if allowed is None:
        allowed = allowed_rows(ctx, preemptor)
    if not worth[allowed].any():
        return False  # e.g. room only on nodes whose taints it does not tolerate: no need to score them
    node_list = placement.node_list
    walk = allowed[worth[allowed]]
    if ctx.optimize:
        walk = placement.rows_by_score(preemptor, allowed, among=walk)
        nodes = [node_list[r] for r in walk.tolist()]
        if optimize.weighs_gpus(ctx.placement, preemptor, nodes):
            done = optimize.evict_cheapest(ctx, stmt, preemptor, nodes, callback="preemptable", keep=keep,
                                           action="preempt", fits=lambda n: _fits(ctx, queue, preemptor, n),
                                           kind=kind)
            if done is not None:
                return done
            if missed:
                return False  # Volcano's walk failed it in Volcano's run: only the cheapest search was new
    # a node where no candidate set could free room answers False at once (`_preempt_on`): dropped here,
    # in one array step, while its version is the one that answer was for
    # and so is a node where the rules' answer for a sibling could not free room, while nothing it
    # read has changed (`engine.victim_reuse`); neither depends on the walk's order, so in volcano
    # mode only the nodes left are put in score order (scored as over every allowed node)
    walk = ctx.not_useless(kind, walk)
    if ctx.victim_fails is not None:
        walk = ctx.victim_fails.open_rows(_filter_kind(kind, preemptor), preemptor, walk)
    if not ctx.optimize:
        walk = placement.rows_by_score(preemptor, allowed, among=walk)
    for r in walk.tolist():
        node = node_list[r]
        if node is not first and _preempt_on(ctx, stmt, preemptor, keep, kind, node, among, phase=phase):
            return True
    return False


def _preempt_on(ctx: ActionContext, stmt: Statement, preemptor: TaskInfo, keep,  # type: ignore[no-untyped-def]  # reason: predicate closure
                kind: tuple[object, ...], node: NodeInfo, among: Callable[[NodeInfo], list[TaskInfo]], *,
                phase: str) -> bool:
    """Volcano's step on one node: the victims the rules allow there, evicted lowest-order first until
    the preemptor fits, which is then pipelined (merged into `stmt`); nothing changes when it never fits.
    `among(node)`: the node's tasks of the preemptor's queue, where both phases' victims are; `phase`
    (the victim filter's memo name) goes on the pipeline operation."""
    assert preemptor.job is not None
    queue = preemptor.job.queue
    candidates = useful_candidates(ctx, node, keep, preemptor, kind, among=among)
    if candidates is None:
        return False  # even every candidate would not free enough: the rules cannot change that
    victims, rule = ctx.runtime.victims("preemptable", preemptor, candidates) if candidates else ([], None)
    if not fits_with(victims, preemptor, node):
        if candidates and ctx.victim_fails is not None:
            ctx.victim_fails.remember(_filter_kind(kind, preemptor), preemptor, node.name, candidates, victims)
        return False
    local = ctx.statement()
    for victim in ordered_victims(ctx, victims, preemptor):
        if _fits(ctx, queue, preemptor, node):
            break
        local.evict(victim, action="preempt", for_job=preemptor.job.key, rule=rule.label.location if rule else "")
    if _fits(ctx, queue, preemptor, node):
        local.pipeline(preemptor, node.name, eviction_occurred=local.evicts(), phase=phase)
        stmt.merge(local)
        return True
    local.discard()
    return False


def allowed_rows(ctx: ActionContext, preemptor: TaskInfo) -> np.ndarray:
    """The rows of the nodes preempt may use for `preemptor`, ascending: those its predicate does not
    fail as unresolvable (`Placement.preempt_rows`), less the nodes an earlier action's fit errors kept
    as unresolvable for it (`GetUnschedulableAndUnresolvableNodesForTask`, never checked), less the nodes
    where a task of its job and role already failed the predicate in this action: Volcano's preempt
    searches through one PredicateHelper for the whole action (pkg/scheduler/actions/preempt/preempt.go:99
    at v1.10.0), whose error cache, keyed by job and role, refuses such a node unchecked
    (util/predicate_helper.go:47-87; not for a task without a role, nor with `predicateErrorCacheEnable:
    false`). The nodes it fails on now join its role's entry."""
    placement = ctx.placement
    passing = placement.preempt_mask(preemptor)
    checked = np.ones(len(placement.node_list), dtype=bool)
    checked[unresolvable_rows_before(ctx, preemptor)] = False
    assert preemptor.job is not None
    key = (preemptor.job.key, preemptor.role)
    cached = bool(preemptor.role) and ctx.action_arguments.get("preempt", {}).get(ENABLE_KEY, True) is not False
    if cached:
        before = ctx.preempt_role_failures.get(key)
        if before is not None:
            checked &= ~before
        failed = checked & ~passing
        if failed.any():
            ctx.preempt_role_failures[key] = failed if before is None else before | failed
    allowed: np.ndarray = np.flatnonzero(checked & passing)
    return allowed


def _filter_kind(kind: tuple[object, ...], preemptor: TaskInfo) -> tuple[object, ...]:
    """What the victim filter of a preemptor `kind` (action, phase, job or shared queue, spec) reads of
    the preemptor: whether it is best-effort. Preemptors with other requests see the same candidates."""
    return (*kind[:3], preemptor.best_effort)


def _queue_tasks(ctx: ActionContext, queue: QueueInfo) -> Callable[[NodeInfo], list[TaskInfo]]:
    """A node's tasks of `queue`, in the node's order, kept per node version for all the queue's
    preemptors: most of a node's tasks belong to other queues, and every preemptor kind would scan
    them all again."""
    def of_queue(node: NodeInfo) -> list[TaskInfo]:
        return [t for t in node.tasks if t.job is not None and t.job.queue is queue]

    def on(node: NodeInfo) -> list[TaskInfo]:
        return ctx.kept_per_node(ctx.queue_tasks, ("queue", queue.name), node, of_queue)
    return on


def _fits(ctx: ActionContext, queue: QueueInfo, task: TaskInfo, node: NodeInfo) -> bool:
    return (ctx.runtime.allocatable(queue, task) and fits(task.resreq, node.future_idle)
            and ctx.runtime.predicate(task, node) is None)

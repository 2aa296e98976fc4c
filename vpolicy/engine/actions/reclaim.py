"""reclaim: starving jobs take back resources from other, reclaimable queues (reference §4.4).

Queues in queue order (overused ones skipped), jobs in job order, one statement per job committed only
if the job is then pipelined. Victims are Running, preemptable tasks of jobs in other reclaimable
queues that the policy's `reclaimable` rules allow; nodes are visited in node order, not by score.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from vpolicy.engine import optimize
from vpolicy.engine.actions.context import ActionContext, unresolvable_before, unresolvable_rows_before
from vpolicy.engine.actions.evict_common import fits_with, ordered_victims, useful_candidates
from vpolicy.engine.actions.reclaim_reuse import ReclaimAnswers
from vpolicy.engine.heap import PriorityQueue, Queue
from vpolicy.engine.placement import SPEC_READS, fits, task_key
from vpolicy.engine.state import JobInfo, QueueInfo, TaskInfo
from vpolicy.engine.statement import Statement
from vpolicy.model.snapshot import TaskStatus


_CHUNK = 256  # rows filtered at a time in the walk (`_walk`)


def run(ctx: ActionContext, *, reuse: bool = True) -> None:
    """`reuse`: keep the rules' answers per node while they hold (`reclaim_reuse`); off, every node
    walked is asked again (the same decisions, for tests that compare the two)."""
    ctx.forget_node_memos()
    rt = ctx.runtime
    answers = ReclaimAnswers(rt, ctx.state, ctx.placement.arrays) if reuse else None
    queues: PriorityQueue[QueueInfo] = PriorityQueue(rt.queue_before)
    preemptors: dict[str, PriorityQueue[JobInfo]] = {}
    tasks: dict[str, Queue[TaskInfo]] = {}
    for job in ctx.schedulable_jobs():
        if job.topology_mode:  # as preempt: Volcano reclaims for no job with a networkTopology
            continue
        if not rt.job_starving(job):
            continue
        pending = ctx.pending_tasks(job, best_effort=None)  # a best-effort task reclaims too
        if not pending:
            continue
        if job.queue.name not in preemptors:
            preemptors[job.queue.name] = PriorityQueue(rt.job_before)
            queues.push(job.queue)
        preemptors[job.queue.name].push(job)
        tasks[job.key] = rt.task_queue(pending)

    while not queues.empty():
        if ctx.out_of_time():
            return  # only an optimize run stops early, and never_worse then keeps Volcano's
        queue = queues.pop()
        if rt.overused(queue):
            continue
        jobs = preemptors[queue.name]
        if jobs.empty():
            continue
        job = jobs.pop()
        stmt = ctx.statement()
        while rt.job_starving(job) and not tasks[job.key].empty():
            task = tasks[job.key].pop()
            if task.pod.preemption_policy == "Never" or not rt.preemptive(queue, task):
                continue
            reclaim_one(ctx, stmt, task, job, answers)
        if rt.job_pipelined(job):
            stmt.commit()
        else:
            stmt.discard()
        queues.push(queue)


def reclaim_one(ctx: ActionContext, stmt: Statement, task: TaskInfo, job: JobInfo,
                answers: ReclaimAnswers | None = None) -> bool:
    """Reclaim for one task; a failure is remembered for its identical siblings until the state changes."""
    spec = task_key(task, SPEC_READS)
    key = ("reclaim", job.key, spec)
    failure_key = (*key, unresolvable_before(ctx, task))  # as preempt's (`preempt.preempt_one`)
    if ctx.eviction_failed_before(failure_key):
        return False
    done = _reclaim_one(ctx, stmt, task, job, key, ("reclaim", ("queue", job.queue.name), spec), answers)
    if not done:
        ctx.remember_eviction_failure(failure_key)
    return done


def _walk(ctx: ActionContext, answers: ReclaimAnswers | None, rows: np.ndarray, task: TaskInfo, queue: QueueInfo,
          shared: tuple[object, ...]) -> Iterator[int]:
    """The rows to visit, in order. With `answers`, a chunk at a time, each filtered when the walk
    reaches it: the walk mostly ends within its first nodes, and the filters cost a few array steps
    over every row they are given (the state a chunk is filtered at is the state the walk visits it
    at, as a discarded try restores what it changed)."""
    if answers is None:
        yield from ctx.not_useless(shared, rows).tolist()
        return
    kind = ("queue", queue.name)
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start:start + _CHUNK]
        yield from answers.open_rows(kind, task, answers.reclaimees.open_rows(queue, task, chunk)).tolist()


def _reclaim_one(ctx: ActionContext, stmt: Statement, task: TaskInfo, job: JobInfo, kind: tuple[object, ...],
                 shared: tuple[object, ...], answers: ReclaimAnswers | None) -> bool:
    """`kind`: the task's job and spec (optimize's bounds read the job); `shared`: its queue and spec,
    which is all a node's reclaimees depend on, so the queue's jobs share each node's candidates, and
    the rules' answers there (`reclaim_reuse`, keyed by the queue and what the rules read of the task)."""

    def reclaimee(t: TaskInfo) -> bool:
        return (t.status is TaskStatus.RUNNING and t.preemptable and t.job is not None
                and t.job.queue is not job.queue and t.job.queue.reclaimable)

    placement = ctx.placement
    # `Placement.preempt_rows(task, recorded)`, with the recorded nodes as rows kept per set of fit
    # errors (at 5,000 nodes a task's set holds thousands of names), as preempt's walk has them
    passing = placement.preempt_mask(task)
    passing[unresolvable_rows_before(ctx, task)] = False
    rows = np.flatnonzero(passing)
    if ctx.optimize:
        nodes = [placement.node_list[r] for r in rows.tolist()]
        if optimize.weighs_gpus(placement, task, nodes):
            done = optimize.evict_cheapest(ctx, stmt, task, nodes, callback="reclaimable", keep=reclaimee,
                                           action="reclaim", fits=lambda n: fits(task.resreq, n.future_idle),
                                           kind=kind)
            if done is not None:
                return done
    # nodes whose kept answer cannot help are dropped in one array step, as in preempt's walk: no
    # reclaimee, or too few to free room, at the node's version (`useful_candidates`); victims the
    # rules chose there that, with FutureIdle, would still not hold the task, while that answer holds
    # (`reclaim_reuse`: the node, the candidates' jobs, and their queues' allocations inside the
    # ranges where every comparison the rules made of them comes out the same)
    victim_kind = ("queue", job.queue.name)
    for row in _walk(ctx, answers, rows, task, job.queue, shared):
        node = placement.node_list[row]
        candidates = (useful_candidates(ctx, node, reclaimee, task, shared, need_one=True) if answers is None
                      else answers.reclaimees.on(job.queue, row))
        if not candidates or answers is not None and not fits_with(candidates, task, node):
            continue  # no reclaimee, or even every one would not free enough: the rules cannot change that
        victims, rule = (answers.victims(victim_kind, task, node, candidates) if answers is not None
                         else ctx.victims_on("reclaimable", task, node, candidates))
        if not fits_with(victims, task, node):
            continue
        local = ctx.statement()
        available = node.future_idle
        for victim in ordered_victims(ctx, victims, task):
            if fits(task.resreq, available):
                break
            local.evict(victim, action="reclaim", for_job=job.key, rule=rule.label.location if rule else "")
            available = available + victim.resreq
        if fits(task.resreq, available):
            local.pipeline(task, node.name, eviction_occurred=local.evicts())
            stmt.merge(local)
            return True
        local.discard()
    return False

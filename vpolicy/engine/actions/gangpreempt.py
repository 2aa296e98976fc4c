"""gangpreempt: a starving gang takes room from lower-priority jobs of its own queue, whole or not at all
(Volcano's gangpreempt action; the shared bundle logic is `gang_evict`).

Queues in queue order; in each, its starving jobs in job order. A job's candidate victims are the Bound
or Running, preemptable tasks of other jobs of the same queue whose job priority is lower and whose
PodGroup does not refuse preemption. Its statement is committed only when the job is then pipelined.
"""
from __future__ import annotations

from vpolicy.engine.actions import gang_evict
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.heap import PriorityQueue
from vpolicy.engine.state import JobInfo, QueueInfo, TaskInfo
from vpolicy.engine.statement import Statement
from vpolicy.model.resources import total
from vpolicy.model.snapshot import TaskStatus

ACTION = "gangpreempt"


def run(ctx: ActionContext) -> None:
    rt = ctx.runtime
    allow_whole = gang_evict.allow_whole_bundle(ctx, ACTION)
    queues, starving = gang_evict.starving_jobs(ctx)
    order: PriorityQueue[QueueInfo] = PriorityQueue(rt.queue_before, queues)
    while not order.empty():
        queue = order.pop()
        jobs: PriorityQueue[JobInfo] = PriorityQueue(rt.job_before, starving.get(queue.name, []))
        while not jobs.empty():
            job = jobs.pop()
            stmt = ctx.statement()
            _preempt_for(ctx, stmt, queue, job, allow_whole=allow_whole)
            if rt.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()


def _preempt_for(ctx: ActionContext, stmt: Statement, queue: QueueInfo, job: JobInfo, *,
                 allow_whole: bool) -> None:
    rt = ctx.runtime
    pending = gang_evict.pending_demand(ctx, job)
    if not pending or not rt.job_starving(job):
        return

    def candidate(t: TaskInfo) -> bool:
        victim = t.job
        return (victim is not None and (t.status is TaskStatus.BOUND or t.status is TaskStatus.RUNNING)
                and t.preemptable and victim is not job and victim.queue is job.queue
                and victim.priority < job.priority and gang_evict.gang_evictable_job(victim))

    bundles = gang_evict.candidate_bundles(ctx, candidate)
    if not bundles:
        return
    need = total(t.resreq for t in pending)

    def victim_first(a: gang_evict.Bundle, b: gang_evict.Bundle) -> bool:
        return not rt.job_before(a.job, b.job)  # the job that would be scheduled last goes first

    ordered = gang_evict.sort_bundles(bundles, need, victim_first)
    flat = [t for b in ordered for t in b.tasks]
    allowed = {t.uid for t in rt.evictable(ACTION, job, flat)}
    valid = gang_evict.allowed_bundles(ordered, allowed, allow_whole=allow_whole)
    if valid:
        gang_evict.place_with_victims(ctx, stmt, job, queue, gang_evict.sort_bundles(valid, need, victim_first),
                                      pending, action=ACTION)

"""gangreclaim: a starving gang takes room from other queues' reclaimable jobs, whole or not at all
(Volcano's gangreclaim action; the shared bundle logic is `gang_evict`).

Queues in queue order, overused ones skipped; in each, its starving jobs in job order, when the queue
may reclaim for their pending tasks (`preemptive`). A job looks for room domain by domain
(`gang_evict.candidate_domains`: the whole cluster, or for a hard-topology job the HyperNodes it may
use); in each, candidate victims are Running, preemptable tasks on the domain's nodes of other queues'
jobs whose queue is reclaimable and whose PodGroup does not refuse preemption; bundles of one queue
versus another follow the victim-queue order. The statement is committed only when the job is then
pipelined, and a job that got room comes back for another turn (Volcano pushes it back).
"""
from __future__ import annotations

from vpolicy.engine.actions import gang_evict
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.state import JobInfo, QueueInfo, TaskInfo
from vpolicy.engine.statement import Statement
from vpolicy.model.snapshot import TaskStatus

ACTION = "gangreclaim"


def run(ctx: ActionContext) -> None:
    gang_evict.run_turns(ctx, ACTION, _reclaim_for, skip=ctx.runtime.overused)


def _reclaim_for(ctx: ActionContext, stmt: Statement, queue: QueueInfo, job: JobInfo, allow_whole: bool) -> bool:
    """Whether room was found for the job in one of its domains (the evictions and pipelines in `stmt`)."""
    rt = ctx.runtime
    pending = gang_evict.pending_demand(ctx, job)
    if not pending or not rt.job_starving(job) or not all(rt.preemptive(queue, t) for t in pending):
        return False

    def candidate(t: TaskInfo) -> bool:
        victim = t.job
        return (victim is not None and t.status is TaskStatus.RUNNING and t.preemptable
                and victim.queue is not job.queue and victim.queue.reclaimable
                and gang_evict.gang_evictable_job(victim))

    def victim_first(a: gang_evict.Bundle, b: gang_evict.Bundle) -> bool:
        if a.job.queue is b.job.queue:
            return False  # not told apart: the next criterion decides
        return rt.victim_queue_before(a.job.queue, b.job.queue, queue)

    return gang_evict.evict_in_domains(ctx, stmt, job, queue, pending, candidate, victim_first, action=ACTION,
                                       allow_whole=allow_whole)

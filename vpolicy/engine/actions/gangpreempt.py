"""gangpreempt: a starving gang takes room from lower-priority jobs of its own queue, whole or not at all
(Volcano's gangpreempt action; the shared bundle logic is `gang_evict`).

Queues in queue order; in each, its starving jobs in job order. A job looks for room domain by domain
(`gang_evict.candidate_domains`: the whole cluster, or for a hard-topology job the HyperNodes it may
use); in each, its candidate victims are the Bound or Running, preemptable tasks on the domain's nodes
of other jobs of the same queue whose job priority is lower and whose PodGroup does not refuse
preemption. Its statement is committed only when the job is then pipelined, and a job that got room
comes back for another turn (Volcano pushes it back).
"""
from __future__ import annotations

from vpolicy.engine.actions import gang_evict
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.state import JobInfo, QueueInfo, TaskInfo
from vpolicy.engine.statement import Statement
from vpolicy.model.snapshot import TaskStatus

ACTION = "gangpreempt"


def run(ctx: ActionContext) -> None:
    gang_evict.run_turns(ctx, ACTION, _preempt_for)


def _preempt_for(ctx: ActionContext, stmt: Statement, queue: QueueInfo, job: JobInfo, allow_whole: bool) -> bool:
    """Whether room was found for the job in one of its domains (the evictions and pipelines in `stmt`)."""
    rt = ctx.runtime
    pending = gang_evict.pending_demand(ctx, job)
    if not pending or not rt.job_starving(job):
        return False

    def candidate(t: TaskInfo) -> bool:
        victim = t.job
        return (victim is not None and (t.status is TaskStatus.BOUND or t.status is TaskStatus.RUNNING)
                and t.preemptable and victim is not job and victim.queue is job.queue
                and victim.priority < job.priority and gang_evict.gang_evictable_job(victim))

    def victim_first(a: gang_evict.Bundle, b: gang_evict.Bundle) -> bool:
        return not rt.job_before(a.job, b.job)  # the job that would be scheduled last goes first

    return gang_evict.evict_in_domains(ctx, stmt, job, queue, pending, candidate, victim_first, action=ACTION,
                                       allow_whole=allow_whole)

"""enqueue: admit Pending PodGroups to Inqueue, one job per queue turn (reference §4.1).

A job without minResources is admitted unconditionally; otherwise the policy's `job_enqueueable`
votes decide. Admission reserves the job's minResources in its queue's `inqueue` (Volcano's
JobEnqueued, which proportion, capacity and overcommit all account the same way).
"""
from __future__ import annotations

from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.heap import Queue
from vpolicy.engine.state import JobInfo
from vpolicy.model.snapshot import PodGroupPhase


def run(ctx: ActionContext) -> None:
    rt = ctx.runtime
    queues = rt.turn_queue_heap()
    jobs_by_queue: dict[str, Queue[JobInfo]] = {}
    seen: set[str] = set()
    pending = (PodGroupPhase.PENDING.value, "")
    for job in ctx.state.jobs.values():
        if job.queue.name not in seen:
            seen.add(job.queue.name)
            queues.push(job.queue)
        if job.phase in pending:
            if job.queue.name not in jobs_by_queue:
                jobs_by_queue[job.queue.name] = rt.job_queue()
            jobs_by_queue[job.queue.name].push(job)
    while not queues.empty():
        queue = queues.pop()
        jobs = jobs_by_queue.get(queue.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        if not job.has_min_resources or rt.job_enqueueable(job):
            queue.inqueue = queue.inqueue + job.min_resources
            job.phase = PodGroupPhase.INQUEUE.value
            job.enqueued_now = True
        else:
            ctx.job_reasons[job.key] = "job is not enqueued: queue resource quota insufficient"
        queues.push(queue)

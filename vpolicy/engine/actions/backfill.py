"""backfill: place best-effort tasks (no requests) of admitted jobs anywhere they pass the predicates
(reference §4.5). A job's allocated tasks are dispatched as soon as the job is ready. The first
best-effort task that fits no node ends the action, for every job after it too: Volcano's backfill
`break`s there (actions/backfill/backfill.go, v1.10 and main), found by the conformance oracle once pod
anti-affinity made best-effort pods fail."""
from __future__ import annotations

from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.heap import PriorityQueue
from vpolicy.engine.placement import FitErrors
from vpolicy.engine.state import JobInfo


def run(ctx: ActionContext) -> None:
    rt = ctx.runtime
    with_best_effort = [j for j in ctx.state.jobs.values() if j.pending_best_effort_count]
    jobs: PriorityQueue[JobInfo] = PriorityQueue(
        lambda l, r: rt.queue_before(l.queue, r.queue) if l.queue is not r.queue else rt.job_before(l, r),
        ctx.schedulable_jobs(with_best_effort))
    stopped = False
    while not jobs.empty() and not stopped:
        job = jobs.pop()
        stmt = ctx.statement()
        for task in ctx.pending_tasks(job, best_effort=True):
            errors = FitErrors()
            nodes = ctx.placement.feasible_nodes(task, errors)
            if not nodes:
                ctx.fit_errors[task.uid] = errors
                stopped = True
                break
            node, _ = ctx.placement.best_node(task, nodes)
            stmt.allocate(task, node.name)
        if rt.job_ready(job):
            stmt.commit()
        else:
            stmt.discard()  # main's backfill: a job not ready gives its placements back (Statement.Discard)

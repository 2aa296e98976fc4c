"""backfill: place best-effort tasks (no requests) of admitted jobs anywhere they pass the predicates
(reference §4.5), as Volcano's main branch does (`pkg/scheduler/actions/backfill/backfill.go`,
`allocateResources` / `allocateTasksForJob`).

Queues are served in turns in queue order, one job per turn in job order, a job's best-effort tasks in
task order (its pipelined best-effort tasks are first taken off their nodes and tried again). A turn
places tasks into one statement until the job is ready; a task that passes no node is skipped (its fit
errors recorded) and the turn goes on with the next. A ready job's statement is committed and, if it
still has tasks, the job comes back for another turn; a job that is not ready gives its placements back.
Nodes are searched with Volcano's per-role error cache (`role_fit_memo`), fresh for each turn.

Volcano v1.10.0 differs (the conformance oracle bridges it, docs/conformance.md): it stops the whole
action at the first task that passes no node and allocates task by task without a statement.
"""
from __future__ import annotations

from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.actions.role_fit_memo import RoleFitMemo
from vpolicy.engine.heap import Queue
from vpolicy.engine.placement import FitErrors
from vpolicy.engine.state import JobInfo, QueueInfo, TaskInfo
from vpolicy.engine.statement import Statement
from vpolicy.model.snapshot import TaskStatus


def run(ctx: ActionContext) -> None:
    rt = ctx.runtime
    queues = rt.turn_queue_heap()
    jobs_by_queue: dict[str, Queue[JobInfo]] = {}
    tasks_by_job: dict[str, Queue[TaskInfo]] = {}
    candidates = [j for j in ctx.state.jobs.values()
                  if j.pending_best_effort_count or j.counts.get(TaskStatus.PIPELINED)]
    for job in ctx.schedulable_jobs(candidates):
        best_effort = ctx.pending_tasks(job, best_effort=True)
        for task in [t for t in job.tasks if t.status is TaskStatus.PIPELINED and t.best_effort]:
            ctx.state.set_status(task, TaskStatus.PENDING, "")  # Volcano's UnPipeline
            best_effort.append(task)
        if not best_effort:
            continue
        tasks_by_job[job.key] = rt.task_queue(best_effort)
        if job.queue.name not in jobs_by_queue:
            jobs_by_queue[job.queue.name] = rt.job_queue()
            queues.push(job.queue)
        jobs_by_queue[job.queue.name].push(job)
    while not queues.empty():
        queue: QueueInfo = queues.pop()
        jobs = jobs_by_queue[queue.name]
        if jobs.empty():
            continue
        job = jobs.pop()
        tasks = tasks_by_job[job.key]
        if tasks.empty():
            queues.push(queue)
            continue
        stmt = ctx.statement()
        _place_tasks(ctx, job, tasks, stmt)
        if stmt.ops and rt.job_ready(job):
            stmt.commit()
            if not tasks.empty():
                jobs.push(job)
        else:
            stmt.discard()  # a job not ready gives its placements back
        queues.push(queue)


def _place_tasks(ctx: ActionContext, job: JobInfo, tasks: Queue[TaskInfo], stmt: Statement) -> None:
    """One job's turn: each task on its best node until the job is ready (`allocateTasksForJob`)."""
    memo = RoleFitMemo(ctx, "backfill")
    while not tasks.empty():
        task = tasks.pop()
        errors = FitErrors()
        rows = memo.screen(task, ctx.placement.feasible_rows(task, errors), errors)
        if not len(rows):
            ctx.fit_errors[task.uid] = errors
            continue
        node, _ = ctx.placement.best_row(task, rows)
        stmt.allocate(task, node.name)
        ctx.fit_errors.pop(task.uid, None)
        if ctx.runtime.job_ready(job):
            break

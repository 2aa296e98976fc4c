"""allocate: place pending tasks of Inqueue jobs, queue by queue, one job per turn (reference §4.2).

Queues are served round-robin in the policy's queue order (re-ranked after every turn); an overused
queue drops out. A job's turn places tasks in task order until the job is ready, then the statement is
committed (tasks dispatched to bind). A gang that ends only pipelined keeps its placements unbound; one
that is neither ready nor pipelined is discarded, all or nothing.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vpolicy.engine.actions import allocate_topology
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.actions.role_fit_memo import RoleFitMemo
from vpolicy.engine.heap import Queue
from vpolicy.engine.placement import FitErrors
from vpolicy.engine.state import JobInfo, QueueInfo, TaskInfo
from vpolicy.engine.statement import Statement
from vpolicy.model.snapshot import READY_STATUSES, PodGroupPhase, TaskStatus


def run(ctx: ActionContext) -> None:
    rt = ctx.runtime
    queues, jobs_by_queue, worksheets = turn_queues(ctx)
    plan = allocate_topology.joint_plan(ctx, [j for j in ctx.state.jobs.values() if j.key in worksheets])
    while not queues.empty():
        queue = queues.pop()
        if rt.overused(queue):
            for job in _drain(jobs_by_queue.get(queue.name)):
                ctx.job_reasons.setdefault(job.key, f"queue {queue.name} is overused")
            continue
        jobs = jobs_by_queue.get(queue.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        tasks = worksheets[job.key]
        domain = ""
        domain_search = allocate_topology.searches_domains(ctx, job)
        if domain_search:
            stmt, domain = allocate_topology.allocate_job(ctx, job, tasks, plan=plan)
        else:
            stmt = allocate_tasks(ctx, job, tasks)
        committed = stmt is not None and rt.job_ready(job)
        # main puts a job back whenever its tasks are not all tried, ready or not (allocateResources:
        # `if tasks.Len() > 0`); a turn ends early on readiness or at a task that found no node. A job
        # searching domains comes back only after a committed turn (as main's hard-topology branch)
        if not tasks.empty() and (committed or not domain_search):
            jobs.push(job)
        if committed:
            assert stmt is not None
            stmt.commit()
            if domain:  # Volcano's recorder: the job's domain grows to hold the new placements
                job.allocated_hypernode = ctx.state.topology.lca(job.allocated_hypernode, domain)
        queues.push(queue)
    allocate_topology.retry_deferred(ctx, plan, worksheets)


def turn_queues(ctx: ActionContext) -> tuple[Queue[QueueInfo], dict[str, Queue[JobInfo]],
                                             dict[str, Queue[TaskInfo]]]:
    """What allocate's turns start from: the queues with work in queue order, each queue's jobs in job
    order, each job's pending tasks in task order (jobs not yet enqueued or invalid are left out, with
    their reason recorded)."""
    rt = ctx.runtime
    queues = rt.turn_queue_heap()
    jobs_by_queue: dict[str, Queue[JobInfo]] = {}
    worksheets: dict[str, Queue[TaskInfo]] = {}
    for job in ctx.state.jobs.values():
        if job.phase == PodGroupPhase.PENDING.value:
            if "enqueue" in ctx.actions:
                ctx.job_reasons.setdefault(job.key, "podgroup is Pending: not enqueued yet")
                continue
            job.phase = PodGroupPhase.INQUEUE.value
        invalid = rt.job_valid(job)
        if invalid is not None:
            ctx.job_reasons[job.key] = f"{invalid.reason}: {invalid.message}"
            continue
        tasks = ctx.pending_tasks(job)
        if not tasks:
            continue
        worksheets[job.key] = rt.task_queue(tasks)
        if job.queue.name not in jobs_by_queue:
            jobs_by_queue[job.queue.name] = rt.job_queue()
            queues.push(job.queue)
        jobs_by_queue[job.queue.name].push(job)
    return queues, jobs_by_queue, worksheets


def _drain(jobs: Queue[JobInfo] | None) -> list[JobInfo]:
    out = []
    while jobs is not None and not jobs.empty():
        out.append(jobs.pop())
    return out


def allocate_tasks(ctx: ActionContext, job: JobInfo, tasks: Queue[TaskInfo], *,
                   within: np.ndarray | None = None, ready_when: Callable[[], bool] | None = None,
                   pipelined_when: Callable[[], bool] | None = None) -> Statement | None:
    """One job's turn over all nodes, or over the node rows `within` marks (a HyperNode's, for
    `allocate_topology`). A job with a network topology sees its allocated HyperNode grow with each
    placement while its tasks are scored; a soft-mode job keeps it when the gang is ready.
    `ready_when` replaces the job's readiness (a sub-group's gang, for `allocate_topology`): the turn
    stops once it holds, and keeps its placements only if it does, or if `pipelined_when` holds (the
    sub-group is pipelined, Volcano's SubJobPipelined)."""
    rt = ctx.runtime
    is_ready: Callable[[], bool] = ready_when if ready_when is not None else (lambda: rt.job_ready(job))
    stmt = ctx.statement()
    topo = ctx.state.topology
    tracks = bool(job.topology_mode) and topo.enabled
    allocated_before = job.allocated_hypernode
    failed_roles = job.failed_roles  # session-wide, as Volcano's per-job fit-error cache
    memo = RoleFitMemo(ctx, "allocate")  # per turn, as Volcano's PredicateHelper
    while not tasks.empty():
        task = tasks.pop()
        if not rt.allocatable(job.queue, task):
            ctx.job_reasons.setdefault(job.key, f"queue {job.queue.name} cannot take more (allocatable)")
            continue
        if task.role and task.role in failed_roles:
            continue  # Volcano's TaskHasFitErrors: a task without a role never uses the cache
        errors = FitErrors()
        nominated = ctx.placement.nominated_node(task)
        if nominated and ((within is not None and not within[ctx.placement.arrays.row[nominated[0].name]])
                          or memo.refused(task, ctx.placement.arrays.row[nominated[0].name])):
            nominated = []
        if nominated:
            node, fits_idle = ctx.placement.best_node(task, nominated)
        else:
            rows = memo.screen(task, ctx.placement.feasible_rows(task, errors), errors)
            if within is not None:
                rows = rows[within[rows]]
            if not len(rows):
                ctx.fit_errors[task.uid] = errors
                failed_roles.add(task.role)
                if not _continue_allocating(job, failed_roles):
                    break
                continue
            node, fits_idle = ctx.placement.best_row(task, rows)
        if fits_idle:
            stmt.allocate(task, node.name)
        else:
            stmt.pipeline(task, node.name)
        ctx.fit_errors.pop(task.uid, None)
        if tracks:
            job.allocated_hypernode = topo.lca(job.allocated_hypernode, topo.leaf_of(node.name))
        if is_ready():
            break
    ready = is_ready()
    if tracks and not (ready and job.topology_mode == "soft" and within is None):
        job.allocated_hypernode = allocated_before
    if ready:
        return stmt
    if rt.job_pipelined(job) if ready_when is None else (pipelined_when is not None and pipelined_when()):
        return stmt
    stmt.discard()
    return None


def _continue_allocating(job: JobInfo, failed_roles: set[str]) -> bool:
    """Volcano's NeedContinueAllocating after a task found no node."""
    if job.min_available >= job.task_count:
        return False
    members = job.min_task_member
    total = sum(members.values())
    if not members or job.min_available >= total:
        for role in failed_roles:
            want = members.get(role, 0)
            if want and _role_occupied(job, role) < want:
                return False
        return True
    hopeful = job.ready_count + sum(1 for t in job.tasks if t.status is TaskStatus.PENDING
                                    and t.role not in failed_roles)
    return hopeful >= job.min_available


def _role_occupied(job: JobInfo, role: str) -> int:
    """Volcano's getJobAllocatedRoles for one role: its tasks allocated or succeeded, and its pending
    best-effort tasks, which need no node to count (api/job_info.go, v1.10.0 and main)."""
    return sum(1 for t in job.tasks if t.role == role and (
        t.status in READY_STATUSES or (t.status is TaskStatus.PENDING and t.best_effort)))

"""What preempt and reclaim share: candidate victims on a node and Volcano's victim order."""
from __future__ import annotations

from typing import Callable

from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.heap import PriorityQueue
from vpolicy.engine.placement import fits
from vpolicy.engine.state import NodeInfo, TaskInfo
from vpolicy.model.resources import CPU, MEMORY


def ordered_victims(ctx: ActionContext, victims: list[TaskInfo], preemptor: TaskInfo) -> list[TaskInfo]:
    """Lowest-order first: reverse task order within a job, victim-queue order across queues,
    reverse job order across jobs (Volcano's BuildVictimsPriorityQueue)."""
    rt = ctx.runtime
    preemptor_queue = preemptor.job.queue if preemptor.job else None

    def less(l: TaskInfo, r: TaskInfo) -> bool:
        if l.job is r.job:
            return not rt.task_before(l, r)
        if l.job is not None and r.job is not None and l.job.queue is not r.job.queue and preemptor_queue:
            return rt.victim_queue_before(l.job.queue, r.job.queue, preemptor_queue)
        if l.job is None or r.job is None:
            return False
        return not rt.job_before(l.job, r.job)

    pq: PriorityQueue[TaskInfo] = PriorityQueue(less, victims)
    out = []
    while not pq.empty():
        out.append(pq.pop())
    return out


def candidates_on(node: NodeInfo, keep: Callable[[TaskInfo], bool],
                  among: Callable[[NodeInfo], list[TaskInfo]] | None = None) -> list[TaskInfo]:
    """The node's tasks of a job that `keep` accepts, in the node's order; `among(node)`, when given,
    is the part of the node's tasks (in the same order) that holds every one `keep` could accept."""
    return [t for t in among(node) if keep(t)] if among is not None else \
        [t for t in node.tasks if t.job is not None and keep(t)]


def fits_with(victims: list[TaskInfo], preemptor: TaskInfo, node: NodeInfo) -> bool:
    """Volcano's ValidateVictims: the victims together with FutureIdle could hold the preemptor.
    `fits` on FutureIdle plus the victims' requests, summed only over the dimensions `fits` reads
    (asked for every node preempt and reclaim weigh)."""
    request, idle = preemptor.resreq, node.future_idle
    if not victims:
        return fits(request, idle)
    for name in (CPU, MEMORY, *request):  # what `fits` reads; cpu or memory twice does no harm
        if request.get(name, 0) > idle.get(name, 0) + sum(v.resreq.get(name, 0) for v in victims):
            return False
    return True


def useful_candidates(ctx: ActionContext, node: NodeInfo, keep: Callable[[TaskInfo], bool], preemptor: TaskInfo,
                      kind: tuple[object, ...], *, need_one: bool = False,
                      among: Callable[[NodeInfo], list[TaskInfo]] | None = None) -> list[TaskInfo] | None:
    """The node's candidates `keep` accepts, or None when the node cannot help: even every candidate
    would not free room for the preemptor (ValidateVictims on the whole set), or `need_one` (reclaim
    skips a node without reclaimees) and there is none. No candidate at all is an answer: Volcano's
    ValidateVictims no longer asks for a victim, so a preemptor takes room that earlier evictions freed
    without evicting more. Both depend on the node alone, so the answer is kept per node version for
    the preemptor's siblings: `kind` names its class and filter (`among`: see `candidates_on`)."""
    def useful(node: NodeInfo) -> list[TaskInfo] | None:
        found = candidates_on(node, keep, among)
        if need_one and not found or not fits_with(found, preemptor, node):
            ctx.mark_useless(kind, node)
            return None
        return found
    return ctx.kept_per_node(ctx.node_candidates, kind, node, useful)

"""preempt's joint victim plan in optimize mode: which GPU preemptors of Volcano's run to plan, the
nodes and victims each may use there (`Option`s), the victim budgets and queue floors, handed to
`engine.victim_plan`'s program. Kept apart from the action itself, whose node walk is Volcano's; the
action passes in its two victim filters and the name of its within-job phase."""
from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from vpolicy.engine import optimize
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.actions.evict_common import candidates_on, fits_with
from vpolicy.engine.placement import SPEC_READS, task_key
from vpolicy.engine.state import TaskInfo
from vpolicy.engine.victim_plan import MAX_PAIRS, MIN_OPTIONS, Option, VictimPlan, cheapest_options, plan_victims
from vpolicy.model.resources import Resources

PLAN_SECONDS = 60.0  # the most the joint victim plan may take when the session budget is unlimited (L: 8 s)
Filter = Callable[[TaskInfo], Callable[[TaskInfo], bool]]  # preemptor -> which tasks it may evict


def victim_plan(ctx: ActionContext, hosts: dict[str, np.ndarray], nowhere: np.ndarray, *,
                between: Filter, within: Filter, same_job: str) -> VictimPlan | None:
    """The joint victim plan (`engine.victim_plan`) for the GPU preemptors Volcano's run of this action
    placed: each may use a node its predicates allow, with the victims the rules allow it there now, in
    the phase where Volcano's run placed it (`Operation.phase`). One placed between jobs may use a node
    where its own victims (same queue, another job) could make room. One placed within its job (its
    job no longer starving: the action comes back to it after the queue's turn) may evict only its
    own job's tasks, so it may also use a node where other preemptors' victims could make the room
    (in Volcano's run, often room a larger eviction left over). A preemptor with no such node is left
    to the action's own choice; the plan with floors then keeps the room Volcano's run made. As in the
    node walk, only nodes where its queue runs something preemptable (`hosts`) or where it fits
    FutureIdle are looked at: no other node can offer it a victim or room."""
    rt, placement = ctx.runtime, ctx.placement
    assert ctx.witness is not None
    wall, cpu = time.perf_counter(), optimize.budget_clock()
    placed = [op.task for op in ctx.witness if op.kind == "pipeline" and optimize.gpus(op.task.resreq)
              and op.task.job is not None]
    within_job = {op.task.uid for op in ctx.witness if op.kind == "pipeline" and op.phase == same_job}
    kinds: dict[tuple[object, ...], list[Option]] = {}
    # the options' content (nodes, victims) -> the one list of kinds that have it: `plan_victims` groups
    # preemptors by their options list, and on the generated clusters most kinds are alike (L: 88 kinds,
    # 4 contents, for a pending job runs nothing and the rules answered alike for the queue's jobs)
    alike: dict[tuple[object, ...], list[Option]] = {}

    def keep_for(p: TaskInfo) -> Callable[[TaskInfo], bool]:
        return within(p) if p.uid in within_job else between(p)

    def options(p: TaskInfo) -> list[Option]:
        assert p.job is not None
        kind = (p.job.key, task_key(p, SPEC_READS), p.uid in within_job)
        if kind not in kinds:
            keep, others, found = keep_for(p), between(p), []
            worth = hosts.get(p.job.queue.name, nowhere) | placement.fits_future(p)
            rows = placement.preempt_rows(p)
            for node in (placement.node_list[r] for r in rows[worth[rows]].tolist()):
                candidates = candidates_on(node, keep)
                extra = candidates_on(node, others) if p.uid in within_job else []
                if not fits_with(candidates + extra, p, node):
                    continue  # the victims are among the candidates: not even all of them make room
                victims = rt.victims("preemptable", p, candidates)[0] if candidates else []
                if fits_with(victims + extra, p, node) and rt.predicate(p, node) is None:
                    found.append(Option(node, tuple(victims)))
            content = tuple((o.node.name, tuple(v.uid for v in o.victims)) for o in found)
            kinds[kind] = alike.setdefault(content, found)
        return kinds[kind]

    planned = [p for p in placed if options(p)]
    if not planned:
        return None
    lists = {id(options(p)): options(p) for p in planned}  # one per content
    if sum(len(found) for found in lists.values()) > MAX_PAIRS:  # the program alone would take seconds
        limit = max(MIN_OPTIONS, MAX_PAIRS // len(lists))
        used: dict[int, set[str]] = {}  # list -> the nodes Volcano's run placed its preemptors on
        for p in planned:
            used.setdefault(id(options(p)), set()).add(ctx.witness_nodes.get(p.uid, ""))
        need = {id(options(p)): optimize.gpus(p.resreq) for p in planned}
        pruned = {key: cheapest_options(found, limit, need=need[key], gpus=lambda t: optimize.gpus(t.resreq),
                                        room=lambda n: optimize.gpus(n.future_idle), keep=used[key])
                  for key, found in lists.items()}
        full_options = options
        options = lambda p: pruned[id(full_options(p))]  # noqa: E731  # reason: the same name below, pruned
    planned_jobs = {p.job.key for p in planned if p.job is not None}
    floors: dict[str, Resources] = {}
    for op in ctx.witness if ctx.plan_floored else ():
        if op.kind == "evict" and op.for_job in planned_jobs and op.task.job is not None:
            name = op.task.job.queue.name
            floors[name] = floors.get(name, Resources()) + op.task.resreq.without("pods")
    budgets: dict[str, int] = {}
    seen: set[tuple[int, str]] = set()
    for p in planned:
        keep = keep_for(p)
        assert p.job is not None
        if (id(options(p)), p.job.key) in seen:
            continue  # a sibling of its job saw the same victims first
        seen.add((id(options(p)), p.job.key))
        for option in options(p):
            for v in option.victims:
                if v.job is not None and v.job.key not in budgets:
                    mine = [t for t in v.job.tasks if keep(t)]
                    budgets[v.job.key] = len(rt.victims("preemptable", p, mine)[0])
    left = ctx.deadline - optimize.budget_clock() if ctx.deadline is not None else PLAN_SECONDS
    if left <= 0:
        return None
    # HiGHS stops on the wall clock, the budget counts CPU: on a machine where the session waits for a
    # core, the solver gets the CPU left at the wall rate the plan has seen so far
    slow = (time.perf_counter() - wall) / max(1e-3, optimize.budget_clock() - cpu)
    return plan_victims(planned, options, gpus=lambda t: optimize.gpus(t.resreq), budgets=budgets,
                        floors=floors, time_limit=min(left * max(1.0, slow), PLAN_SECONDS))

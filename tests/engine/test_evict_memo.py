"""Per-node answers kept for a preemptor's siblings follow the node: an eviction there changes them; and
ValidateVictims, as preempt and reclaim ask it, answers as `fits` on the freed resources."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from hypothesis import example, given
from hypothesis import strategies as st

from vpolicy.engine.actions import preempt
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.actions.evict_common import fits_with, useful_candidates
from vpolicy.engine.placement import Placement, fits
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.state import SessionState, TaskInfo
from vpolicy.engine.statement import Outcome
from vpolicy.harness import verify_worlds
from vpolicy.harness.policy import from_conf
from vpolicy.load import conf as conf_loader
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import TaskStatus


def _context() -> ActionContext:
    spec = verify_worlds.Spec((2,), (("plain", False),),
                              (verify_worlds.JobSpec(0, False, 2, verify_worlds.RUNNING, 0),
                               verify_worlds.JobSpec(0, True, 0, verify_worlds.INQUEUE)))
    state = SessionState(verify_worlds.build(spec))
    policy = from_conf(conf_loader.default_conf())
    rt = Runtime(policy.tiers, state)
    return ActionContext(rt, state, Placement(rt, state), Outcome(), policy.actions)


def test_kept_candidates_follow_an_eviction_on_their_node() -> None:
    ctx = _context()
    node = next(n for n in ctx.state.nodes.values() if n.tasks)
    preemptor = next(t for t in ctx.state.tasks.values() if t.status is TaskStatus.PENDING)

    def running(t) -> bool:  # type: ignore[no-untyped-def]  # reason: test filter
        return t.status is TaskStatus.RUNNING

    kind = ("test", preemptor.uid)
    first = useful_candidates(ctx, node, running, preemptor, kind)
    assert first and useful_candidates(ctx, node, running, preemptor, kind) is first  # kept
    ctx.state.set_status(first[0], TaskStatus.RELEASING)
    after = useful_candidates(ctx, node, running, preemptor, kind)
    assert after is not None and first[0] not in after
    assert after == useful_candidates(ctx, node, running, preemptor, ("fresh",))  # what a new scan finds


def test_a_node_where_no_candidate_could_free_room_is_skipped_only_until_it_changes() -> None:
    """preempt's walk drops, in one array step, the nodes whose kept answer is "no candidate set could
    free room"; a status change there makes the node count again."""
    ctx = _context()
    node = next(n for n in ctx.state.nodes.values() if n.tasks)
    preemptor = next(t for t in ctx.state.tasks.values() if t.status is TaskStatus.PENDING)
    row = ctx.placement.arrays.row[node.name]
    rows = np.arange(len(ctx.placement.node_list))

    def nothing(t) -> bool:  # type: ignore[no-untyped-def]  # reason: test filter
        return False

    kind = ("test", preemptor.uid)
    assert list(ctx.not_useless(kind, rows)) == list(rows)  # nothing known yet
    if fits_with([], preemptor, node):
        return  # the generated node has room for it: no useless answer to keep
    assert useful_candidates(ctx, node, nothing, preemptor, kind) is None
    assert row not in ctx.not_useless(kind, rows) and len(ctx.not_useless(kind, rows)) == len(rows) - 1
    assert row in ctx.not_useless(("another kind",), rows)
    ctx.state.set_status(node.tasks[0], TaskStatus.RELEASING)
    assert row in ctx.not_useless(kind, rows)


def test_a_queues_kept_tasks_on_a_node_follow_a_status_change_there() -> None:
    """preempt keeps each node's tasks of a queue for all the queue's preemptors; a status change moves
    a task to the end of its node's list, and the victim order takes equals in list order."""
    ctx = _context()
    node, queue = next((n, t.job.queue) for n in ctx.state.nodes.values() for t in n.tasks if t.job is not None
                       and sum(u.job is not None and u.job.queue is t.job.queue for u in n.tasks) > 1)
    of_queue = preempt._queue_tasks(ctx, queue)

    def fresh() -> list[TaskInfo]:
        return [t for t in node.tasks if t.job is not None and t.job.queue is queue]

    first = of_queue(node)
    assert first == fresh() and of_queue(node) is first  # kept
    ctx.state.set_status(first[0], TaskStatus.RELEASING)
    assert of_queue(node) == fresh() != first  # the same tasks, in the node's new order


_DIMS = ("cpu", "memory", "pods", "nvidia.com/gpu")


def _vector(draw: st.DrawFn, amounts: st.SearchStrategy[int]) -> Resources:
    return Resources({d: draw(amounts) for d in _DIMS})


@st.composite
def _victims_case(draw: st.DrawFn) -> tuple[Resources, Resources, list[Resources]]:
    """Small amounts, often none (a request without cpu is still checked on cpu); an overcommitted node
    has a negative FutureIdle."""
    request = _vector(draw, st.sampled_from([0, 0, 1, 3]))
    idle = _vector(draw, st.sampled_from([-2, 0, 2, 8, 8]))
    victims = [_vector(draw, st.sampled_from([0, 0, 1, 2])) for _ in range(draw(st.integers(0, 4)))]
    return request, idle, victims


@example((Resources({"memory": 1}), Resources({"cpu": -2, "memory": 2}), [Resources({"pods": 1})]))
@given(_victims_case())
def test_fits_with_is_fits_on_future_idle_plus_the_victims(case: tuple[Resources, Resources, list[Resources]]) -> None:
    """Volcano's ValidateVictims, summed only over the dimensions `fits` reads, answers as `fits` on the
    built sum does (cpu and memory always, then every requested dimension)."""
    request, idle, freed = case
    preemptor = SimpleNamespace(resreq=request)
    node = SimpleNamespace(future_idle=idle)
    victims = [SimpleNamespace(resreq=r) for r in freed]
    assert fits_with(victims, preemptor, node) == fits(request, sum(freed, idle))  # type: ignore[arg-type]

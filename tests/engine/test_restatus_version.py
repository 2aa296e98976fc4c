"""Allocated -> Binding moves a task to the end of its node's list (as Volcano's remove and re-add does):
the node's version grows with it, so answers kept per node version read the new order."""
from __future__ import annotations

from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.placement import Placement
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.state import NodeInfo, SessionState
from vpolicy.engine.statement import Outcome
from vpolicy.harness.policy import from_conf
from vpolicy.load.conf import default_conf
from vpolicy.model.snapshot import TaskStatus

from tests.engine.build import node, pod, podgroup, snapshot


def _two_allocated_on_one_node() -> tuple[ActionContext, NodeInfo]:
    world = snapshot(nodes=[node("n0", cpu=8000, pods=110)], podgroups=[podgroup("g", min_member=2)],
                     pods=[pod("g-0", "g"), pod("g-1", "g")])
    state = SessionState(world)
    policy = from_conf(default_conf())
    rt = Runtime(policy.tiers, state)
    ctx = ActionContext(rt, state, Placement(rt, state), Outcome(), policy.actions)
    for key in ("ns/g-0", "ns/g-1"):
        task = next(t for t in state.tasks.values() if t.key == key)
        state.set_status(task, TaskStatus.ALLOCATED, "n0")
    return ctx, state.nodes["n0"]


def order(n: NodeInfo) -> list[str]:
    return [t.key for t in n.tasks]


def test_binding_a_task_that_is_not_last_moves_it_last_and_grows_the_nodes_version() -> None:
    ctx, n0 = _two_allocated_on_one_node()
    arrays, state = ctx.placement.arrays, ctx.state
    before = int(arrays.version[arrays.row["n0"]])
    first = next(t for t in state.tasks.values() if t.key == "ns/g-0")
    state.set_status(first, TaskStatus.BINDING)
    assert order(n0) == ["ns/g-1", "ns/g-0"]
    assert int(arrays.version[arrays.row["n0"]]) > before
    assert arrays.changed[-1] == arrays.row["n0"]


def test_binding_the_last_task_keeps_the_order_and_the_version() -> None:
    ctx, n0 = _two_allocated_on_one_node()
    arrays, state = ctx.placement.arrays, ctx.state
    before = int(arrays.version[arrays.row["n0"]])
    state.set_status(next(t for t in state.tasks.values() if t.key == "ns/g-1"), TaskStatus.BINDING)
    assert order(n0) == ["ns/g-0", "ns/g-1"]
    assert int(arrays.version[arrays.row["n0"]]) == before


def test_an_answer_kept_per_node_version_reads_the_order_after_binding() -> None:
    # preempt and reclaim keep per-node answers (candidates listed in the node's order) by node version
    ctx, n0 = _two_allocated_on_one_node()
    table: dict[tuple[object, ...], dict[str, tuple[int, list[str]]]] = {}
    assert ctx.kept_per_node(table, ("kind",), n0, order) == ["ns/g-0", "ns/g-1"]
    ctx.state.set_status(next(t for t in ctx.state.tasks.values() if t.key == "ns/g-0"), TaskStatus.BINDING)
    assert ctx.kept_per_node(table, ("kind",), n0, order) == ["ns/g-1", "ns/g-0"]

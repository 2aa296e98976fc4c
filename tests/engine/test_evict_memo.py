"""Per-node answers kept for a preemptor's siblings follow the node: an eviction there changes them."""
from __future__ import annotations

from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.actions.evict_common import useful_candidates
from vpolicy.engine.placement import Placement
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.state import SessionState
from vpolicy.engine.statement import Outcome
from vpolicy.harness import verify_worlds
from vpolicy.harness.policy import from_conf
from vpolicy.load import conf as conf_loader
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
    assert first[0] not in after
    assert after == useful_candidates(ctx, node, running, preemptor, ("fresh",))  # what a new scan finds

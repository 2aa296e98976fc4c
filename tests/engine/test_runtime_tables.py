"""Runtime set-up shared across a policy's sessions: rule tables built once, and session constants of
equal shape in two modules computed once (their values are the same)."""
from __future__ import annotations

from pathlib import Path

from vpolicy.engine import runtime
from vpolicy.engine.state import SessionState
from vpolicy.harness import policy as policies
from vpolicy.harness import verify_worlds

ROOT = Path(__file__).resolve().parent.parent.parent


def test_a_let_computed_as_another_modules_takes_its_value() -> None:
    policy = policies.from_policy_file(ROOT / "policies" / "default.vpol")
    plan = {key: same for key, _fn, same in runtime._let_plan([list(t) for t in policy.tiers])}
    assert plan[("shares", "deserved")] == ("proportion", "deserved")
    assert plan[("proportion", "deserved")] is None  # the first one is computed
    assert plan[("overcommit", "idle")] is None


def test_shared_values_equal_the_ones_each_module_would_compute() -> None:
    policy = policies.from_policy_file(ROOT / "policies" / "default.vpol")
    spec = verify_worlds.Spec((2, 1), (("guaranteed", False), ("weighted", False)),
                              (verify_worlds.JobSpec(0, True, 1, verify_worlds.RUNNING, 0),
                               verify_worlds.JobSpec(1, False, 3, verify_worlds.INQUEUE)))
    rt = runtime.Runtime(policy.tiers, SessionState(verify_worlds.build(spec)))
    for plugin in (p for tier in policy.tiers for p in tier if p.module.name == "shares"):
        for name, _term, fn in plugin.module.session_lets:
            assert rt.env["$session"][("shares", name)] == fn(rt.env), name


def test_sessions_of_one_policy_share_its_rule_tables() -> None:
    policy = policies.from_policy_file(ROOT / "policies" / "default.vpol")
    snapshot = verify_worlds.build(verify_worlds.Spec((1,), (("plain", False),), ()))
    a, b = runtime.Runtime(policy.tiers, SessionState(snapshot)), runtime.Runtime(policy.tiers, SessionState(snapshot))
    assert a._flat is b._flat and a._by_callback is b._by_callback
    assert a._order_memo is not b._order_memo  # per session

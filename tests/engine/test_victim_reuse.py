"""preempt's walk skips a node whose victim answer for an earlier preemptor could not free room, only
while that answer provably holds: the decisions are those of asking the rules on every node."""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import generate as gen
from benchmarks.run import policy_for
from vpolicy.engine import victim_reuse
from vpolicy.engine.placement import Placement
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.session import run_session
from vpolicy.engine.state import SessionState
from vpolicy.engine.victim_reuse import FailMemo, ReusePlan, Unprobeable, probe
from vpolicy.harness.policy import from_conf
from vpolicy.load import conf as conf_loader
from vpolicy.model.snapshot import TaskStatus

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
_numbers = st.one_of(st.integers(-50, 50), st.floats(-50, 50, allow_nan=False).map(lambda v: round(v, 2)))


def _shape(x: Any, b: Any, negate: bool, absolute: bool) -> Any:
    """What a rule may compute from a probed input: x plus a constant, negated, under abs."""
    v = x + b
    if negate:
        v = -v
    return abs(v) if absolute else v


@settings(max_examples=400, deadline=None)
@given(x0=_numbers, x1=_numbers, b=_numbers, c=_numbers, op=st.sampled_from(sorted(_COMPARE)),
       negate=st.booleans(), absolute=st.booleans(), flipped=st.booleans())
def test_a_comparison_comes_out_the_same_for_every_value_in_its_recorded_interval(
        x0: Any, x1: Any, b: Any, c: Any, op: str, negate: bool, absolute: bool, flipped: bool) -> None:
    interval = victim_reuse._Interval([float(x0)])
    probed = _shape(probe(x0, interval, 0), b, negate, absolute)
    compare = _COMPARE[op]
    seen = compare(c, probed) if flipped else compare(probed, c)
    assert seen == (compare(c, _shape(x0, b, negate, absolute)) if flipped else compare(_shape(x0, b, negate, absolute), c))
    if interval.dead or not interval.lo[0] <= x1 <= interval.hi[0]:
        return
    plain = _shape(x1, b, negate, absolute)
    assert (compare(c, plain) if flipped else compare(plain, c)) == seen


def test_a_probed_number_refuses_what_the_interval_cannot_follow() -> None:
    interval = victim_reuse._Interval([2.0])
    with pytest.raises(Unprobeable):
        _ = abs(probe(2.0, interval, 0)) + 1  # a constant added after abs: no longer one flip per side
    with pytest.raises((Unprobeable, TypeError)):
        _ = probe(2.0, interval, 0) * 3


def _plan(conf_text: str, callback: str) -> ReusePlan | None:
    policy = from_conf(conf_loader.parse_conf_text(conf_text, file="<test>"))
    rules = [r for tier in policy.tiers for p in tier for r in p.rules(callback)]
    functions = {p.module.name: p.module.functions for tier in policy.tiers for p in tier}
    assert rules, f"the conf has no {callback} rule"
    return ReusePlan.of(rules, functions)


_DEFAULT = conf_loader.default_conf_text().split("\n", 1)[1]


def test_volcanos_preempt_rules_are_followed_and_drfs_share_is_probed() -> None:
    plan = _plan(f'actions: "preempt"\n{_DEFAULT}', "preemptable")
    assert plan is not None
    # priority reads the preemptor's job (compared by identity) and two priorities; drf its job's
    # share with the preemptor placed: every one is used in comparisons only
    assert len(plan.inputs) == 4
    assert all(may_probe for _name, _fn, may_probe in plan.inputs)


def test_a_rule_reading_a_queues_state_holds_only_while_the_queue_is_unchanged() -> None:
    # proportion's reclaim rule reads the candidate's queue's allocation, which tasks on other nodes change,
    # and compares it with the reclaimer's request (Volcano's LessPartly): inputs of the plan
    plan = _plan(f'actions: "reclaim"\n{_DEFAULT}', "reclaimable")
    assert plan is not None and plan.reads_queues and plan.inputs
    assert not _plan(f'actions: "preempt"\n{_DEFAULT}', "preemptable").reads_queues  # type: ignore[union-attr]  # reason: asserted above


def test_a_rule_reading_other_cluster_state_is_not_followed() -> None:
    # tdm's rule looks up each candidate's node in `cluster.nodes`, whose state reuse does not follow
    conf = ('actions: "preempt"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
            '  - name: conformance\n- plugins:\n  - name: tdm\n')
    assert _plan(conf, "preemptable") is None


def _decisions(snapshot: Any, *, reuse: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], int]:
    made: list[FailMemo] = []
    real_init, real_open = FailMemo.__init__, FailMemo.open_rows

    def init(self: FailMemo, *args: Any) -> None:
        real_init(self, *args)
        made.append(self)

    def ask_every_node(self: FailMemo, kind: Any, preemptor: Any, rows: np.ndarray) -> np.ndarray:
        return rows

    with monkeypatch.context() as patched:
        patched.setattr(FailMemo, "__init__", init)
        patched.setattr(FailMemo, "open_rows", real_open if reuse else ask_every_node)
        # no solver notes: their time budget would make the documents depend on the machine's load
        document = run_session(snapshot, policy_for("preemption"), solver_budget=0).decisions.to_document()
    document.pop("stats", None)
    return document, sum(m.reused for m in made)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(1, 10_000), nodes=st.integers(20, 60))
def test_preempt_decides_the_same_with_failures_reused_as_when_asking_every_node(
        seed: int, nodes: int) -> None:
    generated = gen.generate(gen.Size("small", nodes, nodes * 10), "preemption", seed=seed)
    with pytest.MonkeyPatch.context() as monkeypatch:
        reused, skipped = _decisions(generated.snapshot, reuse=True, monkeypatch=monkeypatch)
        fresh, none = _decisions(generated.snapshot, reuse=False, monkeypatch=monkeypatch)
    assert none == 0
    assert reused == fresh


def test_the_preemption_workload_skips_nodes_and_decides_as_asking_every_node(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = gen.generate(gen.Size("small", 100, 1_000), "preemption", seed=3)
    reused, skipped = _decisions(generated.snapshot, reuse=True, monkeypatch=monkeypatch)
    fresh, _ = _decisions(generated.snapshot, reuse=False, monkeypatch=monkeypatch)
    assert skipped > 0, "no node was skipped: the case tests nothing"
    assert reused["evictions"], "nothing was preempted: the case tests nothing"
    assert reused == fresh


def test_a_kept_failure_is_forgotten_when_a_job_it_read_changes() -> None:
    """A node's kept answer read its candidates' jobs (gang: ready counts, drf: allocations): a status
    change of any task of one of them, on any node, brings the node back into the walk."""
    generated = gen.generate(gen.Size("small", 30, 300), "preemption", seed=2)
    state = SessionState(generated.snapshot)
    policy = policy_for("preemption")
    rt = Runtime(policy.tiers, state)
    placement = Placement(rt, state)
    memo = FailMemo(rt, "preemptable", placement.arrays, state.job_log)
    assert memo.plan is not None
    # the pending task asking most (GPUs first): the victims on most nodes would not make its room
    pending = [t for t in state.tasks.values() if t.status is TaskStatus.PENDING and t.job is not None]
    preemptor = max(pending, key=lambda t: (t.resreq.get("nvidia.com/gpu", 0), t.resreq.get("cpu", 0)))
    kind = ("test",)
    for node in state.nodes.values():
        candidates = [t for t in node.tasks if t.job is not None and t.job is not preemptor.job]
        elsewhere = [t for c in candidates for t in c.job.tasks  # type: ignore[union-attr]  # reason: filtered above
                     if t.node_name != node.name and t.status is TaskStatus.RUNNING]
        if not elsewhere:
            continue
        row = placement.arrays.row[node.name]
        memo.remember(kind, preemptor, node.name, candidates, rt.victims("preemptable", preemptor, candidates)[0])
        if not len(memo.open_rows(kind, preemptor, np.array([row]))):
            break  # kept: the answer holds for this preemptor
    else:
        pytest.fail("no answer was kept: the case tests nothing")
    state.set_status(elsewhere[0], TaskStatus.RELEASING)  # the candidate's job changes, not the node
    assert list(memo.open_rows(kind, preemptor, np.array([row]))) == [row]

"""Victim rules over a symbolic world (`compile.encode_victims`) proved or refuted with Z3."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpolicy.compile import encode_victims as ev
from vpolicy.compile import ir
from vpolicy.harness import policy as policies
from vpolicy.harness import verify_symbolic
from vpolicy.load import conf as conf_loader
from vpolicy.solve.backend_z3 import Z3Backend
from vpolicy.solve.result import Sat, Unsat
from vpolicy.source import Span

ROOT = Path(__file__).resolve().parent.parent.parent
BROKEN = ROOT / "tests" / "harness" / "data" / "preempt-without-priority.conf"
LABEL = ir.Label("test", Span("<test>", 0, 0))


def _rule(body: ir.Term) -> tuple[str, tuple[str, ...], ir.Term]:
    return ("t.rule", ("preemptor", "candidates"), body)


def _filter(when: ir.Term) -> ir.Term:
    return ir.Select("c", ir.Var("candidates"), None, None, None, when, None)


def _attr(obj: str, *names: str) -> ir.Term:
    out: ir.Term = ir.Var(obj)
    for name in names:
        out = ir.GetAttr(out, name)
    return out


def test_a_filter_rule_keeps_exactly_the_candidates_its_condition_holds_for() -> None:
    world = ev.World(2)
    lower = _filter(ir.op("<", _attr("c", "priority"), _attr("preemptor", "priority")))
    encoded = ev.encode(world, [[_rule(lower)]])
    assert encoded.exact
    # A victim with priority >= the preemptor's is impossible.
    bad = ir.op("and", encoded.victims[0], ir.op(">=", ir.Sym("c0.priority"), ir.Sym("p.priority")))
    result = Z3Backend().check([(LABEL, t) for t in (*encoded.hard, bad)])
    assert isinstance(result, Unsat)


def test_an_empty_answer_ends_the_tier_and_the_next_tier_decides() -> None:
    world = ev.World(1)
    never = _filter(ir.Const(False))
    always = _filter(ir.Const(True))
    encoded = ev.encode(world, [[_rule(never)], [_rule(always)]])
    chosen = ir.op("and", ir.Sym("c0.present", "bool"), encoded.victims[0])
    assert isinstance(Z3Backend().check([(LABEL, t) for t in (*encoded.hard, chosen)]), Sat)


def test_an_answer_in_one_tier_closes_later_tiers() -> None:
    # Tier 1 answers with c0 but its second rule refuses everything: the tier ends empty, and tier 2 may
    # only intersect with what tier 1 answered (nothing), as Volcano's Preemptable does.
    world = ev.World(1)
    encoded = ev.encode(world, [[_rule(_filter(ir.Const(True))), _rule(_filter(ir.Const(False)))],
                                [_rule(_filter(ir.Const(True)))]])
    chosen = ir.op("and", ir.Sym("c0.present", "bool"), encoded.victims[0])
    assert isinstance(Z3Backend().check([(LABEL, t) for t in (*encoded.hard, chosen)]), Unsat)


def test_a_rule_outside_the_fragment_is_abstracted_not_refused() -> None:
    world = ev.World(2)
    uses_shares = _filter(ir.op("<=", ir.Apply("share", (_attr("c", "resreq"), _attr("preemptor", "resreq"))),
                                ir.Const(0.5)))
    encoded = ev.encode(world, [[_rule(uses_shares)]])
    assert not encoded.exact
    assert encoded.abstracted == ("t.rule",)


def test_resource_vectors_compare_on_every_dimension() -> None:
    world = ev.World(1)
    fits = _filter(ir.op("<=", _attr("c", "resreq"), _attr("preemptor", "resreq")))
    encoded = ev.encode(world, [[_rule(fits)]])
    assert encoded.exact
    # chosen although its memory exceeds the preemptor's: impossible
    bad = ir.op("and", encoded.victims[0], ir.op(">", ir.Sym("c0.resreq.memory"), ir.Sym("p.resreq.memory")))
    assert isinstance(Z3Backend().check([(LABEL, t) for t in (*encoded.hard, bad)]), Unsat)


def test_a_session_map_is_any_value_and_makes_the_encoding_inexact() -> None:
    world = ev.World(1)
    above = _filter(ir.op("not", ir.Apply("le", (_attr("c", "queue", "allocated"),
                                                 ir.GetIndex(ir.SessionRef("proportion", "deserved"),
                                                             _attr("c", "queue"))))))
    encoded = ev.encode(world, [[_rule(above)]])
    assert not encoded.exact and encoded.approximated == ("t.rule",) and not encoded.abstracted
    assert world.unknown_maps == {"proportion.deserved"}


def test_shipped_default_policy_never_reclaims_below_a_guarantee_proved_for_every_size() -> None:
    policy = policies.from_policy_file(ROOT / "policies" / "default.vpol")
    outcome = verify_symbolic.prove_reclaim_guarantee(policy, candidates=3)
    assert outcome.status == "proved", outcome.detail
    assert outcome.detail.startswith("symbolic (Z3): shares.keep_guarantee alone would never choose victims")
    assert "any number of resources" in outcome.detail


def test_shipped_default_policy_reclaims_only_above_deserved_in_any_eviction_order_proved() -> None:
    policy = policies.from_policy_file(ROOT / "policies" / "default.vpol")
    outcome = verify_symbolic.prove_reclaim(policy, "reclaim-overused-only", candidates=3)
    assert outcome.status == "proved", outcome.detail
    assert outcome.detail.startswith("symbolic (Z3): shares.above_deserved_in_any_order alone would choose a victim")


def test_session_maps_computed_by_equal_terms_are_one_unknown() -> None:
    """shares.vpol copies proportion's `deserved`: the proof may compare the two (same computation)."""
    policy = policies.from_policy_file(ROOT / "policies" / "default.vpol")
    lets = {(p.module.name, n): t for tier in policy.tiers for p in tier for n, t, _fn in p.module.session_lets}
    world = ev.World(1, session_terms=lets)
    assert ev.map_name(world, "shares", "deserved") == ev.map_name(world, "proportion", "deserved") == \
        "proportion.deserved"
    assert ev.map_name(world, "shares", "requests") == "proportion.requests"


def test_volcano_proportion_alone_is_not_proved_to_keep_guarantees() -> None:
    """Without shares.vpol, proportion takes a victim while its queue is above deserved before the
    eviction (policies/tests/reclaim/reclaim_can_take_a_queue_below_its_guarantee.yaml)."""
    conf = conf_loader.parse_conf_text(
        'actions: "enqueue, allocate, reclaim"\ntiers:\n- plugins:\n  - name: gang\n  - name: conformance\n'
        '  - name: proportion\n', file="<conf>")
    outcome = verify_symbolic.prove_reclaim_guarantee(policies.from_conf(conf), candidates=2)
    assert outcome.status == "inconclusive"
    # and proportion checks "above deserved" in candidate order, not in the order reclaim evicts
    outcome = verify_symbolic.prove_reclaim(policies.from_conf(conf), "reclaim-overused-only", candidates=2)
    assert outcome.status == "inconclusive"


def test_shipped_default_policy_only_preempts_lower_priority_proved_exactly() -> None:
    policy = policies.from_policy_file(ROOT / "policies" / "default.vpol")
    outcome = verify_symbolic.prove_preempt_priority(policy, candidates=3)
    assert outcome.status == "proved"
    assert "rules encoded exactly" in outcome.detail


def test_preempt_tier_without_priority_rule_is_refuted() -> None:
    policy = policies.from_conf(conf_loader.load_conf(BROKEN))
    outcome = verify_symbolic.prove_preempt_priority(policy, candidates=2)
    assert outcome.status == "refuted"
    assert "equal or higher priority" in outcome.detail


@pytest.mark.parametrize("helm", [pytest.param(False, id="volcano-default"), pytest.param(True, id="helm")])
def test_volcano_confs_are_proved_structurally(helm: bool) -> None:
    text = conf_loader.helm_default_conf_text() if helm else conf_loader.default_conf_text()
    policy = policies.from_conf(conf_loader.parse_conf_text(text, file="<conf>"))
    assert verify_symbolic.structural("preempt-lower-priority-only", policy) is not None
    assert verify_symbolic.structural("no-preemption-cycle", policy) is not None
    assert verify_symbolic.structural("node-capacity", policy) is None

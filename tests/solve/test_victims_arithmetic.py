"""Victim rules that compute with numbers, proved or refuted as exact evaluation would decide them.

`compile.evaluate` divides truly (0 when the divisor is 0) and computes with IEEE doubles; the symbolic
encoding (`compile.encode_victims`, `compile.rounding`, `solve.backend_z3`) must not prove what the
exact rule breaks, and a rule whose answer may rest on a rounding is not encoded exactly. Each case
first shows what the exact rule does with one candidate, then what the proof says.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vpolicy.compile import encode_victims as ev
from vpolicy.compile.lower import compile_module
from vpolicy.engine.session import CompiledPolicy
from vpolicy.harness import policy as policies
from vpolicy.harness import verify_symbolic
from vpolicy.lang.parse import parse_text


class _Object:
    """A task or job for the exact rule: attributes by keyword, hashed by identity as the engine's are."""

    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


SAME_JOB = _Object(priority=0)


def _policy(tmp_path: Path, rule: str) -> CompiledPolicy:
    (tmp_path / "rules.vpol").write_text(f'plugin rules "victim rules under test"\n\n{rule}\n')
    (tmp_path / "policy.vpol").write_text('policy p\nactions enqueue, allocate, preempt\ntier {\n'
                                          '    use "rules.vpol"\n}\n')
    return policies.from_policy_file(tmp_path / "policy.vpol")


def _filter(when: str) -> str:
    return f"rule victims: preemptable(preemptor, candidates) =\n    select c in candidates\n        when {when}"


def _exact_victims(policy: CompiledPolicy, preemptor_priority: int, candidate_priority: int) -> list[int]:
    """The priorities of the candidates the exact rule chooses: one candidate of the preemptor's job."""
    rule = policy.tiers[0][0].module.rules["preemptable"][0]
    preemptor = _Object(priority=preemptor_priority, job=SAME_JOB)
    candidate = _Object(priority=candidate_priority, job=SAME_JOB)
    return [c.priority for c in rule.call({}, preemptor, [candidate])]


@pytest.mark.parametrize("when, preemptor, candidate", [
    pytest.param("c.job == preemptor.job and (preemptor.priority - c.priority + 1) / 2 > 0.4", 3, 3,
                 id="int-by-int-is-true-division"),
    pytest.param("c.job == preemptor.job and c.priority == 1 and c.priority * 0.1 + 0.2 > 0.3", 1, 1,
                 id="float-constants-are-doubles"),
    pytest.param("c.job == preemptor.job and c.priority * 0.1 == 1", 10, 10, id="float-products-round"),
    pytest.param("c.job == preemptor.job and 2 * preemptor.priority <= c.priority "
                 "and c.priority / 2 < preemptor.priority", 2**60 + 1, 2**61 + 2, id="a-quotient-beyond-2**53-rounds"),
])
def test_a_rule_that_chooses_a_victim_of_no_lower_priority_is_not_proved(
        tmp_path: Path, when: str, preemptor: int, candidate: int) -> None:
    policy = _policy(tmp_path, _filter(when))
    assert _exact_victims(policy, preemptor, candidate) == [candidate]  # not lower than the preemptor's
    outcome = verify_symbolic.prove_preempt_priority(policy, candidates=2)
    assert outcome.status in ("inconclusive", "refuted"), outcome.detail


@pytest.mark.parametrize("when", [
    pytest.param("c.job == preemptor.job and c.priority >= preemptor.priority "
                 "and 1 / (c.priority - preemptor.priority) > 1", id="division-by-zero-is-zero"),
    pytest.param("c.job == preemptor.job and c.priority >= preemptor.priority "
                 "and (c.priority - preemptor.priority) / 0 > 0", id="division-by-a-zero-constant"),
    pytest.param("if c.job == preemptor.job then c.priority / 2 < preemptor.priority / 2 "
                 "else c.job.priority * 0.5 < preemptor.job.priority * 0.5", id="rounding-keeps-the-order"),
    pytest.param("c.job == preemptor.job and preemptor.priority < 1000 and preemptor.priority > -1000 "
                 "and 2 * preemptor.priority <= c.priority and c.priority / 2 < preemptor.priority",
                 id="rounding-keeps-the-order-to-an-int-that-is-a-double"),
])
def test_a_rule_that_chooses_only_lower_priority_victims_is_proved(tmp_path: Path, when: str) -> None:
    policy = _policy(tmp_path, _filter(when))
    assert _exact_victims(policy, 5, 5) == [] and _exact_victims(policy, 5, 6) == []
    outcome = verify_symbolic.prove_preempt_priority(policy, candidates=2)
    assert outcome.status == "proved", outcome.detail


def _encoded(when: str) -> ev.Encoded:
    module = compile_module(parse_text(f'plugin t "t"\n\n{_filter(when)}\n', "<t>"))
    rule = module.rules["preemptable"][0]
    return ev.encode(ev.World(2), [[("t.victims", rule.params, rule.term)]])


@pytest.mark.parametrize("when, exact", [
    pytest.param("c.priority > 0.5", True, id="comparison-with-a-float"),
    pytest.param("c.priority + 1 > preemptor.priority * 2", True, id="int-arithmetic"),
    pytest.param("c.priority * 0.1 + 0.2 > 0.3", False, id="float-arithmetic"),
    pytest.param("c.priority / 2 > 1", False, id="division"),
    pytest.param("c.priority > 0.1 + 0.2", True, id="float-constants-folded-by-python"),
])
def test_a_rule_whose_answer_may_rest_on_a_rounding_is_not_encoded_exactly(when: str, exact: bool) -> None:
    encoded = _encoded(when)
    assert encoded.exact is exact
    assert encoded.approximated == (() if exact else ("t.victims",)) and encoded.abstracted == ()


BOOLEAN_STATE = ("rule one_per_job: preemptable(preemptor, candidates) =\n    select c in candidates group c.job "
                 "start true as first\n        when first and {when} then false")


@pytest.mark.parametrize("when, status", [
    pytest.param("c.priority < preemptor.priority", "refuted", id="breaks-the-property-across-jobs"),
    pytest.param("(if c.job == preemptor.job then c.priority < preemptor.priority "
                 "else c.job.priority < preemptor.job.priority)", "proved", id="keeps-the-property"),
])
def test_a_boolean_group_state_is_encoded_as_a_boolean(tmp_path: Path, when: str, status: str) -> None:
    policy = _policy(tmp_path, BOOLEAN_STATE.format(when=when))
    assert _encoded_state_is_exact(policy)
    outcome = verify_symbolic.prove_preempt_priority(policy, candidates=2)
    assert outcome.status == status, outcome.detail
    if status == "refuted":  # the witness is real: the exact rule takes a task of another job, of equal job priority
        rule = policy.tiers[0][0].module.rules["preemptable"][0]
        preemptor = _Object(priority=1, job=_Object(priority=0))
        other = _Object(priority=0, job=_Object(priority=0))
        assert rule.call({}, preemptor, [other]) == [other]


def _encoded_state_is_exact(policy: CompiledPolicy) -> bool:
    rule = policy.tiers[0][0].module.rules["preemptable"][0]
    return ev.encode(ev.World(2), [[("t.one_per_job", rule.params, rule.term)]]).exact


def test_a_rule_over_string_arithmetic_is_not_proved_from_the_strings_codes(tmp_path: Path) -> None:
    """Strings are interned as integer codes, which mean something only to == and !=: `c.name + ""` is the
    name itself to the engine, but the sum of two codes, another number, to the solver."""
    policy = _policy(tmp_path, _filter('c.job == preemptor.job and c.name + "" == c.name'))
    rule = policy.tiers[0][0].module.rules["preemptable"][0]
    preemptor = _Object(priority=3, job=SAME_JOB, name="p")
    candidate = _Object(priority=3, job=SAME_JOB, name="c")
    assert rule.call({}, preemptor, [candidate]) == [candidate]  # equal priority: the property breaks
    outcome = verify_symbolic.prove_preempt_priority(policy, candidates=2)
    assert outcome.status in ("inconclusive", "refuted"), outcome.detail


def test_the_minimum_over_no_candidate_is_zero_as_in_the_engine(tmp_path: Path) -> None:
    """No candidate passes `where`, so the engine's min is 0 and the rule chooses nothing; a solver left
    free to pick that minimum would build a counterexample the engine never makes."""
    policy = _policy(tmp_path, _filter("c.job == preemptor.job "
                                       "and min(x in candidates where x.priority > x.priority: x.priority) > 5"))
    assert _exact_victims(policy, 3, 3) == []
    outcome = verify_symbolic.prove_preempt_priority(policy, candidates=2)
    assert outcome.status == "proved", outcome.detail

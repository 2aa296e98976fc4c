"""reclaim reuses a node's victim answer only when the rules cannot tell one reclaimer from another, and
never past a change of what they read: the decisions are those of asking the rules every time."""
from __future__ import annotations

import functools

import pytest

from benchmarks import generate as gen
from benchmarks.run import policy_for
from vpolicy.engine.actions import ACTIONS, reclaim
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.session import run_session
from vpolicy.engine.victim_memo import preemptor_free, preemptor_reads
from vpolicy.harness.policy import from_conf
from vpolicy.load import conf as conf_loader


def _free(conf_text: str, callback: str) -> bool:
    policy = from_conf(conf_loader.parse_conf_text(conf_text, file="<test>"))
    rules = [r for tier in policy.tiers for p in tier for r in p.rules(callback)]
    functions = {p.module.name: p.module.functions for tier in policy.tiers for p in tier}
    assert rules, f"the conf has no {callback} rule"
    return preemptor_free(rules, functions)


_DEFAULT = conf_loader.default_conf_text().split("\n", 1)[1]


def _reads(conf_text: str, callback: str) -> frozenset[str] | None:
    policy = from_conf(conf_loader.parse_conf_text(conf_text, file="<test>"))
    rules = [r for tier in policy.tiers for p in tier for r in p.rules(callback)]
    functions = {p.module.name: p.module.functions for tier in policy.tiers for p in tier}
    return preemptor_reads(rules, functions)


def test_volcanos_reclaim_rules_read_only_the_reclaimers_request_and_its_preempt_rules_more() -> None:
    # gang and conformance judge the candidates alone, proportion also compares each victim queue's
    # allocation with the reclaimer's request (LessPartly); priority and drf compare with the preemptor
    assert _reads(f'actions: "reclaim"\n{_DEFAULT}', "reclaimable") == frozenset({"resreq"})
    assert _free(f'actions: "reclaim"\n{_DEFAULT}', "reclaimable") is False
    assert _reads(f'actions: "preempt"\n{_DEFAULT}', "preemptable") is None


def test_capacitys_reclaim_rule_reads_the_reclaimers_dimensions() -> None:
    conf = ('actions: "reclaim"\ntiers:\n- plugins:\n  - name: gang\n  - name: conformance\n'
            '- plugins:\n  - name: capacity\n')
    assert _free(conf, "reclaimable") is False


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_reclaim_decides_the_same_with_answers_reused_as_when_asking_every_time(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = gen.generate(gen.Size("small", 40, 400), "reclaim", seed=seed)
    policy = policy_for("reclaim")
    # the memo serves reclaim's walk without `reclaim_reuse` (which keeps answers its own way and is
    # compared with asking every node in test_reclaim_reuse)
    monkeypatch.setitem(ACTIONS, "reclaim", functools.partial(reclaim.run, reuse=False))
    computed: list[int] = []
    rules_answer = Runtime.victims

    def counted(self: Runtime, callback, preemptor, candidates):  # type: ignore[no-untyped-def]  # reason: patched method
        computed.append(1)
        return rules_answer(self, callback, preemptor, candidates)

    real = ActionContext.victims_on
    wanted: list[int] = []

    def counting(self: ActionContext, callback, preemptor, node, candidates):  # type: ignore[no-untyped-def]  # reason: patched method
        wanted.append(1)
        return real(self, callback, preemptor, node, candidates)

    with monkeypatch.context() as patched:
        patched.setattr(Runtime, "victims", counted)
        patched.setattr(ActionContext, "victims_on", counting)
        reused = run_session(generated.snapshot, policy).decisions.to_document()
    assert len(computed) < len(wanted), "no answer was reused: the case tests nothing"
    asked: list[int] = []

    def every_time(self: ActionContext, callback, preemptor, node, candidates):  # type: ignore[no-untyped-def]  # reason: patched method
        self.victim_memos[callback] = None  # no memo: the rules answer every node
        asked.append(1)
        return real(self, callback, preemptor, node, candidates)

    monkeypatch.setattr(ActionContext, "victims_on", every_time)
    fresh = run_session(generated.snapshot, policy).decisions.to_document()
    assert asked, "reclaim asked no node for victims: the case tests nothing"
    assert reused["evictions"], "nothing was reclaimed: the case tests nothing"
    for part in ("binds", "pipelined", "evictions", "podgroups", "unschedulable"):
        assert reused[part] == fresh[part], part

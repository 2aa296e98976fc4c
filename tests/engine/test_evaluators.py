"""The fast evaluators give the reference evaluator's answers, for every node rule of every shipped module.

A rule body has four executable forms: the closure tree (`compile.evaluate`, the reference), generated
Python per rule (`compile.pycode`), and over a batch of nodes the numpy interpreter
(`compile.vectorize`) and generated numpy (`compile.vcode`). The engine picks whichever is fastest for
the call, so any difference between them would be a wrong placement; this checks them against each
other on generated clusters and the session state they open with.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from vpolicy.compile import vectorize
from vpolicy.compile.functions import FUNCTIONS
from vpolicy.compile.lower import CompiledModule, CompiledRule, compile_module
from vpolicy.engine.placement import Placement
from vpolicy.engine.runtime import PluginInstance, Runtime
from vpolicy.engine.state import SessionState
from vpolicy.lang.parse import parse_file
from vpolicy.model.snapshot import ClusterSnapshot, TaskStatus
from tests.strategies import clusters

MODULES = sorted(Path(__file__).resolve().parents[2].joinpath("policies", "volcano").glob("*.vpol"))


def _compiled(path: Path, codegen: bool, monkeypatch: pytest.MonkeyPatch) -> CompiledModule:
    with monkeypatch.context() as m:
        if codegen:
            m.delenv("VPOLICY_NO_CODEGEN", raising=False)
        else:
            m.setenv("VPOLICY_NO_CODEGEN", "1")
        return compile_module(parse_file(path))


def _node_rules(module: CompiledModule) -> list[CompiledRule]:
    return [r for cb in ("predicate", "node_order") for r in module.rules.get(cb, [])]


@pytest.fixture(scope="module")
def modules() -> list[tuple[CompiledModule, CompiledModule]]:
    """Each shipped module compiled twice: with generated code (fast forms) and without (reference)."""
    patch = pytest.MonkeyPatch()
    try:
        return [(_compiled(p, True, patch), _compiled(p, False, patch)) for p in MODULES]
    finally:
        patch.undo()


def test_every_shipped_node_rule_has_a_generated_batch_form(modules) -> None:  # type: ignore[no-untyped-def]
    """Guards the speed of sessions: a rule that silently lost its fast form would still pass the rest."""
    slow = [f"{fast.name}.{r.name}" for fast, _ref in modules for r in _node_rules(fast)
            if r.vector is not None and r.vector.__code__.co_filename != "<vpolicy-vector>"]
    assert slow == []
    generated = [f"{ref.name}.{r.name}" for _fast, ref in modules for r in _node_rules(ref)
                 if getattr(r.fn, "__code__", None) is not None and r.fn.__code__.co_filename == "<vpolicy-generated>"]
    assert generated == []  # the reference forms are the closure tree
    assert sum(len(_node_rules(fast)) for fast, _ref in modules) >= 10


def _as_float(v: object) -> float:
    return float(v)  # type: ignore[arg-type]  # reason: rule answers are numbers or bools


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(clusters())
def test_fast_forms_agree_with_the_reference_on_every_node(modules, snapshot: ClusterSnapshot) -> None:  # type: ignore[no-untyped-def]
    fast_tier = [PluginInstance(fast.name, fast, {}) for fast, _ref in modules]
    state = SessionState(snapshot)
    if not state.nodes:
        return
    rt = Runtime([fast_tier], state)
    placement = Placement(rt, state)
    rows = np.arange(len(placement.node_list))
    tasks = [t for t in state.tasks.values() if t.status is TaskStatus.PENDING][:4] or list(state.tasks.values())[:2]
    for fast, ref in modules:
        for rule, ref_rule in zip(_node_rules(fast), _node_rules(ref)):
            reference = ref_rule.fn  # compiled without generated code: the closure tree
            interpreted = None
            if rule.vector is not None:
                interpreted = vectorize.compile_node_rule(rule.term, rule.params[1], fast.functions, FUNCTIONS)
            for task in tasks:
                env = dict(rt.env)
                expected = []
                for node in placement.node_list:
                    env[rule.params[0]], env[rule.params[1]] = task, node
                    expected.append(_as_float(reference(env)))
                scalar = [_as_float(rule.call(dict(rt.env), task, node)) for node in placement.node_list]
                assert scalar == expected, f"{fast.name}.{rule.name}: generated Python differs"
                if rule.vector is None:
                    continue
                batch_env = dict(rt.env)
                batch_env[rule.params[0]], batch_env[rule.params[1]] = task, placement._batch(rows)
                for form, fn in (("vcode", rule.vector), ("vectorize", interpreted)):
                    got = np.broadcast_to(np.asarray(fn(dict(batch_env)), dtype=float), (len(rows),))
                    assert got.tolist() == expected, f"{fast.name}.{rule.name}: {form} differs"

"""A helper's parameters declared `int` or `number` are numbers whatever the caller (the checker lets
nothing else in), and so is a session constant whose term is a plain number: generated code uses Python's
operators on them, and the answers stay those of the reference evaluator, types and division by zero (0)
included."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from vpolicy.compile.lower import CompiledRule, compile_module
from vpolicy.lang.parse import parse_text

TEXT = """plugin numeric_params "helpers with number parameters"

param w: int = 0
let weight = if w < 0 then 1 else w
let half_weight = weight / 2 + 0.5

let ratio(a: number, b: number): number = a / b
let scaled(x: int, k: number): number = x * k + x - k
let untyped_sum(a, b) = a + b

rule pods_per_room: node_order(task, node) = ratio(node.max_pods, node.pod_count)
rule mixed: node_order(task, node) = scaled(node.max_pods, 0.5) + untyped_sum(node.pod_count, 1)
rule by_session_constants: node_order(task, node) = node.max_pods / weight + node.pod_count * half_weight
"""


def _session() -> dict[str, object]:
    """The session constants as a session holds them (each `let` evaluated once, in order)."""
    module = compile_module(parse_text(TEXT, "numeric_params.vpol"))
    env: dict[str, object] = {"$session": {}}
    for name, _term, closure in module.session_lets:
        env["$session"][(module.name, name)] = closure(env)  # type: ignore[index]
    return env


def _rules(monkeypatch: pytest.MonkeyPatch, codegen: bool) -> dict[str, CompiledRule]:
    if codegen:
        monkeypatch.delenv("VPOLICY_NO_CODEGEN", raising=False)
    else:
        monkeypatch.setenv("VPOLICY_NO_CODEGEN", "1")
    module = compile_module(parse_text(TEXT, str(Path("numeric_params.vpol"))))
    return {r.name: r for r in module.rules["node_order"]}


@pytest.mark.parametrize("max_pods, pod_count", [(10, 4), (10, 0), (0, 0), (7, 2)])
def test_number_parameters_answer_as_the_reference(monkeypatch: pytest.MonkeyPatch, max_pods: int,
                                                   pod_count: int) -> None:
    fast = _rules(monkeypatch, True)
    ref = _rules(monkeypatch, False)
    assert fast["pods_per_room"].fn.__code__.co_filename == "<vpolicy-generated>"
    node = SimpleNamespace(max_pods=max_pods, pod_count=pod_count)
    for name in ("pods_per_room", "mixed", "by_session_constants"):
        got, want = fast[name].call(_session(), None, node), ref[name].call(_session(), None, node)
        assert (got, type(got)) == (want, type(want))
    if pod_count == 0:
        assert fast["pods_per_room"].call({}, None, node) == 0  # the DSL's x / 0
    # weight is 0 (the conf sets none): x / weight is 0, half_weight 0.5
    assert fast["by_session_constants"].call(_session(), None, node) == pod_count * 0.5

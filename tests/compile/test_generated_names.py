"""Generated Python (`compile.pycode`) keeps the names of a rule apart: a parameter the author wrote and
a local the compiler made (`let x` lowered to `x#<n>`, aggregate and select variables likewise) are
different variables in the closure tree, so they must be different Python locals too."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from vpolicy.compile import evaluate, ir, pycode
from vpolicy.compile.functions import FUNCTIONS


def _generated_and_reference(params: tuple[str, ...], term: ir.Term) -> tuple[Any, Any]:
    gen = pycode.Generator(dict(FUNCTIONS))
    gen.add_entry("rule", params, term)
    return gen.build()["e_rule"], evaluate.compile_term(term)


PRIORITY_PLUS_LET = ir.Bind("x#5", ir.Const(100), ir.Op("+", (ir.GetAttr(ir.Var("x_5"), "priority"), ir.Var("x#5"))))
SUM_OF_PARAM_OVER_TASKS = ir.Agg("sum", "t#8", ir.GetAttr(ir.Var("queue"), "tasks"), None,
                                 ir.GetAttr(ir.Var("t_8"), "priority"))


@pytest.mark.parametrize("params, term, env, expected", [
    pytest.param(("x_5",), PRIORITY_PLUS_LET, {"x_5": SimpleNamespace(priority=1)}, 101,
                 id="parameter-x_5-and-let-x#5"),
    pytest.param(("queue", "t_8"), SUM_OF_PARAM_OVER_TASKS,
                 {"queue": SimpleNamespace(tasks=[SimpleNamespace(priority=5), SimpleNamespace(priority=7)]),
                  "t_8": SimpleNamespace(priority=1)}, 2, id="parameter-t_8-and-aggregate-variable-t#8"),
])
def test_a_parameter_named_like_a_lowered_local_stays_a_variable_of_its_own(
        params: tuple[str, ...], term: ir.Term, env: dict[str, Any], expected: int) -> None:
    generated, reference = _generated_and_reference(params, term)
    assert reference(dict(env)) == expected
    assert generated(dict(env)) == expected


@pytest.mark.parametrize("names", [
    pytest.param(("x_5", "x#5"), id="underscore-or-hash"),
    pytest.param(("a_1#2", "a#1_2"), id="either-side-of-the-hash"),
    pytest.param(("f.x", "f_x", "f_2e_x"), id="helper-parameter"),
    pytest.param(("x#i3", "x_i3", "x#5#i3"), id="inlined-copy"),
])
def test_python_locals_are_one_to_one_with_ir_names(names: tuple[str, ...]) -> None:
    locals_ = [pycode._ident(name) for name in names]
    assert len(set(locals_)) == len(names)
    assert all(local.isidentifier() for local in locals_)

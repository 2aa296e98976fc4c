"""The Z3 translation gives `/` and float constants the meaning exact evaluation gives them
(`compile.evaluate`): true division, 0 when the divisor is 0, and a float constant is its double."""
from __future__ import annotations

from fractions import Fraction

import pytest

from vpolicy.compile import evaluate, ir
from vpolicy.solve.backend_z3 import Z3Backend
from vpolicy.solve.result import Sat, SolverError, Unsat
from vpolicy.source import Span

LABEL = ir.Label("test", Span("<test>", 0, 0))
X = ir.Sym("x", "int")
R = ir.Sym("r", "real")


def _always(term: ir.Term) -> bool:
    """Does `term` hold for every value of its unknowns?"""
    return isinstance(Z3Backend().check([(LABEL, ir.Op("not", (term,)))]), Unsat)


@pytest.mark.parametrize("term", [
    pytest.param(ir.Op("/", (ir.Const(7), ir.Const(2))), id="int-by-int-is-true-division"),
    pytest.param(ir.Op("/", (ir.Const(-7), ir.Const(2))), id="negative-int-by-int"),
    pytest.param(ir.Op("/", (ir.Const(1), ir.Const(0))), id="int-by-zero-is-zero"),
    pytest.param(ir.Op("/", (ir.Const(1.5), ir.Const(0.0))), id="float-by-zero-is-zero"),
    pytest.param(ir.Op("/", (ir.Const(3), ir.Const(0.5))), id="int-by-float"),
])
def test_division_of_constants_is_what_exact_evaluation_computes(term: ir.Term) -> None:
    expected = evaluate.compile_term(term)({})
    assert _always(ir.Op("==", (term, ir.Const(expected))))


def test_an_int_divided_by_an_int_can_have_a_fraction() -> None:
    result = Z3Backend().check([(LABEL, ir.Op("==", (ir.Op("/", (X, ir.Const(2))), ir.Const(3.5))))])
    assert isinstance(result, Sat) and result.model["x"] == 7


@pytest.mark.parametrize("dividend", [pytest.param(X, id="int"), pytest.param(R, id="real")])
def test_anything_divided_by_zero_is_zero(dividend: ir.Term) -> None:
    assert _always(ir.Op("==", (ir.Op("/", (dividend, ir.Const(0))), ir.Const(0))))
    assert _always(ir.Op("==", (ir.Op("/", (dividend, ir.Op("-", (X, X)))), ir.Const(0))))


def test_a_float_constant_is_the_exact_value_of_its_double() -> None:
    assert Z3Backend().translate(ir.Const(0.1)).as_fraction() == Fraction(0.1) != Fraction(1, 10)
    # 1e23 is the double 99999999999999991611392: an int between it and 10**23 is above it, as in Python
    between = ir.Op("and", (ir.Op(">", (X, ir.Const(1e23))), ir.Op("<", (X, ir.Const(10**23)))))
    result = Z3Backend().check([(LABEL, between)])
    assert isinstance(result, Sat)
    assert 1e23 < result.model["x"] < 10**23


@pytest.mark.parametrize("value", [pytest.param(float("inf"), id="inf"), pytest.param(float("nan"), id="nan")])
def test_a_float_without_a_rational_value_has_no_solver_meaning(value: float) -> None:
    with pytest.raises(SolverError):
        Z3Backend().translate(ir.Const(value))

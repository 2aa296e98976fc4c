"""What Python computes always lies within the encoding of `compile.rounding`: for expressions over ints
and float constants, with the ints fixed, the solver must accept the very number `compile.evaluate`
gives (ints near and beyond 2**53 included, where converting an int rounds). Otherwise a proof over
the encoding could be false for the real rule."""
from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from vpolicy.compile import evaluate, ir, rounding
from vpolicy.solve.backend_z3 import Z3Backend
from vpolicy.solve.result import Sat
from vpolicy.source import Span

LABEL = ir.Label("test", Span("<test>", 0, 0))
INTS = [-3, -1, 0, 1, 2, 7, 2**53 - 1, 2**53 + 1, 2**60 + 3, -(2**61) - 1, 10**17 + 1]
FLOATS = [0.1, 0.2, 0.3, 0.5, -2.5, 3.0, 1e16, 1e-310, 2.0**60]
NAMES = ("x", "y")

leaves = st.one_of(st.sampled_from([ir.Var(n) for n in NAMES]), st.sampled_from([ir.Const(v) for v in INTS[:6]]),
                   st.sampled_from([ir.Const(v) for v in FLOATS]))


def _extend(children: st.SearchStrategy[ir.Term]) -> st.SearchStrategy[ir.Term]:
    arithmetic = st.builds(lambda op, a, b: ir.Op(op, (a, b)), st.sampled_from("+-*/"), children, children)
    choice = st.builds(lambda a, b, then, orelse: ir.Cond(ir.Op("<", (a, b)), then, orelse),
                       children, children, children, children)
    return st.one_of(arithmetic, choice)


expressions = st.recursive(leaves, _extend, max_leaves=6)


def _encode(t: ir.Term, doubles: rounding.Doubles, bounds: list[ir.Term]) -> ir.Term:
    """The term as `encode_victims` encodes it: variables are int unknowns, arithmetic through `doubles`."""
    if isinstance(t, ir.Var):
        return ir.Sym(t.name, "int")
    if isinstance(t, ir.Const):
        return t
    if isinstance(t, ir.Cond):
        assert isinstance(t.test, ir.Op)
        a, b = (_encode(x, doubles, bounds) for x in t.test.args)
        bounds.extend(doubles.compared("<", a, b))
        return ir.cond(ir.op("<", a, b), _encode(t.then, doubles, bounds), _encode(t.orelse, doubles, bounds))
    assert isinstance(t, ir.Op)
    a, b = (_encode(x, doubles, bounds) for x in t.args)
    result = doubles.arithmetic(t.op, a, b)
    bounds.extend(result.bounds)
    return result.value


def _python(t: ir.Term, env: dict[str, int]) -> Any:
    try:
        value = evaluate.compile_term(t)(dict(env))
    except (OverflowError, ZeroDivisionError):
        return None
    return value if isinstance(value, int) or abs(value) < float("inf") else None


X, Y = ir.Var("x"), ir.Var("y")
MAYBE_INT = ir.Cond(ir.Op("<", (X, Y)), X, ir.Const(0.5))  # an int or a double, as x < y decides


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(expressions, min_size=1, max_size=2), st.sampled_from(INTS), st.sampled_from(INTS))
@example([ir.Op("/", (ir.Const(5e-324), X))], 3, 0)  # a subnormal quotient rounds to 0
@example([ir.Op("+", (MAYBE_INT, ir.Const(0))), ir.Op("+", (X, ir.Const(0.0)))], 2**53 + 1, 2**60)  # exact ints
def test_the_numbers_python_computes_satisfy_the_encoding_together(terms: list[ir.Term], x: int, y: int) -> None:
    """Several terms in one world: their roundings are related (monotonicity), and Python's values
    must satisfy those relations too."""
    env = {"x": x, "y": y}
    expected = [_python(term, env) for term in terms]
    if None in expected:  # an overflow: outside what the encoding models
        return
    doubles, bounds = rounding.Doubles(), list[ir.Term]()
    try:
        encoded = [_encode(term, doubles, bounds) for term in terms]
    except rounding.NotArithmetic:
        return
    fixed = [ir.op("==", ir.Sym(n, "int"), ir.Const(v)) for n, v in env.items()]
    same = [ir.op("==", e, ir.Const(v)) for e, v in zip(encoded, expected)]
    result = Z3Backend(timeout_ms=20_000).check([(LABEL, c) for c in (*bounds, *fixed, *same)])
    assert isinstance(result, Sat), (terms, env, expected)

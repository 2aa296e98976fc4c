"""Python's arithmetic over a symbolic world: which encoded terms are ints, and where a double rounds.

`compile.evaluate` computes with Python numbers: `+ - *` on two ints are exact, `/` is always a double
(also between two ints), and arithmetic with a float rounds its result to the nearest double, after
converting an int operand to a double (which rounds too, beyond 2**53). The solver computes with
integers and rationals exactly (`solve.backend_z3`), so an answer that rests on a rounding (is
`c.priority * 0.1 + 0.2 > 0.3`? yes for priority 1 in Python, no over the rationals) would be wrong
in either direction if the encoding ignored it.

Here each rounding the exact evaluator may make is a point: an unknown `exact` equal to the value
before rounding and an unknown `double` for the result, with what round-to-nearest guarantees:
- the error bound `|double - exact| <= 2**-53 |exact| + 2**-1074` (relative in the normal range, the
  second term for results in the subnormal range);
- monotonicity: every rounding is one non-decreasing function that keeps every double, so between a
  point and 0, a double constant or an int of at most 2**53 that a rule compares a double with, and
  between two roundings Python certainly makes, `exact <= exact'` implies `double <= double'`
  (`c.priority / 2 < preemptor.priority / 2` still implies the ints' order, and `1 / d > 1` is still
  never true). A rounding is certain for `/` and for an operation on a value known to be a double; an
  operation on a value that may be an int or a double at run time (`if t then 1 else 0.5`) may be exact
  arithmetic on ints, which need not keep the order of a rounding elsewhere.
The true double always satisfies these, so the encoding over-approximates what Python computes: a proof
(unsat) over it holds for the doubles, while a witness may rest on a rounding Python does not make,
which is why `encode_victims` counts a rule with any point as not encoded exactly. Constants are folded
as Python folds them (exact doubles, no point). Overflow is not modelled: values are assumed to stay
below 2**1024 in magnitude.

This module builds terms only; `encode_victims` decides where to use them and keeps the bounds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from vpolicy.compile import ir

Sort = Literal["bool", "int", "real"]
# Round to nearest: a result x in the normal range is off by at most 2**-53 |x| (the unit roundoff) ...
UNIT_ROUNDOFF = 2.0 ** -53
# ... and one in the subnormal range by at most half their spacing, 2**-1075, bounded here by the
# smallest subnormal (a double, so the bound's constant is itself exact).
SUBNORMAL_SPACING = 2.0 ** -1074
_TESTS = frozenset({"and", "or", "not", "==", "!=", "<", "<=", ">", ">="})
_ORDERS = frozenset({"==", "!=", "<", "<=", ">", ">="})
_SYM_SORTS: dict[str, Sort] = {"bool": "bool", "int": "int", "real": "real"}
_ROUNDED = "double"  # names of the unknowns that stand for a rounding Python makes: double1, double2, ...
_MAYBE_ROUNDED = "number"  # ... and for one it may make (or compute exactly, on ints): number1, ...
_ZERO = ir.Const(0)
_TRUE = ir.Const(True)
_EXACT_INTS = 2 ** 53  # every int of at most this magnitude is a double


class NotArithmetic(Exception):
    """The term is no encoded number or boolean (an object, a vector, a term the encoder never builds)."""


@dataclass(frozen=True, slots=True)
class Rounded:
    """A number as Python computes it: `value`, within `bounds` (none when the result is exact)."""

    value: ir.Term
    bounds: tuple[ir.Term, ...] = ()


@dataclass(frozen=True, slots=True)
class Point:
    """A value and the double it rounds to; `exact` and `double` are one term for a value that is a
    double already (0, a double constant, an int compared with a double, where `given` holds)."""

    exact: ir.Term
    double: ir.Term
    given: ir.Term = _TRUE
    certain: bool = True  # Python rounds here (False: it may compute exactly, on ints)

    @property
    def fixed(self) -> bool:
        return self.exact is self.double


@dataclass(slots=True)
class Doubles:
    """The rounding points of one symbolic world."""

    points: list[Point] = field(default_factory=lambda: [Point(_ZERO, _ZERO)])
    roundings: int = 0  # points that are roundings (not values that are doubles already)

    def arithmetic(self, op: str, a: ir.Term, b: ir.Term) -> Rounded:
        """`a op b` for `+ - * /` on numbers, as `evaluate` computes it: exact on two ints (but `/`),
        otherwise the operands converted to doubles and the result rounded, each a point."""
        if isinstance(a, ir.Const) and isinstance(b, ir.Const):
            return Rounded(_folded(op, a, b))
        sorts = (sort_of(a), sort_of(b))
        if op != "/" and "real" not in sorts:
            return Rounded(ir.op(op, a, b))
        if op == "/" and sorts == ("int", "int"):  # an int by an int: the true quotient, rounded once
            return self._rounded(ir.op("/", a, b), certain=True)
        # Python converts an int operand when the other is a double; `/` always gives a double
        left, right = self._as_double(a, certain=_is_double(b)), self._as_double(b, certain=_is_double(a))
        certain = op == "/" or _is_double(a) or _is_double(b)
        result = self._rounded(ir.op(op, left.value, right.value), certain=certain)
        return Rounded(result.value, left.bounds + right.bounds + result.bounds)

    def compared(self, op: str, a: ir.Term, b: ir.Term) -> tuple[ir.Term, ...]:
        """Before `a op b` is encoded: a double constant or an int compared with a number that may be a
        double is a point, so that no rounding is taken across it (an int only when it is a double)."""
        if op not in _ORDERS or self.roundings == 0:
            return ()
        bounds: list[ir.Term] = []
        for fixed, other in ((a, b), (b, a)):
            if isinstance(other, ir.Const) or sort_of(other) != "real":
                continue
            if _is_double_constant(fixed):
                point = Point(fixed, fixed)
            elif not isinstance(fixed, ir.Const) and sort_of(fixed) == "int":
                point = Point(fixed, fixed, ir.op("and", ir.op("<=", fixed, ir.Const(_EXACT_INTS)),
                                                 ir.op(">=", fixed, ir.Const(-_EXACT_INTS))))
            else:
                continue
            if point not in self.points:
                bounds.extend(self._point(point))
        return tuple(bounds)

    def _as_double(self, term: ir.Term, *, certain: bool) -> Rounded:
        """The operand of a float operation as a double: Python converts an int operand, which rounds
        beyond 2**53 (`certain`: the other operand is a double, so it does); a double stays as it is."""
        if isinstance(term, ir.Const):
            try:
                return Rounded(ir.Const(float(term.value)))
            except OverflowError as e:  # Python raises here too: nothing to encode
                raise NotArithmetic(f"{term.value} has no double") from e
        if _is_double(term):
            return Rounded(term)
        return self._rounded(term, certain=certain)

    def _rounded(self, exact: ir.Term, *, certain: bool) -> Rounded:
        """The double nearest to `exact` (or, if not `certain`, maybe `exact` itself): a new point
        (`exact` is named by an unknown of its own, as the bounds read it many times)."""
        if isinstance(exact, ir.Const):
            return Rounded(exact)
        self.roundings += 1
        n = len(self.points)
        value = ir.Sym(f"exact{n}", "real")
        double = ir.Sym(f"{_ROUNDED if certain else _MAYBE_ROUNDED}{n}", "real")
        magnitude = ir.cond(ir.op(">=", value, _ZERO), value, ir.op("neg", value))
        error = ir.op("+", ir.op("*", ir.Const(UNIT_ROUNDOFF), magnitude), ir.Const(SUBNORMAL_SPACING))
        bounds = (ir.op("==", value, exact),
                  ir.op("<=", ir.op("-", double, value), error), ir.op("<=", ir.op("-", value, double), error))
        return Rounded(double, bounds + self._point(Point(value, double, certain=certain)))

    def _point(self, new: Point) -> tuple[ir.Term, ...]:
        """Add a point; rounding is monotone, so it keeps the order of its exact value to a value that is
        a double, and to another rounding when both are certain (two doubles keep it without saying)."""
        bounds: list[ir.Term] = []
        for old in self.points:
            if (old.fixed and new.fixed) or not (old.fixed or new.fixed or (old.certain and new.certain)):
                continue
            unless = (ir.op("not", new.given), ir.op("not", old.given))
            bounds.append(ir.op("or", *unless, ir.op(">", new.exact, old.exact), ir.op("<=", new.double, old.double)))
            bounds.append(ir.op("or", *unless, ir.op("<", new.exact, old.exact), ir.op(">=", new.double, old.double)))
        self.points.append(new)
        return tuple(bounds)


def sort_of(term: ir.Term) -> Sort:
    """The solver sort of an encoded term; "int" also says the value is a Python int (exact arithmetic),
    "real" that it may be a double."""
    return _sort(term, {})


def _folded(op: str, a: ir.Const, b: ir.Const) -> ir.Term:
    """Constants computed by Python itself: the very double the rule computes (`/` as `evaluate._div`)."""
    try:
        return ir.op(op, a, b) if op != "/" else ir.Const(a.value / b.value if b.value else 0.0)
    except OverflowError as e:  # Python raises here too: nothing to encode
        raise NotArithmetic(f"{a.value} {op} {b.value} has no double") from e


def _is_double_constant(term: ir.Term) -> bool:
    """A number constant that a double holds exactly (rounding to nearest leaves it as it is)."""
    if not isinstance(term, ir.Const) or isinstance(term.value, bool) or not isinstance(term.value, (int, float)):
        return False
    try:
        return float(term.value) == term.value
    except OverflowError:
        return False


def _is_double(term: ir.Term) -> bool:
    """Known to hold a double (a float constant, a rounded result), so converting it changes nothing."""
    if isinstance(term, ir.Const):
        return isinstance(term.value, float)
    if isinstance(term, ir.Sym):
        return term.name.startswith(_ROUNDED)
    if isinstance(term, ir.Op) and term.op == "neg":
        return _is_double(term.args[0])
    if isinstance(term, ir.Cond):
        return _is_double(term.then) and _is_double(term.orelse)
    return False


def _sort(t: ir.Term, memo: dict[int, Sort]) -> Sort:
    known = memo.get(id(t))
    if known is None:
        known = memo[id(t)] = _sort_of_kind(t, memo)
    return known


def _sort_of_kind(t: ir.Term, memo: dict[int, Sort]) -> Sort:  # noqa: C901  # reason: one case per term kind
    if isinstance(t, ir.Const):
        if isinstance(t.value, bool):
            return "bool"
        if isinstance(t.value, int):
            return "int"
        if isinstance(t.value, float):
            return "real"
    elif isinstance(t, ir.Sym):
        if t.sort in _SYM_SORTS:
            return _SYM_SORTS[t.sort]
    elif isinstance(t, ir.Op):
        if t.op in _TESTS:
            return "bool"
        if t.op == "/":
            return "real"
        if t.op in ("+", "-", "*", "neg"):
            return "real" if any(_sort(a, memo) == "real" for a in t.args) else "int"
    elif isinstance(t, ir.Cond):
        return _join(_sort(t.then, memo), _sort(t.orelse, memo))
    raise NotArithmetic(f"{type(t).__name__} is no encoded number or boolean")


def _join(a: Sort, b: Sort) -> Sort:
    """The sort of an if with branches of sorts a and b: an int or a double is a number that may be a double."""
    if a == b:
        return a
    if "bool" in (a, b):
        raise NotArithmetic("an if with a boolean and a number")
    return "real"

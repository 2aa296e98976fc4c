"""The solver-neutral term language rules compile to.

Terms are frozen dataclasses with no evaluation logic: `compile.evaluate` turns them into fast Python
closures for exact evaluation inside a session, and `vpolicy.solve.backend_z3` translates the arithmetic
and logical fragment to Z3 (memoised). Smart constructors (`op`, `cond`) fold constants, so a parameter
set to its default or a flag switched off leaves no trace in the compiled term (Cedar's factory.rs).

Names are resolved before terms are built: `Var` is a local (rule parameter, `let`, aggregate or select
variable), `SessionRef` a module-level session constant evaluated when the session opens.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

from vpolicy.source import Span


@dataclass(frozen=True, slots=True)
class Label:
    """Where a constraint came from: the rule's id (`plugin.rule`) and span, kept with every term."""

    rule_id: str
    span: Span
    text: str = ""

    @property
    def location(self) -> str:
        return self.span.short


@dataclass(frozen=True, slots=True, eq=False)
class Const:
    """A literal. Equal only to the same literal: `1`, `1.0` and `true` compare equal in Python, as do
    `0.0` and `-0.0`, but folding `if c then 1 else 1.0` to `1` would turn a float rule's answer into an
    int (and `x * -0.0` differs from `x * 0.0` in sign)."""

    value: Any

    def _literal(self) -> tuple[type, Any]:
        v = self.value
        return (float, repr(v)) if isinstance(v, float) else (type(v), v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Const) and self._literal() == other._literal()

    def __hash__(self) -> int:
        return hash(self._literal())


@dataclass(frozen=True, slots=True)
class Var:
    name: str


@dataclass(frozen=True, slots=True)
class Sym:
    """A solver unknown (`int`, `real` or `bool`): only the solver backend gives it a value."""

    name: str
    sort: str = "int"


@dataclass(frozen=True, slots=True)
class SessionRef:
    module: str
    name: str


@dataclass(frozen=True, slots=True)
class GetAttr:
    obj: "Term"
    name: str


@dataclass(frozen=True, slots=True)
class GetIndex:
    obj: "Term"
    key: "Term"


@dataclass(frozen=True, slots=True)
class Apply:
    """A built-in function from `vpolicy.lang.builtins.FUNCTIONS`."""

    func: str
    args: tuple["Term", ...]


@dataclass(frozen=True, slots=True)
class CallUser:
    """A call of a module-level helper function (`let f(x: T) = ...`); may be recursive."""

    module: str
    func: str
    params: tuple[str, ...]
    args: tuple["Term", ...]


@dataclass(frozen=True, slots=True)
class Op:
    """and, or, not, neg, + - * /, == != < <= > >=; `<=` etc. on resources compare every dimension."""

    op: str
    args: tuple["Term", ...]


@dataclass(frozen=True, slots=True)
class Cond:
    test: "Term"
    then: "Term"
    orelse: "Term"


@dataclass(frozen=True, slots=True)
class Bind:
    name: str
    value: "Term"
    body: "Term"


@dataclass(frozen=True, slots=True)
class Agg:
    func: str  # sum | count | all | any | max | min | list
    var: str
    source: "Term"
    where: "Term | None"
    body: "Term | None"


@dataclass(frozen=True, slots=True)
class Select:
    var: str
    source: "Term"
    group_key: "Term | None"
    group_start: "Term | None"
    state: str | None
    when: "Term"
    then: "Term | None"
    after: bool = False


@dataclass(frozen=True, slots=True)
class Text:
    parts: tuple["str | Term", ...]


@dataclass(frozen=True, slots=True)
class ResourceVec:
    entries: tuple[tuple[str, "Term"], ...]


@dataclass(frozen=True, slots=True)
class ListOf:
    items: tuple["Term", ...]


Term = Const | Var | Sym | SessionRef | GetAttr | GetIndex | Apply | CallUser | Op | Cond | Bind | Agg | Select | Text | ResourceVec | ListOf

_FOLDABLE: dict[str, Callable[..., Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "neg": operator.neg,
}


def op(name: str, *args: Term) -> Term:
    """Build an operator term, folding constants and boolean identities."""
    if name == "and":
        flat = [a for a in args if a != Const(True)]
        if any(a == Const(False) for a in flat):
            return Const(False)
        return flat[0] if len(flat) == 1 else Const(True) if not flat else Op("and", tuple(flat))
    if name == "or":
        flat = [a for a in args if a != Const(False)]
        if any(a == Const(True) for a in flat):
            return Const(True)
        return flat[0] if len(flat) == 1 else Const(False) if not flat else Op("or", tuple(flat))
    if name == "not" and isinstance(args[0], Const):
        return Const(not args[0].value)
    folder = _FOLDABLE.get(name)
    if folder is not None and all(isinstance(a, Const) and isinstance(a.value, (int, float)) for a in args):
        return Const(folder(*(a.value for a in args)))  # type: ignore[union-attr]  # reason: checked Const above
    return Op(name, args)


def add(*terms: Term) -> Term:
    """n-ary sum with constant folding (0 for no terms)."""
    consts = sum(t.value for t in terms if isinstance(t, Const))
    rest = [t for t in terms if not isinstance(t, Const)]
    out: Term | None = None
    for t in rest:
        out = t if out is None else Op("+", (out, t))
    if out is None:
        return Const(consts)
    return out if consts == 0 else Op("+", (out, Const(consts)))


def mul(k: int | float, t: Term) -> Term:
    if k == 0:
        return Const(0)
    if k == 1:
        return t
    return op("*", Const(k), t)


def cond(test: Term, then: Term, orelse: Term) -> Term:
    if isinstance(test, Const):
        return then if test.value else orelse
    if then == orelse:
        return then
    return Cond(test, then, orelse)


def shape(t: object, expand: Callable[[SessionRef], object]) -> object:
    """A hashable rendering of a term up to the names of its bound variables (`q#14` and `q#32` are both
    `q`), with each session reference replaced by `expand(ref)`. Two session constants of equal shape
    compute equal values in one session, unless they read a module's own setting (`argument(...)`,
    rendered with a fresh marker so it never matches) or call a module's helper (kept by module name)."""
    if isinstance(t, SessionRef):
        return ("let", t.name, expand(t))
    if isinstance(t, Apply) and t.func in ("argument", "argument_at", "argument_text_at", "argument_keys", "extender"):
        return ("argument", object())
    if isinstance(t, Const):
        return ("Const", *t._literal())
    if isinstance(t, str):
        return t.split("#", 1)[0]
    if isinstance(t, tuple):
        return tuple(shape(x, expand) for x in t)
    if hasattr(t, "__dataclass_fields__"):
        return (type(t).__name__, *(shape(getattr(t, f), expand) for f in t.__dataclass_fields__))
    return t


def swap_vars(t: Any, a: str, b: str) -> Any:
    """`t` with the variables named `a` and `b` exchanged (the other operand of a two-sided rule)."""
    if isinstance(t, Var):
        return Var(b) if t.name == a else Var(a) if t.name == b else t
    if isinstance(t, tuple):
        return tuple(swap_vars(x, a, b) for x in t)
    if hasattr(t, "__dataclass_fields__") and not isinstance(t, (Label, Span)):
        return type(t)(*(swap_vars(getattr(t, f), a, b) for f in t.__dataclass_fields__))
    return t


def free_vars(t: Any) -> frozenset[str]:
    """Names of the variables `t` reads that no `let`, aggregate or select inside it binds."""
    if isinstance(t, Var):
        return frozenset({t.name})
    if isinstance(t, Bind):
        return free_vars(t.value) | (free_vars(t.body) - {t.name})
    if isinstance(t, Agg):
        return free_vars(t.source) | (free_vars((t.where, t.body)) - {t.var})
    if isinstance(t, Select):
        inner = free_vars((t.group_key, t.group_start, t.when, t.then))
        return free_vars(t.source) | (inner - {t.var, *((t.state,) if t.state else ())})
    if isinstance(t, tuple):
        return frozenset().union(*(free_vars(x) for x in t))
    if isinstance(t, CallUser):
        return free_vars(t.args)
    if hasattr(t, "__dataclass_fields__"):
        return free_vars(tuple(getattr(t, f) for f in t.__dataclass_fields__))
    return frozenset()

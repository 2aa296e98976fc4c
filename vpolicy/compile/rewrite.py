"""Rewrites of a rule's IR term before it is written out as Python (`compile.pycode`, `compile.vcode`).

A generated rule pays a Python call for every helper-function call and an operation for every IR node.
Two rewrites remove some of that without changing any answer:

- inlining: a call of a small helper whose arguments are all variables or constants becomes the helper's
  body with the arguments put in for the parameters (`free_score(task, node, "cpu")` reads
  `get(node.allocatable, "cpu")` directly). Nothing is evaluated more often or in another order, since
  a variable or a constant costs nothing to evaluate twice and cannot fail. Names bound inside a copy
  (`let`, aggregate and select variables) are renamed per copy, so two copies with different arguments
  never look alike, and identical calls get identical copies, so `compile.share` still computes them once;
- identities: `1 * x` is `x` where x is certainly an int or a float (`1 * True` is the int 1, `1.0 * 3`
  the float 3.0, so neither is touched), and, for scalar code only, `floor(x)` is `x` where x is certainly
  an int (numpy's floor of an int array is a float array, so the vector generator keeps it).

Only the generators call this: the closure evaluator (`compile.evaluate`, the reference the tests compare
against) and the solver keep the term as lowered. Sharing repeated sub-terms within one function is
`compile.share`'s job, because where a shared value may be read depends on what each generator evaluates
lazily. The walkers over IR terms (`children`, `map_children`, `TermKeys`) live here for both.
"""
from __future__ import annotations

import dataclasses
import itertools
import typing
from typing import Any, Callable, Iterator, Mapping

from vpolicy.compile import ir
from vpolicy.compile.functions import FUNCTIONS as BUILTIN_IMPLS

Helpers = Mapping[str, tuple[tuple[str, ...], ir.Term]]

# A helper whose body (its own calls inlined) has at most this many IR nodes is inlined. nodeorder's
# free_score, the largest hot one, has 45; the bound only keeps nested helpers from multiplying code, as
# an inlined body is never evaluated more often than the call it replaces.
INLINE_MAX_NODES = 120

# Functions whose standard implementation always returns an int (never a bool or a float).
_INT_RESULT = frozenset({"floor", "len", "compare"})
_TERM_CLASSES = typing.get_args(ir.Term)
_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _TERM_CLASSES}
# Binder fields: the names a term binds for its sub-terms.
_BINDERS = {ir.Bind: ("name",), ir.Agg: ("var",), ir.Select: ("var", "state")}


class Rewriter:
    """Rewrites the terms of one module as a generator should write them: small helpers inlined,
    identities dropped. Each helper's body is inlined once for all the terms.

    `functions` is the module's table of built-ins (an identity on `floor` holds only for the standard
    one); `scalar` says whether values are plain numbers (pycode) or may be numpy arrays (vcode)."""

    def __init__(self, helpers: Helpers, functions: Mapping[str, Callable[..., Any]], *, scalar: bool,
                 max_inline_nodes: int | None = None):
        self._inliner = _Inliner(helpers, INLINE_MAX_NODES if max_inline_nodes is None else max_inline_nodes)
        self._identities = _Identities(helpers, functions, scalar=scalar)

    def prepare(self, term: ir.Term) -> ir.Term:
        """`term` as the generator should write it (the same answers, fewer calls and operations)."""
        return self._identities.term(self._inliner.term(term))


def children(t: ir.Term) -> Iterator[ir.Term]:
    """The direct sub-terms of `t`, in the order the evaluators evaluate them."""
    if isinstance(t, ir.Const):
        return  # its value may be any object, even a dataclass, but never a term
    for name in _FIELDS[type(t)]:
        yield from _terms_in(getattr(t, name))


def map_children(t: ir.Term, fn: Callable[[ir.Term], ir.Term]) -> ir.Term:
    """`t` with `fn` applied to each direct sub-term (the same object when nothing changed)."""
    if isinstance(t, ir.Const):
        return t
    changes = {}
    for name in _FIELDS[type(t)]:
        old = getattr(t, name)
        new = _map_value(old, fn)
        if new is not old:
            changes[name] = new
    return dataclasses.replace(t, **changes) if changes else t


def size(t: ir.Term) -> int:
    """Number of IR nodes in `t`."""
    return 1 + sum(size(c) for c in children(t))


class TermKeys:
    """Numbers terms by structure: two terms get the same number exactly when they compute the same value
    the same way (hash-consing, so a key costs one dictionary look-up per node, once).

    Unlike term equality, constants that are not plain literals (values a module computed at compile
    time) are told apart by identity, so the key never asks a value of unknown type for equality."""

    def __init__(self) -> None:
        self._numbers: dict[object, int] = {}  # structure -> number
        self._seen: dict[int, tuple[ir.Term, int]] = {}  # id(term) -> (term kept alive, number)
        self._objects: list[object] = []  # constants keyed by id, kept alive so the id stays theirs

    def __call__(self, t: ir.Term) -> int:
        seen = self._seen.get(id(t))
        if seen is not None:
            return seen[1]
        number = self._numbers.setdefault(self._structure(t), len(self._numbers))
        self._seen[id(t)] = (t, number)
        return number

    def _structure(self, t: ir.Term) -> object:
        if isinstance(t, ir.Const):
            v = t.value
            if v is None or isinstance(v, (bool, int, str)):
                return ("Const", type(v), v)
            if isinstance(v, float):
                return ("Const", float, repr(v))
            self._objects.append(v)
            return ("Const", "object", id(v))
        return (type(t), *(self._field(getattr(t, name)) for name in _FIELDS[type(t)]))

    def _field(self, value: object) -> object:
        if isinstance(value, tuple):
            return tuple(self._field(x) for x in value)
        if isinstance(value, _TERM_CLASSES):
            return self(value)
        return value


def number_type(t: ir.Term, helpers: Helpers, functions: Mapping[str, Callable[..., Any]],
                _active: frozenset[str] = frozenset()) -> str | None:
    """'int' when `t` certainly evaluates to an int, 'number' when to an int or a float, else None
    (a bool, resources, anything, or not known)."""
    if isinstance(t, ir.Const):
        kind = type(t.value)
        return "int" if kind is int else "number" if kind is float else None

    def of(x: ir.Term) -> str | None:
        return number_type(x, helpers, functions, _active)
    if isinstance(t, ir.Apply):
        if functions.get(t.func) is not BUILTIN_IMPLS.get(t.func):
            return None
        if t.func in _INT_RESULT:
            return "int"
        if t.func == "ratio":
            return "number" if all(of(a) for a in t.args) else None
        if t.func in ("abs", "minimum", "maximum"):
            return _join(*(of(a) for a in t.args))
        return None
    if isinstance(t, ir.Op):
        if t.op in ("+", "-", "*", "neg"):
            return _join(*(of(a) for a in t.args))
        if t.op == "/":
            return "number" if _join(*(of(a) for a in t.args)) else None
        return None
    if isinstance(t, ir.Cond):
        return _join(of(t.then), of(t.orelse))
    if isinstance(t, ir.Agg):
        return "int" if t.func == "count" else None
    if isinstance(t, ir.CallUser) and t.func in helpers and t.func not in _active:
        return number_type(helpers[t.func][1], helpers, functions, _active | {t.func})
    return None


# private helpers ----------------------------------------------------------------------------------
def _join(*kinds: str | None) -> str | None:
    if any(k is None for k in kinds):
        return None
    return "int" if all(k == "int" for k in kinds) else "number"


def _terms_in(value: object) -> Iterator[ir.Term]:
    if isinstance(value, tuple):
        for item in value:
            yield from _terms_in(item)
    elif isinstance(value, _TERM_CLASSES):
        yield value


def _map_value(value: Any, fn: Callable[[ir.Term], ir.Term]) -> Any:
    if isinstance(value, tuple):
        items = tuple(_map_value(x, fn) for x in value)
        return items if any(a is not b for a, b in zip(items, value)) else value
    if isinstance(value, _TERM_CLASSES):
        return fn(value)
    return value


class _Inliner:
    """Inlines calls bottom-up; each helper's own body is inlined once and each distinct call copied once."""

    def __init__(self, helpers: Helpers, max_nodes: int):
        self.helpers = helpers
        self.max_nodes = max_nodes
        self.bodies: dict[str, ir.Term | None] = {}  # None: too large or recursive, keep the call
        self.copies: dict[int, ir.Term] = {}  # by the call's structure
        self.keys = TermKeys()
        self.active: set[str] = set()  # helpers whose bodies are being inlined (recursion stops here)
        self.copy_ids = itertools.count()

    def term(self, t: ir.Term) -> ir.Term:
        t = map_children(t, self.term)
        if isinstance(t, ir.CallUser) and all(isinstance(a, (ir.Var, ir.Const)) for a in t.args):
            return self._copy(t)
        return t

    def _copy(self, call: ir.CallUser) -> ir.Term:
        key = self.keys(call)
        done = self.copies.get(key)
        if done is not None:
            return done
        body = self._body(call.func)
        if body is None:
            return call
        params = self.helpers[call.func][0]
        values: dict[str, ir.Term] = dict(zip(params, call.args))
        suffix = f"#i{next(self.copy_ids)}"  # lowering's own names end in '#<digits>', never in '#i<digits>'
        copy = _substitute(body, values, suffix)
        self.copies[key] = copy
        return copy

    def _body(self, func: str) -> ir.Term | None:
        if func in self.active or func not in self.helpers:
            return None
        if func not in self.bodies:
            self.active.add(func)
            body = self.term(self.helpers[func][1])
            self.active.discard(func)
            self.bodies[func] = body if size(body) <= self.max_nodes else None
        return self.bodies[func]


def _substitute(t: ir.Term, values: dict[str, ir.Term], suffix: str) -> ir.Term:
    """`t` with variables replaced by `values` and every name bound inside renamed with `suffix`.

    Lowering gives every bound name a module-wide unique `#n`, so a flat renaming cannot capture."""
    if isinstance(t, ir.Var):
        return values.get(t.name, t)
    fields = _BINDERS.get(type(t), ())
    renamed = {f: getattr(t, f) + suffix for f in fields if getattr(t, f) is not None}
    for old_field, new in renamed.items():
        values[getattr(t, old_field)] = ir.Var(new)
    out = map_children(t, lambda c: _substitute(c, values, suffix))
    return dataclasses.replace(out, **renamed) if renamed else out


class _Identities:
    """Drops `1 * x` (x an int or a float) and, in scalar code, `floor(x)` (x an int)."""

    def __init__(self, helpers: Helpers, functions: Mapping[str, Callable[..., Any]], *, scalar: bool):
        self.helpers = helpers
        self.functions = functions
        self.scalar = scalar
        self.done: dict[int, tuple[ir.Term, ir.Term]] = {}  # id(term) -> (term kept alive, result)

    def term(self, t: ir.Term) -> ir.Term:
        """`t` without its identities; an inlined copy met again is not walked again."""
        done = self.done.get(id(t))
        if done is None:
            done = self.done[id(t)] = (t, self._term(t))
        return done[1]

    def _term(self, t: ir.Term) -> ir.Term:
        t = map_children(t, self.term)
        if isinstance(t, ir.Op) and t.op == "*":
            for one, other in (t.args, t.args[::-1]):
                if _is_int_one(one) and number_type(other, self.helpers, self.functions):
                    return other
        if (self.scalar and isinstance(t, ir.Apply) and t.func == "floor"
                and number_type(t, self.helpers, self.functions) == "int"
                and number_type(t.args[0], self.helpers, self.functions) == "int"):
            return t.args[0]
        return t


def _is_int_one(t: ir.Term) -> bool:
    return isinstance(t, ir.Const) and type(t.value) is int and t.value == 1

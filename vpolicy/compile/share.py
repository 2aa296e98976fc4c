"""Common sub-terms of one generated function: which to keep in a local, and where a local is assigned.

Rule bodies repeat themselves: nodeorder's free_score reads `get(node.allocatable, r)` four times and
calls `requested(task, node, r)` twice. The generators (`compile.pycode`, `compile.vcode`) assign such a
value to a local where it is first computed (`(c_1 := ...)`) and read the local where it recurs.

Nothing is computed earlier, or more often, than before: a local is read only where every path to that
point has assigned it (`Known`), and otherwise the value is computed, and assigned, where it stands. So a
value under a guard stays under its guard, and a value that raises raises where it did. What counts as
"every path" depends on which constructs evaluate lazily, which only the generator knows, so the
generators walk their terms with a `Known` in hand and say where paths split and join:

    x if t else y     t is evaluated first; x sees what t's true side knows, y its false side; after
                      the whole, only what both sides know
    a or b            a always; b only when a is false; after `a or b` is false, both were evaluated

A `Known` also carries terms known to be nonzero on the path (the false side of `x == 0`), so the scalar
generator can divide by them directly instead of through the helper that guards against zero.

Terms worth a local (`Sharing`) are those that recur in one scope, and whose value can be shared: an
attribute, index, built-in or helper call, operator or `if`, with no `let` or aggregate inside, that never
builds a fresh list or map (sharing one would make two uses alias one object). A scope is a function body,
or, in `compile.pycode`, one lambda of a select or one pass of an aggregate's comprehension (its filter,
then its body); `compile.vcode`'s lambdas share nothing. A scope never looks into the scopes nested in
it, nor they into it: each has its own `Sharing` and starts knowing nothing, and the generator gives each
its own name prefix, so no local of one is ever read, or overwritten, as another's (an assignment in a
comprehension binds in the function or lambda around it, once per pass). Where Python forbids `:=`
(anywhere inside a comprehension's iterable) the generator shares nothing.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from vpolicy.compile import ir, rewrite
from vpolicy.lang.builtins import FUNCTIONS as CATALOGUE

_SHAREABLE = (ir.GetAttr, ir.GetIndex, ir.Apply, ir.CallUser, ir.Op, ir.Cond)
_UNSHAREABLE_INSIDE = (ir.Agg, ir.Select, ir.Bind)
_CONTAINER_RESULTS = ("list", "map")


@dataclass(frozen=True, slots=True)
class Known:
    """What holds at one point of a generated function, on every path that reaches it."""

    assigned: frozenset[str] = frozenset()  # locals of `Sharing` that hold their value
    nonzero: frozenset[int] = frozenset()  # keys (`Sharing.key`) of values that are not 0

    def assigning(self, name: str) -> Known:
        return Known(self.assigned | {name}, self.nonzero)

    def with_nonzero(self, key: int) -> Known:
        return Known(self.assigned, self.nonzero | {key})

    def meet(self, other: Known) -> Known:
        """What holds after two paths join."""
        return Known(self.assigned & other.assigned, self.nonzero & other.nonzero)


class Sharing:
    """The sub-terms of one scope (a function body, a lambda, a comprehension pass) worth a local, each
    with its name."""

    def __init__(self, body: ir.Term | Sequence[ir.Term] | None, helpers: rewrite.Helpers, *, prefix: str = "c_"):
        """`body`: the scope's term, or its terms in the order one pass evaluates them (an aggregate's
        filter, then its body); None for no sharing. Locals are named `prefix` + a number."""
        self._helpers = helpers
        self.key = rewrite.TermKeys()  # two terms with one key compute one value
        self._containers: dict[str, bool] = {}  # helper -> may its result be a fresh list or map
        self._unshareable_inside: dict[int, bool] = {}  # by key
        self._names: dict[int, str] = {}
        bodies = () if body is None else tuple(body) if isinstance(body, (tuple, list)) else (body,)
        if bodies:
            for i, key in enumerate(self._repeated(bodies)):
                self._names[key] = f"{prefix}{i}"

    @classmethod
    def none(cls) -> Sharing:
        """No sharing: for code where `:=` may not stand, or that has none to share."""
        return cls(None, {})

    def local(self, t: ir.Term) -> str | None:
        """The local that holds `t` when it is worth one, else None."""
        return self._names.get(self.key(t)) if self._names and isinstance(t, _SHAREABLE) else None

    # choosing --------------------------------------------------------------------------------------
    def _repeated(self, bodies: tuple[ir.Term, ...]) -> list[int]:
        """Keys of shareable terms met at least twice, in first-met order. A recurrence of a term is not
        looked into: its sub-terms are the first occurrence's, read through the same local."""
        counts: Counter[int] = Counter(self.key(t) for body in bodies for t in _visible(body) if self._shareable(t))
        met: Counter[int] = Counter()

        def visit(t: ir.Term) -> None:
            key = self.key(t)
            if counts[key] >= 2:
                met[key] += 1
                if met[key] > 1:
                    return
            for child in _visible_children(t):
                visit(child)
        for body in bodies:
            visit(body)
        return [key for key, n in met.items() if n >= 2]

    def _shareable(self, t: ir.Term) -> bool:
        return isinstance(t, _SHAREABLE) and not self._has_unshareable(t) and not self._may_build_container(t)

    def _has_unshareable(self, t: ir.Term) -> bool:
        key = self.key(t)
        found = self._unshareable_inside.get(key)
        if found is None:
            found = self._unshareable_inside[key] = (isinstance(t, _UNSHAREABLE_INSIDE)
                                                     or any(self._has_unshareable(c) for c in rewrite.children(t)))
        return found

    def _may_build_container(self, t: ir.Term) -> bool:  # noqa: C901  # reason: one case per term kind
        """Might `t` evaluate to a list or map built by this very evaluation?"""
        if isinstance(t, ir.Const):
            return isinstance(t.value, (list, dict, set))
        if isinstance(t, (ir.ListOf, ir.Select)):
            return True
        if isinstance(t, ir.Agg):
            return t.func in ("list", "map")
        if isinstance(t, ir.Apply):
            spec = CATALOGUE.get(t.func)
            return spec is None or spec.result.split("[")[0] in _CONTAINER_RESULTS
        if isinstance(t, ir.Op):  # `+` joins lists
            return t.op == "+" and any(self._may_be_list(a) for a in t.args)
        if isinstance(t, ir.Cond):
            return self._may_build_container(t.then) or self._may_build_container(t.orelse)
        if isinstance(t, ir.Bind):
            return self._may_build_container(t.body)
        if isinstance(t, ir.CallUser):
            return self._helper_builds_container(t.func)
        return False  # attributes, indexes, variables: existing objects; text and resources: immutable

    def _may_be_list(self, t: ir.Term) -> bool:
        return isinstance(t, (ir.Var, ir.SessionRef, ir.GetAttr, ir.GetIndex)) or self._may_build_container(t)

    def _helper_builds_container(self, func: str) -> bool:
        known = self._containers.get(func)
        if known is None:
            self._containers[func] = True  # a recursive call may
            helper = self._helpers.get(func)
            known = self._containers[func] = helper is None or self._may_build_container(helper[1])
        return known


def nonzero_when(t: ir.Term, key: Callable[[ir.Term], int]) -> tuple[int | None, int | None]:
    """Keys of the terms `t` proves nonzero when true and when false: `x != 0` and `x == 0` (with 0 an
    int or float literal). For numbers, `x == 0` being false is exactly `bool(x)`."""
    if not (isinstance(t, ir.Op) and t.op in ("==", "!=")):
        return None, None
    left, right = t.args
    if _is_zero(left):
        left, right = right, left
    if not _is_zero(right):
        return None, None
    return (key(left), None) if t.op == "!=" else (None, key(left))


def _visible(t: ir.Term) -> Iterator[ir.Term]:
    """`t` and the sub-terms a local of its scope could hold (not inside the scopes nested in it)."""
    yield t
    for child in _visible_children(t):
        yield from _visible(child)


def _visible_children(t: ir.Term) -> Iterator[ir.Term]:
    if isinstance(t, (ir.Agg, ir.Select)):
        return iter(())
    return rewrite.children(t)


def _is_zero(t: ir.Term) -> bool:
    return isinstance(t, ir.Const) and type(t.value) in (int, float) and t.value == 0

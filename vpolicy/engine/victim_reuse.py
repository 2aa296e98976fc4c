"""Nodes where the victim rules cannot make room, kept out of preempt's walk while their answer holds.

preempt walks the nodes in score order for every preemptor task and asks the victim rules on each
until one frees room (Volcano's preempt.go); at 5,000 nodes a preemptor passes hundreds of nodes, and
nearly every answer there is the one the same node gave the preemptor's sibling just before: no
victim, or too few. That answer may be reused exactly while everything it read is unchanged:

- the node's candidates (its version: every task placed, evicted or restatused on it),
- the candidates' jobs (`SessionState.job_log`: every status change of a task of the job),
- what it read of the preemptor. The rules' terms say what that is: each subterm that reads the
  preemptor and nothing bound inside the rule (drf's `mine`, priority's `preemptor.job.priority`)
  is an *input*, computed once per preemptor. An input used only in comparisons (alone, plus or
  minus a constant, or in `abs`) is *probed*: a second evaluation on the node records, for each
  comparison, the value where its outcome would flip, so the answer is known to hold for every input
  value strictly between the nearest flips (`_Interval`). drf's `mine` grows with each sibling
  placed; an answer with no victim holds for every larger `mine`. Any other input must be equal.

Rules reading anything else (a queue's state, other cluster state, a helper function, the clock)
give no reuse: the walk asks them on every node, as before. The answer of the probing evaluation
(`compile.evaluate`'s closures on the rewritten terms) must equal the session's own answer on that
node, or nothing is kept. Only failures are kept (`FailMemo.remember`): the walk stops at the first
node that works, where nothing is reused.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from vpolicy.compile import evaluate, ir, pycode
from vpolicy.compile.functions import FUNCTIONS
from vpolicy.compile.lower import CompiledRule
from vpolicy.engine.victim_memo import FIXED_CLUSTER, FOLLOWED, PURE, attribute_chain
from vpolicy.model.resources import CPU, MEMORY

PREEMPTOR = "$preemptor"  # the preemptor's name inside an input's term, whatever the rule calls it
Functions = dict[str, dict[str, tuple[tuple[str, ...], ir.Term]]]
_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_KEPT = 8  # (kind, exact inputs) memos kept: a job's siblings come in a row


class _Refused(Exception):
    """The rule reads something reuse cannot follow."""


class Unprobeable(Exception):
    """A probed input met an operation the interval bookkeeping does not cover."""


# ---------------------------------------------------------------------------------------------------
# Reading the rules: inputs and the rewritten terms
# ---------------------------------------------------------------------------------------------------

def _free_vars(t: Any, bound: frozenset[str]) -> set[str]:
    if isinstance(t, ir.Var):
        return set() if t.name in bound else {t.name}
    if isinstance(t, ir.Bind):
        return _free_vars(t.value, bound) | _free_vars(t.body, bound | {t.name})
    if isinstance(t, (ir.Agg, ir.Select)):
        inner = bound | {t.var} | ({t.state} if isinstance(t, ir.Select) and t.state else set())
        parts = (t.where, t.body) if isinstance(t, ir.Agg) else (t.group_key, t.group_start, t.when, t.then)
        return _free_vars(t.source, bound) | _free_vars(parts, inner)
    if isinstance(t, tuple):
        out: set[str] = set()
        for x in t:
            out |= _free_vars(x, bound)
        return out
    if dataclasses.is_dataclass(t) and not isinstance(t, type):
        out = set()
        for f in dataclasses.fields(t):
            out |= _free_vars(getattr(t, f.name), bound)
        return out
    return set()


def _session_free(t: Any) -> bool:
    """No built-in beyond the pure ones, no helper call, no solver unknown, no `cluster` beyond its
    fixed total: a term whose value follows from its free variables alone."""
    if isinstance(t, ir.GetAttr):
        root, path = attribute_chain(t)
        if isinstance(root, ir.Var) and root.name == "cluster":
            return path[0] in FIXED_CLUSTER
        return _session_free(root)
    if isinstance(t, ir.Var):
        return t.name != "cluster"
    if isinstance(t, ir.Apply):
        return t.func in PURE and _session_free(t.args)
    if isinstance(t, (ir.CallUser, ir.Sym)):
        return False
    if isinstance(t, tuple):
        return all(_session_free(x) for x in t)
    if dataclasses.is_dataclass(t) and not isinstance(t, type):
        return all(_session_free(getattr(t, f.name)) for f in dataclasses.fields(t))
    return True


def _substitute(t: Any, terms: dict[str, ir.Term]) -> Any:
    """`t` with each variable named in `terms` replaced by its term (the compiler makes every bound
    name unique, so no binding inside `t` shadows one)."""
    if isinstance(t, ir.Var):
        return terms.get(t.name, t)
    if isinstance(t, tuple):
        return tuple(_substitute(x, terms) for x in t)
    if dataclasses.is_dataclass(t) and not isinstance(t, type):
        return dataclasses.replace(t, **{f.name: _substitute(getattr(t, f.name), terms)
                                         for f in dataclasses.fields(t)})
    return t


def _rename(t: Any, old: str, new: str) -> Any:
    return _substitute(t, {old: ir.Var(new)})


class _Rewriter:
    """One rule's term with each preemptor input replaced by a variable `$in<k>` (shared by the rules
    of a callback: equal input terms are one input); refuses candidate-side reads `victim_memo`
    could not follow, and any read of a queue's state (a queue changes with tasks on other nodes
    that no job of the candidates' follows)."""

    def __init__(self, preemptor: str, candidates: str, inputs: dict[ir.Term, str], functions: Functions):
        self.p, self.cs, self.inputs, self.functions = preemptor, candidates, inputs, functions
        self.inside: set[tuple[str, str]] = set()  # helpers being inlined (a recursive one is refused)
        self.reads_queues = False  # a candidate's queue's state: it changes with tasks on other nodes

    def input_for(self, t: ir.Term) -> ir.Var:
        canonical = _rename(t, self.p, PREEMPTOR)
        if canonical not in self.inputs:
            self.inputs[canonical] = f"$in{len(self.inputs)}"
        return ir.Var(self.inputs[canonical])

    def rewrite(self, t: Any, bound: frozenset[str]) -> Any:  # noqa: C901  # reason: one case per term kind
        if isinstance(t, (ir.Var, ir.GetAttr, ir.Apply, ir.Op, ir.Cond, ir.GetIndex, ir.Bind)):
            free = _free_vars(t, frozenset())
            if self.p in free and free <= {self.p, "cluster"} and _session_free(t):
                return self.input_for(t)
        if isinstance(t, ir.Var):
            if t.name in bound or t.name == self.cs:
                return t
            raise _Refused  # the preemptor where it is not an input, `cluster` whole, the clock
        if isinstance(t, (ir.Const, ir.SessionRef)) or t is None or isinstance(t, str):
            return t
        if isinstance(t, ir.GetAttr):
            root, path = attribute_chain(t)
            if isinstance(root, ir.Var) and root.name == "cluster" and "cluster" not in bound:
                if path[0] not in FIXED_CLUSTER:
                    raise _Refused
                return t
            if not isinstance(root, ir.Var) or not all(n in FOLLOWED for n in path):
                raise _Refused
            if "queue" in path:
                self.reads_queues = True
            self.rewrite(root, bound)
            return t
        if isinstance(t, ir.Apply):
            if t.func not in PURE:
                raise _Refused
            return ir.Apply(t.func, self.rewrite(t.args, bound))
        if isinstance(t, ir.Bind):
            value = self.rewrite(t.value, bound)
            if isinstance(value, ir.Var) and value.name in self.inputs.values():
                # `let mine = <input>`: the body reads the input itself, so its uses can be probed
                # (the compiler makes each bound name unique: no shadowing to respect)
                return self.rewrite(_rename(t.body, t.name, value.name), bound | {value.name})
            return ir.Bind(t.name, value, self.rewrite(t.body, bound | {t.name}))
        if isinstance(t, ir.Select):
            inner = bound | {t.var} | ({t.state} if t.state else set())
            return dataclasses.replace(
                t, source=self.rewrite(t.source, bound), group_key=self.rewrite(t.group_key, inner),
                group_start=self.rewrite(t.group_start, inner), when=self.rewrite(t.when, inner),
                then=self.rewrite(t.then, inner))
        if isinstance(t, ir.Agg):
            inner = bound | {t.var}
            return dataclasses.replace(t, source=self.rewrite(t.source, bound), where=self.rewrite(t.where, inner),
                                       body=self.rewrite(t.body, inner))
        if isinstance(t, (ir.Op, ir.Cond, ir.GetIndex, ir.ListOf, ir.ResourceVec, ir.Text)):
            return dataclasses.replace(t, **{f.name: self.rewrite(getattr(t, f.name), bound)
                                             for f in dataclasses.fields(t)})
        if isinstance(t, tuple):
            return tuple(self.rewrite(x, bound) for x in t)
        if isinstance(t, ir.CallUser):  # a helper: its body, inlined with the arguments' terms
            key = (t.module, t.func)
            found = self.functions.get(t.module, {}).get(t.func)
            if found is None or key in self.inside or len(found[0]) != len(t.args):
                raise _Refused
            self.inside.add(key)
            try:
                return self.rewrite(_substitute(found[1], dict(zip(found[0], t.args))), bound)
            finally:
                self.inside.discard(key)
        raise _Refused  # Sym


def _probe_target(t: Any, inputs: frozenset[str]) -> tuple[str, bool] | None:
    """The input `t` is, alone or plus or minus a term free of inputs, or the absolute value of
    that: (its name, whether under `abs`); None otherwise."""
    if isinstance(t, ir.Var) and t.name in inputs:
        return t.name, False
    if isinstance(t, ir.Op) and t.op == "neg":
        inner = _probe_target(t.args[0], inputs)
        return inner if inner is not None and not inner[1] else None
    if isinstance(t, ir.Op) and t.op in ("+", "-") and len(t.args) == 2:
        a, b = t.args
        for probed, other in ((a, b), (b, a)):
            found = _probe_target(probed, inputs)
            if found is not None and not found[1] and not (_free_vars(other, frozenset()) & inputs):
                return found
        return None
    if isinstance(t, ir.Apply) and t.func == "abs" and len(t.args) == 1:
        inner = _probe_target(t.args[0], inputs)
        return (inner[0], True) if inner is not None and not inner[1] else None
    return None


def _unprobed_uses(t: Any, inputs: frozenset[str], out: set[str]) -> None:
    """Adds to `out` each input that `t` uses anywhere but as a side of a comparison (`_probe_target`)."""
    if isinstance(t, ir.Var):
        if t.name in inputs:
            out.add(t.name)
        return
    if isinstance(t, ir.Op) and t.op in _COMPARISONS and len(t.args) == 2:
        a, b = t.args
        for side, other in ((a, b), (b, a)):
            if _probe_target(side, inputs) is not None and not (_free_vars(other, frozenset()) & inputs):
                _unprobed_uses(_without_inputs(side, inputs), inputs, out)
            else:
                _unprobed_uses(side, inputs, out)
        return
    if isinstance(t, tuple):
        for x in t:
            _unprobed_uses(x, inputs, out)
        return
    if dataclasses.is_dataclass(t) and not isinstance(t, type):
        for f in dataclasses.fields(t):
            _unprobed_uses(getattr(t, f.name), inputs, out)


def _without_inputs(t: Any, inputs: frozenset[str]) -> Any:
    """A probe target's other operands (what `_unprobed_uses` still walks)."""
    if isinstance(t, ir.Var) and t.name in inputs:
        return None
    if isinstance(t, (ir.Op, ir.Apply)):
        return tuple(_without_inputs(a, inputs) for a in t.args)
    return t


def cannot_hold(arrays: Any, request: Any, rows: np.ndarray, freed: np.ndarray) -> np.ndarray | None:
    """For each of `rows`, whether the node's FutureIdle plus `freed[row]` (the room its victims would
    free) falls short of `request` on a dimension `fits` reads: cpu, memory and every one it names
    (ValidateVictims over the node columns, by a margin, so float sums never drop a node that fits).
    None when one of those dimensions is no column: each node is then asked (`fits_with`). Preempt's
    and reclaim's kept answers and reclaim's per-queue victim table all drop nodes by it."""
    index = arrays.index
    names = [CPU, MEMORY, *(k for k in request.keys() if k not in (CPU, MEMORY))]
    if any(k not in index for k in names if k in (CPU, MEMORY) or request.get(k, 0) > 0):
        return None
    columns = [index[k] for k in names if k in index]
    need = arrays.cached_vector(request)[columns]
    room = arrays.future[rows][:, columns] + freed[rows][:, columns]
    short: np.ndarray = (need > room + 1e-9 * np.maximum(1.0, np.abs(need))).any(axis=1)
    return short


@dataclasses.dataclass(frozen=True)
class ReusePlan:
    """One victim callback's rules read for reuse: its inputs (name, closure over `$preemptor`,
    whether it may be probed) and each rule's rewritten term, compiled."""

    inputs: tuple[tuple[str, evaluate.Closure, bool], ...]
    bodies: dict[int, tuple[str, evaluate.Closure]]  # id(rule) -> (its candidates' name, its term)
    reads_queues: bool  # an answer then also holds only while the candidates' queues are unchanged

    @staticmethod
    def of(rules: list[CompiledRule], functions: Functions) -> ReusePlan | None:
        """None when any rule reads what reuse cannot follow. `functions`: module name -> its helper
        functions (`CompiledModule.functions`), inlined."""
        inputs: dict[ir.Term, str] = {}
        terms: list[tuple[CompiledRule, ir.Term]] = []
        reads_queues = False
        try:
            for rule in rules:
                if len(rule.params) != 2:
                    return None
                rewriter = _Rewriter(rule.params[0], rule.params[1], inputs, functions)
                terms.append((rule, rewriter.rewrite(rule.term, frozenset())))
                reads_queues |= rewriter.reads_queues
        except _Refused:
            return None
        names = frozenset(inputs.values())
        unprobed: set[str] = set()
        for _rule, term in terms:
            _unprobed_uses(term, names, unprobed)
        compiled = tuple((name, evaluate.compile_term(term), name not in unprobed) for term, name in inputs.items())
        return ReusePlan(compiled, _bodies(terms, tuple(inputs.values())), reads_queues)


def _bodies(terms: list[tuple[CompiledRule, ir.Term]], inputs: tuple[str, ...]) -> dict[int, tuple[str, evaluate.Closure]]:
    """Each rewritten term as Python (`compile.pycode`, as the session's rules), else as closures."""
    gen = pycode.Generator(dict(FUNCTIONS))
    try:
        for i, (rule, term) in enumerate(terms):
            gen.add_entry(f"reuse_{i}", (rule.params[1], *inputs), term)
        ns = gen.build()
    except (pycode.Unsupported, SyntaxError):
        return {id(rule): (rule.params[1], evaluate.compile_term(term)) for rule, term in terms}
    return {id(rule): (rule.params[1], ns[f"e_reuse_{i}"]) for i, (rule, _term) in enumerate(terms)}


# ---------------------------------------------------------------------------------------------------
# Probed values
# ---------------------------------------------------------------------------------------------------

class _Interval:
    """For each probed input, the closed interval of values for which every comparison recorded so
    far comes out as it did. A comparison whose sides were equal holds for that one value (equal
    priorities, the common case); one too close to its flip to tell leaves nothing (`dead`)."""

    def __init__(self, values: list[float]):
        self.values = values
        self.lo = [-math.inf] * len(values)
        self.hi = [math.inf] * len(values)
        self.dead = False

    def flip_at(self, k: int, t: float, scale: float) -> None:
        """The comparison's outcome flips where input `k` is `t`; `scale`: the magnitude of the other
        numbers it computed with (their rounding is what the margin allows for)."""
        x = self.values[k]
        margin = 1e-9 * max(1.0, abs(t), scale)
        if not math.isfinite(t) or not math.isfinite(x):
            self.dead = True
        elif x < t - margin:
            self.hi[k] = min(self.hi[k], t - margin)
        elif x > t + margin:
            self.lo[k] = max(self.lo[k], t + margin)
        else:
            self.dead = True

    def only(self, k: int) -> None:
        """The comparison met its flip exactly: it comes out the same for this value alone (the same
        numbers, computed the same way)."""
        x = self.values[k]
        self.lo[k], self.hi[k] = max(self.lo[k], x), min(self.hi[k], x)


def _plain_number(v: Any) -> bool:
    """A Python int or float (not a bool, not a numpy scalar), small enough that int and float
    arithmetic on it agree."""
    return type(v) in (int, float) and abs(v) < 2.0 ** 52


class _Probed:
    """A number a * x + b (or its absolute value) where x is probed input `k`: computes as the plain
    number would and records, at each comparison, where its outcome flips. Not a number itself, so
    an operation it does not define fails (and the answer is not kept) instead of reading it
    unrecorded: `0.0 < x` for an int subclass x would be float's own comparison."""

    __slots__ = ("value", "interval", "k", "a", "b", "absolute")

    def __init__(self, value: Any, interval: _Interval, k: int, a: int, b: Any, absolute: bool):
        self.value, self.interval, self.k, self.a, self.b, self.absolute = value, interval, k, a, b, absolute

    def _derive(self, value: Any, a: int, b: Any, absolute: bool) -> _Probed:
        if not _plain_number(value):
            raise Unprobeable
        return _Probed(value, self.interval, self.k, a, b, absolute)

    def _linear(self, other: Any) -> None:
        if self.absolute or not _plain_number(other):
            raise Unprobeable

    def __add__(self, other: Any) -> _Probed:
        self._linear(other)
        return self._derive(self.value + other, self.a, self.b + other, False)

    def __radd__(self, other: Any) -> _Probed:
        self._linear(other)
        return self._derive(other + self.value, self.a, other + self.b, False)

    def __sub__(self, other: Any) -> _Probed:
        self._linear(other)
        return self._derive(self.value - other, self.a, self.b - other, False)

    def __rsub__(self, other: Any) -> _Probed:
        self._linear(other)
        return self._derive(other - self.value, -self.a, other - self.b, False)

    def __neg__(self) -> _Probed:
        if self.absolute:
            raise Unprobeable
        return self._derive(-self.value, -self.a, -self.b, False)

    def __abs__(self) -> _Probed:
        if self.absolute:
            raise Unprobeable
        return self._derive(abs(self.value), self.a, self.b, True)

    def _compared(self, other: Any) -> Any:
        if not _plain_number(other):
            raise Unprobeable
        value = self.value
        if value == other:
            self.interval.only(self.k)
            return value
        scale = max(abs(self.b), abs(other))
        # a * x + b == other at x = a * (other - b) (a is 1 or -1); under abs also at a * (-other - b)
        self.interval.flip_at(self.k, self.a * (other - self.b), scale)
        if self.absolute:
            self.interval.flip_at(self.k, self.a * (-other - self.b), scale)
        return value

    def __lt__(self, other: Any) -> bool:
        return bool(self._compared(other) < other)

    def __le__(self, other: Any) -> bool:
        return bool(self._compared(other) <= other)

    def __gt__(self, other: Any) -> bool:
        return bool(self._compared(other) > other)

    def __ge__(self, other: Any) -> bool:
        return bool(self._compared(other) >= other)

    def __eq__(self, other: object) -> bool:
        return bool(self._compared(other) == other)

    def __ne__(self, other: object) -> bool:
        return bool(self._compared(other) != other)

    __hash__ = None  # type: ignore[assignment]  # reason: a probed value is never a key


def probe(value: Any, interval: _Interval, k: int) -> Any:
    """Input `k`'s value, probed: its comparisons narrow `interval`."""
    return _Probed(value, interval, k, 1, 0, False)


def _equality_probed(value: Any) -> bool:
    """A value compared by identity (a plain object: a job, a queue) or a string: it may stand for
    any other value unequal to everything it was compared with."""
    eq: object = type(value).__eq__
    return type(value) is str or (eq is object.__eq__ and not isinstance(value, type))


def _eq_key(value: Any) -> object:
    return value if type(value) is str else ("id", id(value))


class _EqualityProbe:
    """An input compared only with `==` and `!=`: compares as the value would, and records what it
    was found unequal to (`unequal`); found equal to anything, it must stay that value (`dead`)."""

    def __init__(self, value: Any, interval: _Interval, unequal: set[object]):
        self.value, self.interval, self.unequal = value, interval, unequal

    def _equal(self, other: Any) -> bool:
        if isinstance(other, _EqualityProbe) or not _equality_probed(other) and type(other) is not type(self.value):
            raise Unprobeable  # compared with a value of another kind: not followed
        equal = bool(self.value == other)
        if equal:
            self.interval.dead = True
        else:
            self.unequal.add(_eq_key(other))
        return equal

    def __eq__(self, other: object) -> bool:
        return self._equal(other)

    def __ne__(self, other: object) -> bool:
        return not self._equal(other)

    __hash__ = None  # type: ignore[assignment]  # reason: never a key

    def __getattr__(self, name: str) -> Any:
        raise Unprobeable  # anything but a comparison: not followed


# ---------------------------------------------------------------------------------------------------
# The failures kept
# ---------------------------------------------------------------------------------------------------

_NUMBER, _EQUALITY, _EXACT = 0, 1, 2  # how an input takes part in the memo


class _Fails:
    """Per node row, for one (kind, exact inputs): 1 + the node version at which the rules' answer
    could not free room (0: none kept), the numeric inputs' interval there, and the values each
    equality input was found unequal to there."""

    def __init__(self, rows: int, dims: int, inputs: int, cursor: int, holds: tuple[Any, ...]):
        self.version = np.zeros(rows, dtype=np.int64)
        self.room = np.zeros((rows, dims))  # the answer's victims' requests, summed per node column
        self.lo = np.full((inputs, rows), -np.inf)
        self.hi = np.full((inputs, rows), np.inf)
        # per equality input: a value it was found unequal to -> rows where the answer needs that
        self.unequal: list[dict[object, list[int]]] = [{} for _ in range(inputs)]
        self.by_job: dict[str, list[int]] = {}  # job key -> rows whose kept answer read the job
        self.by_queue: dict[str, list[int]] = {}  # queue name -> rows whose kept answer read the queue
        self.cursor = cursor  # how much of SessionState.job_log is accounted for
        self.holds = holds  # the exact inputs' objects, alive while their ids are in the key


_Inputs = tuple[tuple[object, ...], list[Any], list[int], tuple[Any, ...]]


class FailMemo:
    """One evicting action's kept failures for one victim callback (see the module docstring)."""

    def __init__(self, runtime: Any, callback: str, arrays: Any, job_log: list[Any]):
        """`arrays`: the placement's node arrays (`version`, `row`); `job_log`: `SessionState.job_log`."""
        self.runtime, self.callback = runtime, callback
        functions = {p.module.name: p.module.functions for tier in runtime.tiers for p in tier}
        self.plan = ReusePlan.of(runtime.rules(callback), functions)
        self.arrays, self.job_log = arrays, job_log
        self.memos: dict[tuple[object, ...], _Fails] = {}
        self.reused = 0  # rows dropped from walks (for tests and profiles)
        # the last preemptor's inputs, while no task changed status: (its id, len(job_log)) -> them
        self._last: tuple[tuple[int, int], _Inputs | None] | None = None
        self._scratch = np.zeros(len(arrays.version), dtype=bool)

    def _inputs(self, preemptor: Any) -> _Inputs | None:
        """The memo key part the exact inputs give, every input's value, how each takes part
        (`_NUMBER`, `_EQUALITY`, `_EXACT`), and the exact inputs' objects; None when an input cannot
        be computed."""
        stamp = (id(preemptor), len(self.job_log))
        if self._last is not None and self._last[0] == stamp:
            return self._last[1]
        found = self._compute_inputs(preemptor)
        self._last = (stamp, found)
        return found

    def _compute_inputs(self, preemptor: Any) -> _Inputs | None:
        assert self.plan is not None
        env = dict(self.runtime.env)
        env[PREEMPTOR] = preemptor
        key: list[object] = []
        values: list[Any] = []
        how: list[int] = []
        holds: list[Any] = []
        for _name, fn, may_probe in self.plan.inputs:
            try:
                value = fn(env)
            except Exception:  # noqa: BLE001  # reason: the session's own evaluation reports it; no reuse here
                return None
            values.append(value)
            if may_probe and _plain_number(value):
                how.append(_NUMBER)
                key.append(None)
            elif may_probe and _equality_probed(value):
                how.append(_EQUALITY)
                key.append(None)
            else:
                how.append(_EXACT)
                try:
                    hash(value)
                    key.append(("=", value))
                except TypeError:
                    key.append(("id", id(value)))
                    holds.append(value)
        return tuple(key), values, how, tuple(holds)

    def _memo(self, kind: tuple[object, ...], preemptor: Any) -> tuple[_Fails, list[Any], list[int]] | None:
        if self.plan is None:
            return None
        found = self._inputs(preemptor)
        if found is None:
            return None
        exact, values, how, holds = found
        key = (kind, exact)
        memo = self.memos.get(key)
        if memo is None:
            while len(self.memos) >= _KEPT:
                del self.memos[next(iter(self.memos))]
            memo = self.memos[key] = _Fails(len(self.arrays.version), len(self.arrays.dims), len(values),
                                            len(self.job_log), holds)
        self._catch_up(memo)
        return memo, values, how

    def _catch_up(self, memo: _Fails) -> None:
        """Forget the rows that read a job (or its queue) changed since the memo last looked."""
        log = self.job_log
        for i in range(memo.cursor, len(log)):
            job = log[i]
            rows = memo.by_job.pop(job.key, None)
            if rows:
                memo.version[rows] = 0
            if memo.by_queue:
                rows = memo.by_queue.pop(job.queue.name, None)
                if rows:
                    memo.version[rows] = 0
        memo.cursor = len(log)

    def open_rows(self, kind: tuple[object, ...], preemptor: Any, rows: np.ndarray) -> np.ndarray:
        """`rows` without those where a kept answer says the preemptor cannot get room."""
        found = self._memo(kind, preemptor) if len(rows) else None
        if found is None:
            return rows
        memo, values, how = found
        kept = memo.version[rows] == self.arrays.version[rows] + 1
        for k, value in enumerate(values):
            if how[k] == _NUMBER:
                kept &= (memo.lo[k, rows] <= value) & (value <= memo.hi[k, rows])
            elif how[k] == _EQUALITY:
                needs = memo.unequal[k].get(_eq_key(value))
                if needs:  # rows whose answer needs the input unequal to this very value
                    scratch = self._scratch
                    scratch[needs] = True
                    kept &= ~scratch[rows]
                    scratch[needs] = False
        if not kept.any():
            return rows
        # the kept answer frees too little for this preemptor's request (ValidateVictims, `fits_with`,
        # over the node columns; by a margin, so float sums never skip a node that fits)
        short = cannot_hold(self.arrays, preemptor.resreq, rows[kept], memo.room)
        if short is None:
            return rows
        kept[kept] = short
        self.reused += int(kept.sum())
        out: np.ndarray = rows[~kept]
        return out

    def remember(self, kind: tuple[object, ...], preemptor: Any, node_name: str, candidates: list[Any],
                 answer: list[Any]) -> None:
        """The rules answered `answer` among the node's `candidates` for the preemptor, and it does not
        free room: keep it, with what it holds for, if the probing evaluation agrees with it. `kind`
        names the victim filter: preemptors of one kind see the same candidates on a node."""
        found = self._memo(kind, preemptor)
        if found is None:
            return
        memo, values, how = found
        assert self.plan is not None
        interval = _Interval([float(v) if how[k] == _NUMBER else 0.0 for k, v in enumerate(values)])
        unequal: list[set[object]] = [set() for _ in values]
        if all(h == _EXACT for h in how):  # nothing probed (reclaim's rules read no reclaimer): the key holds it
            self._keep(memo, node_name, candidates, answer, interval, unequal)
            return
        env = dict(self.runtime.env)
        for k, (name, _fn, _may) in enumerate(self.plan.inputs):
            value = values[k]
            env[name] = (probe(value, interval, k) if how[k] == _NUMBER
                         else _EqualityProbe(value, interval, unequal[k]) if how[k] == _EQUALITY else value)
        bodies = self.plan.bodies

        def ask(rule: CompiledRule, _preemptor: Any, cands: list[Any]) -> Any:
            name, body = bodies[id(rule)]
            env[name] = cands
            return body(env)
        try:
            again, _rule = self.runtime.victims(self.callback, preemptor, candidates, ask=ask)
        except (Unprobeable, evaluate.EvaluationError, ArithmeticError, TypeError, AttributeError, KeyError):
            return
        if interval.dead or len(again) != len(answer) or any(a is not b for a, b in zip(again, answer)):
            return
        self._keep(memo, node_name, candidates, answer, interval, unequal)

    def _keep(self, memo: _Fails, node_name: str, candidates: list[Any], answer: list[Any], interval: _Interval,
              unequal: list[set[object]]) -> None:
        assert self.plan is not None
        row = self.arrays.row[node_name]
        memo.version[row] = int(self.arrays.version[row]) + 1
        memo.room[row] = sum((self.arrays.cached_vector(v.resreq) for v in answer), np.zeros(len(self.arrays.dims)))
        memo.lo[:, row] = interval.lo
        memo.hi[:, row] = interval.hi
        for k, seen in enumerate(unequal):
            for value_key in seen:
                memo.unequal[k].setdefault(value_key, []).append(row)
        jobs = {c.job.key: c.job for c in candidates if c.job is not None}
        for key in jobs:
            memo.by_job.setdefault(key, []).append(row)
        if self.plan.reads_queues:
            for name in {job.queue.name for job in jobs.values()}:
                memo.by_queue.setdefault(name, []).append(row)

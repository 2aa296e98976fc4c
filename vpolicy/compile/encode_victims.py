"""Victim selection (`preemptable` rules, combined as Volcano combines them) over a symbolic world.

`verify` proves properties such as "every preempt victim has a lower priority than its preemptor" for
every node's candidate list, not for one cluster: the preemptor and up to K candidate tasks become
solver unknowns, each attribute a rule reads becomes a symbol (`c1.priority`, `job2.min_available`),
and every rule body is partially evaluated into arithmetic/logical IR over those symbols (the fragment
`solve.backend_z3` translates). Objects are slots: task slots `p` (the preemptor) and `c0..c{K-1}`, job
slots `job0..jobK` (job0 is the preemptor's) and queue slots; a task's job is an integer unknown, so
`c.job == preemptor.job`, `c.job.priority` and `group c.job` work by case split over the slots.
Strings become integer codes (constants interned; an attribute may take any code).

Calls of a module's helper functions are inlined from their bodies (given by the caller). A rule
outside the fragment (resources, session constants, lists of the cluster) is not
refused: its answer becomes a fresh boolean per candidate, i.e. *any* subset. That over-approximates
it, so an `Unsat` proof stays a proof for the real rule, and a `Sat` answer may be spurious (the caller
then falls back to search with the exact engine). `Encoded.exact` says whether any rule was abstracted.

The combination is `Runtime.victims` step by step: within a tier, rules intersect and an empty answer
ends the tier with nothing; the first tier with victims decides; once a rule has answered, later tiers
only intersect. This module builds terms only (it never imports the solver).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from vpolicy.compile import ir
from vpolicy.lang import builtins

# Counts that are never negative; constrained so a model cannot use impossible values.
_COUNTS = frozenset({"min_available", "ready_count", "pipelined_count", "pending_count", "valid_task_count",
                     "task_count", "pending_best_effort_count", "weight"})
_SORTS = {"int": "int", "number": "real", "bool": "bool", "string": "int", "vote": "int"}
_KIND_ATTRS = {"task": builtins.TASK, "job": builtins.JOB, "queue": builtins.QUEUE}
_MAX_CALL_DEPTH = 8  # helper calls inlined this deep (a recursive helper beyond it is abstracted)
STATUS_CODES = ("Pending", "Allocated", "Pipelined", "Binding", "Bound", "Running", "Releasing", "Succeeded",
                "Failed", "Unknown")


class Unsupported(Exception):
    """The term is outside the symbolic fragment; the rule is abstracted."""


@dataclass(frozen=True, slots=True)
class Obj:
    """A symbolic session object: a fixed task slot, or a job/queue given by an index term."""

    kind: str  # task | job | queue
    slot: str = ""  # task slots: "p", "c0", ...
    index: ir.Term = ir.Const(0)  # job and queue slots


@dataclass(slots=True)
class World:
    """The symbolic world of one question: the preemptor, K candidates, K+1 job and queue slots.

    `helpers` maps (module, function) to a helper's parameter names and body term, so calls of a
    module's `let f(...)` are encoded by their bodies (a call without one is abstracted)."""

    k: int
    helpers: dict[tuple[str, str], tuple[tuple[str, ...], ir.Term]] = field(default_factory=dict)
    constants: dict[tuple[str, str], ir.Term] = field(default_factory=dict)  # session lets that read no cluster
    strings: dict[str, int] = field(default_factory=dict)
    hard: list[ir.Term] = field(default_factory=list)
    fresh: int = 0
    depth: int = 0

    @property
    def jobs(self) -> int:
        return self.k + 1

    def code(self, text: str) -> int:
        """Interned string constants get codes 1, 2, ...; 0 and the negatives stay free for other strings."""
        if text not in self.strings:
            self.strings[text] = len(self.strings) + 1
        return self.strings[text]

    def sym(self, owner: str, name: str, kind: str) -> ir.Term:
        attr = _KIND_ATTRS[kind].get(name)
        if attr is None:
            raise Unsupported(f"{kind}.{name}")
        sort = _SORTS.get(attr.type.rstrip("?"))
        if sort is None:
            raise Unsupported(f"{kind}.{name}: {attr.type}")
        term = ir.Sym(f"{owner}.{name}", sort)
        if name in _COUNTS:
            self.hard.append(ir.op(">=", term, ir.Const(0)))
        return term

    def job_of(self, slot: str) -> ir.Term:
        return ir.Sym(f"{slot}.job#", "int")

    def queue_of_job(self, j: int) -> ir.Term:
        return ir.Sym(f"job{j}.queue#", "int")

    def present(self, i: int) -> ir.Term:
        return ir.Sym(f"c{i}.present", "bool")

    def define(self, name: str, term: ir.Term, sort: str) -> ir.Term:
        """A named unknown equal to `term`: keeps terms small where they would otherwise be copied
        into every later step (the combination's state, a group's counter)."""
        if isinstance(term, (ir.Const, ir.Sym)):
            return term
        self.fresh += 1
        sym = ir.Sym(f"def{self.fresh}.{name}", sort)
        self.hard.append(ir.op("==", sym, term))
        return sym

    def abstract(self, what: str) -> ir.Term:
        self.fresh += 1
        return ir.Sym(f"abstract{self.fresh}.{what}", "bool")


@dataclass(frozen=True, slots=True)
class Encoded:
    victims: tuple[ir.Term, ...]  # per candidate: chosen as a victim by the combination
    exact: bool  # no rule was abstracted
    decided_exactly: ir.Term  # the answer came from a tier such that no rule up to it was abstracted
    abstracted: tuple[str, ...]  # rule ids answered by "any subset"
    hard: tuple[ir.Term, ...]  # the world's domain constraints


def encode(world: World, tiers: Sequence[Sequence[tuple[str, tuple[str, ...], ir.Term]]]) -> Encoded:
    """`tiers`: per tier, the enabled victim rules in order as (rule id, params, body term)."""
    k = world.k
    keeps: dict[int, tuple[ir.Term, ...]] = {}
    abstracted: list[str] = []
    for tier in tiers:
        for rule_id, params, term in tier:
            try:
                keeps[id(term)] = tuple(world.define(f"{rule_id}.c{i}", t, "bool")
                                        for i, t in enumerate(_encode_rule(world, params, term)))
            except Unsupported:
                abstracted.append(rule_id)
                keeps[id(term)] = tuple(ir.op("and", world.present(i), world.abstract(f"{rule_id}.c{i}"))
                                        for i in range(k))
    empty = tuple(ir.Const(False) for _ in range(k))
    victims: tuple[ir.Term, ...] = empty
    answered: ir.Term = ir.Const(False)
    returned: ir.Term = ir.Const(False)
    result: tuple[ir.Term, ...] = empty
    exact_so_far = True
    decided_exactly: list[ir.Term] = []
    for tier in tiers:
        exact_so_far = exact_so_far and not any(rule_id in abstracted for rule_id, _p, _t in tier)
        stop: ir.Term = ir.Const(False)
        for _rule_id, _params, term in tier:
            kept = keeps[id(term)]
            active = ir.op("and", ir.op("not", returned), ir.op("not", stop))
            nonempty = ir.op("or", *kept)
            active = world.define("active", active, "bool")
            nonempty = world.define("nonempty", nonempty, "bool")
            new = tuple(ir.cond(nonempty, ir.cond(answered, ir.op("and", v, c), c), ir.Const(False))
                        for v, c in zip(victims, kept))
            victims = tuple(world.define("victim", ir.cond(active, n, v), "bool") for n, v in zip(new, victims))
            answered = world.define("answered", ir.op("or", answered, ir.op("and", active, nonempty)), "bool")
            stop = world.define("stop", ir.op("or", stop, ir.op("and", active, ir.op("not", nonempty))), "bool")
        now = world.define("now", ir.op("and", ir.op("not", returned), ir.op("or", *victims)), "bool")
        result = tuple(world.define("result", ir.cond(now, v, r), "bool") for v, r in zip(victims, result))
        returned = world.define("returned", ir.op("or", returned, now), "bool")
        if exact_so_far:
            decided_exactly.append(now)
    return Encoded(result, not abstracted, ir.op("or", *decided_exactly), tuple(abstracted), tuple(world.hard))


# Rule bodies -----------------------------------------------------------------------------------------

def _encode_rule(world: World, params: tuple[str, ...], term: ir.Term) -> tuple[ir.Term, ...]:
    if len(params) != 2:
        raise Unsupported("victim rules take (preemptor, candidates)")
    env: dict[str, Any] = {params[0]: Obj("task", "p"), params[1]: "$candidates"}
    return _select(world, term, env)


def _select(world: World, t: ir.Term, env: dict[str, Any]) -> tuple[ir.Term, ...]:
    if isinstance(t, ir.Bind):
        return _select(world, t.body, {**env, t.name: _value(world, t.value, env)})
    if not isinstance(t, ir.Select) or not (isinstance(t.source, ir.Var) and env.get(t.source.name) == "$candidates"):
        raise Unsupported("not a select over the candidates")
    k = world.k
    kept: list[ir.Term] = []
    if t.group_key is None:
        for i in range(k):
            inner = {**env, t.var: Obj("task", f"c{i}")}
            kept.append(ir.op("and", world.present(i), _bool(world, t.when, inner)))
        return tuple(kept)
    if t.state is None or t.group_start is None:
        raise Unsupported("group without state")
    groups: list[ir.Term] = []
    after: list[ir.Term] = []
    for i in range(k):
        inner = {**env, t.var: Obj("task", f"c{i}")}
        key = _value(world, t.group_key, inner)
        if not isinstance(key, Obj) or key.kind == "task":
            raise Unsupported("group key must be a job or a queue")
        groups.append(key.index)
        state = _value(world, t.group_start, inner)
        for j in range(i):  # the latest earlier candidate of the same group carries the group's state
            same = ir.op("and", world.present(j), ir.op("==", groups[j], key.index))
            state = ir.cond(same, after[j], state)
        with_state = {**inner, t.state: state}
        keep = ir.op("and", world.present(i), _bool(world, t.when, with_state))
        kept.append(keep)
        if t.then is None:
            nxt = state
        else:
            changed = _value(world, t.then, with_state)
            nxt = changed if t.after else ir.cond(keep, changed, state)
        after.append(world.define(f"state.c{i}", ir.cond(world.present(i), nxt, state), "real"))
    return tuple(kept)


def _bool(world: World, t: ir.Term, env: dict[str, Any]) -> ir.Term:
    v = _value(world, t, env)
    if isinstance(v, Obj):
        raise Unsupported("object used as a condition")
    return v


def _value(world: World, t: ir.Term, env: dict[str, Any]) -> Any:  # noqa: C901  # reason: one case per term kind
    if isinstance(t, ir.Const):
        if isinstance(t.value, bool) or isinstance(t.value, (int, float)):
            return t
        if isinstance(t.value, str):
            return ir.Const(world.code(t.value))
        raise Unsupported(f"constant {t.value!r}")
    if isinstance(t, ir.Var):
        if t.name not in env or env[t.name] == "$candidates":
            raise Unsupported(f"variable {t.name}")
        return env[t.name]
    if isinstance(t, ir.Bind):
        return _value(world, t.body, {**env, t.name: _value(world, t.value, env)})
    if isinstance(t, ir.GetAttr):
        return _attr(world, _value(world, t.obj, env), t.name)
    if isinstance(t, ir.Cond):
        test = _bool(world, t.test, env)
        then, orelse = _value(world, t.then, env), _value(world, t.orelse, env)
        if isinstance(then, Obj) or isinstance(orelse, Obj):
            raise Unsupported("object-valued if")
        return ir.cond(test, then, orelse)
    if isinstance(t, ir.Op):
        return _op(world, t, env)
    if isinstance(t, ir.Apply):
        return _apply(world, t, env)
    if isinstance(t, ir.SessionRef):
        constant = world.constants.get((t.module, t.name))
        if constant is None:
            raise Unsupported(f"session constant {t.name}")
        return _value(world, constant, env)
    if isinstance(t, ir.CallUser):
        helper = world.helpers.get((t.module, t.func))
        if helper is None or world.depth > _MAX_CALL_DEPTH:
            raise Unsupported(f"helper {t.func}")
        params, body = helper
        inner = {**env, **{name: _value(world, arg, env) for name, arg in zip(params, t.args)}}
        world.depth += 1
        try:
            return _value(world, body, inner)
        finally:
            world.depth -= 1
    raise Unsupported(type(t).__name__)


def _op(world: World, t: ir.Op, env: dict[str, Any]) -> ir.Term:
    args = [_value(world, a, env) for a in t.args]
    if t.op in ("==", "!=") and any(isinstance(a, Obj) for a in args):
        a, b = args
        if not (isinstance(a, Obj) and isinstance(b, Obj) and a.kind == b.kind):
            raise Unsupported("object compared with a value")
        same = _same(world, a, b)
        return same if t.op == "==" else ir.op("not", same)
    if any(isinstance(a, Obj) for a in args):
        raise Unsupported("arithmetic on objects")
    return ir.op(t.op, *args)


def _same(world: World, a: Obj, b: Obj) -> ir.Term:
    if a.kind == "task":
        return ir.Const(a.slot == b.slot)
    return ir.op("==", a.index, b.index)


def _apply(world: World, t: ir.Apply, env: dict[str, Any]) -> ir.Term:
    source = t.args[0] if t.args else None
    if isinstance(source, ir.SessionRef):
        source = world.constants.get((source.module, source.name), source)
    if t.func == "contains" and isinstance(source, ir.ListOf):
        x = _value(world, t.args[1], env)
        if isinstance(x, Obj):
            raise Unsupported("contains on objects")
        return ir.op("or", *(ir.op("==", x, _value(world, item, env)) for item in source.items))
    args = [_value(world, a, env) for a in t.args]
    if any(isinstance(a, Obj) for a in args):
        raise Unsupported(f"{t.func} on objects")
    if t.func == "compare":
        a, b = args
        return ir.cond(ir.op("<", a, b), ir.Const(-1), ir.cond(ir.op(">", a, b), ir.Const(1), ir.Const(0)))
    if t.func in ("maximum", "minimum"):
        a, b = args
        return ir.cond(ir.op(">=" if t.func == "maximum" else "<=", a, b), a, b)
    if t.func == "abs":
        (a,) = args
        return ir.cond(ir.op(">=", a, ir.Const(0)), a, ir.op("neg", a))
    raise Unsupported(f"function {t.func}")


def _attr(world: World, obj: Any, name: str) -> Any:
    if not isinstance(obj, Obj):
        raise Unsupported(f".{name} of a value")
    if obj.kind == "task":
        if name == "job":
            return Obj("job", index=ir.Const(0) if obj.slot == "p" else world.job_of(obj.slot))
        if name == "queue":
            return _attr(world, _attr(world, obj, "job"), "queue")
        return world.sym(obj.slot, name, "task")
    if obj.kind == "job":
        if name == "queue":
            return Obj("queue", index=_by_slot(world, obj.index, lambda j: world.queue_of_job(j)))
        return _by_slot(world, obj.index, lambda j: world.sym(f"job{j}", name, "job"))
    if obj.kind == "queue":
        if name in ("parent", "ancestors", "children", "jobs"):
            raise Unsupported(f"queue.{name}")
        return _by_slot(world, obj.index, lambda q: world.sym(f"queue{q}", name, "queue"))
    raise Unsupported(obj.kind)


def _by_slot(world: World, index: ir.Term, make: Any) -> ir.Term:
    """The attribute of the slot `index` names, as a case split (a constant index needs none)."""
    if isinstance(index, ir.Const):
        return make(int(index.value))
    out = make(world.jobs - 1)
    for j in range(world.jobs - 2, -1, -1):
        out = ir.cond(ir.op("==", index, ir.Const(j)), make(j), out)
    return out

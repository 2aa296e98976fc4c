"""Victim selection (`preemptable` rules, combined as Volcano combines them) over a symbolic world.

`verify` proves properties such as "every preempt victim has a lower priority than its preemptor" for
every node's candidate list, not for one cluster: the preemptor and up to K candidate tasks become
solver unknowns, each attribute a rule reads becomes a symbol (`c1.priority`, `job2.min_available`),
and every rule body is partially evaluated into arithmetic/logical IR over those symbols (the fragment
`solve.backend_z3` translates). Objects are slots: task slots `p` (the preemptor) and `c0..c{K-1}`, job
slots `job0..jobK` (job0 is the preemptor's) and queue slots; a task's job is an integer unknown, so
`c.job == preemptor.job`, `c.job.priority` and `group c.job` work by case split over the slots.
Strings become integer codes (constants interned; an attribute may take any code).

Resource vectors (`c.resreq`, `c.queue.allocated`, `q.guarantee`, `left - c.resreq`, `le(a, b)`) are
one integer unknown per dimension of `World.dims`. Every vector operation of the fragment treats all
dimensions alike and no rule in it names one, so a world of any number of dimensions keeps every
comparison's answer when projected onto one witness dimension per comparison: with
`World.comparisons` + 1 dimensions (the extra one for the property's own), a proof covers vectors of
any size (`verify_props` encodes again with that many when the first pass needs more). A session map indexed by a queue or job (`deserved[c.queue]`) is an unknown vector per
slot: any value, the same for the same object. Numbers are computed as `compile.evaluate` computes
them: `/` is true division, 0 by 0 (`solve.backend_z3`), and where a double may round, the result is
an unknown within its rounding error (`compile.rounding`). Calls of a module's helper functions are inlined from
their bodies (given by the caller). A rule outside the fragment (other session constants, lists of the
cluster, dimension lists, shares) is not refused: its answer becomes a fresh boolean per candidate,
i.e. *any* subset. Both over-approximate, so an `Unsat` proof stays a proof for the real rules, and a
`Sat` answer may be spurious (the caller then falls back to search with the exact engine).
`Encoded.exact` says whether any rule was abstracted, read a session map or computed with a double
that may round (a witness could rest on a rounding Python does not make).

The combination is `Runtime.victims` step by step: within a tier, rules intersect and an empty answer
ends the tier with nothing; the first tier with victims decides; once a rule has answered, later tiers
only intersect. This module builds terms only (it never imports the solver).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from vpolicy.compile import ir, rounding
from vpolicy.lang import builtins

# Counts that are never negative; constrained so a model cannot use impossible values.
_COUNTS = frozenset({"min_available", "ready_count", "pipelined_count", "pending_count", "valid_task_count",
                     "task_count", "pending_best_effort_count", "weight"})
_SORTS = {"int": "int", "number": "real", "bool": "bool", "string": "int", "vote": "int"}
_KIND_ATTRS = {"task": builtins.TASK, "job": builtins.JOB, "queue": builtins.QUEUE}
_MAX_CALL_DEPTH = 8  # helper calls inlined this deep (a recursive helper beyond it is abstracted)
RESOURCE_DIMS = ("cpu", "memory", "other")  # the dimensions of a first pass
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


@dataclass(frozen=True, slots=True)
class Vec:
    """A resource vector: one integer term per dimension of its world's `dims`."""

    dims: tuple[ir.Term, ...]


@dataclass(frozen=True, slots=True)
class Dim:
    """A dimension bound by `any(k in dims(v): ...)`: an index into `World.dims`."""

    index: int


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
    # ids of the terms that stand for strings (their interned codes): only == and != mean anything on
    # them; an order or arithmetic on codes (`c.name + ""`) would mean something else
    texts: set[int] = field(default_factory=set)
    vectors: dict[str, Vec] = field(default_factory=dict)
    dims: tuple[str, ...] = RESOURCE_DIMS
    comparisons: int = 0  # vector comparisons encoded (each may need its own witness dimension)
    # Session lets by (module, name), to name a session map by what it computes: two modules' maps
    # built by equal terms (proportion's `deserved` and a copy) are one unknown
    session_terms: dict[tuple[str, str], ir.Term] = field(default_factory=dict)
    unknown_maps: set[str] = field(default_factory=set)  # session maps read as unknowns (`deserved`)
    map_reads: int = 0
    doubles: rounding.Doubles = field(default_factory=rounding.Doubles)  # roundings of float operations

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
        if attr.type == "resources":
            raise Unsupported(f"{kind}.{name} is a vector (ask `vec`)")
        sort = _SORTS.get(attr.type.rstrip("?"))
        if sort is None:
            raise Unsupported(f"{kind}.{name}: {attr.type}")
        term = ir.Sym(f"{owner}.{name}", sort)
        if name in _COUNTS:
            self.hard.append(ir.op(">=", term, ir.Const(0)))
        return term

    def vec(self, owner: str, name: str) -> Vec:
        """A resource vector unknown, never negative (requests, allocations, guarantees, shares)."""
        key = f"{owner}.{name}"
        if key not in self.vectors:
            dims = tuple(ir.Sym(f"{key}.{d}", "int") for d in self.dims)
            self.hard.extend(ir.op(">=", d, ir.Const(0)) for d in dims)
            self.vectors[key] = Vec(dims)
        return self.vectors[key]

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
    exact: bool  # no rule was abstracted or read a session map as an unknown
    decided_exactly: ir.Term  # the answer came from a tier such that every rule up to it was exact
    abstracted: tuple[str, ...]  # rule ids answered by "any subset"
    hard: tuple[ir.Term, ...]  # the world's domain constraints
    # rule ids encoded with a session map (`deserved`) as any value, or with doubles that may round
    approximated: tuple[str, ...] = ()


def encode(world: World, tiers: Sequence[Sequence[tuple[str, tuple[str, ...], ir.Term]]]) -> Encoded:
    """`tiers`: per tier, the enabled victim rules in order as (rule id, params, body term)."""
    k = world.k
    keeps: dict[int, tuple[ir.Term, ...]] = {}
    abstracted: list[str] = []
    approximated: list[str] = []
    for tier in tiers:
        for rule_id, params, term in tier:
            maps, roundings = world.map_reads, world.doubles.roundings
            try:
                keeps[id(term)] = tuple(world.define(f"{rule_id}.c{i}", t, "bool")
                                        for i, t in enumerate(_encode_rule(world, params, term)))
            except (Unsupported, rounding.NotArithmetic):
                abstracted.append(rule_id)
                keeps[id(term)] = tuple(ir.op("and", world.present(i), world.abstract(f"{rule_id}.c{i}"))
                                        for i in range(k))
            else:
                if world.map_reads > maps or world.doubles.roundings > roundings:
                    approximated.append(rule_id)
    empty = tuple(ir.Const(False) for _ in range(k))
    victims: tuple[ir.Term, ...] = empty
    answered: ir.Term = ir.Const(False)
    returned: ir.Term = ir.Const(False)
    result: tuple[ir.Term, ...] = empty
    exact_so_far = True
    decided_exactly: list[ir.Term] = []
    for tier in tiers:
        exact_so_far = exact_so_far and not any(rule_id in abstracted or rule_id in approximated
                                                for rule_id, _p, _t in tier)
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
    return Encoded(result, not abstracted and not approximated, ir.op("or", *decided_exactly), tuple(abstracted),
                   tuple(world.hard), tuple(approximated))


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
            state = _cond(same, after[j], state)
        with_state = {**inner, t.state: state}
        keep = ir.op("and", world.present(i), _bool(world, t.when, with_state))
        kept.append(keep)
        if t.then is None:
            nxt = state
        else:
            changed = _value(world, t.then, with_state)
            nxt = changed if t.after else _cond(keep, changed, state)
        after.append(_define(world, f"state.c{i}", _cond(world.present(i), nxt, state)))
    return tuple(kept)


def _cond(test: ir.Term, then: Any, orelse: Any) -> Any:
    if isinstance(then, Vec) or isinstance(orelse, Vec):
        if not (isinstance(then, Vec) and isinstance(orelse, Vec)):
            raise Unsupported("a vector and a number in one if")
        return Vec(tuple(ir.cond(test, a, b) for a, b in zip(then.dims, orelse.dims)))
    if isinstance(then, Obj) or isinstance(orelse, Obj):
        raise Unsupported("object-valued if")
    return ir.cond(test, then, orelse)


def _define(world: World, name: str, value: Any) -> Any:
    """A group's state as named unknowns, of the sort of its value (a boolean state stays a boolean)."""
    if isinstance(value, Vec):
        return Vec(tuple(world.define(f"{name}.{d}", t, "int") for d, t in zip(world.dims, value.dims)))
    if isinstance(value, (Obj, Dim)):
        raise Unsupported("a group state that is an object")
    return world.define(name, value, rounding.sort_of(value))


def _bool(world: World, t: ir.Term, env: dict[str, Any]) -> ir.Term:
    v: ir.Term | Obj | Vec = _value(world, t, env)
    if isinstance(v, (Obj, Vec)):
        raise Unsupported("object or vector used as a condition")
    return v


def _value(world: World, t: ir.Term, env: dict[str, Any]) -> Any:  # noqa: C901  # reason: one case per term kind
    if isinstance(t, ir.Const):
        if isinstance(t.value, bool) or isinstance(t.value, (int, float)):
            return t
        if isinstance(t.value, str):
            return _text(world, ir.Const(world.code(t.value)))
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
        then, orelse = _value(world, t.then, env), _value(world, t.orelse, env)
        chosen = _cond(_bool(world, t.test, env), then, orelse)
        return _text(world, chosen) if id(then) in world.texts or id(orelse) in world.texts else chosen
    if isinstance(t, ir.GetIndex):
        return _session_entry(world, t, env)
    if isinstance(t, ir.Agg):
        return _agg(world, t, env)
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


def _session_entry(world: World, t: ir.GetIndex, env: dict[str, Any]) -> Vec:
    """`deserved[q]`: a session map of the cluster, indexed by a queue or job slot, is any vector per slot."""
    if not isinstance(t.obj, ir.SessionRef):
        raise Unsupported("index of something other than a session map")
    key = _value(world, t.key, env)
    if not isinstance(key, Obj) or key.kind == "task":
        raise Unsupported("session map indexed by other than a queue or job")
    name = map_name(world, t.obj.module, t.obj.name)
    world.unknown_maps.add(name)
    world.map_reads += 1
    return _vec_by_slot(world, key.index, lambda q: world.vec(f"{key.kind}{q}", name))


def map_name(world: World, module: str, name: str) -> str:
    """The unknown that stands for a session map: named after the first module whose let computes the
    same term (session constants it reads expanded), so equal computations share one unknown."""
    target = _expanded(world, module, name)
    if target is not None:
        for (m, n) in world.session_terms:
            if n == name and _expanded(world, m, n) == target:
                return f"{m}.{n}"
    return f"{module}.{name}"


def _expanded(world: World, module: str, name: str, depth: int = 0) -> object | None:
    term = world.session_terms.get((module, name))
    if term is None or depth > _MAX_CALL_DEPTH:
        return None
    return ir.shape(term, lambda ref: _expanded(world, ref.module, ref.name, depth + 1))


def _op(world: World, t: ir.Op, env: dict[str, Any]) -> Any:
    args = [_value(world, a, env) for a in t.args]
    if any(isinstance(a, Vec) for a in args):
        return _vector_op(world, t.op, args)
    if t.op in ("==", "!=") and any(isinstance(a, Obj) for a in args):
        a, b = args
        if not (isinstance(a, Obj) and isinstance(b, Obj) and a.kind == b.kind):
            raise Unsupported("object compared with a value")
        same = _same(world, a, b)
        return same if t.op == "==" else ir.op("not", same)
    if any(isinstance(a, (Obj, Dim)) for a in args):
        raise Unsupported("arithmetic on objects")
    if t.op not in ("==", "!=") and any(id(a) in world.texts for a in args):
        raise Unsupported(f"{t.op} on strings")
    if t.op in ("+", "-", "*", "/"):
        result = world.doubles.arithmetic(t.op, args[0], args[1])
        world.hard.extend(result.bounds)
        return result.value
    if len(args) == 2:
        world.hard.extend(world.doubles.compared(t.op, args[0], args[1]))
    return ir.op(t.op, *args)


def _agg(world: World, t: ir.Agg, env: dict[str, Any]) -> ir.Term:
    """`any`/`all` over `dims(v)` (one case per dimension), `min`/`max` over the candidates."""
    if t.func in ("any", "all") and isinstance(t.source, ir.Apply) and t.source.func == "dims":
        vec = _value(world, t.source.args[0], env)
        if not isinstance(vec, Vec):
            raise Unsupported("dims of a number")
        world.comparisons += 1  # its answer may rest on one dimension of its own
        parts = []
        for d in range(len(world.dims)):
            inner = {**env, t.var: Dim(d)}
            test = ir.op("and", *(_bool(world, x, inner) for x in (t.where, t.body) if x is not None))
            member = ir.op(">", vec.dims[d], ir.Const(0))  # dims(v): the dimensions v is positive on
            parts.append(ir.op("and", member, test) if t.func == "any" else ir.op("or", ir.op("not", member), test))
        return ir.op("or" if t.func == "any" else "and", *parts)
    if t.func in ("min", "max") and isinstance(t.source, ir.Var) and env.get(t.source.name) == "$candidates":
        return _extreme(world, t, env)
    raise Unsupported(f"{t.func} over {type(t.source).__name__}")


def _extreme(world: World, t: ir.Agg, env: dict[str, Any]) -> ir.Term:
    """`min`/`max` of a number over the candidates, one candidate at a time; an int if every value is one."""
    if t.body is None:
        raise Unsupported(f"{t.func} of candidates")
    taken: list[tuple[ir.Term, ir.Term]] = []
    for i in range(world.k):
        inner = {**env, t.var: Obj("task", f"c{i}")}
        take = ir.op("and", world.present(i), *([_bool(world, t.where, inner)] if t.where is not None else []))
        value = _value(world, t.body, inner)
        if isinstance(value, (Obj, Vec, Dim)):
            raise Unsupported(f"{t.func} of objects or vectors")
        taken.append((take, value))
    sorts = {rounding.sort_of(v) for _take, v in taken}
    if "bool" in sorts:
        raise Unsupported(f"{t.func} of booleans")
    sort = "real" if "real" in sorts else "int"
    out: ir.Term = ir.Const(0 if sort == "int" else 0.0)  # over no candidate: 0, as the engine's fold gives
    seen: ir.Term = ir.Const(False)
    better = "<" if t.func == "min" else ">"
    for i, (take, value) in enumerate(taken):
        first_or_better = ir.op("or", ir.op("not", seen), ir.op(better, value, out))
        out = world.define(f"{t.func}.c{i}", ir.cond(ir.op("and", take, first_or_better), value, out), sort)
        seen = world.define("seen", ir.op("or", seen, take), "bool")
    return out


def _vector_op(world: World, op: str, args: list[Any]) -> Any:
    """+ and - per dimension; <= and >= on every dimension (the DSL's resource comparison)."""
    if not all(isinstance(a, Vec) for a in args) or len(args) != 2:
        raise Unsupported(f"{op} on a vector and a number")
    a, b = args
    if op in ("+", "-"):
        return Vec(tuple(ir.op(op, x, y) for x, y in zip(a.dims, b.dims)))
    if op in ("<=", ">="):
        world.comparisons += 1
        return ir.op("and", *(ir.op(op, x, y) for x, y in zip(a.dims, b.dims)))
    raise Unsupported(f"{op} on vectors")


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
    if t.func == "get" and len(args) == 2 and isinstance(args[0], Vec) and isinstance(args[1], Dim):
        return args[0].dims[args[1].index]
    if any(isinstance(a, Dim) for a in args):
        raise Unsupported(f"{t.func} of a dimension")
    if t.func == "le":
        every_dimension: ir.Term = _vector_op(world, "<=", args)
        return every_dimension
    if any(isinstance(a, Vec) for a in args):
        raise Unsupported(f"function {t.func} on vectors")
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


def _text(world: World, term: ir.Term) -> ir.Term:
    """`term` (a string's code), remembered as a string (`World.texts`)."""
    world.texts.add(id(term))
    return term


def _attr(world: World, obj: Any, name: str) -> Any:
    value = _plain_attr(world, obj, name)
    if not isinstance(obj, Obj):
        return value
    spec = _KIND_ATTRS.get(obj.kind, {}).get(name)
    return _text(world, value) if spec is not None and spec.type == "string" else value


def _plain_attr(world: World, obj: Any, name: str) -> Any:
    if not isinstance(obj, Obj):
        raise Unsupported(f".{name} of a value")
    vector = name in _KIND_ATTRS.get(obj.kind, {}) and _KIND_ATTRS[obj.kind][name].type == "resources"
    if obj.kind == "task":
        if name == "job":
            return Obj("job", index=ir.Const(0) if obj.slot == "p" else world.job_of(obj.slot))
        if name == "queue":
            return _plain_attr(world, _plain_attr(world, obj, "job"), "queue")
        return world.vec(obj.slot, name) if vector else world.sym(obj.slot, name, "task")
    if obj.kind == "job":
        if name == "queue":
            return Obj("queue", index=_by_slot(world, obj.index, lambda j: world.queue_of_job(j)))
        if vector:
            return _vec_by_slot(world, obj.index, lambda j: world.vec(f"job{j}", name))
        return _by_slot(world, obj.index, lambda j: world.sym(f"job{j}", name, "job"))
    if obj.kind == "queue":
        if name in ("parent", "ancestors", "children", "jobs", "tree_allocated", "tree_inqueue", "request",
                    "elastic"):
            raise Unsupported(f"queue.{name}")
        if vector:
            return _vec_by_slot(world, obj.index, lambda q: world.vec(f"queue{q}", name))
        return _by_slot(world, obj.index, lambda q: world.sym(f"queue{q}", name, "queue"))
    raise Unsupported(obj.kind)


def _vec_by_slot(world: World, index: ir.Term, make: Callable[[int], Vec]) -> Vec:
    """`_by_slot` for vectors: the same case split on every dimension (unknowns made once per slot)."""
    if isinstance(index, ir.Const):
        return make(int(index.value))
    slots = [make(j) for j in range(world.jobs)]
    dims = []
    for d in range(len(world.dims)):
        out = slots[-1].dims[d]
        for j in range(world.jobs - 2, -1, -1):
            out = ir.cond(ir.op("==", index, ir.Const(j)), slots[j].dims[d], out)
        dims.append(out)
    return Vec(tuple(dims))


def _by_slot(world: World, index: ir.Term, make: Callable[[int], ir.Term]) -> ir.Term:
    """The attribute of the slot `index` names, as a case split (a constant index needs none)."""
    if isinstance(index, ir.Const):
        return make(int(index.value))
    out = make(world.jobs - 1)
    for j in range(world.jobs - 2, -1, -1):
        out = ir.cond(ir.op("==", index, ir.Const(j)), make(j), out)
    return out

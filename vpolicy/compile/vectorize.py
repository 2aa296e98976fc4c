"""Vectorised evaluation of node rules: one rule over many nodes at once, with numpy.

A session asks "which nodes pass, and how do they score" for every task; evaluating a rule closure per
(task, node) pair cannot meet the 1-second budget at 1,000 nodes. Here a rule body whose `node`
parameter ranges over a `NodeBatch` is compiled once into a closure returning arrays: node resources
become per-dimension columns, `if` becomes `numpy.where`, aggregates over a task's dimensions loop in
Python over a handful of names while their bodies stay vectorised. Functions that look at node labels
or taints run per node (they depend only on the task's spec and the node's static fields, so callers
cache them per task class).

A rule the vectoriser does not understand raises `Unvectorizable` at compile time and the caller keeps
the exact scalar closure (`compile.evaluate`); both give the same numbers, which tests check.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Protocol

import numpy as np

from vpolicy.compile import ir, numa, relations
from vpolicy.compile.evaluate import get_attr as scalar_attr
from vpolicy.compile.functions import FUNCTIONS
from vpolicy.model.resources import Resources

VEnv = dict[str, Any]
VClosure = Callable[[VEnv], Any]

# Node attributes held as per-dimension columns, and scalar-per-node ones.
RESOURCE_ATTRS = frozenset({"allocatable", "used", "idle", "releasing", "pipelined", "future_idle", "evicted"})
COUNT_ATTRS = frozenset({"pod_count", "max_pods", "pods_without_cpu_request", "pods_without_memory_request"})
BATCH_ATTRS = RESOURCE_ATTRS | COUNT_ATTRS | {"unschedulable", "numa"}  # what NodeBatch.attr answers
# Functions applied per node (spec matching); they take (task, node).
PER_NODE_FUNCTIONS = frozenset({"matches_node_selector", "matches_required_affinity", "preferred_affinity_weight",
                                "tolerates_taints", "intolerable_taints"})


class Unvectorizable(Exception):
    """The rule uses something the vectoriser cannot batch; use the scalar closure."""


class ResMatrix:
    """Per-dimension columns of a resource attribute over a batch of nodes."""

    __slots__ = ("cols", "n")

    def __init__(self, cols: dict[str, np.ndarray], n: int):
        self.cols = cols
        self.n = n

    def get(self, name: str) -> np.ndarray:
        col = self.cols.get(name)
        return col if col is not None else np.zeros(self.n)

    def combine(self, other: Any, sign: int) -> "ResMatrix":
        out = dict(self.cols)
        items = other.cols.items() if isinstance(other, ResMatrix) else other.items()
        for k, v in items:
            out[k] = out.get(k, 0) + sign * v
        return ResMatrix(out, self.n)


class NodeInfos(Protocol):
    """What a batch needs of its nodes' infos: how many, and each in row order (the engine hands a
    lazy view that builds them only when a rule falls back to a per-node closure)."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...


class NodeBatch:
    """A batch of nodes for vectorised rules: columns come from the session's node arrays."""

    def __init__(self, infos: NodeInfos, columns: Callable[[str], ResMatrix], counts: Callable[[str], np.ndarray],
                 rows: np.ndarray | None = None):
        self.infos = infos
        self.rows = rows  # the session's node rows, in batch order (read by compile.relations)
        self.n = len(infos)
        self._columns = columns
        self._counts = counts
        self._read: dict[str, Any] = {}  # columns are read many times by one rule and shared by several

    def attr(self, name: str) -> Any:
        value = self._read.get(name)
        if value is None:
            value = self._read[name] = self._attr(name)
        return value

    def _attr(self, name: str) -> Any:
        if name in RESOURCE_ATTRS:
            return self._columns(name)
        if name in COUNT_ATTRS:
            return self._counts(name)
        if name == "unschedulable":
            return np.array([n.unschedulable for n in self.infos], dtype=bool)
        if name == "numa":  # each node's NumaSource or None (an object column), for compile.numa's batched forms
            return self._counts("numa")
        raise Unvectorizable(f"node.{name}")


def _is_vec(v: Any) -> bool:
    return isinstance(v, (np.ndarray, ResMatrix))


def _binary(op: str, a: Any, b: Any) -> Any:
    if isinstance(a, ResMatrix) or isinstance(b, ResMatrix):
        if op == "+":
            return a.combine(b, 1) if isinstance(a, ResMatrix) else b.combine(a, 1)
        if op == "-" and isinstance(a, ResMatrix):
            return a.combine(b, -1)
        raise Unvectorizable(f"resource matrix {op}")
    if isinstance(a, Resources) or isinstance(b, Resources):
        raise Unvectorizable(f"scalar resources {op} in a vector rule")
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if _is_vec(b):
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(b != 0, np.divide(a, np.where(b != 0, b, 1)), 0.0)
        return a / b if b else 0.0 * a
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == ">=":
        return a >= b
    raise Unvectorizable(op)


def _vec_function(name: str) -> Callable[..., Any] | None:
    if name in relations.VECTOR_FUNCTIONS:  # they answer a NodeBatch with an array themselves
        return relations.FUNCTIONS[name]
    if name in numa.VECTOR_FUNCTIONS:  # (task, node.numa of a batch)
        return numa.VECTOR_FUNCTIONS[name]
    if name == "get":
        return lambda r, k: r.get(k) if isinstance(r, ResMatrix) else r.get(k, 0)
    if name == "floor":
        return lambda x: np.floor(x) if _is_vec(x) else int(x // 1)
    if name == "abs":
        return lambda x: np.abs(x) if _is_vec(x) else abs(x)
    if name == "round":  # halves away from zero, as the scalar form
        return lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5) if _is_vec(x) else FUNCTIONS["round"](x)
    if name == "log":
        return lambda x: np.log(x) if _is_vec(x) else FUNCTIONS["log"](x)
    if name == "pow":
        return lambda a, b: np.power(a, b) if _is_vec(a) or _is_vec(b) else FUNCTIONS["pow"](a, b)
    if name == "minimum":
        return lambda a, b: np.minimum(a, b) if _is_vec(a) or _is_vec(b) else min(a, b)
    if name == "maximum":
        return lambda a, b: np.maximum(a, b) if _is_vec(a) or _is_vec(b) else max(a, b)
    if name == "ratio":
        return lambda a, b: _binary("/", a, b)
    if name == "half":
        return lambda x: x / 2
    if name == "float":
        return lambda x: x.astype(float) if _is_vec(x) else float(x)
    return None


def compile_node_rule(term: ir.Term, node_var: str, user_terms: dict[str, tuple[tuple[str, ...], ir.Term]],
                      functions: dict[str, Callable[..., Any]] | None = None) -> VClosure:
    """Compile `term` where `node_var` is bound to a NodeBatch; raises Unvectorizable."""
    fns = FUNCTIONS if functions is None else functions
    return _Vec(node_var, user_terms, fns).compile(term, frozenset({node_var}))


class _Vec:
    def __init__(self, node_var: str, user_terms: dict[str, tuple[tuple[str, ...], ir.Term]],
                 fns: dict[str, Callable[..., Any]]):
        self.node_var = node_var
        self.user_terms = user_terms
        self.fns = fns
        self.depth = 0

    def compile(self, t: ir.Term, node_vars: frozenset[str]) -> VClosure:  # noqa: C901  # reason: one case per term
        if isinstance(t, ir.Const):
            v = t.value
            return lambda env: v
        if isinstance(t, ir.Var):
            name = t.name
            return lambda env: env[name]
        if isinstance(t, ir.SessionRef):
            key = (t.module, t.name)
            return lambda env: env["$session"][key]
        if isinstance(t, ir.GetAttr):
            if isinstance(t.obj, ir.Var) and t.obj.name == self.node_var and t.name not in BATCH_ATTRS:
                raise Unvectorizable(f"node.{t.name}")  # known now, not at the first node batch
            obj, attr = self.compile(t.obj, node_vars), t.name

            def get(env: VEnv) -> Any:
                value = obj(env)
                if isinstance(value, NodeBatch):
                    return value.attr(attr)
                if _is_vec(value):
                    raise Unvectorizable("attribute of a vector")
                return scalar_attr(value, attr)
            return get
        if isinstance(t, ir.Apply):
            return self._apply(t, node_vars)
        if isinstance(t, ir.CallUser):
            return self._call_user(t, node_vars)
        if isinstance(t, ir.Op):
            args = [self.compile(a, node_vars) for a in t.args]
            if t.op == "and":
                return lambda env: _fold_bool(np.logical_and, [a(env) for a in args], all)
            if t.op == "or":
                return lambda env: _fold_bool(np.logical_or, [a(env) for a in args], any)
            if t.op == "not":
                a0 = args[0]
                return lambda env: (lambda v: np.logical_not(v) if _is_vec(v) else not v)(a0(env))
            if t.op == "neg":
                a0 = args[0]
                return lambda env: -a0(env)
            op_name, left, right = t.op, args[0], args[1]
            return lambda env: _binary(op_name, left(env), right(env))
        if isinstance(t, ir.Cond):
            test, then, orelse = (self.compile(x, node_vars) for x in (t.test, t.then, t.orelse))

            def cond(env: VEnv) -> Any:
                c = test(env)
                if _is_vec(c):
                    return np.where(c, then(env), orelse(env))
                return then(env) if c else orelse(env)
            return cond
        if isinstance(t, ir.Bind):
            name, value, body = t.name, self.compile(t.value, node_vars), self.compile(t.body, node_vars)

            def bind(env: VEnv) -> Any:
                inner = dict(env)
                inner[name] = value(env)
                return body(inner)
            return bind
        if isinstance(t, ir.Agg):
            return self._agg(t, node_vars)
        if isinstance(t, ir.ListOf):
            items = [self.compile(x, node_vars) for x in t.items]
            return lambda env: [x(env) for x in items]
        raise Unvectorizable(type(t).__name__)

    def _apply(self, t: ir.Apply, node_vars: frozenset[str]) -> VClosure:
        args = [self.compile(a, node_vars) for a in t.args]
        if t.func in PER_NODE_FUNCTIONS:
            fn = self.fns[t.func]

            def per_node(env: VEnv) -> Any:
                values = [a(env) for a in args]
                batch = next((v for v in values if isinstance(v, NodeBatch)), None)
                if batch is None:
                    return fn(*values)
                out = [fn(*[info if v is batch else v for v in values]) for info in batch.infos]
                return np.array(out)
            return per_node
        vec = _vec_function(t.func)
        scalar = self.fns.get(t.func)
        if scalar is None:
            raise Unvectorizable(t.func)

        def apply(env: VEnv) -> Any:
            values = [a(env) for a in args]
            if any(_is_vec(v) or isinstance(v, NodeBatch) for v in values):
                if vec is None:
                    raise Unvectorizable(t.func)
                return vec(*values)
            return scalar(*values)
        return apply

    def _call_user(self, t: ir.CallUser, node_vars: frozenset[str]) -> VClosure:
        if t.func not in self.user_terms:
            raise Unvectorizable(t.func)
        self.depth += 1
        if self.depth > 20:
            raise Unvectorizable(f"recursive {t.func}")
        params, body_term = self.user_terms[t.func]
        args = [self.compile(a, node_vars) for a in t.args]
        # A parameter may receive the node batch; treat every parameter as possibly a node.
        body = self.compile(body_term, node_vars | frozenset(params))
        self.depth -= 1

        def call(env: VEnv) -> Any:
            inner: VEnv = {k: env[k] for k in ("cluster", "$session", "$now", "$tz", "$candidates") if k in env}
            for name, arg in zip(params, args):
                inner[name] = arg(env)
            return body(inner)
        return call

    def _agg(self, t: ir.Agg, node_vars: frozenset[str]) -> VClosure:
        source = self.compile(t.source, node_vars)
        where = self.compile(t.where, node_vars) if t.where is not None else None
        body = self.compile(t.body, node_vars) if t.body is not None else None
        var, func = t.var, t.func
        if func not in ("sum", "count", "any", "all", "list"):
            raise Unvectorizable(func)

        def agg(env: VEnv) -> Any:
            items = source(env)
            if _is_vec(items):
                raise Unvectorizable("aggregate over a vector")
            inner = dict(env)

            def bound(fn: VClosure | None) -> Callable[[Any], Any] | None:
                if fn is None:
                    return None

                def at(x: Any) -> Any:
                    inner[var] = x
                    return fn(inner)
                return at
            return run_aggregate(func, items, bound(where), bound(body))
        return agg


def run_aggregate(func: str, items: Any, where: Callable[[Any], Any] | None, body: Callable[[Any], Any] | None) -> Any:
    """sum/count/any/all/list over a scalar collection whose filter and body may answer per node."""
    if func == "list":
        out = []
        for x in items:
            w = where(x) if where else True
            if _is_vec(w):
                raise Unvectorizable("vector filter in list")
            if w:
                out.append(body(x) if body else x)
        return out
    acc: Any = {"sum": 0, "count": 0, "any": False, "all": True}[func]
    for x in items:
        w = where(x) if where else True
        if func == "sum":
            v = body(x) if body else x
            acc = acc + (np.where(w, v, 0) if _is_vec(w) else (v if w else 0))
        elif func == "count":
            v = body(x) if body else True
            acc = acc + np.logical_and(w, v).astype(int) if (_is_vec(w) or _is_vec(v)) else acc + int(bool(w and v))
        elif func == "any":
            v = body(x) if body else True
            acc = np.logical_or(acc, np.logical_and(w, v)) if (_is_vec(w) or _is_vec(v) or _is_vec(acc)) else (acc or bool(w and v))
        else:
            v = body(x) if body else True
            ok = np.logical_or(np.logical_not(w), v) if (_is_vec(w) or _is_vec(v)) else (not w or v)
            acc = np.logical_and(acc, ok) if (_is_vec(ok) or _is_vec(acc)) else (acc and ok)
    return acc


def _fold_bool(fn: Callable[[Any, Any], Any], values: list[Any], scalar: Callable[[Any], bool]) -> Any:
    if any(_is_vec(v) for v in values):
        out = values[0]
        for v in values[1:]:
            out = fn(out, v)
        return out
    return scalar(values)

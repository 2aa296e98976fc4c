"""Exact evaluation of IR terms: each term is compiled once into a Python closure.

This is the fast path of the design: a session evaluates compiled rules millions of times, so the tree
is walked once per policy (here) and never again. Values are Python ints/floats/bools/strs, `Resources`,
lists and the session objects themselves (attributes by catalogue name). The solver backend
(`vpolicy.solve.backend_z3`) gives the same terms a symbolic meaning; the two must agree, which the
tests check on the arithmetic fragment.
"""
from __future__ import annotations

import enum
from typing import Any, Callable

from vpolicy.compile import ir
from vpolicy.compile.functions import FUNCTIONS
from vpolicy.model.resources import Resources, ZERO

Env = dict[str, Any]
Closure = Callable[[Env], Any]


class EvaluationError(Exception):
    """A rule met a value it cannot handle (e.g. attribute of none); carries the rule label."""


def _res(v: Any) -> Any:
    """A plain 0 (an empty sum) stands for the empty resource vector in resource arithmetic."""
    if type(v) is Resources:  # first: comparing a Resources with 0 would go through Mapping checks
        return v
    return ZERO if v == 0 else v


def _le(a: Any, b: Any) -> bool:
    if isinstance(a, Resources) or isinstance(b, Resources):
        return bool(_res(a).le(_res(b)))
    return bool(a <= b)


def _lt(a: Any, b: Any) -> bool:
    if isinstance(a, Resources) or isinstance(b, Resources):
        a, b = _res(a), _res(b)
        return bool(a.le(b) and a != b)
    return bool(a < b)


def _mul(a: Any, b: Any) -> Any:
    if isinstance(a, Resources):
        return a.scale(b)
    if isinstance(b, Resources):
        return b.scale(a)
    return a * b


def _div(a: Any, b: Any) -> Any:
    if isinstance(a, Resources):
        return a.scale(1 / b)
    return a / b if b else 0.0


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, Resources) or isinstance(b, Resources):
        return _res(a) + _res(b)
    return a + b


def _sub(a: Any, b: Any) -> Any:
    if isinstance(a, Resources) or isinstance(b, Resources):
        return _res(a) - _res(b)
    return a - b


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": _add, "-": _sub, "*": _mul, "/": _div,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<=": _le, "<": _lt, ">=": lambda a, b: _le(b, a), ">": lambda a, b: _lt(b, a),
}


def get_attr(obj: Any, name: str) -> Any:
    if isinstance(obj, Resources):
        return obj.get(name, 0)
    if isinstance(obj, dict):
        return obj.get(name)
    if obj is None:
        raise EvaluationError(f"attribute '{name}' of none")
    value = getattr(obj, name)
    return value.value if isinstance(value, enum.Enum) else value


_GLOBAL_KEYS = ("cluster", "$session", "$now", "$tz", "$candidates")


def compile_term(term: ir.Term, functions: dict[str, Callable[..., Any]] | None = None,
                 user_functions: dict[str, Closure] | None = None) -> Closure:
    """Turn a term into a closure over an environment of variables.

    `user_functions` maps helper-function names to their compiled bodies; it is read at call time, so
    functions may call each other (and themselves) regardless of declaration order.
    """
    fns = dict(FUNCTIONS if functions is None else functions)
    if user_functions is not None:
        fns["$user"] = user_functions  # type: ignore[assignment]  # reason: side table, not a function
    return _compile(term, fns)


def _compile(t: ir.Term, fns: dict[str, Callable[..., Any]]) -> Closure:  # noqa: C901  # reason: one case per term kind
    if isinstance(t, ir.Const):
        value = t.value
        return lambda env: value
    if isinstance(t, ir.Var):
        name = t.name
        return lambda env: env[name]
    if isinstance(t, ir.SessionRef):
        session_key = (t.module, t.name)
        return lambda env: env["$session"][session_key]
    if isinstance(t, ir.GetAttr):
        obj, attr = _compile(t.obj, fns), t.name
        return lambda env: get_attr(obj(env), attr)
    if isinstance(t, ir.GetIndex):
        obj, key = _compile(t.obj, fns), _compile(t.key, fns)

        def index(env: Env) -> Any:
            container, k = obj(env), key(env)
            if isinstance(container, (dict, Resources)):
                return container.get(k, 0 if isinstance(container, Resources) else None)
            return container[k]
        return index
    if isinstance(t, ir.Apply):
        fn = fns[t.func]
        args = [_compile(a, fns) for a in t.args]
        if len(args) == 1:
            a0 = args[0]
            return lambda env: fn(a0(env))
        if len(args) == 2:
            a0, a1 = args
            return lambda env: fn(a0(env), a1(env))
        return lambda env: fn(*(a(env) for a in args))
    if isinstance(t, ir.CallUser):
        table: dict[str, Closure] = fns["$user"]  # type: ignore[assignment]  # reason: see compile_term
        func, params = t.func, t.params
        call_args = [_compile(a, fns) for a in t.args]

        def call(env: Env) -> Any:
            inner = {k: env[k] for k in _GLOBAL_KEYS if k in env}
            for name, arg in zip(params, call_args):
                inner[name] = arg(env)
            return table[func](inner)
        return call
    if isinstance(t, ir.Op):
        return _compile_op(t, fns)
    if isinstance(t, ir.Cond):
        test, then, orelse = (_compile(x, fns) for x in (t.test, t.then, t.orelse))
        return lambda env: then(env) if test(env) else orelse(env)
    if isinstance(t, ir.Bind):
        name, value, body = t.name, _compile(t.value, fns), _compile(t.body, fns)

        def bind(env: Env) -> Any:
            inner = dict(env)
            inner[name] = value(env)
            return body(inner)
        return bind
    if isinstance(t, ir.Agg):
        return _compile_agg(t, fns)
    if isinstance(t, ir.Select):
        return _compile_select(t, fns)
    if isinstance(t, ir.Text):
        parts = [p if isinstance(p, str) else _compile(p, fns) for p in t.parts]
        return lambda env: "".join(p if isinstance(p, str) else _show(p(env)) for p in parts)
    if isinstance(t, ir.ResourceVec):
        entries = [(k, _compile(v, fns)) for k, v in t.entries]
        return lambda env: Resources({k: v(env) for k, v in entries})
    if isinstance(t, ir.ListOf):
        items = [_compile(x, fns) for x in t.items]
        return lambda env: [x(env) for x in items]
    raise TypeError(f"unknown term {t!r}")


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if hasattr(v, "key"):
        return str(v.key)
    if hasattr(v, "name") and not isinstance(v, (str, Resources)):
        return str(v.name)
    return str(v)


def _compile_op(t: ir.Op, fns: dict[str, Callable[..., Any]]) -> Closure:
    args = [_compile(a, fns) for a in t.args]
    if t.op == "and":
        return lambda env: all(a(env) for a in args)
    if t.op == "or":
        return lambda env: any(a(env) for a in args)
    if t.op == "not":
        a0 = args[0]
        return lambda env: not a0(env)
    if t.op == "neg":
        a0 = args[0]
        return lambda env: -a0(env)
    fn = _BINARY[t.op]
    left, right = args
    return lambda env: fn(left(env), right(env))


def _compile_agg(t: ir.Agg, fns: dict[str, Callable[..., Any]]) -> Closure:
    var, func = t.var, t.func
    source = _compile(t.source, fns)
    where = _compile(t.where, fns) if t.where is not None else None
    body = _compile(t.body, fns) if t.body is not None else None

    def items(env: Env) -> Any:
        inner = dict(env)
        for x in source(env):
            inner[var] = x
            if where is None or where(inner):
                yield inner

    if func == "count":
        return lambda env: sum(1 for inner in items(env) if body is None or body(inner))
    if func == "all":
        return lambda env: all(body(inner) for inner in items(env)) if body else True
    if func == "any":
        return lambda env: any(body(inner) if body else True for inner in items(env))
    if func == "list":
        return lambda env: [body(inner) if body else inner[var] for inner in items(env)]
    if func == "map":
        return lambda env: {inner[var]: (body(inner) if body else True) for inner in items(env)}

    def fold(env: Env) -> Any:
        acc: Any = None
        for inner in items(env):
            v = body(inner) if body else inner[var]
            if acc is None:
                acc = v
            elif func == "sum":
                acc = _add(acc, v)
            elif func == "max":
                acc = v if v > acc else acc
            else:
                acc = v if v < acc else acc
        return 0 if acc is None else acc
    return fold


def _compile_select(t: ir.Select, fns: dict[str, Callable[..., Any]]) -> Closure:
    var, state = t.var, t.state
    source = _compile(t.source, fns)
    when = _compile(t.when, fns)
    key = _compile(t.group_key, fns) if t.group_key is not None else None
    start = _compile(t.group_start, fns) if t.group_start is not None else None
    then = _compile(t.then, fns) if t.then is not None else None
    after = t.after

    def select(env: Env) -> list[Any]:
        chosen: list[Any] = []
        groups: dict[Any, Any] = {}
        inner = dict(env)
        for x in source(env):
            inner[var] = x
            if key is not None and state is not None and start is not None:
                k = key(inner)
                if k not in groups:
                    groups[k] = start(inner)
                inner[state] = groups[k]
                if when(inner):
                    chosen.append(x)
                    if then is not None and not after:
                        groups[k] = then(inner)
                if then is not None and after:
                    groups[k] = then(inner)
            elif when(inner):
                chosen.append(x)
        return chosen
    return select

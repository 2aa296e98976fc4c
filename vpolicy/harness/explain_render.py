"""Words and numbers for explanations: quantities as Kubernetes writes them, rule terms as the DSL reads,
and why one rule said no, with the values that made it say so.

`why_not(...)` walks a rule's compiled term against the live session environment: the false conjuncts
of an `and`, the branch an `if` took to a `reject`, the first member of an `all` that failed, and, at the
leaves, the comparison with both sides evaluated ("queue.allocated + task.resreq = cpu 2 > deserved[queue]
= cpu 1"). It evaluates with the exact evaluator, so it says what the engine computed.

It does not decide anything and it does not print: `explain` and `verify` put the strings together.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Sequence

from vpolicy.compile import evaluate, ir
from vpolicy.compile.functions import FUNCTIONS
from vpolicy.compile.lower import CompiledModule, CompiledRule
from vpolicy.model.resources import MEMORY, PODS, Resources, milli_scaled

_BINARY_WORDS = {"<=": "<=", "<": "<", ">=": ">=", ">": ">", "==": "==", "!=": "!="}
_NEGATED = {"<=": ">", "<": ">=", ">=": "<", ">": "<=", "==": "!=", "!=": "=="}
_MAX_DEPTH = 6


# Quantities ------------------------------------------------------------------------------------------

def quantity(dim: str, value: int) -> str:
    """One resource amount as `kubectl` writes it: cpu `1` or `500m`, memory `4Gi`, gpu `2`."""
    if milli_scaled(dim):
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if dim == MEMORY or dim == "ephemeral-storage":
        for suffix, factor in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if value and value % factor == 0:
                return f"{value // factor}{suffix}"
    return str(value)


def resources(res: Mapping[str, int], dims: Sequence[str] | None = None, *, pods: bool = False) -> str:
    """`cpu 1, memory 4Gi` over `dims` (default: every dimension but pods)."""
    names = list(dims) if dims is not None else [d for d in sorted(res) if pods or d != PODS]
    if not names:
        return "nothing"
    return ", ".join(f"{d} {quantity(d, res.get(d, 0))}" for d in names)


def location(label: ir.Label) -> str:
    """`file:line` with the file relative to the working directory when it lies below it."""
    file = label.span.file
    if os.path.isabs(file):
        try:
            rel = os.path.relpath(file)
        except ValueError:
            rel = file
        if not rel.startswith(".."):
            file = rel
    return f"{file}:{label.span.line}" if label.span.line else file


def value_text(value: Any, dims: Sequence[str] | None = None) -> str:
    if isinstance(value, Resources):
        return resources(value, dims)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v) for v in value[:6]) + (", ..." if len(value) > 6 else "") + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{value_text(k)}: {value_text(v)}" for k, v in list(value.items())[:4]) + "}"
    key = getattr(value, "key", None)
    if isinstance(key, str):
        return key
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    return str(value)


# Terms as text ---------------------------------------------------------------------------------------

def term_text(t: ir.Term) -> str:  # noqa: C901  # reason: one case per term kind
    """A rule term written back in DSL syntax (variables without their compiler suffix)."""
    if isinstance(t, ir.Const):
        v = t.value
        if v is None:
            return "none"
        if isinstance(v, str):
            return f'"{v}"'
        return value_text(v)
    if isinstance(t, ir.Var):
        return t.name.split("#")[0].split(".")[-1]
    if isinstance(t, ir.SessionRef):
        return t.name
    if isinstance(t, ir.GetAttr):
        return f"{term_text(t.obj)}.{t.name}"
    if isinstance(t, ir.GetIndex):
        return f"{term_text(t.obj)}[{term_text(t.key)}]"
    if isinstance(t, ir.Apply):
        return f"{t.func}({', '.join(term_text(a) for a in t.args)})"
    if isinstance(t, ir.CallUser):
        return f"{t.func}({', '.join(term_text(a) for a in t.args)})"
    if isinstance(t, ir.Op):
        if t.op == "not":
            return f"not {term_text(t.args[0])}"
        if t.op == "neg":
            return f"-{term_text(t.args[0])}"
        return f" {t.op} ".join(_paren(a) for a in t.args)
    if isinstance(t, ir.Cond):
        return f"if {term_text(t.test)} then {term_text(t.then)} else {term_text(t.orelse)}"
    if isinstance(t, ir.Bind):
        return term_text(t.body)
    if isinstance(t, ir.Agg):
        var = t.var.split("#")[0]
        body = f": {term_text(t.body)}" if t.body is not None else ""
        return f"{t.func}({var} in {term_text(t.source)}{body})"
    if isinstance(t, ir.ListOf):
        return "[" + ", ".join(term_text(x) for x in t.items) + "]"
    if isinstance(t, ir.ResourceVec):
        return "{" + ", ".join(f"{k}: {term_text(v)}" for k, v in t.entries) + "}"
    return type(t).__name__.lower()


def _paren(t: ir.Term) -> str:
    text = term_text(t)
    return f"({text})" if isinstance(t, (ir.Op, ir.Cond)) and not (isinstance(t, ir.Op) and t.op in ("not", "neg")) \
        else text


# Why a rule said no ----------------------------------------------------------------------------------

class Evaluator:
    """Evaluates sub-terms of one module's rules in a session environment."""

    def __init__(self, module: CompiledModule, env: dict[str, Any]):
        self.env = env
        self.fns: dict[str, Callable[..., Any]] = dict(FUNCTIONS)
        self.fns["argument"] = lambda key, default: default
        self.fns["argument_at"] = self.fns["argument_text_at"] = lambda path, default: default
        self.fns["argument_keys"] = lambda path: []
        self.fns["extender"] = FUNCTIONS["extender"]  # an explanation never calls out
        self.helpers = module.helpers
        self._cache: dict[int, evaluate.Closure] = {}

    def value(self, term: ir.Term, env: dict[str, Any]) -> Any:
        fn = self._cache.get(id(term))
        if fn is None:
            fn = evaluate.compile_term(term, self.fns, self.helpers)
            self._cache[id(term)] = fn
        return fn(env)



def why_not(rule: CompiledRule, module: CompiledModule, env: dict[str, Any], *args: Any) -> str:
    """Why `rule` answered false (or reject) for `args`: the failing parts with their values."""
    local = dict(env)
    for name, value in zip(rule.params, args):
        local[name] = value
    try:
        parts = _why(rule.term, Evaluator(module, env), local, 0)
    except Exception:  # noqa: BLE001  # reason: an explanation must never break explain; fall back to the text
        parts = []
    return "; ".join(dict.fromkeys(parts)) if parts else term_text(rule.term)


def why_holds(rule: CompiledRule, module: CompiledModule, env: dict[str, Any], *args: Any) -> str:
    """A rule that answered true (an `overused` queue), written with the values that made it true."""
    local = dict(env)
    for name, value in zip(rule.params, args):
        local[name] = value
    try:
        return _fact(rule.term, Evaluator(module, env), local, True)
    except Exception:  # noqa: BLE001  # reason: an explanation must never break explain; fall back to the text
        return term_text(rule.term)


def _why(t: ir.Term, ev: Evaluator, env: dict[str, Any], depth: int) -> list[str]:  # noqa: C901  # reason: one case per form
    if depth > _MAX_DEPTH:
        return [term_text(t)]
    if isinstance(t, ir.Bind):
        inner = dict(env)
        inner[t.name] = ev.value(t.value, env)
        return _why(t.body, ev, inner, depth)
    if isinstance(t, ir.Op) and t.op == "and":
        out: list[str] = []
        for a in t.args:
            if not _truthy(ev.value(a, env)):
                out += _why(a, ev, env, depth + 1)
        return out
    if isinstance(t, ir.Op) and t.op == "or":
        out = []
        for a in t.args:
            out += _why(a, ev, env, depth + 1)
        return out
    if isinstance(t, ir.Op) and t.op == "not":
        return [f"{term_text(t.args[0])} holds" + _holds_detail(t.args[0], ev, env)]
    if isinstance(t, ir.Cond):
        test = _truthy(ev.value(t.test, env))
        branch = t.then if test else t.orelse
        if isinstance(branch, ir.Const):
            return [_fact(t.test, ev, env, test)]
        return _why(branch, ev, env, depth + 1)
    if isinstance(t, ir.Agg) and t.func == "all":
        for item in ev.value(t.source, env):
            inner = dict(env)
            inner[t.var] = item
            if t.where is not None and not _truthy(ev.value(t.where, inner)):
                continue
            if t.body is not None and not _truthy(ev.value(t.body, inner)):
                return [f"for {t.var.split('#')[0]} = {value_text(item)}: " + "; ".join(_why(t.body, ev, inner, depth + 1))]
        return [term_text(t)]
    return [_fact(t, ev, env, False)]


def _truthy(v: Any) -> bool:
    return bool(v > 0) if isinstance(v, int) and not isinstance(v, bool) else bool(v)


def _fact(t: ir.Term, ev: Evaluator, env: dict[str, Any], holds: bool) -> str:
    """An atom written with its values: the comparison as it stands (`holds`) or as it failed."""
    if isinstance(t, ir.Op) and t.op in _BINARY_WORDS and len(t.args) == 2:
        left, right = (ev.value(a, env) for a in t.args)
        op = t.op if holds else _NEGATED[t.op]
        dims = _compared_dims(left, right)
        return f"{term_text(t.args[0])} = {value_text(left, dims)} {op} {term_text(t.args[1])} = {value_text(right, dims)}"
    if isinstance(t, ir.Apply) and t.func in ("le", "le_on") and len(t.args) >= 2:
        left, right = (ev.value(a, env) for a in t.args[:2])
        dims = list(ev.value(t.args[2], env)) if t.func == "le_on" else _compared_dims(left, right)
        if isinstance(left, Resources) and isinstance(right, Resources):
            over = [d for d in dims or () if left.get(d, 0) > right.get(d, 0)] if not holds else dims
            shown = over or dims
            word = "<=" if holds else ">"
            return (f"{term_text(t.args[0])} = {resources(left, shown)} {word} "
                    f"{term_text(t.args[1])} = {resources(right, shown)}")
    if isinstance(t, ir.Op) and t.op == "not":
        return f"{term_text(t.args[0])} holds" if not holds else f"not {term_text(t.args[0])}"
    value = ev.value(t, env)
    if isinstance(value, bool) or value is None:
        return f"{term_text(t)} is {'true' if holds else 'false'}"
    return f"{term_text(t)} = {value_text(value)}"


def _holds_detail(t: ir.Term, ev: Evaluator, env: dict[str, Any]) -> str:
    if isinstance(t, (ir.Apply, ir.Op)) and not (isinstance(t, ir.Op) and t.op in ("and", "or", "not")):
        fact = _fact(t, ev, env, True)
        return "" if fact.startswith(term_text(t)) and "=" not in fact else f" ({fact})"
    return ""


def _compared_dims(left: Any, right: Any) -> list[str] | None:
    if isinstance(left, Resources) and isinstance(right, Resources):
        names = sorted((set(left) | set(right)) - {PODS})
        return names or None
    return None

"""Exact evaluation, faster: IR terms compiled to Python source, one function per rule.

`compile.evaluate` builds a tree of closures; every node of a rule costs a Python call and every `let`
a dictionary copy. Session hot paths (queue/job ordering, allocatable, readiness, per-node scores of the
few nodes that changed) evaluate rules hundreds of thousands of times, so here each rule and helper
function becomes one generated Python function: locals instead of an environment dictionary, `let` as
an assignment expression, aggregates as comprehensions, short-circuit `and`/`or`/`if` as Python's own.
Semantics are those of `compile.evaluate` (same helpers for resource arithmetic and attributes); a term
the generator does not handle falls back to the closure, so this is purely a speed-up.

Before a body is written, `compile.rewrite` inlines small helpers and drops identities, and a value the
body computes twice on one path is kept in a local (`compile.share`; e.g. free_score's four
`get(node.allocatable, r)`). The walk below is in the order the emitted Python evaluates, which is what
lets `share.Known` say which locals are assigned: a Cond's test first, then one branch; `a or b` reads b
only when a is false. Tests (a Cond's, an operand of `and`, `or`, `not`, a select's `when`, an
aggregate's filter) skip the `bool(...)` a value needs, and a division by a literal, or by a term the
path has shown nonzero, skips the zero guard.

Each lambda of a select, and each aggregate's comprehension (its filter, then its body, per item), is a
scope of its own with its own locals (drf's victim rule computes `share(left - c.resreq, ...)` once per
candidate, not twice). A lambda's `:=` binds in the lambda; a comprehension's binds in the function or
lambda around it, which is why every scope's locals carry a prefix of their own (`c_` for the function,
`c1_`, `c2_`, ... for the scopes inside). Python forbids `:=` anywhere inside a comprehension's iterable,
so an aggregate's source, and whatever is nested in it, shares nothing, and a `let` there binds its
name as a lambda's parameter.
"""
from __future__ import annotations

import enum
import itertools
import math
import re
from contextlib import contextmanager
from functools import reduce
from typing import Any, Callable, Iterable, Iterator

from vpolicy.compile import evaluate, ir, rewrite, share
from vpolicy.compile.functions import FUNCTIONS as BUILTIN_IMPLS
from vpolicy.lang.builtins import FUNCTIONS, OBJECT_TYPES
from vpolicy.model.resources import Resources

_PLAIN_ATTRS = frozenset(a for attrs in OBJECT_TYPES.values() for a in attrs) - {"status"}
# What the checker guarantees is a plain int or float at run time: such operands get Python's own
# operators instead of the helpers that also handle resource vectors (same answers, no call).
_NUMBER_TYPES = ("int", "number")
_NUMERIC_ATTRS = frozenset(a for attrs in OBJECT_TYPES.values() for a, spec in attrs.items()
                           if spec.type in _NUMBER_TYPES)
_NUMERIC_FUNCS = frozenset(name for name, f in FUNCTIONS.items() if f.result in _NUMBER_TYPES)
_ARITHMETIC = {"+": "+", "-": "-", "*": "*", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # the grammar's NAME: what a rule's author can write


class Unsupported(Exception):
    """The generator cannot express this term; the caller keeps the closure."""


def _status(task: Any) -> Any:
    value = task.status
    return value.value if isinstance(value, enum.Enum) else value


def _select(source: Any, key: Any, start: Any, when: Any, then: Any, after: bool) -> list[Any]:
    if key is not None and then is not None and after:
        return _select_after(source, key, start, when, then)
    chosen: list[Any] = []
    groups: dict[Any, Any] = {}
    for x in source:
        if key is None:
            if when(x, None):
                chosen.append(x)
            continue
        k = key(x)
        if k not in groups:
            groups[k] = start(x)
        state = groups[k]
        if when(x, state):
            chosen.append(x)
            if then is not None and not after:
                groups[k] = then(x, state)
        if then is not None and after:
            groups[k] = then(x, state)
    return chosen


def _select_after(source: Any, key: Any, start: Any, when: Any, then: Any) -> list[Any]:
    """`select ... group ... after`: each element's `after` term updates its group's state for the next
    element of that group, whether chosen or not. It is applied only when that next element comes:
    after the last element of a group nothing reads the state, and victim rules (drf's `left -
    c.resreq`) would build a resource vector per candidate for nothing. `then` is a pure term."""
    chosen: list[Any] = []
    # group -> (its state, its previous element, whose `after` is not applied yet)
    groups: dict[Any, tuple[Any, Any]] = {}
    for x in source:
        k = key(x)
        held = groups.get(k)
        state = start(x) if held is None else then(held[1], held[0])
        if when(x, state):
            chosen.append(x)
        groups[k] = (state, x)
    return chosen


def _fold(func: str, values: Any) -> Any:
    acc: Any = None
    for v in values:
        if acc is None:
            acc = v
        elif func == "sum":
            acc = evaluate._add(acc, v)
        elif func == "max":
            acc = v if v > acc else acc
        else:
            acc = v if v < acc else acc
    return 0 if acc is None else acc


class Generator:
    """Collects generated functions of one module and compiles them together."""

    def __init__(self, functions: dict[str, Callable[..., Any]]):
        self.ns: dict[str, Any] = {
            "_ga": evaluate.get_attr, "_st": _status, "_sel": _select, "_fold": _fold,
            "_add": evaluate._add, "_sub": evaluate._sub, "_mul": evaluate._mul, "_div": evaluate._div,
            "_le": evaluate._le, "_lt": evaluate._lt, "_R": Resources, "_show": evaluate._show,
            "_index": _index, "_share_minus": _share_minus, "_le_on_sum": _le_on_sum,
            "_dims_without": _dims_without,
        }
        for name, fn in functions.items():
            if callable(fn):
                self.ns[f"f_{name}"] = fn
        self.sources: list[str] = []
        self._functions = functions
        self._consts: dict[int, str] = {}
        self._n = 0
        self._helpers: dict[str, tuple[tuple[str, ...], ir.Term]] = {}
        self._function_terms: dict[str, ir.Term] = {}
        self._numeric_memo: dict[str, bool] = {}
        # `let` names bound to a numeric value (the compiler makes each binding's name unique)
        self._numeric_binds: set[str] = set()
        self._numeric_session: set[tuple[str, str]] = set()  # session constants known to be numbers
        self._rewriter = rewrite.Rewriter(self._helpers, functions, scalar=True)
        self._sharing = share.Sharing.none()  # of the function being written
        self._known = share.Known()  # at the point being written
        self._scope_ids = itertools.count(1)  # prefixes of the locals of nested scopes, unique in the module
        self._may_assign = True  # False inside a comprehension's iterable, where `:=` is a syntax error

    def declare(self, functions: dict[str, tuple[tuple[str, ...], ir.Term]],
                numeric_params: Iterable[str] = ()) -> None:
        """The module's helper functions, so a call's result type is known before its body is emitted
        (and small ones can be inlined); `numeric_params`: their parameters declared `int` or `number`."""
        self._numeric_binds.update(numeric_params)
        self._helpers.update(functions)
        self._function_terms.update({name: term for name, (_params, term) in functions.items()})
        self._rewriter = rewrite.Rewriter(self._helpers, self._functions, scalar=True)

    def declare_session(self, module: str, lets: Iterable[tuple[str, ir.Term]]) -> None:
        """The module's session constants in order: those whose term is a plain number (`numeric`, which
        may read an earlier one) are numbers in generated code too."""
        for name, term in lets:
            if self.numeric(term):
                self._numeric_session.add((module, name))

    # public ---------------------------------------------------------------------------------------
    def add_function(self, name: str, params: tuple[str, ...], term: ir.Term) -> None:
        args = ", ".join(_ident(p) for p in params)
        body = self._body(term)
        self.sources.append(f"def u_{_mangle(name)}(env{', ' if args else ''}{args}):\n"
                            f"{_globals(body)}    return {body}\n")

    def add_entry(self, name: str, params: tuple[str, ...], term: ir.Term) -> None:
        loads = "".join(f"    {_ident(p)} = env[{p!r}]\n" for p in params)
        body = self._body(term)
        self.sources.append(f"def e_{name}(env):\n{_globals(body)}{loads}    return {body}\n")

    def build(self) -> dict[str, Any]:
        code = "\n".join(self.sources)
        exec(compile(code, "<vpolicy-generated>", "exec"), self.ns)  # noqa: S102  # reason: our own generated code
        return self.ns

    # expressions ------------------------------------------------------------------------------------
    def _body(self, term: ir.Term) -> str:
        """The expression a function returns, with its repeated values kept in locals."""
        term = self._rewriter.prepare(term)
        self._sharing, self._known = share.Sharing(term, self._helpers), share.Known()
        try:
            return self.expr(term)
        finally:
            self._sharing, self._known = share.Sharing.none(), share.Known()

    def const(self, value: Any) -> str:
        if isinstance(value, (bool, int, str)) or value is None or (isinstance(value, float) and math.isfinite(value)):
            return repr(value)
        key = id(value)
        if key not in self._consts:
            name = f"_k{len(self._consts)}"
            self.ns[name] = value
            self._consts[key] = name
        return self._consts[key]

    def expr(self, t: ir.Term) -> str:
        """Python source for `t`; a value worth a local is assigned where first computed, then read."""
        local = self._sharing.local(t)
        if local is None:
            return self._expr(t)
        if local in self._known.assigned:
            return local
        code = self._expr(t)
        self._known = self._known.assigning(local)
        return f"({local} := {code})"

    def _expr(self, t: ir.Term) -> str:  # noqa: C901  # reason: one case per term kind
        if isinstance(t, ir.Const):
            return self.const(t.value)
        if isinstance(t, ir.Var):
            if t.name in ("$now", "$tz", "$candidates"):
                return f"env[{t.name!r}]"  # the session clock and its time zone
            return "cluster" if t.name == "cluster" else _ident(t.name)
        if isinstance(t, ir.SessionRef):
            return f"S[{(t.module, t.name)!r}]"
        if isinstance(t, ir.GetAttr):
            obj = self.expr(t.obj)
            if t.name == "status":
                return f"_st({obj})"
            if t.name in _PLAIN_ATTRS:
                return f"({obj}).{t.name}" if t.name.isidentifier() else f"_ga({obj}, {t.name!r})"
            return f"_ga({obj}, {t.name!r})"
        if isinstance(t, ir.GetIndex):
            return f"_index({self.expr(t.obj)}, {self.expr(t.key)})"
        if isinstance(t, ir.Apply):
            if f"f_{t.func}" not in self.ns:
                raise Unsupported(t.func)
            if (t.func == "share" and self.ns["f_share"] is BUILTIN_IMPLS["share"] and isinstance(t.args[0], ir.Op)
                    and t.args[0].op == "-" and self._sharing.local(t.args[0]) is None):
                # the share of a difference, the difference never built (`_share_minus`)
                left, right = (self.expr(x) for x in t.args[0].args)
                return f"_share_minus({left}, {right}, {self.expr(t.args[1])})"
            if (t.func == "le_on" and self.ns["f_le_on"] is BUILTIN_IMPLS["le_on"] and isinstance(t.args[0], ir.Op)
                    and t.args[0].op == "+" and self._sharing.local(t.args[0]) is None):
                # a sum compared on some dimensions, the sum never built (`_le_on_sum`)
                left, right = (self.expr(x) for x in t.args[0].args)
                return f"_le_on_sum({left}, {right}, {self.expr(t.args[1])}, {self.expr(t.args[2])})"
            if (t.func == "dims" and self.ns["f_dims"] is BUILTIN_IMPLS["dims"] and isinstance(t.args[0], ir.Apply)
                    and t.args[0].func == "without" and self.ns["f_without"] is BUILTIN_IMPLS["without"]
                    and self._sharing.local(t.args[0]) is None):
                return f"_dims_without({', '.join(self.expr(x) for x in t.args[0].args)})"
            args = [self.expr(a) for a in t.args]
            # the two commonest built-ins inline, when they are the standard ones
            if t.func == "get" and self.ns["f_get"] is BUILTIN_IMPLS["get"]:
                return f"({args[0]}).get({args[1]}, 0)"
            if t.func == "floor" and self.ns["f_floor"] is BUILTIN_IMPLS["floor"]:
                return f"int(({args[0]}) // 1)"
            return f"f_{t.func}({', '.join(args)})"
        if isinstance(t, ir.CallUser):
            arg_text = "".join(", " + self.expr(a) for a in t.args)
            return f"u_{_mangle(t.func)}(env{arg_text})"
        if isinstance(t, ir.Op):
            return self._op(t)
        if isinstance(t, ir.Cond):
            test, on_true, on_false = self._test(t.test)
            self._known = on_true
            then = self.expr(t.then)
            after_then, self._known = self._known, on_false
            orelse = self.expr(t.orelse)
            self._known = after_then.meet(self._known)
            return f"({then} if {test} else {orelse})"
        if isinstance(t, ir.Bind):
            if self.numeric(t.value):
                self._numeric_binds.add(t.name)
            if not self._may_assign:  # in a comprehension's iterable `:=` is a syntax error: a lambda binds
                return f"(lambda {_ident(t.name)}: {self.expr(t.body)})({self.expr(t.value)})"
            return f"(({_ident(t.name)} := {self.expr(t.value)}), {self.expr(t.body)})[1]"
        if isinstance(t, ir.Agg):
            return self._agg(t)
        if isinstance(t, ir.Select):
            return self._select(t)
        if isinstance(t, ir.Text):
            parts = [repr(p) if isinstance(p, str) else f"_show({self.expr(p)})" for p in t.parts]
            return "''.join([" + ", ".join(parts) + "])"
        if isinstance(t, ir.ResourceVec):
            return "_R({" + ", ".join(f"{k!r}: {self.expr(v)}" for k, v in t.entries) + "})"
        if isinstance(t, ir.ListOf):
            return "[" + ", ".join(self.expr(x) for x in t.items) + "]"
        raise Unsupported(type(t).__name__)

    def _op(self, t: ir.Op) -> str:
        if t.op in ("and", "or"):
            code, on_true, on_false = self._and_or(t)
            self._known = on_true.meet(on_false)
            return f"bool{code}"
        if t.op == "not":
            return f"(not {self._test(t.args[0])[0]})"
        if t.op in (">=", ">") and not all(self.numeric(x) for x in t.args):
            right = self.expr(t.args[1])  # first: `_le(right, left)` evaluates it first
            left = self.expr(t.args[0])
            return f"{'_le' if t.op == '>=' else '_lt'}({right}, {left})"
        a = [self.expr(x) for x in t.args]
        if t.op == "neg":
            return f"(-{a[0]})"
        numeric = all(self.numeric(x) for x in t.args)
        if t.op in _ARITHMETIC and numeric:
            return f"({a[0]} {_ARITHMETIC[t.op]} {a[1]})"
        if t.op == "/" and numeric and self._nonzero(t.args[1]):
            return f"({a[0]} / {a[1]})"  # `_div` less its zero test
        helper = {"+": "_add", "-": "_sub", "*": "_mul", "/": "_div", "<=": "_le", "<": "_lt"}.get(t.op)
        if helper:
            return f"{helper}({a[0]}, {a[1]})"
        return f"({a[0]} {t.op} {a[1]})"

    def _test(self, t: ir.Term) -> tuple[str, share.Known, share.Known]:
        """Source whose truth is `t`'s (not always a bool), and what is known when it is true and when it
        is false. Leaves `self._known` at what is known either way."""
        if isinstance(t, ir.Op) and t.op in ("and", "or", "not") and self._sharing.local(t) is None:
            if t.op == "not":
                code, on_true, on_false = self._test(t.args[0])
                return f"(not {code})", on_false, on_true
            code, on_true, on_false = self._and_or(t)
            self._known = on_true.meet(on_false)
            return code, on_true, on_false
        code = self.expr(t)
        when_true, when_false = share.nonzero_when(t, self._sharing.key)
        on_true = self._known if when_true is None else self._known.with_nonzero(when_true)
        on_false = self._known if when_false is None else self._known.with_nonzero(when_false)
        return code, on_true, on_false

    def _and_or(self, t: ir.Op) -> tuple[str, share.Known, share.Known]:
        """`(a) and (b) ...` with what is known when it is true and when false: operand i runs only when
        the ones before it did not decide; the whole is decided by its last operand or at some stop."""
        codes, stops = [], []
        for arg in t.args:
            code, on_true, on_false = self._test(arg)
            codes.append(f"({code})")
            stop, go = (on_false, on_true) if t.op == "and" else (on_true, on_false)
            stops.append(stop)
            self._known = go
        stopped = reduce(share.Known.meet, stops)
        on_true, on_false = (self._known, stopped) if t.op == "and" else (stopped, self._known)
        return "(" + f" {t.op} ".join(codes) + ")", on_true, on_false

    def _nonzero(self, t: ir.Term) -> bool:
        if isinstance(t, ir.Const):
            return type(t.value) in (int, float) and t.value != 0
        return self._sharing.key(t) in self._known.nonzero

    @contextmanager
    def _scope(self, *bodies: ir.Term | None) -> Iterator[None]:
        """Code of one lambda or one comprehension pass, evaluating `bodies` in order: it shares what it
        repeats in locals of its own (prefix `c<n>_`), and nothing with the code around it."""
        saved = self._sharing, self._known
        terms = [b for b in bodies if b is not None]
        self._sharing = (share.Sharing(terms, self._helpers, prefix=f"c{next(self._scope_ids)}_")
                         if self._may_assign and terms else share.Sharing.none())
        self._known = share.Known()
        try:
            yield
        finally:
            self._sharing, self._known = saved

    @contextmanager
    def _iterable(self) -> Iterator[None]:
        """A comprehension's iterable: evaluated in the scope around the comprehension, where Python
        forbids `:=` (even inside a lambda or comprehension nested in it), so nothing is shared."""
        saved = self._sharing, self._known, self._may_assign
        self._sharing, self._known, self._may_assign = share.Sharing.none(), share.Known(), False
        try:
            yield
        finally:
            self._sharing, self._known, self._may_assign = saved

    def _select(self, t: ir.Select) -> str:
        var, state = _ident(t.var), _ident(t.state) if t.state else "_state"
        with self._scope():  # the source, once where the select stands: as before, shares nothing there
            source = self.expr(t.source)
        lambdas = []
        for params, body, is_test in ((var, t.group_key, False), (var, t.group_start, False),
                                      (f"{var}, {state}", t.when, True), (f"{var}, {state}", t.then, False)):
            if body is None:
                lambdas.append("None")
                continue
            with self._scope(body):
                code = self._test(body)[0] if is_test else self.expr(body)  # `_sel` reads `when` as a test
            lambdas.append(f"(lambda {params}: {code})")
        return f"_sel({source}, {', '.join(lambdas)}, {t.after!r})"

    def numeric(self, t: ir.Term) -> bool:
        """True when the term is a plain int or float whatever the session (never a resource vector)."""
        if isinstance(t, ir.Const):
            return isinstance(t.value, (int, float))
        if isinstance(t, ir.Var):
            return t.name in self._numeric_binds
        if isinstance(t, ir.SessionRef):
            return (t.module, t.name) in self._numeric_session
        if isinstance(t, ir.Apply):
            return t.func in _NUMERIC_FUNCS
        if isinstance(t, ir.GetAttr):
            return t.name in _NUMERIC_ATTRS and t.name != "status"
        if isinstance(t, ir.Op):
            return t.op in ("+", "-", "*", "/", "neg") and all(self.numeric(a) for a in t.args)
        if isinstance(t, ir.Cond):
            return self.numeric(t.then) and self.numeric(t.orelse)
        if isinstance(t, ir.Agg):
            return t.func == "count"
        if isinstance(t, ir.CallUser):
            known = self._numeric_memo.get(t.func)
            if known is None:
                self._numeric_memo[t.func] = False  # a recursive call is not assumed numeric
                term = self._function_terms.get(t.func)
                known = self._numeric_memo[t.func] = term is not None and self.numeric(term)
            return known
        return False

    def _agg(self, t: ir.Agg) -> str:
        """A comprehension: per item, the filter, then (where it holds) the body, in one scope."""
        var = _ident(t.var)
        with self._iterable():
            src = self.expr(t.source)
        with self._scope(t.where, t.body):
            where = None
            if t.where is not None:
                where, self._known, _on_false = self._test(t.where)
            body = None
            if t.body is not None:  # count, all and any read their body as a test
                body = self._test(t.body)[0] if t.func in ("count", "all", "any") else self.expr(t.body)
        cond = f" if {where}" if where is not None else ""
        loop = f"for {var} in {src}{cond}"
        if t.func == "count":
            if body is None:
                return f"sum(1 {loop})"
            test = f"({where}) and ({body})" if where is not None else body
            return f"sum(1 for {var} in {src} if {test})"
        if t.func == "all":
            return f"all({body or 'True'} {loop})"
        if t.func == "any":
            return f"any({body or 'True'} {loop})"
        if t.func == "list":
            return f"[{body or var} {loop}]"
        if t.func == "map":
            return f"{{{var}: {body or 'True'} {loop}}}"
        return f"_fold({t.func!r}, ({body or var} {loop}))"


def _globals(body: str) -> str:
    """Load the cluster and the session constants only in functions that use them."""
    lines = ""
    if "cluster" in body:
        lines += "    cluster = env.get('cluster')\n"
    if "S[" in body:
        lines += "    S = env.get('$session')\n"
    return lines


def _le_on_sum(a: Any, b: Any, limit: Any, names: Any) -> bool:
    """`le_on(a + b, limit, names)` without building `a + b`: the queue's allocatable check
    (proportion: allocated + request within deserved on the request's dimensions) is asked for every
    task placed, 50,000 times in an L session. Anything but two resource vectors is summed first, so
    that its answer, or its failure, is le_on's own."""
    if type(a) is not Resources or type(b) is not Resources:
        answer: bool = BUILTIN_IMPLS["le_on"](evaluate._add(a, b), limit, names)
        return answer
    a_get, b_get, limit_get = a.get, b.get, limit.get
    for k in names:
        if a_get(k, 0) + b_get(k, 0) > limit_get(k, 0):
            return False
    return True


def _dims_without(r: Any, name: Any) -> list[str]:
    """`dims(without(r, name))` without building `without(r, name)`: the dimensions r asks for
    (positive), `name` left out, sorted, as `dims` gives them."""
    if type(r) is not Resources:
        dims: list[str] = BUILTIN_IMPLS["dims"](BUILTIN_IMPLS["without"](r, name))
        return dims
    return sorted(k for k, v in r.items() if v > 0 and k != name)


def _share_minus(a: Any, b: Any, total: Any) -> float:
    """`share(a - b, total)` without building `a - b`: victim rules ask it for every candidate of every
    node tried (drf: the victim's job's share once the victim is gone). The answer of
    `Resources.max_ratio` on the difference: the largest (a - b) / total over total's dimensions, 0/0
    as 0 and x/0 as 1; a plain 0 (an empty sum) is the empty vector, as in resource arithmetic."""
    if type(a) is not Resources and type(b) is not Resources:
        # numbers: whatever share makes of them
        share_of_numbers: float = BUILTIN_IMPLS["share"](evaluate._sub(a, b), total)
        return share_of_numbers
    a_get, b_get = evaluate._res(a).get, evaluate._res(b).get
    best = 0.0
    for k, den in total.items():
        num = a_get(k, 0) - b_get(k, 0)
        if den:
            share = num / den
            if share > best:
                best = share
        elif num and best < 1.0:
            best = 1.0
    return best


def _index(container: Any, key: Any) -> Any:
    if type(container) is dict:
        return container.get(key)
    if isinstance(container, Resources):
        return container.get(key, 0)
    return container[key]


def _mangle(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _ident(name: str) -> str:
    """The Python local for a DSL variable, one-to-one: a name the user wrote (a DSL NAME is already a
    Python identifier) is `v_` + itself; a name the compiler made (`x#12` for a `let x`, `x#12#i3` in an
    inlined copy) is `w_` + itself with every character but a letter or digit written as `_<hex>_`.
    Mapping `#` to `_` alone made `let x` (`x#5`) and a parameter `x_5` one local."""
    if _USER_NAME.fullmatch(name):
        return "v_" + name
    return "w_" + "".join(c if c.isascii() and c.isalnum() else f"_{ord(c):x}_" for c in name)

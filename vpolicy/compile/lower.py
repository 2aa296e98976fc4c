"""Lowering: a checked rule module plus its settings -> compiled rules (IR terms and closures).

Stage by stage (each named and timed by `stages`): resolve parameters from the conf's `arguments` or a
policy's `use {...}` settings (typed, defaults from the module), fold them in as constants, inline helper
`let` functions, turn parameterless module `let`s into session constants, and compile every rule body to
an IR term labelled with the rule (`ir.Label`) and to a closure for exact evaluation.

It does not read files (the harness hands it parsed modules) and knows nothing of sessions: the engine's
runtime calls the closures with session objects bound to the rule's parameter names.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping

from vpolicy.compile import evaluate, extender, ir, numa, pycode, relations, topology, vcode, vectorize
from vpolicy.compile.functions import FUNCTIONS
from vpolicy.errors import Diagnostic, PolicyError
from vpolicy.lang import ast
from vpolicy.source import Span
from vpolicy.model.quantity import parse_quantity
from vpolicy.model.conf import METRICS_KEY


GLOBAL_NAMES = ("cluster",)
_fresh = itertools.count()


@dataclass(frozen=True, slots=True)
class CompiledRule:
    plugin: str
    name: str
    callback: str
    params: tuple[str, ...]
    term: ir.Term
    fn: evaluate.Closure
    label: ir.Label
    reason: evaluate.Closure | None = None
    message: evaluate.Closure | None = None
    unresolvable: bool = False
    normalize_weight: evaluate.Closure | None = None
    normalize_reverse: bool = False
    normalize_mode: str = ""  # "" (plain or reverse), "minmax" or "spread" (lang.ast.NORMALIZE_MODES)
    # `every S`: the period, in seconds of the session clock, that the rule runs at most once in
    # (a session constant; `engine.runtime.Runtime` keeps the times it ran across sessions)
    every: evaluate.Closure | None = None
    every_from_start: bool = False  # `every S from start`: the first period runs from the scheduler's start
    # Node rules (predicate, node_order) batched over nodes, or None when only the scalar form exists.
    vector: vectorize.VClosure | None = None
    # What the rule's answer depends on: "static" = the task's spec and the node's fixed fields (cache
    # per task class), "node" = also node usage (recompute for nodes that changed), "pods" = also the
    # pods placed per topology domain (recompute when a count the task reads changed), "any" = anything.
    depends: str = "any"
    reads: frozenset[str] = frozenset()  # attribute names the rule reads (its cache key is built from them)
    # A node rule that reads of its node only the node's HyperNodes (`compile.topology.by_domain`): it
    # answers every node of one lowest domain alike, so the engine asks it once per domain.
    by_domain: bool = False
    # A node rule whose term names neither its task parameter nor `cluster` (`task_blind`): it answers
    # every task alike on a node, so the engine keeps one answer per node for all of them.
    task_blind: bool = False
    # An order rule that sorts by expressions of a single operand, one after the other (`order_keys_of`):
    # a queue of jobs or queues can then order by keys computed once per push. Empty for any other rule.
    order_keys: tuple["OrderKey", ...] = ()

    def call(self, env: dict[str, Any], *args: Any) -> Any:
        for name, value in zip(self.params, args):
            env[name] = value
        return self.fn(env)


@dataclass(slots=True)
class CompiledModule:
    name: str
    file: str
    rules: dict[str, list[CompiledRule]] = field(default_factory=dict)  # callback -> rules, in file order
    session_lets: list[tuple[str, ir.Term, evaluate.Closure]] = field(default_factory=list)
    let_spans: dict[str, Span] = field(default_factory=dict)  # session constant -> its `let`, for failures
    functions: dict[str, tuple[tuple[str, ...], ir.Term]] = field(default_factory=dict)
    helpers: dict[str, evaluate.Closure] = field(default_factory=dict)  # `functions` as closures
    properties: list[tuple[str, ir.Term, evaluate.Closure, ir.Label]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    # the helpers' parameters declared `int` or `number` (as `functions` names them): the checker lets
    # only numbers in, so generated code (`compile.pycode`) uses Python's operators on them
    numeric_params: set[str] = field(default_factory=set)


def compile_module(module: ast.Module, settings: Mapping[str, Any] | None = None) -> CompiledModule:
    """Compile a `plugin` module with the given argument settings (conf `arguments` or `use {...}`)."""
    return _Lowerer(module, dict(settings or {})).run()


class _Lowerer:
    def __init__(self, module: ast.Module, settings: dict[str, Any]):
        self.module = module
        self.settings = settings
        self.diags: list[Diagnostic] = []
        self.params: dict[str, ir.Term] = {}
        self.functions: dict[str, ast.LetDecl] = {}
        self.session: set[str] = set()
        self.arguments = settings  # raw arguments, for the `argument(key, default)` built-in
        self.fns = dict(FUNCTIONS)
        self.fns["argument"] = self._argument
        self.fns["argument_at"] = self._argument_at
        self.fns["argument_text_at"] = self._argument_text_at
        self.fns["argument_keys"] = self._argument_keys
        self.fns["metrics_setting"] = self._metrics_setting
        self.fns["extender"] = self._extender
        self._extender_client: extender.ExtenderClient | None = None
        self.user_closures: dict[str, evaluate.Closure] = {}

    def _compile(self, term: ir.Term) -> evaluate.Closure:
        return evaluate.compile_term(term, self.fns, self.user_closures)

    def _argument(self, key: str, default: Any) -> Any:
        raw = self.arguments.get(key)
        if raw is None:
            return default
        try:
            return float(raw)
        except (TypeError, ValueError):
            return default

    def _nested(self, path: Any) -> Any:
        """The raw argument at `path` through nested mappings (`resources`, `nvidia.com/gpu`, `weight`)."""
        value: Any = self.arguments
        for key in path:
            if isinstance(value, list) and str(key).isdigit() and int(key) < len(value):
                value = value[int(key)]  # a list argument's items are `"0"`, `"1"`, ...
            elif isinstance(value, Mapping):
                value = value.get(key)
            else:
                return None
        return value

    def _argument_at(self, path: Any, default: Any) -> Any:
        raw = self._nested(path)
        if raw is None or isinstance(raw, (bool, Mapping, list)):
            return default
        try:
            return float(raw)
        except (TypeError, ValueError):
            return default

    def _argument_text_at(self, path: Any, default: Any) -> Any:
        raw = self._nested(path)
        return default if raw is None or isinstance(raw, (Mapping, list)) else str(raw)

    def _extender(self, verb: str, subject: Any, other: Any) -> extender.Reply:
        """The module's extender, made from its arguments when a rule first calls out."""
        if self._extender_client is None:
            self._extender_client = extender.ExtenderClient(extender.ExtenderConfig.from_arguments(self.arguments))
        return self._extender_client(verb, subject, other)

    def _metrics_setting(self, key: Any, default: Any) -> Any:
        """A setting of the conf's `metrics` section (conf.METRICS_KEY in the module's settings)."""
        section = self.arguments.get(METRICS_KEY)
        value = section.get(key) if isinstance(section, Mapping) else None
        return default if value is None or value == "" else str(value)

    def _argument_keys(self, path: Any) -> list[str]:
        raw = self._nested(path)
        if isinstance(raw, list):
            return [str(i) for i in range(len(raw))]
        return [str(k) for k in raw] if isinstance(raw, Mapping) else []

    def run(self) -> CompiledModule:
        out = CompiledModule(name=self.module.name, file=self.module.file)
        for decl in self.module.decls:
            if isinstance(decl, ast.LetDecl) and decl.params is not None:
                self.functions[decl.name] = decl
        for decl in self.module.decls:
            if isinstance(decl, ast.Param):
                value = self._param_value(decl)
                self.params[decl.name] = ir.Const(value)
                out.params[decl.name] = value
            elif isinstance(decl, ast.LetDecl):
                if decl.params is None:
                    term = self.lower(decl.value, {})
                    out.session_lets.append((decl.name, term, self._compile(term)))
                    out.let_spans[decl.name] = decl.span
                    self.session.add(decl.name)
            elif isinstance(decl, ast.Rule):
                rule = self._rule(decl)
                out.rules.setdefault(rule.callback, []).append(rule)
            elif isinstance(decl, ast.Property):
                term = self.lower(decl.body, {})
                label = ir.Label(f"{self.module.name}.{decl.name}", decl.span, decl.doc)
                out.properties.append((decl.name, term, self._compile(term), label))
        for name, fn in self.functions.items():
            scope = {b.name: f"{name}.{b.name}" for b in fn.params or ()}
            term = self.lower(fn.value, scope)
            out.functions[name] = (tuple(scope.values()), term)
            out.numeric_params.update(scope[b.name] for b in fn.params or ()
                                      if b.type is not None and b.type.name in ("int", "number"))
            self.user_closures[name] = self._compile(term)
        out.helpers = self.user_closures
        if self.diags:
            raise PolicyError(self.diags)
        for callback in ("predicate", "node_order"):
            out.rules[callback] = [self._with_vector(r, out.functions) for r in out.rules.get(callback, [])]
        _generate(out, self.fns)
        return out

    def _with_vector(self, rule: CompiledRule, functions: dict[str, tuple[tuple[str, ...], ir.Term]]) -> CompiledRule:
        from dataclasses import replace

        depends, reads = classify(rule.term, functions, task_param=rule.params[0])
        try:
            if _calls(rule.term, functions, "extender"):
                # its answers are a server's, one call per node as the scalar form makes them; extender()
                # has no batched form, so a batch would only raise Unvectorizable at the first node batch
                raise vectorize.Unvectorizable("extender")
            vector = vectorize.compile_node_rule(rule.term, rule.params[1], functions, self.fns)
        except vectorize.Unvectorizable:
            vector = None
        if vector is not None and not os.environ.get("VPOLICY_NO_CODEGEN"):
            try:  # the same answers written out as one function (see compile.vcode)
                vector = vcode.compile_node_rule(rule.term, (rule.params[0], rule.params[1]), functions, self.fns)
            except vcode.Unsupported:
                pass
        return replace(rule, vector=vector, depends=depends, reads=reads,
                       by_domain=topology.by_domain(rule.term, rule.params[1], functions),
                       task_blind=task_blind(rule.term, functions, rule.params[0]))

    # parameters ----------------------------------------------------------------------------------
    def _param_value(self, decl: ast.Param) -> Any:
        key = decl.conf_key if getattr(decl, "conf_key", None) else decl.name
        raw = self.settings.get(key, self.settings.get(decl.name))
        if raw is None:
            term = self.lower(decl.default, {})
            return term.value if isinstance(term, ir.Const) else self._compile(term)({})
        kind = decl.type.name
        try:
            if kind == "bool":
                if isinstance(raw, bool):
                    return raw
                text = str(raw).strip().lower()
                if text not in ("true", "false"):
                    raise ValueError(raw)
                return text == "true"
            if kind == "int":
                return int(str(raw).strip())
            if kind == "number":
                return float(str(raw).strip())
            if kind == "string":
                return str(raw)
        except ValueError:
            self.diags.append(Diagnostic(
                "compile.bad-argument", f"argument '{key}' of plugin '{self.module.name}' must be {kind}, got {raw!r}",
                decl.span, help=f"give '{key}' a {kind} value"))
            return None
        return raw

    # rules ---------------------------------------------------------------------------------------
    def _rule(self, decl: ast.Rule) -> CompiledRule:
        scope = {b.name: b.name for b in decl.params}
        term = self.lower(decl.body, scope)
        label = ir.Label(f"{self.module.name}.{decl.name}", decl.span, decl.doc)

        def text(node: ast.Interp | None) -> evaluate.Closure | None:
            return self._compile(self.lower(node, scope)) if node is not None else None
        weight = None
        if decl.normalize is not None:
            weight = self._compile(self.lower(decl.normalize.weight, scope))
        every = self._compile(self.lower(decl.every, {})) if decl.every is not None else None
        params = tuple(b.name for b in decl.params)
        keys = order_keys_of(term, params) if decl.callback.endswith("_order") else None
        return CompiledRule(
            plugin=self.module.name, name=decl.name, callback=decl.callback,
            params=params, term=term,
            fn=self._compile(term), label=label,
            reason=text(decl.reason), message=text(decl.message), unresolvable=decl.unresolvable,
            normalize_weight=weight, normalize_reverse=bool(decl.normalize and decl.normalize.reverse),
            normalize_mode=decl.normalize.mode if decl.normalize is not None else "",
            every=every, every_from_start=decl.every_from_start,
            order_keys=tuple(OrderKey(t, self._compile(t), descending) for t, descending in keys or ()))

    # expressions ---------------------------------------------------------------------------------
    def lower(self, e: Any, scope: dict[str, str]) -> ir.Term:  # noqa: C901  # reason: one case per node kind
        if isinstance(e, ast.Literal):
            if e.kind == "quantity":
                return ir.Const(_quantity_number(str(e.value)))
            return ir.Const(e.value)
        if isinstance(e, ast.VoteLit):
            return ir.Const({"permit": 1, "reject": -1, "abstain": 0}[e.value])
        if isinstance(e, ast.Name):
            return self._name(e, scope)
        if isinstance(e, ast.Attr):
            return ir.GetAttr(self.lower(e.obj, scope), e.name)
        if isinstance(e, ast.Index):
            return ir.GetIndex(self.lower(e.obj, scope), self.lower(e.key, scope))
        if isinstance(e, ast.Call):
            return self._call(e, scope)
        if isinstance(e, ast.Unary):
            return ir.op("not" if e.op == "not" else "neg", self.lower(e.operand, scope))
        if isinstance(e, ast.Binary):
            return ir.op(e.op, self.lower(e.left, scope), self.lower(e.right, scope))
        if isinstance(e, ast.If):
            return ir.cond(self.lower(e.cond, scope), self.lower(e.then, scope), self.lower(e.orelse, scope))
        if isinstance(e, ast.Let):
            fresh = f"{e.name}#{next(_fresh)}"
            value = self.lower(e.value, scope)
            return ir.Bind(fresh, value, self.lower(e.body, {**scope, e.name: fresh}))
        if isinstance(e, ast.Aggregate):
            fresh = f"{e.var}#{next(_fresh)}"
            inner = {**scope, e.var: fresh}
            return ir.Agg(e.func, fresh, self.lower(e.source, scope),
                          self.lower(e.where, inner) if e.where is not None else None,
                          self.lower(e.body, inner) if e.body is not None else None)
        if isinstance(e, ast.Select):
            var = f"{e.var}#{next(_fresh)}"
            inner = {**scope, e.var: var}
            state = f"{e.state}#{next(_fresh)}" if e.state else None
            with_state = {**inner, e.state: state} if e.state and state else inner
            return ir.Select(
                var, self.lower(e.source, scope),
                self.lower(e.group_key, inner) if e.group_key is not None else None,
                self.lower(e.group_start, inner) if e.group_start is not None else None,
                state, self.lower(e.when, with_state),
                self.lower(e.then, with_state) if e.then is not None else None,
                after=getattr(e, "after", False))
        if isinstance(e, ast.Interp):
            return ir.Text(tuple(p if isinstance(p, str) else self.lower(p, scope) for p in e.parts))
        if isinstance(e, ast.ResourceLit):
            return ir.ResourceVec(tuple((k, self._resource_entry(k, v, scope)) for k, v in e.entries))
        if isinstance(e, ast.ListLit):
            return ir.ListOf(tuple(self.lower(x, scope) for x in e.items))
        raise TypeError(f"cannot lower {e!r}")

    def _resource_entry(self, name: str, value: Any, scope: dict[str, str]) -> ir.Term:
        if isinstance(value, ast.Literal) and value.kind in ("int", "number", "quantity"):
            return ir.Const(parse_quantity(str(value.value), name))
        return self.lower(value, scope)

    def _name(self, e: ast.Name, scope: dict[str, str]) -> ir.Term:
        if e.id in scope:
            return ir.Var(scope[e.id])
        if e.id in self.params:
            return self.params[e.id]
        if e.id in self.session:
            return ir.SessionRef(self.module.name, e.id)
        if e.id in GLOBAL_NAMES:
            return ir.Var(e.id)
        if e.id in ("none",):
            return ir.Const(None)
        self.diags.append(Diagnostic("compile.unknown-name", f"unknown name '{e.id}'", e.span))
        return ir.Const(None)

    def _call(self, e: ast.Call, scope: dict[str, str]) -> ir.Term:
        args = [self.lower(a, scope) for a in e.args]
        fn = self.functions.get(e.func)
        if fn is not None and fn.params is not None:
            params = tuple(f"{fn.name}.{b.name}" for b in fn.params)
            return ir.CallUser(self.module.name, fn.name, params, tuple(args))
        if e.func == "now" and not args:
            return ir.Var("$now")  # the session clock (builtins.FUNCTIONS["now"])
        if e.func == "candidate_nodes" and not args:
            return ir.Var("$candidates")  # the nodes being scored together (Runtime's `$candidates`)
        if e.func == "time_of_day" and len(args) == 1:
            args.append(ir.Var("$tz"))  # read in the session's time zone (Runtime's `timezone`)
        if e.func not in self.fns:
            self.diags.append(Diagnostic("compile.unknown-function", f"unknown function '{e.func}'", e.span))
            return ir.Const(None)
        return ir.Apply(e.func, tuple(args))


def _generate(module: CompiledModule, fns: dict[str, Callable[..., Any]]) -> None:
    """Swap each rule's closure for generated Python (`compile.pycode`) when the whole module compiles."""
    import os
    from dataclasses import replace

    if os.environ.get("VPOLICY_NO_CODEGEN"):
        return
    gen = pycode.Generator(fns)
    gen.declare(module.functions, module.numeric_params)
    gen.declare_session(module.name, ((name, term) for name, term, _closure in module.session_lets))
    try:
        for name, (params, term) in module.functions.items():
            gen.add_function(name, params, term)
        entries = [(cb, i, r) for cb, rules in module.rules.items() for i, r in enumerate(rules)]
        for cb, i, rule in entries:
            gen.add_entry(f"{cb}_{i}", rule.params, rule.term)
            for k, key in enumerate(rule.order_keys):
                gen.add_entry(f"{cb}_{i}_key{k}", rule.params[:1], key.term)
        ns = gen.build()
    except (pycode.Unsupported, SyntaxError):
        return
    for cb, i, rule in entries:
        keys = tuple(replace(key, fn=ns[f"e_{cb}_{i}_key{k}"]) for k, key in enumerate(rule.order_keys))
        module.rules[cb][i] = replace(rule, fn=ns[f"e_{cb}_{i}"], order_keys=keys)


def is_comparison(term: ir.Term, params: tuple[str, ...]) -> bool:
    """`compare(E(a), E(b))` or `compare(E(b), E(a))` for one expression E: a consistent order."""
    if not (isinstance(term, ir.Apply) and term.func == "compare" and len(term.args) == 2 and len(params) == 2):
        return False
    return bool(ir.swap_vars(term.args[0], *params) == term.args[1])


@dataclass(frozen=True, slots=True)
class OrderKey:
    """One expression E an order rule sorts by, over params[0] alone; `descending` when the rule
    compares E(b) with E(a)."""

    term: ir.Term
    fn: evaluate.Closure
    descending: bool


def order_keys_of(term: ir.Term, params: tuple[str, ...]) -> tuple[tuple[ir.Term, bool], ...] | None:
    """The expressions an order rule sorts by, first to last, each with whether it is descending, when
    the rule is one of
    - `compare(E(a), E(b))` or `compare(E(b), E(a))`, for one expression E that reads a single operand;
    - `if E(a) != E(b) then <one of those over E> else <one of these forms>`: E first, ties by the rest.
    Comparing the keys of two items in order then answers as the rule does (first difference decides);
    None for any other form."""
    single = _order_operand(term, params)
    if single is not None:
        return (single,)
    if not (isinstance(term, ir.Cond) and isinstance(term.test, ir.Op) and term.test.op == "!="
            and len(term.test.args) == 2 and len(params) == 2):
        return None
    then = _order_operand(term.then, params)
    if then is None or not _same_pair(term.test.args, then[0], params):
        return None
    rest = order_keys_of(term.orelse, params)
    return None if rest is None else (then, *rest)


def _same_pair(args: tuple[ir.Term, ...], operand: ir.Term, params: tuple[str, ...]) -> bool:
    """`args` are E(a) and E(b), in either order, for the E of `operand` (written over params[0])."""
    other = ir.swap_vars(operand, *params)
    return set(args) == {operand, other} and operand != other


def _order_operand(term: ir.Term, params: tuple[str, ...]) -> tuple[ir.Term, bool] | None:
    """(E over params[0], descending) when an order rule is `compare(E(a), E(b))` or `compare(E(b), E(a))`
    for one expression E that reads a single operand; None for any other form."""
    if not is_comparison(term, params):
        return None
    a, b = params
    first, second = term.args  # type: ignore[union-attr]  # reason: is_comparison checked it is an Apply
    free = ir.free_vars(first) & {a, b}
    if free == {a}:
        return first, False
    if free == {b}:
        return second, True
    return None


# Attributes a node rule may read and still be cached per task class: the task's spec and the node's
# fixed fields. Anything else (node usage, job or queue state, task identity) changes within a session.
_STATIC_ATTRS = frozenset({"allocatable", "labels", "unschedulable", "max_pods", "resreq", "node_selector",
                           "best_effort", "priority_class_name", "namespace", "role", "total",
                           # a task's terms and their fields (placement.task_key holds the task's relations)
                           "pod_affinity", "pod_anti_affinity", "preferred_pod_affinity",
                           "preferred_pod_anti_affinity", "spread_constraints", "topology_key", "weight",
                           "max_skew", "min_domains", "when_unsatisfiable", "images", "relations",
                           # what numa-aware reads of a task (compile.numa: its QoS, policy, per-container CPUs)
                           "guaranteed", "topology_policy", "container_cpus", "container_gpus",
                           # its containers without a cpu / memory request (nodeorder's non-zero requests)
                           "containers_without_cpu_request", "containers_without_memory_request"})
# A node's measured load and capacity: fixed for the session.
_STATIC_ATTRS = _STATIC_ATTRS | {"capacity", "cpu_usage", "memory_usage", "metrics_time"}
# A pod's or node's annotations: fixed for the session too (what a session writes goes to its decisions,
# never back into the objects). A rule reading them is keyed by the annotations it reads
# (`annotation_reads`), so pods that differ only in others (each job's group name) share its answers.
_STATIC_ATTRS = _STATIC_ATTRS | {"annotations"}
ANY_ANNOTATION = "annotations[*]"  # in a rule's reads: it reads annotations other than by a literal key


def annotation_reads(key: str) -> str:
    """The entry in a rule's reads for `x.annotations["key"]` with a literal key (see placement.task_key)."""
    return f"annotations[{key}]"
# What a rule may read of the tasks on its node (`node.tasks`) and still be recomputed only for nodes
# whose tasks changed: a task's status, placement and fields change only as it is placed on or taken
# off a node, which changes that node's version (engine.state). Only for a rule that reads neither the
# task it is asked about nor `cluster` (then every task it reads is one of the node's).
_NODE_TASK_ATTRS = frozenset({"tasks", "status", "node_name", "started_at", "limits", "resreq", "best_effort"})
# `numa` (a node's free CPUs for pinning) changes only with placements on that node, as its usage does
_NODE_ATTRS = frozenset({"used", "idle", "releasing", "pipelined", "future_idle", "evicted", "pod_count", "numa",
                         "pods_without_cpu_request", "pods_without_memory_request"})


def classify(term: ir.Term, functions: dict[str, tuple[tuple[str, ...], ir.Term]],
             task_param: str | None = None) -> tuple[str, frozenset[str]]:
    """'static', 'node', 'pods' or 'any' (what a node rule's answer depends on, see CompiledRule.depends),
    and the attribute names it reads. 'pods': it also counts placed pods (`compile.relations`)."""
    attrs: set[str] = set()
    seen: set[str] = set()
    placements: list[str] = []
    names: set[str] = set()
    annotations: set[str] = set()  # which annotations it reads (`annotation_reads`, ANY_ANNOTATION)

    def walk(t: object) -> None:
        if isinstance(t, ir.GetIndex) and isinstance(t.obj, ir.GetAttr) and t.obj.name == "annotations" \
                and isinstance(t.key, ir.Const) and isinstance(t.key.value, str):
            annotations.add(annotation_reads(t.key.value))
            attrs.add("annotations")
            walk(t.obj.obj)
            return
        if isinstance(t, ir.GetAttr) and t.name == "annotations":
            annotations.add(ANY_ANNOTATION)
        if isinstance(t, ir.GetAttr):
            attrs.add(t.name)
        if isinstance(t, ir.Var):
            names.add(t.name)
        if isinstance(t, ir.Var) and t.name == "$candidates":
            attrs.add("$candidates")  # candidate_nodes(): the scored group, different per call
        if isinstance(t, ir.Apply) and t.func in relations.PLACEMENT_FUNCTIONS:
            placements.append(t.func)
        if isinstance(t, ir.Apply) and t.func in relations.FUNCTIONS:  # they read the task's relations
            attrs.add("images" if t.func == "image_bytes" else "relations")
        if isinstance(t, ir.Apply) and t.func in numa.FUNCTIONS:  # they read the task's QoS, policy and CPUs
            attrs.update(("guaranteed", "topology_policy", "container_cpus", "container_gpus"))
        if isinstance(t, ir.CallUser) and t.func not in seen and t.func in functions:
            seen.add(t.func)
            walk(functions[t.func][1])
        for value in getattr(t, "__dataclass_fields__", {}):
            child = getattr(t, value)
            if isinstance(child, tuple):
                for c in child:
                    if isinstance(c, tuple):
                        for cc in c:
                            walk(cc)
                    else:
                        walk(c)
            elif child is not None and not isinstance(child, (str, int, float, bool)):
                walk(child)
    walk(term)
    return _depends(attrs, placements, names, task_param), frozenset(attrs | annotations)


def _depends(attrs: set[str], placements: list[str], names: set[str], task_param: str | None) -> str:
    """`classify`'s first answer, from the attribute names the term reads."""
    if placements and attrs <= _STATIC_ATTRS | _NODE_ATTRS:
        return "pods"
    if placements:
        return "any"
    if attrs <= _STATIC_ATTRS:
        return "static"
    if attrs <= _STATIC_ATTRS | _NODE_ATTRS:
        return "node"
    if task_param is not None and not names & {task_param, "cluster"} \
            and attrs <= _STATIC_ATTRS | _NODE_ATTRS | _NODE_TASK_ATTRS:
        return "node"  # of its node's tasks only (usage's shadow estimate)
    return "any"


def task_blind(term: ir.Term, functions: dict[str, tuple[tuple[str, ...], ir.Term]], task_param: str) -> bool:
    """Whether a node rule cannot see the task it is asked about: neither its term nor a helper it calls
    names the task parameter or `cluster` (a helper's own parameter of that name counts too: cautious)."""
    return not _reaches(term, functions, lambda t: isinstance(t, ir.Var) and t.name in (task_param, "cluster"),
                        params_hit=lambda params: task_param in params)


def _calls(term: ir.Term, functions: dict[str, tuple[tuple[str, ...], ir.Term]], name: str) -> bool:
    """Whether `term`, or a helper it calls, calls the built-in `name`."""
    return _reaches(term, functions, lambda t: isinstance(t, ir.Apply) and t.func == name)


def _reaches(term: ir.Term, functions: dict[str, tuple[tuple[str, ...], ir.Term]], hit: Callable[[object], bool], *,
             params_hit: Callable[[tuple[str, ...]], bool] = lambda _params: False) -> bool:
    """Whether `hit` holds of a node of `term` or of the body of a helper it calls, each helper walked
    once; `params_hit` also counts a called helper by its parameter names."""
    seen: set[str] = set()

    def walk(t: object) -> bool:
        if hit(t):
            return True
        if isinstance(t, ir.CallUser) and t.func not in seen and t.func in functions:
            seen.add(t.func)
            params, body = functions[t.func]
            if params_hit(params) or walk(body):
                return True
        if isinstance(t, tuple):
            return any(walk(c) for c in t)
        if isinstance(t, (str, int, float, bool)) or t is None:
            return False
        return any(walk(getattr(t, f)) for f in getattr(t, "__dataclass_fields__", {}))
    return walk(term)


def _quantity_number(text: str) -> float | int:
    """A bare quantity (`4Gi`, `500m`) as a plain number in its natural unit."""
    milli = parse_quantity(text, "cpu")  # cpu scale: value * 1000, exact
    value = Fraction(milli, 1000)
    return int(value) if value.denominator == 1 else float(value)



"""Names, types and placement for a parsed module: `check_module(module) -> list[Diagnostic]`.

What it does: resolves every name (rule arguments, `let`/aggregate/select variables, module lets and
params, the globals) and attribute against the catalogue in `lang.builtins`, types every expression with
`lang.types`, and reports what is wrong as diagnostics sorted by span, each with a stable `check.*` code
and, where something close exists, a "did you mean" help. One mistake gives one diagnostic: an
expression that failed to check has type `any`, which fits everywhere.

What it does not do: raise on bad input (it returns diagnostics; `lang.load_module` raises), parse
(`lang.parse`), or know what rules mean at run time (`vpolicy.compile`).

Name resolution, shared with the compiler: locals, then module params and lets, then the globals
(`cluster`, and `none`, which compares with the optional attributes such as `queue.parent`). A call names
a module `let` with parameters if there is one (it shadows a built-in of the same name), else a built-in
function. Lets may use each other in any order. Helper functions may recurse (over the queue tree, say)
when their result type is written and some path through the body does not call them again (one that
calls itself on every path never returns); session constants may not depend on themselves. `compare`
takes two values with an order between them (numbers, or two strings, bools or votes).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from vpolicy import errors
from vpolicy.errors import Diagnostic, did_you_mean
from vpolicy.lang import ast, builtins, types
from vpolicy.lang.types import Type
from vpolicy.source import Span

Env = dict[str, Type]  # local names: rule arguments, let/aggregate/select variables

# The absent value, as `queue.parent` of the root; a name (not a keyword), so any type compares with it.
NONE = "none"
# Volcano's actions, in the order Volcano documents them (`actions` in a native policy).
ACTIONS = ("enqueue", "allocate", "preempt", "reclaim", "backfill", "shuffle", "gangpreempt", "gangreclaim")
# Rule clauses and the callbacks that take them.
CLAUSE_CALLBACKS = {
    "reason": ("job_valid", "predicate"),
    "message": ("job_valid", "predicate"),
    "normalize": ("node_order",),
    "unresolvable": ("predicate",),
    "every": ("victim_tasks",),
}
# Declarations allowed in each module kind; rules belong to plugins, which a policy's tiers order.
ALLOWED_DECLS = {
    "plugin": (ast.Param, ast.LetDecl, ast.Rule, ast.Property),
    "policy": (ast.Param, ast.LetDecl, ast.Property, ast.Tier, ast.Actions),
}


def check_module(module: ast.Module) -> list[Diagnostic]:
    """Every problem in `module`, sorted by position; never raises for bad input."""
    return errors.sorted_diagnostics(_ModuleChecker(module).run())


class ExprChecker:
    """Types expressions; the module checker supplies module-level names through the hooks below."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    # hooks, overridden by the module checker
    def module_value(self, name: str, span: Span) -> Type | None:
        return None

    def module_function(self, name: str) -> ast.LetDecl | None:
        return None

    def function_result(self, decl: ast.LetDecl, call: ast.Call) -> Type:
        return types.ANY

    def value_names(self) -> list[str]:
        return []

    def function_names(self) -> list[str]:
        return []

    # -------------------------------------------------------------------------------- reporting
    def error(self, code: str, message: str, span: Span, *, help: str | None = None,
              related: tuple[tuple[Span, str], ...] = ()) -> None:
        self.diagnostics.append(Diagnostic(code=code, message=message, span=span, help=help, related=related))

    def report_duplicates(self, entries: Iterable[tuple[str, str, Span]]) -> None:
        first: dict[str, tuple[str, Span]] = {}
        for name, kind, span in entries:
            if name in first:
                prior_kind, prior = first[name]
                self.error("check.duplicate-name", f"'{name}' is declared twice", span,
                           related=((prior, f"first declared here as a {prior_kind}"),))
            else:
                first[name] = (kind, span)

    def mismatch(self, node: ast.Expr, message: str) -> None:
        self.error("check.type-mismatch", message, node.span)

    def type_of_ref(self, ref: ast.TypeRef) -> Type:
        converted, problem = types.from_ref(ref)
        if problem is not None:
            unknown = ref.name not in builtins.TYPE_NAMES
            self.error("check.unknown-type", problem, ref.span,
                       help=did_you_mean(ref.name, builtins.TYPE_NAMES) if unknown else None)
        return converted

    def expect(self, node: ast.Expr, env: Env, want: Type, *, what: str) -> Type:
        found = self.expr(node, env)
        if not types.assignable(found, want):
            self.mismatch(node, f"{what} must be {want}, not {found}")
        return found

    # -------------------------------------------------------------------------------- expressions
    def expr(self, node: ast.Expr, env: Env) -> Type:  # reason: one branch per node class
        if isinstance(node, ast.Literal):
            return {"int": types.INT, "number": types.NUMBER, "quantity": types.NUMBER,
                    "string": types.STRING, "bool": types.BOOL}.get(node.kind, types.ANY)
        if isinstance(node, ast.VoteLit):
            return types.VOTE
        if isinstance(node, ast.Name):
            return self._name(node, env)
        if isinstance(node, ast.Attr):
            return self._attr(node, env)
        if isinstance(node, ast.Index):
            return self._index(node, env)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, ast.Unary):
            if node.op == "not":
                self.expect(node.operand, env, types.BOOL, what="the operand of 'not'")
                return types.BOOL
            operand = self.expr(node.operand, env)
            if not (operand.is_numeric or operand.name == "resources"):
                self.mismatch(node.operand, f"cannot negate {operand}")
                return types.ANY
            return operand
        if isinstance(node, ast.Binary):
            return self._binary(node, env)
        if isinstance(node, ast.If):
            self.expect(node.cond, env, types.BOOL, what="the condition of 'if'")
            return self._join(node, self.expr(node.then, env), self.expr(node.orelse, env), "the branches of 'if'")
        if isinstance(node, ast.Let):
            return self.expr(node.body, {**env, node.name: self.expr(node.value, env)})
        if isinstance(node, ast.Aggregate):
            return self._aggregate(node, env)
        if isinstance(node, ast.Select):
            return self._select(node, env)
        if isinstance(node, ast.Interp):
            for part in node.parts:
                if not isinstance(part, str):
                    self.expr(part, env)
            return types.STRING
        if isinstance(node, ast.ResourceLit):
            seen: list[tuple[str, str, Span]] = []
            for key, value in node.entries:
                seen.append((key, "resource", value.span))
                self.expect(value, env, types.NUMBER, what=f"the amount of '{key}'")
            self.report_duplicates(seen)
            return types.RESOURCES
        items = [self.expr(item, env) for item in node.items]
        joined: Type = types.ANY
        for item_node, item in zip(node.items, items):
            joined = self._join(item_node, joined, item, "list items")
        return types.list_of(joined)

    def _join(self, node: ast.Expr, a: Type, b: Type, what: str) -> Type:
        joined = types.unify(a, b)
        if joined is None:
            self.mismatch(node, f"{what} differ: {a} and {b}")
            return types.ANY
        return joined

    def _name(self, node: ast.Name, env: Env) -> Type:
        if node.id in env:
            return env[node.id]
        found = self.module_value(node.id, node.span)
        if found is not None:
            return found
        if node.id in builtins.GLOBALS:
            return types.parse(builtins.GLOBALS[node.id])
        if node.id == NONE:
            return types.ANY
        if node.id in builtins.FUNCTIONS:
            self.error("check.function-as-value", f"'{node.id}' is a function; call it with its arguments",
                       node.span)
            return types.ANY
        in_scope = [*env, *self.value_names(), *builtins.GLOBALS, NONE]
        self.error("check.unknown-name", f"unknown name '{node.id}'", node.span, help=did_you_mean(node.id, in_scope))
        return types.ANY

    def _attr(self, node: ast.Attr, env: Env) -> Type:
        obj = self.expr(node.obj, env)
        if obj.name == "any":
            return types.ANY
        if obj.name == "resources":
            return types.INT  # one dimension: `r.cpu`
        end_line, end_col = node.span.end_line or node.span.line, node.span.end_col or node.span.col
        at = Span(node.span.file, end_line, max(1, end_col - len(node.name) + 1), end_line, end_col)
        attributes = builtins.OBJECT_TYPES.get(obj.name)
        if attributes is None:
            hint = f'index it instead: ["{node.name}"]' if obj.name == "map" else None
            self.error("check.unknown-attribute", f"{obj} has no attribute '{node.name}'", at, help=hint)
            return types.ANY
        if node.name not in attributes:
            snake = camel_to_snake(node.name)
            hint = (f"did you mean '{snake}'?" if snake in attributes
                    else did_you_mean(snake, attributes) or did_you_mean(node.name, attributes))
            self.error("check.unknown-attribute", f"unknown {obj.name} attribute '{node.name}'", at, help=hint)
            return types.ANY
        found = types.parse(attributes[node.name].type)
        return types.Type(found.name, found.args)  # `queue?`: none-ness is the runtime's business

    def _index(self, node: ast.Index, env: Env) -> Type:
        obj, key = self.expr(node.obj, env), self.expr(node.key, env)
        if obj.name == "any":
            return types.ANY
        if obj.name == "list":
            want, result = types.INT, obj.args[0]
        elif obj.name == "map":
            want, result = obj.args[0], obj.args[1]
        elif obj.name == "resources":
            want, result = types.STRING, types.INT
        else:
            self.mismatch(node.obj, f"cannot index {obj}")
            return types.ANY
        if not types.assignable(key, want):
            self.mismatch(node.key, f"an index into {obj} must be {want}, not {key}")
        return result

    def _call(self, node: ast.Call, env: Env) -> Type:
        args = [self.expr(arg, env) for arg in node.args]
        at = Span(node.span.file, node.span.line, node.span.col, node.span.line, node.span.col + len(node.func) - 1)
        user = self.module_function(node.func)
        if user is not None:
            assert user.params is not None
            # binder types' own errors are reported once, with the let's body
            wanted = [types.from_ref(b.type)[0] if b.type else types.ANY for b in user.params]
            signature = f"{node.func}({', '.join(b.name for b in user.params)})"
            shadowed = builtins.FUNCTIONS.get(node.func)
            if shadowed is not None and len(args) == len(shadowed.params) != len(user.params):
                signature += (f"; the let shadows the built-in {node.func}({', '.join(shadowed.params)}): "
                              "rename the let to call the built-in")
            self._arguments(node, at, args, wanted, variadic=False, signature=signature)
            return self.function_result(user, node)
        builtin = builtins.FUNCTIONS.get(node.func)
        if builtin is None:
            if node.func in env or node.func in self.value_names():
                self.error("check.not-callable", f"'{node.func}' is a value, not a function", at)
            else:
                self.error("check.unknown-function", f"unknown function '{node.func}'", at,
                           help=did_you_mean(node.func, [*builtins.FUNCTIONS, *self.function_names()]))
            return types.ANY
        variadic = builtin.params[-1:] == ("...",)
        params = builtin.params[:-1] if variadic else builtin.params
        wanted = [types.parse(p) for p in params]
        signature = f"{node.func}({', '.join(params)}{', ...' if variadic else ''}) -> {builtin.result}"
        self._arguments(node, at, args, wanted, variadic=variadic, signature=signature)
        if node.func == "compare" and len(args) == 2 and not types.orderable(*args):
            self.mismatch(node, f"'compare' orders two numbers, two strings, two bools or two votes, "
                                f"not {args[0]} and {args[1]}")
        if node.func == "keys" and args and args[0].name == "map":
            return types.list_of(args[0].args[0])
        return types.parse(builtin.result)

    def _arguments(self, node: ast.Call, at: Span, args: list[Type], wanted: list[Type], *, variadic: bool,
                   signature: str) -> None:
        count_ok = len(args) >= len(wanted) if variadic else len(args) == len(wanted)
        if not count_ok:
            plural = "" if len(wanted) == 1 else "s"
            self.error("check.function-arity",
                       f"'{node.func}' takes {len(wanted)}{' or more' if variadic else ''} argument{plural}, "
                       f"not {len(args)}", at, help=signature)
            return
        for i, (arg_node, arg) in enumerate(zip(node.args, args)):
            want = wanted[min(i, len(wanted) - 1)]
            if not types.assignable(arg, want):
                self.mismatch(arg_node, f"argument {i + 1} of '{node.func}' must be {want}, not {arg}")

    def _binary(self, node: ast.Binary, env: Env) -> Type:
        if node.op in ("and", "or"):
            self.expect(node.left, env, types.BOOL, what=f"the left side of '{node.op}'")
            self.expect(node.right, env, types.BOOL, what=f"the right side of '{node.op}'")
            return types.BOOL
        left, right = self.expr(node.left, env), self.expr(node.right, env)
        if node.op in ("==", "!=", "<", "<=", ">", ">="):
            if not types.comparable(left, right, node.op):
                self.mismatch(node, f"cannot compare {left} with {right} using '{node.op}'")
            return types.BOOL
        result = types.arithmetic(node.op, left, right)
        if result is None:
            self.mismatch(node, f"cannot apply '{node.op}' to {left} and {right}")
            return types.ANY
        return result

    def _aggregate(self, node: ast.Aggregate, env: Env) -> Type:
        source = self.expr(node.source, env)
        item = types.element(source)
        if item is None:
            self.mismatch(node.source, f"'{node.func}' ranges over a list, not {source}")
            item = types.ANY
        inner = {**env, node.var: item}
        if node.where is not None:
            self.expect(node.where, inner, types.BOOL, what="a 'where' condition")
        body = self.expr(node.body, inner) if node.body is not None else None
        func = node.func
        if func == "count" and node.body is not None:
            self.error("check.aggregate-form", "'count' takes no body", node.body.span,
                       help="count(x in xs where condition)")
        if func in ("all", "any", "map") and body is None:
            self.error("check.aggregate-form", f"'{func}' needs a body after ':'", node.span,
                       help=f"{func}(x in xs: {'x.weight' if func == 'map' else 'condition'})")
            return types.BOOL if func != "map" else types.map_of(item, types.ANY)
        if func == "count":
            return types.INT
        if func in ("all", "any"):
            assert body is not None and node.body is not None
            if not types.assignable(body, types.BOOL):
                self.mismatch(node.body, f"the body of '{func}' must be bool, not {body}")
            return types.BOOL
        value = body if body is not None else item
        if func == "list":
            return types.list_of(value)
        if func == "map":
            return types.map_of(item, value)
        allowed = value.is_numeric or (func == "sum" and value.name == "resources")
        if not allowed:
            self.mismatch(node.body or node.source, f"'{func}' needs numbers{' or resources' if func == 'sum' else ''}, "
                                                    f"not {value}")
            return types.ANY
        return value

    def _select(self, node: ast.Select, env: Env) -> Type:
        source = self.expr(node.source, env)
        item = types.element(source)
        if item is None:
            self.mismatch(node.source, f"'select' ranges over a list, not {source}")
            item = types.ANY
        inner = {**env, node.var: item}
        if node.group_key is not None and node.group_start is not None and node.state is not None:
            self.expr(node.group_key, inner)
            state = self.expr(node.group_start, inner)
            inner[node.state] = state
            if node.then is not None:
                self.expect(node.then, inner, state, what=f"the new value of '{node.state}'")
        elif node.then is not None:
            self.error("check.select-form", f"'{'after' if node.after else 'then'}' needs a 'group ... as NAME'",
                       node.then.span, help="select c in xs group c.job start 0 as n when n < 2 then n + 1")
        self.expect(node.when, inner, types.BOOL, what="a 'when' condition")
        return types.list_of(item)


class _ModuleChecker(ExprChecker):
    def __init__(self, module: ast.Module):
        super().__init__()
        self.module = module
        self.params = {d.name: d for d in module.decls if isinstance(d, ast.Param)}
        self.lets = {d.name: d for d in module.decls if isinstance(d, ast.LetDecl)}
        self._param_types: dict[str, Type] = {}
        self._let_types: dict[str, Type] = {}
        self._in_progress: list[str] = []

    def run(self) -> list[Diagnostic]:
        self._check_placement()
        self._check_duplicates()
        for decl in self.module.decls:
            if isinstance(decl, ast.Param):
                self._param_type(decl.name)
            elif isinstance(decl, ast.LetDecl):
                self._let_type(decl.name)
            elif isinstance(decl, ast.Rule):
                self._check_rule(decl)
            elif isinstance(decl, ast.Property):
                self.expect(decl.body, {}, types.BOOL, what=f"property '{decl.name}'")
            elif isinstance(decl, ast.Tier):
                self._check_tier(decl)
            else:
                self._check_actions(decl)
        return self.diagnostics

    # -------------------------------------------------------------------------------- module shape
    def _check_placement(self) -> None:
        allowed = ALLOWED_DECLS[self.module.kind]
        for decl in self.module.decls:
            if not isinstance(decl, allowed):
                word = type(decl).__name__.lower().replace("letdecl", "let")
                where = "a policy (rules belong to plugins, which a policy's tiers use)" \
                    if self.module.kind == "policy" else "a plugin (tiers and actions belong to a policy)"
                self.error("check.misplaced-decl", f"'{word}' cannot appear in {where}", decl.span)

    def _check_duplicates(self) -> None:
        namespaces: dict[str, list[tuple[str, str, Span]]] = {"value": [], "rule": [], "property": [],
                                                              "actions": []}
        for decl in self.module.decls:
            if isinstance(decl, (ast.Param, ast.LetDecl)):
                kind = "param" if isinstance(decl, ast.Param) else "let"
                namespaces["value"].append((decl.name, kind, decl.name_span))
            elif isinstance(decl, ast.Rule):
                namespaces["rule"].append((decl.name, "rule", decl.name_span))
            elif isinstance(decl, ast.Property):
                namespaces["property"].append((decl.name, "property", decl.name_span))
            elif isinstance(decl, ast.Actions):
                namespaces["actions"].append(("actions", "actions", decl.span))
        for entries in namespaces.values():
            self.report_duplicates(entries)

    # -------------------------------------------------------------------------------- module values
    def module_value(self, name: str, span: Span) -> Type | None:
        if name in self.params:
            return self._param_type(name)
        let = self.lets.get(name)
        if let is None:
            return None
        if let.params is not None:
            self.error("check.function-as-value", f"'{name}' is a function; call it with its arguments", span,
                       help=f"{name}({', '.join(b.name for b in let.params)})")
            return types.ANY
        return self._let_type(name, use=span)

    def module_function(self, name: str) -> ast.LetDecl | None:
        let = self.lets.get(name)
        return let if let is not None and let.params is not None else None

    def value_names(self) -> list[str]:
        return [*self.params, *(n for n, d in self.lets.items() if d.params is None)]

    def function_names(self) -> list[str]:
        return [n for n, d in self.lets.items() if d.params is not None]

    def _param_type(self, name: str) -> Type:
        if name not in self._param_types:
            decl = self.params[name]
            declared = self.type_of_ref(decl.type)
            self._param_types[name] = declared
            self.expect(decl.default, {}, declared, what=f"the default of param '{name}'")
        return self._param_types[name]

    def _let_type(self, name: str, *, use: Span | None = None) -> Type:
        """A let's type (a function's result type), checking its body once."""
        decl = self.lets[name]
        if name in self._let_types:
            return self._let_types[name]
        if decl.params is not None and decl.type is not None:
            # A written result type is known before the body is checked, so the function may recurse.
            self._let_types[name] = self.type_of_ref(decl.type)
            self._check_let_body(decl, self._let_types[name])
            return self._let_types[name]
        if name in self._in_progress:
            cycle = " -> ".join([*self._in_progress[self._in_progress.index(name):], name])
            hint = (f"write its result type, as in 'let {name}(...): number = ...'" if decl.params is not None
                    else "a session constant is computed once and cannot depend on itself")
            self.error("check.let-cycle", f"'{name}' depends on itself: {cycle}", use or decl.name_span, help=hint)
            return types.ANY
        self._in_progress.append(name)
        found = self._check_let_body(decl, None)
        self._in_progress.pop()
        self._let_types[name] = found
        return found

    def _check_let_body(self, decl: ast.LetDecl, declared: Type | None) -> Type:
        env: Env = {}
        for binder in decl.params or ():
            env[binder.name] = self.type_of_ref(binder.type) if binder.type is not None else types.ANY
        if decl.params is not None:
            self.report_duplicates((b.name, "parameter", b.span) for b in decl.params)
        if declared is None and decl.type is not None:
            declared = self.type_of_ref(decl.type)
        before = len(self.diagnostics)
        found = self.expr(decl.value, env)
        if declared is not None and not types.assignable(found, declared):
            self.mismatch(decl.value, f"'{decl.name}' is declared {declared}, but its value is {found}")
        # one mistake, one diagnostic: a body with problems of its own, or a recursive helper without a
        # result type (check.let-cycle), is not also reported as recursing endlessly
        if decl.params is not None and decl.type is not None and len(self.diagnostics) == before:
            self._check_endless_recursion(decl)
        return declared if declared is not None else found

    def _check_endless_recursion(self, decl: ast.LetDecl) -> None:
        """A helper that calls itself whatever its arguments never returns; mutual recursion and calls
        that merely never reach a base case are left to the run time (`eval.failed`)."""
        call = _unconditional_call(decl.value, decl.name)
        if call is not None:
            self.error("check.endless-recursion", f"'{decl.name}' calls itself whatever its arguments, "
                                                  "so it never returns", call.span,
                       help=f"return without calling '{decl.name}' in some case: "
                            f"if <base case> then <value> else {decl.name}(...)")

    def function_result(self, decl: ast.LetDecl, call: ast.Call) -> Type:
        return self._let_type(decl.name, use=call.span)

    # -------------------------------------------------------------------------------- rules
    def _check_rule(self, rule: ast.Rule) -> None:
        callback = builtins.CALLBACKS.get(rule.callback)
        env: Env = {}
        if callback is None:
            self.error("check.unknown-callback", f"unknown callback '{rule.callback}'", rule.callback_span,
                       help=did_you_mean(rule.callback, builtins.CALLBACKS))
        elif len(rule.params) != len(callback.params):
            signature = ", ".join(f"{n}: {t}" for n, t in callback.params)
            self.error("check.callback-arity",
                       f"'{rule.callback}' takes {len(callback.params)} argument"
                       f"{'' if len(callback.params) == 1 else 's'}, not {len(rule.params)}",
                       rule.callback_span, help=f"{rule.callback}({signature})")
        wanted = [types.parse(t) for _, t in callback.params] if callback else []
        self.report_duplicates((b.name, "parameter", b.span) for b in rule.params)
        for i, binder in enumerate(rule.params):
            given = wanted[i] if i < len(wanted) else types.ANY
            if binder.type is not None:
                written = self.type_of_ref(binder.type)
                if not types.assignable(given, written):
                    self.error("check.type-mismatch",
                               f"'{binder.name}' is a {given} in {rule.callback}, not a {written}", binder.span)
            env[binder.name] = given
        result = types.parse(callback.result) if callback else types.ANY
        if result == types.INT:
            result = types.NUMBER  # orderings compare by sign: a fractional answer is fine
        self.expect(rule.body, env, result, what=f"a {rule.callback} rule")
        self._check_clauses(rule, env)

    def _check_clauses(self, rule: ast.Rule, env: Env) -> None:
        present: list[tuple[str, Span]] = []
        if rule.normalize is not None:
            present.append(("normalize", rule.normalize.span))
            self.expect(rule.normalize.weight, env, types.NUMBER, what="a normalize weight")
            mode = rule.normalize.mode
            if mode not in ("", *ast.NORMALIZE_MODES):
                self.error("check.unknown-normalization", f"unknown normalization '{mode}'", rule.normalize.span,
                           help=did_you_mean(mode, ["reverse", *ast.NORMALIZE_MODES]))
        if rule.unresolvable:
            present.append(("unresolvable", rule.name_span))
        for kind, text in (("reason", rule.reason), ("message", rule.message)):
            if text is not None:
                present.append((kind, text.span))
                self.expr(text, env)
        if rule.every is not None:
            present.append(("every", rule.every.span))
            # a period of the whole session, not of one answer: the rule's arguments are not in scope
            self.expect(rule.every, {}, types.NUMBER, what="an every period (seconds)")
        for kind, span in present:
            owners = CLAUSE_CALLBACKS[kind]
            if rule.callback in builtins.CALLBACKS and rule.callback not in owners:
                self.error("check.misplaced-clause",
                           f"'{kind}' is only for {' and '.join(owners)} rules, not {rule.callback}", span)

    # -------------------------------------------------------------------------------- policies
    def _check_tier(self, tier: ast.Tier) -> None:
        for use in tier.uses:
            self.report_duplicates((key, "setting", value.span) for key, value in use.settings)
            for _key, value in use.settings:
                self.expr(value, {})
        self.report_duplicates((use.path, "use", use.span) for use in tier.uses)

    def _check_actions(self, actions: ast.Actions) -> None:
        for name in actions.names:
            if name not in ACTIONS:
                self.error("check.unknown-action", f"unknown action '{name}'", actions.span,
                           help=did_you_mean(name, ACTIONS) or f"actions are {', '.join(ACTIONS)}")


def camel_to_snake(name: str) -> str:
    """`minAvailable` -> `min_available` (the catalogue is snake_case, Volcano's YAML camelCase)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _unconditional_call(node: ast.Expr, func: str) -> ast.Call | None:
    """A call of `func` that evaluating `node` always makes (whatever its values), or None: both branches
    of an `if` must make one, the right side of `and`/`or` and the body of an aggregate or select may
    never run, and a helper's arguments may go unused."""
    if isinstance(node, ast.Call):
        if node.func == func:
            return node
        return None if node.func not in builtins.FUNCTIONS else _first_call(node.args, func)
    if isinstance(node, ast.Binary):
        if node.op in ("and", "or"):
            return _unconditional_call(node.left, func)
        return _first_call((node.left, node.right), func)
    if isinstance(node, ast.If):
        then, orelse = _unconditional_call(node.then, func), _unconditional_call(node.orelse, func)
        return _unconditional_call(node.cond, func) or (then if then is not None and orelse is not None else None)
    return _first_call(_always_evaluated(node), func)


def _always_evaluated(node: ast.Expr) -> tuple[ast.Expr, ...]:
    """The parts of `node` that evaluating it always evaluates (calls, operators and `if` aside)."""
    if isinstance(node, ast.Unary):
        return (node.operand,)
    if isinstance(node, ast.Let):
        return node.value, node.body
    if isinstance(node, ast.Attr):
        return (node.obj,)
    if isinstance(node, ast.Index):
        return node.obj, node.key
    if isinstance(node, (ast.Aggregate, ast.Select)):
        return (node.source,)
    if isinstance(node, ast.Interp):
        return tuple(p for p in node.parts if not isinstance(p, str))
    if isinstance(node, ast.ResourceLit):
        return tuple(value for _key, value in node.entries)
    if isinstance(node, ast.ListLit):
        return node.items
    return ()


def _first_call(nodes: Iterable[ast.Expr], func: str) -> ast.Call | None:
    for node in nodes:
        call = _unconditional_call(node, func)
        if call is not None:
            return call
    return None

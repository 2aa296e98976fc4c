"""Formatting: canonical text that parses back to the same AST, for written and for generated code."""
from __future__ import annotations

import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vpolicy.lang import ast
from vpolicy.lang.fmt import format_expr, format_module
from vpolicy.lang.parse import parse_expr, parse_text

NAMES = ("a", "b", "job", "node", "x_1", "cluster", "none", "counter", "trueish")
FUNCS = ("f", "share", "minimum", "g_2")
AGGREGATES = ("sum", "count", "all", "any", "max", "min", "list", "map")
BINARY = ("or", "and", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/")
QUANTITIES = ("4Gi", "500m", "1.5k", "2E", "3e2Mi")
KEYS = ("cpu", "memory", "nvidia.com/gpu", "in", "pods", "x-y")

names = st.sampled_from(NAMES)
texts = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=8)


def literals(in_hole: bool) -> st.SearchStrategy[ast.Expr]:
    options: list[st.SearchStrategy[ast.Expr]] = [
        st.integers(0, 10**12).map(lambda v: ast.Literal(v, "int")),
        st.floats(0, 1e20, allow_nan=False, allow_infinity=False).map(lambda v: ast.Literal(v, "number")),
        st.sampled_from(QUANTITIES).map(lambda v: ast.Literal(v, "quantity")),
        st.booleans().map(lambda v: ast.Literal(v, "bool")),
        st.sampled_from(("permit", "reject", "abstain")).map(ast.VoteLit),
        names.map(ast.Name),
    ]
    if not in_hole:  # a hole sits inside a string, so it cannot hold another one
        options.append(texts.map(lambda v: ast.Literal(v, "string")))
    return st.one_of(options)


def interps(inner: st.SearchStrategy[ast.Expr]) -> st.SearchStrategy[ast.Expr]:
    """Strings with at least one hole, parts alternating, no empty text parts (as the parser builds them)."""
    chunk = st.tuples(st.one_of(st.none(), texts.filter(bool)), inner)
    return st.tuples(st.lists(chunk, min_size=1, max_size=3), st.one_of(st.none(), texts.filter(bool))).map(
        lambda parts: ast.Interp(tuple(p for text, hole in parts[0] for p in (text, hole) if p is not None)
                                 + ((parts[1],) if parts[1] else ())))


def exprs(depth: int, in_hole: bool = False) -> st.SearchStrategy[ast.Expr]:
    if depth == 0:
        return literals(in_hole)
    sub = exprs(depth - 1, in_hole)
    opt = st.one_of(st.none(), sub)
    keys = st.sampled_from(KEYS if not in_hole else ("cpu", "memory", "pods"))
    options: list[st.SearchStrategy[ast.Expr]] = [
        literals(in_hole),
        st.builds(ast.Attr, sub, names),
        st.builds(ast.Index, sub, sub),
        st.builds(ast.Call, st.sampled_from(FUNCS), st.lists(sub, max_size=3).map(tuple)),
        st.builds(ast.Unary, st.sampled_from(("not", "-")), sub),
        st.builds(ast.Binary, st.sampled_from(BINARY), sub, sub),
        st.builds(ast.If, sub, sub, sub),
        st.builds(ast.Let, names, sub, sub),
        st.builds(ast.Aggregate, st.sampled_from(AGGREGATES), names, sub, opt, opt),
        st.builds(ast.ResourceLit, st.lists(st.tuples(keys, sub), max_size=3).map(tuple)),
        st.builds(ast.ListLit, st.lists(sub, max_size=3).map(tuple)),
        st.builds(lambda v, s, w: ast.Select(v, s, None, None, None, w, None), names, sub, sub),
        st.builds(lambda v, s, k, g, n, w, t, after: ast.Select(v, s, k, g, n, w, t, after=after and t is not None),
                  names, sub, sub, sub, names, sub, opt, st.booleans()),
    ]
    if not in_hole:
        options.append(interps(exprs(depth - 1, in_hole=True)))
    return st.one_of(options)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exprs(3))
def test_formatted_expressions_parse_back_to_the_same_ast(expr: ast.Expr) -> None:
    text = format_expr(expr)
    assert parse_expr(text) == expr, text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exprs(3), exprs(2))
def test_formatting_a_module_is_idempotent(body: ast.Expr, weight: ast.Expr) -> None:
    module = ast.Module("plugin", "p", "", (
        ast.LetDecl("x", None, None, body),
        ast.Rule("r", "node_order", (ast.Binder("t"), ast.Binder("n")), body, normalize=ast.Normalize(weight),
                 reason=ast.Interp(("why ", weight)) if isinstance(weight, ast.Name) else None),
        ast.Property("p", body),
    ))
    text = format_module(module)
    assert parse_text(text, "f.vpol") == module, text
    assert format_module(parse_text(text, "f.vpol")) == text


def test_the_canonical_layout_of_a_plugin() -> None:
    source = textwrap.dedent('''\
        plugin   gang   "Gang."
        param weight : number=1 from "binpack.weight"   "the weight"
        # Ready jobs.
        let ready(job: job): bool = (job.ready_count) >= ((job.min_available))
        rule valid: job_valid(job) = job.valid_task_count >= job.min_available message "min: {job.min_available}" reason "NotEnoughTasks"
        rule victims: preemptable(p, cs) = select c in cs group c.job start c.job.ready_count as left when left > c.job.min_available then left - 1
        rule fewest: node_order(task, node) = count(t in node.tasks where t.best_effort) normalize reverse by 2 * weight
        rule order: job_order(l, r) = if ready(l) and not ready(r) then -1 else if ready(r) and not ready(l) then 1 else compare(r.priority, l.priority)
        rule paren: job_order(l, r) = (1 - (2 - 3)) * -(4 + 5)
    ''')
    assert format_module(parse_text(source, "g.vpol")) == textwrap.dedent('''\
        plugin gang "Gang."

        param weight: number = 1 from "binpack.weight" "the weight"

        # Ready jobs.
        let ready(job: job): bool = job.ready_count >= job.min_available

        rule valid: job_valid(job) = job.valid_task_count >= job.min_available
            reason "NotEnoughTasks"
            message "min: {job.min_available}"

        rule victims: preemptable(p, cs) =
            select c in cs
                group c.job start c.job.ready_count as left
                when left > c.job.min_available
                then left - 1

        rule fewest: node_order(task, node) = count(t in node.tasks where t.best_effort)
            normalize reverse by 2 * weight

        rule order: job_order(l, r) =
            if ready(l) and not ready(r) then -1
            else if ready(r) and not ready(l) then 1
            else compare(r.priority, l.priority)

        rule paren: job_order(l, r) = (1 - (2 - 3)) * -(4 + 5)
    ''')


def test_a_policy_is_laid_out_with_one_use_per_line() -> None:
    source = 'policy d\nactions enqueue,allocate\ntier{use "a.vpol" {enableX: false, "x-y": 1, b.c: 2} use "b.vpol"}\n'
    assert format_module(parse_text(source, "d.vpol")) == textwrap.dedent('''\
        policy d

        actions enqueue, allocate

        tier {
            use "a.vpol" {enableX: false, "x-y": 1, b.c: 2}
            use "b.vpol"
        }
    ''')


def test_strings_keep_braces_and_escapes_through_formatting() -> None:
    expr = ast.Interp(('say "{', ast.ResourceLit((("cpu", ast.Literal(1, "int")),)), '}\\\n'))
    assert format_expr(expr) == '"say \\"{{{ {cpu: 1}}}}\\\\\\n"'
    assert parse_expr(format_expr(expr)) == expr

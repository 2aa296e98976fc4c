"""Formatting: canonical text that parses back to the same AST, for written and for generated code."""
from __future__ import annotations

import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest

from vpolicy.lang import ast
from vpolicy.lang.fmt import WIDTH, format_expr, format_module, layout_expr
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


LONG_NAMES = ("queue_share_of_the_parent", "requested_dimensions", "c", "a_rather_long_attribute_name")


def chains(depth: int) -> st.SearchStrategy[ast.Expr]:
    """Expressions wide enough to break at any width: long and/or/arithmetic chains of calls,
    aggregates, selects and ifs over long names, nested `depth` deep."""
    leaf: st.SearchStrategy[ast.Expr] = st.one_of(st.sampled_from(LONG_NAMES).map(ast.Name), exprs(1))
    if depth > 0:
        leaf = st.one_of(leaf, chains(depth - 1))
    long_names = st.sampled_from(LONG_NAMES)

    def chain(op: str, items: list[ast.Expr]) -> ast.Expr:
        out = items[0]
        for item in items[1:]:
            out = ast.Binary(op, out, item)
        return out

    return st.one_of(
        st.builds(chain, st.sampled_from(BINARY), st.lists(leaf, min_size=2, max_size=6)),
        st.builds(ast.Call, st.sampled_from(FUNCS), st.lists(leaf, min_size=1, max_size=4).map(tuple)),
        st.builds(ast.Aggregate, st.sampled_from(AGGREGATES), long_names, leaf, st.one_of(st.none(), leaf),
                  st.one_of(st.none(), leaf)),
        st.builds(ast.If, leaf, leaf, leaf),
        st.builds(ast.Let, long_names, leaf, leaf),
        st.builds(ast.ListLit, st.lists(leaf, min_size=1, max_size=8).map(tuple)),
        st.builds(lambda v, s, k, w, t: ast.Select(v, s, k, ast.Literal(0, "int"), "left", w, t), long_names, leaf,
                  leaf, leaf, leaf),
        st.builds(lambda v, s, w: ast.Select(v, s, None, None, None, w, None), long_names, leaf, leaf),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains(2), st.integers(8, 120))
def test_expressions_laid_out_at_any_width_parse_back_to_the_same_ast(expr: ast.Expr, width: int) -> None:
    text = layout_expr(expr, width)
    assert parse_expr(text) == expr, text
    assert not any(line.endswith(" ") for line in text.splitlines()), text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains(2), exprs(2), st.sampled_from((20, 40, 60, WIDTH)))
def test_modules_whose_expressions_must_break_format_idempotently(body: ast.Expr, other: ast.Expr,
                                                                  width: int) -> None:
    module = ast.Module("plugin", "p", "", (
        ast.Param("w", ast.TypeRef("number"), body, doc="the weight of something rather important"),
        ast.LetDecl("x", (ast.Binder("a", ast.TypeRef("int")),), None, body, doc="doc"),
        ast.Rule("r", "node_order", (ast.Binder("t"), ast.Binder("n")), body, normalize=ast.Normalize(other),
                 unresolvable=True, reason=ast.Interp(("why ", body)) if '"' not in format_expr(body) else None),
        ast.Property("p", ast.Binary("and", body, other)),
    ))
    text = format_module(module, width=width)
    parsed = parse_text(text, "f.vpol")
    assert parsed == module, text
    assert format_module(parsed, width=width) == text


def _layout(source: str, width: int) -> str:
    return layout_expr(parse_expr(textwrap.dedent(source).strip()), width)


@pytest.mark.parametrize("source, width, expected", [
    pytest.param("a_condition and (b or c) and d", 100, "a_condition and (b or c) and d", id="fits-on-one-line"),
    pytest.param("a_condition and b_condition or c_condition and not d", 30, """\
        (a_condition and b_condition)
        or (c_condition and not d)""", id="or-chain-one-operand-per-line-and-in-parentheses"),
    pytest.param("first_operand + second_operand - third * fourth_operand", 40, """\
        first_operand + second_operand
            - third * fourth_operand""", id="arithmetic-packed-rest-indented"),
    pytest.param("count(t in job.tasks where t.ready) >= job.min_available", 40, """\
        count(t in job.tasks where t.ready)
            >= job.min_available""", id="comparison-breaks-before-the-operator"),
    pytest.param("if a then 1 else if b then 2 else 3", 100, "if a then 1 else if b then 2 else 3", id="short-if"),
    pytest.param("if ready(l) then compare(l.priority, r.priority) else 0", 40, """\
        if ready(l) then
            compare(l.priority, r.priority)
        else 0""", id="if-then-branch-on-the-next-line"),
    pytest.param("if a_long_condition and another_long_condition then permit else reject", 40, """\
        if a_long_condition
           and another_long_condition
        then permit
        else reject""", id="if-then-under-a-broken-condition"),
    pytest.param("if a then (if b then 1 else 2) else let x = 3 in x", 100,
                 "if a then (if b then 1 else 2) else let x = 3 in x", id="nested-if-in-then-is-parenthesised"),
    pytest.param("all(q in chain(queue): le(used(q) + task.resreq, capability(q)))", 50, """\
        all(q in chain(queue):
            le(used(q) + task.resreq, capability(q)))""", id="aggregate-breaks-after-colon"),
    pytest.param("any(r in dims(task) where get(used, r) > 0 or get(deserved, r) > 0: get(used, r) < 1)", 60, """\
        any(r in dims(task) where get(used, r) > 0
                or get(deserved, r) > 0:
            get(used, r) < 1)""", id="aggregate-where-goes-on-indented-past-the-body"),
    pytest.param("le_on(job.min_resources + used(q), real_capability(q), dims(job.min_resources))", 60, """\
        le_on(job.min_resources + used(q),
              real_capability(q),
              dims(job.min_resources))""", id="call-one-argument-per-line"),
    pytest.param('["Pending", "Pipelined", "Bound", "Binding", "Running", "Allocated"]', 40, """\
        ["Pending", "Pipelined", "Bound",
         "Binding", "Running", "Allocated"]""", id="list-packed"),
    pytest.param("select c in candidates when evictable(c)", 100, "select c in candidates when evictable(c)",
                 id="select-filter-on-one-line"),
    pytest.param("select c in cs group c.job start 0 as n when n < 2 then n + 1", 100, """\
        select c in cs
            group c.job start 0 as n
            when n < 2
            then n + 1""", id="select-with-group-one-clause-per-line"),
    pytest.param("select c in cs when first_condition(c) and second_condition(c)", 40, """\
        select c in cs
            when first_condition(c)
                 and second_condition(c)""", id="select-when-chain-under-its-first-operand"),
    pytest.param("let weights = sum(r in xs: w(r)) in if weights == 0 then 0 else 1 / weights", 50, """\
        let weights = sum(r in xs: w(r)) in
        if weights == 0 then 0 else 1 / weights""", id="let-body-on-the-next-line"),
    pytest.param("abs(x - y) <= 0.000001 or x < 1e-6", 100, "abs(x - y) <= 0.000001 or x < 1e-6",
                 id="numbers-as-written"),
])
def test_long_expressions_break_by_the_layout_rules(source: str, width: int, expected: str) -> None:
    assert _layout(source, width) == textwrap.dedent(expected)


def test_params_and_lets_written_together_stay_together_and_rules_are_parted() -> None:
    source = textwrap.dedent('''\
        plugin p
        param a: int = 1
        param b: int = 2 "a doc string too long to fit on the line of the parameter, which then goes on the next line"
        param c: int = 3

        param d: int = 4
        let x = 1
        let y = 2
        # y's doc
        let z = 3
        rule r: job_order(l, r) = 0
        rule s: job_order(l, r) = 0
    ''')
    assert format_module(parse_text(source, "p.vpol")) == textwrap.dedent('''\
        plugin p

        param a: int = 1
        param b: int = 2
            "a doc string too long to fit on the line of the parameter, which then goes on the next line"
        param c: int = 3

        param d: int = 4

        let x = 1
        let y = 2

        # y's doc
        let z = 3

        rule r: job_order(l, r) = 0

        rule s: job_order(l, r) = 0
    ''')


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

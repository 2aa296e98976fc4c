"""Parsing: every construct of the DSL becomes the AST it should, with spans where the text is."""
from __future__ import annotations

import textwrap

import pytest

from vpolicy.lang import ast
from vpolicy.lang.parse import parse_expr, parse_text
from vpolicy.source import Span

N = ast.Name


def lit(value: float | str | bool) -> ast.Literal:
    kind = {bool: "bool", int: "int", float: "number", str: "string"}[type(value)]
    return ast.Literal(value, kind)


def module(text: str) -> ast.Module:
    return parse_text(textwrap.dedent(text).lstrip("\n"), "m.vpol")


@pytest.mark.parametrize("text, expected", [
    pytest.param("42", lit(42), id="int"),
    pytest.param("0.5", lit(0.5), id="number"),
    pytest.param("1e3", lit(1000.0), id="exponent-is-a-number"),
    pytest.param("4Gi", ast.Literal("4Gi", "quantity"), id="quantity"),
    pytest.param("500m", ast.Literal("500m", "quantity"), id="milli-quantity"),
    pytest.param('"a\\"b\\\\c\\n"', lit('a"b\\c\n'), id="string-escapes"),
    pytest.param('"{{literal}}"', lit("{literal}"), id="doubled-braces-are-literal"),
    pytest.param("true", lit(True), id="true"),
    pytest.param("false", lit(False), id="false"),
    pytest.param("permit", ast.VoteLit("permit"), id="vote"),
    pytest.param("abstain", ast.VoteLit("abstain"), id="abstain"),
    pytest.param("none", N("none"), id="none-is-a-name"),
    pytest.param("trueish", N("trueish"), id="keyword-prefix-is-a-name"),
    pytest.param("job.min_available", ast.Attr(N("job"), "min_available"), id="attribute"),
    pytest.param("deserved[q]", ast.Index(N("deserved"), N("q")), id="index"),
    pytest.param("a.b[c].d", ast.Attr(ast.Index(ast.Attr(N("a"), "b"), N("c")), "d"), id="postfix-chain"),
    pytest.param("f()", ast.Call("f", ()), id="call-without-arguments"),
    pytest.param("minimum(a, 1)", ast.Call("minimum", (N("a"), lit(1))), id="call"),
    pytest.param("-a", ast.Unary("-", N("a")), id="negation"),
    pytest.param("not a", ast.Unary("not", N("a")), id="not"),
    pytest.param("a + b * c", ast.Binary("+", N("a"), ast.Binary("*", N("b"), N("c"))), id="product-binds-tighter"),
    pytest.param("a - b - c", ast.Binary("-", ast.Binary("-", N("a"), N("b")), N("c")), id="left-associative"),
    pytest.param("(a + b) * c", ast.Binary("*", ast.Binary("+", N("a"), N("b")), N("c")), id="parentheses"),
    pytest.param("a / b", ast.Binary("/", N("a"), N("b")), id="division"),
    pytest.param("a <= b", ast.Binary("<=", N("a"), N("b")), id="comparison"),
    pytest.param("a == b and not c or d",
                 ast.Binary("or", ast.Binary("and", ast.Binary("==", N("a"), N("b")), ast.Unary("not", N("c"))),
                            N("d")), id="boolean-precedence"),
    pytest.param("if a then 1 else 2", ast.If(N("a"), lit(1), lit(2)), id="if"),
    pytest.param("if a then 1 else if b then 2 else 3",
                 ast.If(N("a"), lit(1), ast.If(N("b"), lit(2), lit(3))), id="else-if-chain"),
    pytest.param("let m = a in m + 1", ast.Let("m", N("a"), ast.Binary("+", N("m"), lit(1))), id="let-in"),
    pytest.param("{cpu: 1, \"nvidia.com/gpu\": 4Gi,}",
                 ast.ResourceLit((("cpu", lit(1)), ("nvidia.com/gpu", ast.Literal("4Gi", "quantity")))),
                 id="resource-literal"),
    pytest.param("{}", ast.ResourceLit(()), id="empty-resources"),
    pytest.param('["a", b]', ast.ListLit((lit("a"), N("b"))), id="list"),
    pytest.param("[]", ast.ListLit(()), id="empty-list"),
    pytest.param("sum(t in job.tasks where t.ready: t.resreq)",
                 ast.Aggregate("sum", "t", ast.Attr(N("job"), "tasks"), ast.Attr(N("t"), "ready"),
                               ast.Attr(N("t"), "resreq")), id="sum-where-body"),
    pytest.param("count(t in xs where t.best_effort)",
                 ast.Aggregate("count", "t", N("xs"), ast.Attr(N("t"), "best_effort"), None), id="count"),
    pytest.param("all(x in xs: x.ok)", ast.Aggregate("all", "x", N("xs"), None, ast.Attr(N("x"), "ok")), id="all"),
    pytest.param("map(q in qs: q.request)", ast.Aggregate("map", "q", N("qs"), None, ast.Attr(N("q"), "request")),
                 id="map"),
    pytest.param("select c in cs when c.ok", ast.Select("c", N("cs"), None, None, None, ast.Attr(N("c"), "ok"), None),
                 id="select-filter"),
    pytest.param("select c in cs group c.job start 0 as n when n < 2 then n + 1",
                 ast.Select("c", N("cs"), ast.Attr(N("c"), "job"), lit(0), "n", ast.Binary("<", N("n"), lit(2)),
                            ast.Binary("+", N("n"), lit(1))), id="select-group-then"),
    pytest.param("select c in cs group c.job start 0 as n when n < 2 after n + 1",
                 ast.Select("c", N("cs"), ast.Attr(N("c"), "job"), lit(0), "n", ast.Binary("<", N("n"), lit(2)),
                            ast.Binary("+", N("n"), lit(1)), after=True), id="select-group-after"),
    pytest.param("select c in cs when if a then b else c",
                 ast.Select("c", N("cs"), None, None, None, ast.If(N("a"), N("b"), N("c")), None),
                 id="select-when-if"),
    pytest.param('"x {a.b} y"', ast.Interp(("x ", ast.Attr(N("a"), "b"), " y")), id="interpolation"),
    pytest.param('"{ {cpu: 1} }"', ast.Interp((ast.ResourceLit((("cpu", lit(1)),)),)), id="hole-with-braces"),
])
def test_expressions_parse_to_their_ast(text: str, expected: ast.Expr) -> None:
    assert parse_expr(text) == expected


def test_a_plugin_parses_every_declaration() -> None:
    m = module('''
        plugin volcano.gang "Gang scheduling: all or nothing."
        param weight: number = 1 from "binpack.weight" "weight of the binpack score"
        param plain: list[string] = []
        let deserved = water_fill(cluster.queues, cluster.total, caps, requests)
        # One queue's share.
        let share(q: queue): number = share(q.allocated, deserved[q])
        let nothing() = 0
        rule valid: job_valid(job) = job.valid_task_count >= job.min_available
            reason "NotEnoughTasks"
            message "valid: {job.valid_task_count}, min: {job.min_available}"
        rule free: predicate(task, node: node) = true unresolvable reason "r"
        rule fewest: node_order(task, node) = 1 normalize reverse by 2
        rule most: node_order(task, node) = 1 normalize by weight
        property gang_all_or_nothing: true
    ''')
    q = ast.Binder("q", ast.TypeRef("queue"))
    assert (m.kind, m.name, m.doc) == ("plugin", "volcano.gang", "Gang scheduling: all or nothing.")
    assert m.decls == (
        ast.Param("weight", ast.TypeRef("number"), lit(1), doc="weight of the binpack score",
                  conf_key="binpack.weight"),
        ast.Param("plain", ast.TypeRef("list", (ast.TypeRef("string"),)), ast.ListLit(())),
        ast.LetDecl("deserved", None, None, ast.Call("water_fill", (
            ast.Attr(N("cluster"), "queues"), ast.Attr(N("cluster"), "total"), N("caps"), N("requests")))),
        ast.LetDecl("share", (q,), ast.TypeRef("number"),
                    ast.Call("share", (ast.Attr(N("q"), "allocated"), ast.Index(N("deserved"), N("q")))),
                    doc="One queue's share."),
        ast.LetDecl("nothing", (), None, lit(0)),
        ast.Rule("valid", "job_valid", (ast.Binder("job"),),
                 ast.Binary(">=", ast.Attr(N("job"), "valid_task_count"), ast.Attr(N("job"), "min_available")),
                 reason=ast.Interp(("NotEnoughTasks",)),
                 message=ast.Interp(("valid: ", ast.Attr(N("job"), "valid_task_count"), ", min: ",
                                     ast.Attr(N("job"), "min_available")))),
        ast.Rule("free", "predicate", (ast.Binder("task"), ast.Binder("node", ast.TypeRef("node"))), lit(True),
                 reason=ast.Interp(("r",)), unresolvable=True),
        ast.Rule("fewest", "node_order", (ast.Binder("task"), ast.Binder("node")), lit(1),
                 normalize=ast.Normalize(lit(2), reverse=True)),
        ast.Rule("most", "node_order", (ast.Binder("task"), ast.Binder("node")), lit(1),
                 normalize=ast.Normalize(N("weight"))),
        ast.Property("gang_all_or_nothing", lit(True)),
    )


def test_a_policy_parses_actions_and_tiers() -> None:
    m = module('''
        policy default
        actions enqueue, allocate, backfill
        tier {
            use "volcano/gang.vpol" {enablePreemptable: false, "binpack.weight": 10, binpack.cpu: 2,}
            use "volcano/priority.vpol"
        }
        tier {}
    ''')
    assert m.decls == (
        ast.Actions(("enqueue", "allocate", "backfill")),
        ast.Tier((ast.Use("volcano/gang.vpol", (("enablePreemptable", lit(False)), ("binpack.weight", lit(10)),
                                                ("binpack.cpu", lit(2)))),
                  ast.Use("volcano/priority.vpol"))),
        ast.Tier(()),
    )


def test_comment_lines_right_above_a_declaration_are_its_doc() -> None:
    m = module('''
        plugin p
        # Not this one: a blank line follows.

        # First line.
        #
        #  indented
        rule r: job_valid(job) = true  # trailing comments are dropped
        # A param's string wins over comments.
        param w: int = 1 "the string"
        # A param without a string takes the comment.
        param v: int = 1
    ''')
    rule, w, v = m.decls
    assert isinstance(rule, ast.Rule) and rule.doc == "First line.\n\n indented"
    assert isinstance(w, ast.Param) and w.doc == "the string"
    assert isinstance(v, ast.Param) and v.doc == "A param without a string takes the comment."


def test_nodes_carry_one_based_inclusive_spans() -> None:
    m = module('''
        plugin p
        rule valid: job_valid(job) =
            job.valid_task_count >= job.min_available
            message "valid: {job.valid_task_count}"
    ''')
    rule = m.decls[0]
    assert isinstance(rule, ast.Rule) and isinstance(rule.body, ast.Binary) and rule.message is not None
    assert rule.span == Span("m.vpol", 2, 1, 4, 43)
    assert rule.name_span == Span("m.vpol", 2, 6, 2, 10)
    assert rule.callback_span == Span("m.vpol", 2, 13, 2, 21)
    assert rule.params[0].span == Span("m.vpol", 2, 23, 2, 25)
    assert rule.body.span == Span("m.vpol", 3, 5, 3, 45)
    assert rule.body.right.span == Span("m.vpol", 3, 29, 3, 45)
    assert rule.message.span == Span("m.vpol", 4, 13, 4, 43)
    hole = rule.message.parts[1]
    assert isinstance(hole, ast.Attr) and hole.span == Span("m.vpol", 4, 22, 4, 41)
    assert isinstance(hole.obj, ast.Name) and hole.obj.span == Span("m.vpol", 4, 22, 4, 24)
    assert m.span.line == 1 and m.file == "m.vpol"


def test_spans_do_not_take_part_in_equality() -> None:
    assert parse_expr("a + 1") == parse_expr("a   +\n 1")
    assert parse_expr("a + 1").span != parse_expr("a   +\n 1").span


def test_the_design_example_parses() -> None:
    m = module('''
        plugin gang "Gang scheduling: all or nothing."
        param weight: number = 1 from "binpack.weight" "weight of the binpack score"
        let deserved = water_fill(cluster.queues, cluster.total, caps, requests)
        let share(q: queue): number = share(q.allocated, deserved[q])
        rule valid: job_valid(job) = job.valid_task_count >= job.min_available
            reason "NotEnoughTasks"
            message "Not enough valid tasks for gang-scheduling, valid: {job.valid_task_count}, min: {job.min_available}"
        rule victims: preemptable(preemptor, candidates) =
            select c in candidates
                group c.job start c.job.ready_count as left
                when left > c.job.min_available
                then left - 1
        rule fewest: node_order(task, node) = count(t in node.tasks where t.best_effort) normalize reverse by 2
        rule order: job_order(l, r) = if l.ready_count >= l.min_available then 1 else compare(r.priority, l.priority)
        rule enq: job_enqueueable(job) = let m = job.min_resources in if m <= {cpu: 1, "nvidia.com/gpu": 4Gi} then permit else reject
    ''')
    assert [type(d).__name__ for d in m.decls] == ["Param", "LetDecl", "LetDecl"] + ["Rule"] * 5

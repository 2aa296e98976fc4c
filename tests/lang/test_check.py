"""The checker: names, attributes, functions, callbacks, types and placement, each mistake pinned."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vpolicy.errors import PolicyError
from vpolicy.lang import load_module
from vpolicy.lang.check import camel_to_snake, check_module
from vpolicy.lang.parse import parse_text

Found = tuple[str, int, int, str, str | None]  # code, line, col, message, help


def problems(text: str) -> list[Found]:
    module = parse_text("plugin p\n" + textwrap.dedent(text).strip("\n") + "\n", "c.vpol")
    return [(d.code, d.span.line, d.span.col, d.message, d.help) for d in check_module(module) if d.span]


@pytest.mark.parametrize("text", [
    pytest.param("rule r: job_valid(job) = job.ready_count >= job.min_available", id="job-valid"),
    pytest.param("rule r: job_order(a, b) = compare(a.priority, b.priority)", id="order-with-own-names"),
    pytest.param("rule r: job_order(l, r) = 0.5", id="order-accepts-a-number"),
    pytest.param("rule r: node_order(task, node) = 3 normalize reverse by 2", id="node-order-normalized"),
    pytest.param("rule r: job_enqueueable(job) = if job.min_resources <= {cpu: 1, memory: 4Gi} then permit "
                 "else reject", id="vote-and-resources"),
    pytest.param("rule r: predicate(task, node) = node.idle.cpu >= task.resreq.cpu unresolvable reason \"x\"",
                 id="resource-dimension-is-an-int"),
    pytest.param("rule r: preemptable(p, cs) = select c in cs group c.job start c.job.ready_count as n "
                 "when n > c.job.min_available then n - 1", id="select-victims"),
    pytest.param("rule r: preemptable(p, cs) = select c in cs group c.queue start c.queue.allocated as left "
                 "when le(left, c.queue.deserved) after left - c.resreq", id="select-after"),
    pytest.param("let d = map(q in cluster.queues: q.request)\n"
                 "let s(q: queue): number = share(q.allocated, d[q])\n"
                 "rule r: queue_order(l, r) = compare(s(l), s(r))", id="map-indexed-by-queue"),
    pytest.param("let total = sum(t in cluster.jobs: t.allocated)\nlet n = count(j in cluster.jobs where j.phase "
                 "== \"Running\")\nlet all_open = all(q in cluster.queues: q.open)", id="aggregates"),
    pytest.param("let roots(q: queue): list[queue] = if q.parent == none then [q] else [q] + roots(q.parent)",
                 id="typed-recursion-and-none"),
    pytest.param("param w: number = 1\nparam names: list[string] = [\"cpu\"]\n"
                 "rule r: node_order(t, n) = w * len(names)", id="params"),
    pytest.param("let later = earlier + 1\nlet earlier = 1", id="lets-in-any-order"),
    pytest.param("rule r: job_valid(job) = true message \"{job.name} has {job.task_count} tasks\"",
                 id="message-holes"),
    pytest.param("let ks(j: job): list[string] = keys(j.min_task_member)", id="keys-of-a-map"),
    pytest.param("property p: all(q in cluster.queues: le(q.allocated, q.capability))", id="property"),
    pytest.param("rule r: job_order(l, r) = compare(l.priority, r.creation)", id="compare-int-with-number"),
    pytest.param("rule r: job_order(l, r) = compare(l.name, r.name)", id="compare-two-strings"),
    pytest.param("let f(n: int): int = if n > 0 then f(n - 1) else 0", id="recursion-with-a-base-case"),
    pytest.param("let f(n: int): bool = n > 0 and f(n - 1)", id="recursion-after-and"),
    pytest.param("let f(q: queue): int = sum(c in q.children: f(c))", id="recursion-in-an-aggregate-body"),
])
def test_well_typed_modules_have_no_problems(text: str) -> None:
    assert problems(text) == []


@pytest.mark.parametrize("text, expected", [
    pytest.param("rule r: job_vaild(job) = true",
                 ("check.unknown-callback", 2, 9, "unknown callback 'job_vaild'", "did you mean 'job_valid'?"),
                 id="unknown-callback"),
    pytest.param("rule r: job_order(l) = 0",
                 ("check.callback-arity", 2, 9, "'job_order' takes 2 arguments, not 1", "job_order(l: job, r: job)"),
                 id="callback-arity"),
    pytest.param("rule r: job_valid(job) = job.minAvaliable > 0",
                 ("check.unknown-attribute", 2, 30, "unknown job attribute 'minAvaliable'",
                  "did you mean 'min_available'?"), id="misspelt-attribute"),
    pytest.param("rule r: job_valid(job) = job.minAvailable > 0",
                 ("check.unknown-attribute", 2, 30, "unknown job attribute 'minAvailable'",
                  "did you mean 'min_available'?"), id="camel-case-attribute"),
    pytest.param("rule r: job_valid(job) = job.min_available.x > 0",
                 ("check.unknown-attribute", 2, 44, "int has no attribute 'x'", None), id="attribute-of-int"),
    pytest.param("rule r: predicate(task, node) = node.labels.zone == \"a\"",
                 ("check.unknown-attribute", 2, 45, "map[string,string] has no attribute 'zone'",
                  'index it instead: ["zone"]'), id="attribute-of-map"),
    pytest.param("rule r: job_valid(job) = jb.min_available > 0",
                 ("check.unknown-name", 2, 26, "unknown name 'jb'", "did you mean 'job'?"), id="unknown-name"),
    pytest.param("let x = clster.total",
                 ("check.unknown-name", 2, 9, "unknown name 'clster'", "did you mean 'cluster'?"), id="global"),
    pytest.param("let x = sum(t in cluster.jobs: t.allocated) + tt.allocated",
                 ("check.unknown-name", 2, 47, "unknown name 'tt'", None), id="aggregate-variable-out-of-scope"),
    pytest.param("let x = shares(cluster.total, cluster.total)",
                 ("check.unknown-function", 2, 9, "unknown function 'shares'", "did you mean 'share'?"),
                 id="unknown-function"),
    pytest.param("let x = share(cluster.total)",
                 ("check.function-arity", 2, 9, "'share' takes 2 arguments, not 1",
                  "share(resources, resources) -> number"), id="function-arity"),
    pytest.param("let f(q: queue): number = 1\nlet x = f()",
                 ("check.function-arity", 3, 9, "'f' takes 1 argument, not 0", "f(q)"), id="let-function-arity"),
    pytest.param("let share(q: queue): number = share(q.allocated, q.deserved)",
                 ("check.function-arity", 2, 31, "'share' takes 1 argument, not 2",
                  ("share(q); the let shadows the built-in share(resources, resources): rename the let to call "
                   "the built-in")), id="let-shadowing-a-builtin"),
    pytest.param("let x = share(1, cluster.total)",
                 ("check.type-mismatch", 2, 15, "argument 1 of 'share' must be resources, not int", None),
                 id="argument-type"),
    pytest.param("let x = share",
                 ("check.function-as-value", 2, 9, "'share' is a function; call it with its arguments", None),
                 id="builtin-function-as-value"),
    pytest.param("let c = 1\nlet x = c(2)",
                 ("check.not-callable", 3, 9, "'c' is a value, not a function", None), id="value-called"),
    pytest.param("rule r: job_valid(job) = job.ready_count",
                 ("check.type-mismatch", 2, 26, "a job_valid rule must be bool, not int", None), id="rule-result"),
    pytest.param("rule r: job_enqueueable(job) = true",
                 ("check.type-mismatch", 2, 32, "a job_enqueueable rule must be vote, not bool", None),
                 id="vote-result"),
    pytest.param("rule r: preemptable(p, cs) = cs[0]",
                 ("check.type-mismatch", 2, 30, "a preemptable rule must be list[task], not task", None),
                 id="victims-result"),
    pytest.param("let x = 1 and true",
                 ("check.type-mismatch", 2, 9, "the left side of 'and' must be bool, not int", None),
                 id="and-needs-bool"),
    pytest.param("let x = not 1",
                 ("check.type-mismatch", 2, 13, "the operand of 'not' must be bool, not int", None),
                 id="not-needs-bool"),
    pytest.param("let x = cluster.total + 1",
                 ("check.type-mismatch", 2, 9, "cannot apply '+' to resources and int", None), id="resources-plus-int"),
    pytest.param("let x = cluster.total < 1",
                 ("check.type-mismatch", 2, 9, "cannot compare resources with int using '<'", None),
                 id="compare-resources-with-int"),
    pytest.param('let x = "a" < "b"',
                 ("check.type-mismatch", 2, 9, "cannot compare string with string using '<'", None),
                 id="strings-are-not-ordered"),
    pytest.param('let x = if true then 1 else "a"',
                 ("check.type-mismatch", 2, 9, "the branches of 'if' differ: int and string", None),
                 id="if-branches"),
    pytest.param("let x = if 1 then 1 else 2",
                 ("check.type-mismatch", 2, 12, "the condition of 'if' must be bool, not int", None),
                 id="if-condition"),
    pytest.param('param w: number = "heavy"',
                 ("check.type-mismatch", 2, 19, "the default of param 'w' must be number, not string", None),
                 id="param-default"),
    pytest.param("param w: nuber = 1",
                 ("check.unknown-type", 2, 10, "unknown type 'nuber'", "did you mean 'number'?"), id="unknown-type"),
    pytest.param("param w: list = []",
                 ("check.unknown-type", 2, 10, "type 'list' takes 1 argument, not 0", None), id="list-without-item"),
    pytest.param("let f(q: queue): int = q.name",
                 ("check.type-mismatch", 2, 24, "'f' is declared int, but its value is string", None),
                 id="let-declared-type"),
    pytest.param("let a = b\nlet b = a",
                 ("check.let-cycle", 3, 9, "'a' depends on itself: a -> b -> a",
                  "a session constant is computed once and cannot depend on itself"), id="constant-cycle"),
    pytest.param("let f(n: int) = f(n)",
                 ("check.let-cycle", 2, 17, "'f' depends on itself: f -> f",
                  "write its result type, as in 'let f(...): number = ...'"), id="untyped-recursion"),
    pytest.param("let x = count(j in cluster.jobs: j.ready_count)",
                 ("check.aggregate-form", 2, 34, "'count' takes no body", "count(x in xs where condition)"),
                 id="count-with-body"),
    pytest.param("let x = all(j in cluster.jobs where j.ready_count > 0)",
                 ("check.aggregate-form", 2, 9, "'all' needs a body after ':'", "all(x in xs: condition)"),
                 id="all-without-body"),
    pytest.param("let x = sum(j in cluster.jobs: j.name)",
                 ("check.type-mismatch", 2, 32, "'sum' needs numbers or resources, not string", None),
                 id="sum-of-strings"),
    pytest.param("let x = sum(j in cluster.total: 1)",
                 ("check.type-mismatch", 2, 18, "'sum' ranges over a list, not resources", None),
                 id="aggregate-over-non-list"),
    pytest.param("rule r: preemptable(p, cs) = select c in cs when true then 1",
                 ("check.select-form", 2, 60, "'then' needs a 'group ... as NAME'",
                  "select c in xs group c.job start 0 as n when n < 2 then n + 1"), id="then-without-group"),
    pytest.param("rule r: preemptable(p, cs) = select c in cs group c.job start 0 as n when n > 0 then \"x\"",
                 ("check.type-mismatch", 2, 86, "the new value of 'n' must be int, not string", None),
                 id="select-state-type"),
    pytest.param("rule r: job_order(l, r) = 0 reason \"x\"",
                 ("check.misplaced-clause", 2, 36, "'reason' is only for job_valid and predicate rules, not job_order",
                  None), id="reason-on-order"),
    pytest.param("rule r: predicate(t, n) = true normalize by 2",
                 ("check.misplaced-clause", 2, 32, "'normalize' is only for node_order rules, not predicate", None),
                 id="normalize-on-predicate"),
    pytest.param("rule r: job_valid(j) = true unresolvable",
                 ("check.misplaced-clause", 2, 6, "'unresolvable' is only for predicate rules, not job_valid", None),
                 id="unresolvable-on-job-valid"),
    pytest.param("rule r: job_valid(j: task) = true",
                 ("check.type-mismatch", 2, 19, "'j' is a job in job_valid, not a task", None),
                 id="rule-argument-annotation"),
    pytest.param("let x = {cpu: \"one\"}",
                 ("check.type-mismatch", 2, 15, "the amount of 'cpu' must be number, not string", None),
                 id="resource-amount"),
    pytest.param("let x = [1, \"a\"]",
                 ("check.type-mismatch", 2, 13, "list items differ: int and string", None), id="list-items"),
    pytest.param("let x = cluster[1]",
                 ("check.type-mismatch", 2, 9, "cannot index cluster", None), id="index-object"),
    pytest.param("let x = cluster.queues[\"a\"]",
                 ("check.type-mismatch", 2, 24, "an index into list[queue] must be int, not string", None),
                 id="list-index"),
    pytest.param('rule r: job_order(l, r) = compare(l.ready_count, "a")',
                 ("check.type-mismatch", 2, 27,
                  "'compare' orders two numbers, two strings, two bools or two votes, not int and string", None),
                 id="compare-int-with-string"),
    pytest.param("rule r: queue_order(l, r) = compare(l.allocated, r.allocated)",
                 ("check.type-mismatch", 2, 29,
                  "'compare' orders two numbers, two strings, two bools or two votes, not resources and resources",
                  None), id="compare-resources"),
    pytest.param("let f(x: int): int = f(x) + 1",
                 ("check.endless-recursion", 2, 22, "'f' calls itself whatever its arguments, so it never returns",
                  "return without calling 'f' in some case: if <base case> then <value> else f(...)"),
                 id="recursion-without-a-base-case"),
    pytest.param("let f(x: int): int = if x > 0 then f(x - 1) else f(x + 1) * 2",
                 ("check.endless-recursion", 2, 36, "'f' calls itself whatever its arguments, so it never returns",
                  "return without calling 'f' in some case: if <base case> then <value> else f(...)"),
                 id="recursion-on-both-branches"),
    pytest.param("actions allocate",
                 ("check.misplaced-decl", 2, 1,
                  ("'actions' cannot appear in a plugin (tiers and actions belong to a policy)"), None),
                 id="actions-in-plugin"),
])
def test_each_mistake_gives_one_pinned_diagnostic(text: str, expected: Found) -> None:
    assert problems(text) == [expected]


def test_duplicate_names_point_at_the_first_declaration() -> None:
    module = parse_text("plugin p\nlet x = 1\nparam x: int = 2\nrule r: job_valid(j) = true\n"
                        "rule r: job_ready(j) = true\n", "c.vpol")
    first, second = check_module(module)
    assert first.render() == textwrap.dedent("""\
        c.vpol:3:7: error[check.duplicate-name]: 'x' is declared twice
            3 | param x: int = 2
              |       ^
           note: c.vpol:2:5: first declared here as a let""")
    assert (second.code, second.span and second.span.line, second.related[0][0].line) == ("check.duplicate-name", 5, 4)


def test_a_policy_may_not_hold_rules_and_must_name_real_actions() -> None:
    module = parse_text('policy d\nactions enqueue, alocate\nrule r: job_valid(j) = true\n'
                        'tier { use "a.vpol" {x: 1, x: 2} }\n', "c.vpol")
    assert [(d.code, d.span and d.span.line, d.message, d.help) for d in check_module(module)] == [
        ("check.unknown-action", 2, "unknown action 'alocate'", "did you mean 'allocate'?"),
        ("check.misplaced-decl", 3,
         ("'rule' cannot appear in a policy (rules belong to plugins, which a policy's tiers use)"), None),
        ("check.duplicate-name", 4, "'x' is declared twice", None),
    ]


def test_the_checker_renders_the_design_example_for_attributes() -> None:
    module = parse_text("plugin gang\nrule valid: job_valid(job) =\n  job.minAvaliable <= job.ready_count\n", "g.vpol")
    (diagnostic,) = check_module(module)
    assert diagnostic.render() == textwrap.dedent("""\
        g.vpol:3:7: error[check.unknown-attribute]: unknown job attribute 'minAvaliable'
            3 |   job.minAvaliable <= job.ready_count
              |       ^^^^^^^^^^^^
           help: did you mean 'min_available'?""")


def test_diagnostics_come_sorted_by_position() -> None:
    found = problems("let b = y\nlet a = x")
    assert [(line, message) for _, line, _, message, _ in found] == [
        (2, "unknown name 'y'"), (3, "unknown name 'x'")]


@pytest.mark.parametrize("name, snake", [
    pytest.param("minAvailable", "min_available", id="camel"),
    pytest.param("validTaskCount", "valid_task_count", id="three-words"),
    pytest.param("min_available", "min_available", id="already-snake"),
])
def test_camel_case_names_map_to_the_catalogue_spelling(name: str, snake: str) -> None:
    assert camel_to_snake(name) == snake


def test_load_module_raises_all_errors_together(tmp_path: Path) -> None:
    path = tmp_path / "bad.vpol"
    path.write_text("plugin bad\nlet a = x\nlet b = y\n", encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_module(path)
    assert [d.code for d in caught.value.diagnostics] == ["check.unknown-name", "check.unknown-name"]


def test_load_module_returns_the_module_when_it_checks(tmp_path: Path) -> None:
    path = tmp_path / "good.vpol"
    path.write_text("plugin good\nrule r: job_valid(job) = true\n", encoding="utf-8")
    assert load_module(path).name == "good"

"""A rule that fails on the session's values (an index past a list's end, a map's missing key used as a
number, a recursion that never stops) stops the session with one `eval.failed` diagnostic located at the
rule, whichever path called it: the scalar call, a clause, a session constant, a batched node rule, an
order key, or the coverage recorder. Modules are compiled without the checker where the checker would
already refuse them, to reach the run-time path."""
from __future__ import annotations

import pickle
import textwrap
from pathlib import Path

import pytest

from vpolicy.compile.lower import compile_module
from vpolicy.engine import runtime
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.errors import PolicyError
from vpolicy.lang.parse import parse_text
from vpolicy.model.snapshot import ClusterSnapshot
from tests.engine import build

NONE_HELP = ("indexing a map by a key it lacks gives none, as does the root queue's parent; "
             "test 'm[k] != none' first")
INDEX_HELP = "test the length first: if len(xs) > i then xs[i] else ..."


def _policy(tmp_path: Path, body: str) -> CompiledPolicy:
    """A one-tier policy of the module `plugin p` + `body`, written to tmp_path/p.vpol (so a session
    constant's `let` can be found in it)."""
    path = tmp_path / "p.vpol"
    path.write_text("plugin p\n" + textwrap.dedent(body).strip("\n") + "\n", encoding="utf-8")
    module = compile_module(parse_text(path.read_text(encoding="utf-8"), str(path)))
    return CompiledPolicy(("enqueue", "allocate", "backfill"), ((runtime.PluginInstance("p", module, {}),),))


def _cluster(nodes: int = 2) -> ClusterSnapshot:
    """`nodes` nodes and two jobs of one pod each (so that orders compare, and node rules score)."""
    return build.snapshot(nodes=[build.node(f"n{i}") for i in range(nodes)],
                          podgroups=[build.podgroup("a"), build.podgroup("b")],
                          pods=[build.pod("a-0", "a"), build.pod("b-0", "b")])


def _failure(tmp_path: Path, body: str, *, nodes: int = 2) -> tuple[int, int, str, str | None]:
    with pytest.raises(runtime.RuleFailed) as caught:
        run_session(_cluster(nodes), _policy(tmp_path, body))
    [diag] = caught.value.diagnostics
    assert diag.code == "eval.failed" and diag.span is not None
    assert diag.span.file == str(tmp_path / "p.vpol")
    return diag.span.line, diag.span.col, diag.message, diag.help


@pytest.mark.parametrize("body, expected", [
    pytest.param("""
        let xs = [1, 2]
        rule r: job_valid(job) = xs[5] > 0
        """, (3, 1, "rule p.r: list index out of range", INDEX_HELP), id="list-index-past-the-end"),
    pytest.param("""
        rule r: job_valid(job) = job.min_task_member["nope"] > 0
        """, (2, 1, "rule p.r: a value is none where it cannot be: cannot apply '<' to int and none", NONE_HELP),
        id="missing-map-key-compared"),
    pytest.param("""
        rule r: job_order(l, r) = compare(l.ready_count, "a")
        """, (2, 1, "rule p.r: cannot apply '<' to int and string", None), id="compare-without-an-order"),
    pytest.param("""
        let f(x: int): int = if x > 0 then f(x + 1) else 0
        rule r: job_valid(job) = f(1) >= 0
        """, (3, 1, "rule p.r: helper 'f' keeps calling itself (recursion too deep)",
              "give 'f' a case that returns without calling itself"), id="recursion-that-never-ends"),
    pytest.param("""
        let xs = [1, 2]
        rule r: predicate(task, node) = false
            reason "no {xs[7]}"
        """, (3, 1, "rule p.r (reason): list index out of range", INDEX_HELP), id="reason-clause"),
    pytest.param("""
        let xs = [1, 2]
        rule s: node_order(task, node) = 1
            normalize by xs[9]
        """, (3, 1, "rule p.s (normalize): list index out of range", INDEX_HELP), id="normalize-clause"),
    pytest.param("""
        # documented
        let xs = [1, 2][5]
        rule r: job_valid(job) = xs > 0
        """, (3, 1, "let p.xs: list index out of range", INDEX_HELP), id="session-constant"),
    pytest.param("""
        let xs = [1, 2]
        rule o: job_order(l, r) = compare(xs[l.priority + 5], xs[r.priority + 5])
        """, (3, 1, "rule p.o: list index out of range", INDEX_HELP), id="order-key"),
])
def test_a_failing_rule_is_one_located_diagnostic(tmp_path: Path, body: str,
                                                  expected: tuple[int, int, str, str | None]) -> None:
    assert _failure(tmp_path, body) == expected


def test_a_batched_node_rule_fails_at_its_rule(tmp_path: Path) -> None:
    body = 'rule s: predicate(task, node) = get(node.idle, "cpu") + task.name > 0'
    [rule] = _policy(tmp_path, body).tiers[0][0].module.rules["predicate"]
    assert rule.vector is not None  # so that enough nodes take the batched path
    assert _failure(tmp_path, body, nodes=12) == (2, 1, "rule p.s: cannot apply '+' to int and string", None)


def test_a_failing_rule_is_located_while_coverage_is_recorded(tmp_path: Path) -> None:
    with runtime.recording_coverage(runtime.RuleCounts()):
        found = _failure(tmp_path, "let xs = [1, 2]\nrule r: job_valid(job) = xs[5] > 0")
    assert found == (3, 1, "rule p.r: list index out of range", INDEX_HELP)


def test_the_failure_is_a_policy_error_that_crosses_processes(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as caught:
        run_session(_cluster(), _policy(tmp_path, "let xs = [1, 2]\nrule r: job_valid(job) = xs[5] > 0"))
    copy = pickle.loads(pickle.dumps(caught.value))  # simulate --parallel sends it back from a worker
    assert isinstance(copy, runtime.RuleFailed)
    assert copy.diagnostics == caught.value.diagnostics
    assert str(copy) == f"{tmp_path / 'p.vpol'}:3:1: error[eval.failed]: rule p.r: list index out of range ({INDEX_HELP})"


def test_errors_of_the_engine_itself_are_not_taken_for_the_policy_s() -> None:
    assert not issubclass(runtime.RuleFailed, runtime.RULE_FAILURES)
    assert not any(issubclass(KeyboardInterrupt, e) or issubclass(AssertionError, e) for e in runtime.RULE_FAILURES)

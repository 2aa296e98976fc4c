"""Rule coverage of `vpolicy test --coverage`: which rules decided something, which never did and why."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.conftest import CLUSTER, WriteScenario
from vpolicy import cli
from vpolicy.engine import runtime
from vpolicy.engine.session import run_session
from vpolicy.harness import coverage, scenario, testing

MODULE = """\
plugin mine

rule always: predicate(task, node) = true

rule prefers_n2: node_order(task, node) = if node.name == "n2" then 10 else 0

rule by_priority: job_order(l, r) = compare(r.priority, l.priority)

rule victims: preemptable(preemptor, candidates) = candidates
"""
POLICY = """\
policy p

actions enqueue, allocate

tier {
    use "coverage_rules.vpol" {enablePreemptable: false}
}
"""
HEADER = """\
apiVersion: vpolicy/v1
kind: Scenario
name: the pod goes to n2
policy: coverage_policy.vpol
expect:
  binds: {ns/pg-w-0: n2}
"""
SECOND_NODE = """\
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
"""


# The policy loader caches modules by the path as written, so these names are used by no other test.
@pytest.fixture
def suite(write_scenario: WriteScenario) -> str:
    Path("coverage_rules.vpol").write_text(MODULE, encoding="utf-8")
    Path("coverage_policy.vpol").write_text(POLICY, encoding="utf-8")
    return write_scenario(HEADER, cluster=CLUSTER + SECOND_NODE)


def test_uncovered_rules_are_listed_with_their_spans_and_why(suite: str) -> None:
    run = testing.run_paths([suite], coverage=True)
    assert run.ok and run.coverage is not None
    assert coverage.format_text(run.coverage) == (
        "rule coverage: 1 of 4 rules decided something (25%)\n"
        "  coverage_rules.vpol:3:1: mine.always (predicate): called 2 times, never decided\n"
        "  coverage_rules.vpol:7:1: mine.by_priority (job_order): never called\n"
        "  coverage_rules.vpol:9:1: mine.victims (preemptable): switched off (enablePreemptable: false) wherever it was "
        "loaded\n")


def test_coverage_json_gives_every_rule_with_its_counts(suite: str) -> None:
    run = testing.run_paths([suite], coverage=True)
    doc = testing.to_json(run)["coverage"]
    assert doc == {"covered": 1, "total": 4, "rules": [
        {"rule": "mine.always", "callback": "predicate", "file": "coverage_rules.vpol", "line": 3, "col": 1,
         "status": "never-decided", "calls": 2, "decided": 0},
        {"rule": "mine.prefers_n2", "callback": "node_order", "file": "coverage_rules.vpol", "line": 5, "col": 1,
         "status": "decided", "calls": 2, "decided": 1},
        {"rule": "mine.by_priority", "callback": "job_order", "file": "coverage_rules.vpol", "line": 7, "col": 1,
         "status": "never-called", "calls": 0, "decided": 0},
        {"rule": "mine.victims", "callback": "preemptable", "file": "coverage_rules.vpol", "line": 9, "col": 1,
         "status": "switched-off", "calls": 0, "decided": 0}]}


def test_cli_prints_coverage_after_the_summary_only_when_asked(suite: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["test", suite]) == cli.EXIT_OK
    assert capsys.readouterr().out == "PASS  case.yaml: the pod goes to n2\n1 passed, 0 failed\n"
    assert cli.main(["test", suite, "--coverage"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("PASS  case.yaml: the pod goes to n2\n1 passed, 0 failed\n"
                          "rule coverage: 1 of 4 rules decided something (25%)\n")
    assert cli.main(["test", suite, "--coverage", "--output", "json"]) == cli.EXIT_OK
    assert json.loads(capsys.readouterr().out)["coverage"]["covered"] == 1


def test_without_recording_a_runtime_keeps_the_plain_call_path(suite: str) -> None:
    loaded = scenario.load_scenario(suite)
    result = run_session(loaded.cluster, loaded.policy)
    assert "_call" not in vars(result.context.runtime)
    counts = runtime.RuleCounts()
    with runtime.recording_coverage(counts):
        recorded = run_session(loaded.cluster, loaded.policy)
    assert "_call" in vars(recorded.context.runtime)
    assert sum(counts.calls.values()) == recorded.decisions.stats["rule_calls"]


def test_recording_coverage_changes_no_decision_of_the_shipped_scenarios() -> None:
    folders = [testing.default_root() / name for name in ("predicates", "nodeorder", "preempt", "gang")]
    plain = testing.run_paths(folders)
    covered = testing.run_paths(folders, coverage=True)
    assert [_decided(r.document) for r in covered.results] == [_decided(r.document) for r in plain.results]
    assert covered.coverage is not None and covered.coverage.covered


def _decided(document: dict[str, object]) -> dict[str, object]:
    """The decisions, less timings and the solver's note (it lists an unsat core in no fixed order)."""
    pending = document["unschedulable"]
    assert isinstance(pending, dict)
    return document | {"stats": None, "unschedulable": {pod: reasons[0] for pod, reasons in pending.items()}}

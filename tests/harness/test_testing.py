"""Running scenarios: the diff text of a failing expectation, xfail outcomes, the --run filter, the CLI."""
from __future__ import annotations

import json

import pytest

from pathlib import Path

from tests.harness.conftest import WriteScenario
from vpolicy import cli
from vpolicy.harness import scenario, testing
from vpolicy.model.decisions import Decisions, Eviction, PodGroupStatus
from vpolicy.source import Span

DECLARED = str(Path(__file__).parent / "data" / "declared-property.vpol")

HEADER = """\
apiVersion: vpolicy/v1
kind: Scenario
name: {name}
expect:
  binds: {binds}
"""


def decisions() -> Decisions:
    d = Decisions()
    d.binds = {"ns/a": "n2", "ns/c": "n1"}
    d.pipelined = {"ns/d": "n1"}
    d.evictions = [Eviction("ns/v", "preempt", "ns/pg", "gang.vpol:3")]
    d.podgroups = {"ns/pg": PodGroupStatus("Inqueue")}
    d.unschedulable = {"ns/b": ["0/1 nodes are unavailable: 1 Insufficient cpu."]}
    return d


def test_every_kind_of_mismatch_is_shown_with_what_actually_happened() -> None:
    expect = scenario.Expect(
        binds={"ns/a": "n1", "ns/b": "n1", "ns/d": "n1"},
        evictions=("ns/w",),
        podgroups={"ns/pg": "Running"},
        unschedulable_reasons={"ns/b": "Insufficient memory"},
        spans={"binds": Span("case.yaml", 5, 3)},
    )
    assert testing.compare(expect, decisions()) == [
        ("  expect.binds (case.yaml:5:3):\n"
         "    ~ ns/a -> n1: wrong node, bound to n2\n"
         "    - ns/b -> n1: missing (actually pending: 0/1 nodes are unavailable: 1 Insufficient cpu.)\n"
         "    - ns/d -> n1: missing (actually pipelined to n1)\n"
         "    + ns/c -> n1: unexpected"),
        ("  expect.evictions:\n"
         "    - ns/w: not evicted (actually untouched by the session)\n"
         "    + ns/v: evicted by preempt for ns/pg, unexpected"),
        ("  expect.podgroups:\n"
         "    ~ ns/pg: expected Running, got Inqueue"),
        ("  expect.unschedulable_reasons:\n"
         "    ~ ns/b: no reason contains 'Insufficient memory'; reasons: 0/1 nodes are unavailable: 1 Insufficient "
         "cpu."),
    ]


@pytest.mark.parametrize("expect", [
    pytest.param(scenario.Expect(binds_include={"ns/c": "n1"}), id="binds-include-ignores-other-binds"),
    pytest.param(scenario.Expect(binds_exclude=("ns/b",)), id="binds-exclude"),
    pytest.param(scenario.Expect(pipelined={"ns/d": "n1"}), id="pipelined-exact"),
    pytest.param(scenario.Expect(evictions_include=("ns/v",)), id="evictions-include"),
    pytest.param(scenario.Expect(unschedulable=("ns/b",)), id="unschedulable"),
])
def test_expectations_that_hold_give_no_failure(expect: scenario.Expect) -> None:
    assert testing.compare(expect, decisions()) == []


def test_bind_count_counts_the_session_binds_whichever_pods() -> None:
    binds = decisions().binds
    assert testing.compare(scenario.Expect(bind_count=len(binds)), decisions()) == []
    listed = ", ".join(f"{pod} -> {node}" for pod, node in sorted(binds.items()))
    assert testing.compare(scenario.Expect(bind_count=len(binds) + 1), decisions()) == [
        f"  expect.bind_count:\n    ~ {len(binds)} pods bound, expected {len(binds) + 1} (bound: {listed})"]


def test_binds_exclude_names_the_pod_that_was_bound() -> None:
    assert testing.compare(scenario.Expect(binds_exclude=("ns/a",)), decisions()) == [
        "  expect.binds_exclude:\n    + ns/a -> n2: bound, but must not be"]


def test_a_failing_scenario_file_reports_its_diff(write_scenario: WriteScenario) -> None:
    path = write_scenario(HEADER.format(name="wrong node", binds="{ns/pg-w-0: n9}"), cluster=_two_nodes())
    result = testing.run_scenario(scenario.load_scenario(path))
    assert (result.outcome, result.failures) == ("fail", [
        "  expect.binds (case.yaml:5:3):\n    ~ ns/pg-w-0 -> n9: wrong node, bound to n1"])
    assert result.document["binds"] == {"ns/pg-w-0": "n1"}
    assert result.message().startswith("case.yaml: wrong node\n")


@pytest.mark.parametrize("binds, outcome", [
    pytest.param("{ns/pg-w-0: n1}", "xpass", id="xfail-that-passes-is-xpass"),
    pytest.param("{}", "xfail", id="xfail-that-fails-is-xfail"),
])
def test_xfail_scenarios_are_strict(write_scenario: WriteScenario, binds: str, outcome: str) -> None:
    path = write_scenario(HEADER.format(name="x", binds=binds) + 'xfail: "engine bug: example"\n')
    result = testing.run_scenario(scenario.load_scenario(path))
    assert (result.outcome, result.ok) == (outcome, outcome == "xfail")


@pytest.mark.parametrize("run, selected", [
    pytest.param(None, ["alpha one", "beta two", "gamma"], id="no-filter"),
    pytest.param("two", ["beta two"], id="substring-of-name"),
    pytest.param("^(alpha|gamma)", ["alpha one", "gamma"], id="regex-on-name"),
    pytest.param("sub/", ["gamma"], id="path"),
    pytest.param("alpha (", [], id="invalid-regex-is-a-substring"),
])
def test_run_filter_matches_name_or_path(write_scenario: WriteScenario, run: str | None,
                                         selected: list[str]) -> None:
    write_scenario(HEADER.format(name="alpha one", binds="{ns/pg-w-0: n1}"), name="tests/a.yaml")
    write_scenario(HEADER.format(name="beta two", binds="{ns/pg-w-0: n1}"), name="tests/b.yaml")
    write_scenario(HEADER.format(name="gamma", binds="{ns/pg-w-0: n1}"), name="tests/sub/c.yaml")
    run_result = testing.run_paths(["tests"], run=run)
    assert [r.name for r in run_result.results] == selected
    assert run_result.errors == []


def test_cli_prints_pass_fail_and_a_summary_and_exits_2_on_failure(
        write_scenario: WriteScenario, capsys: pytest.CaptureFixture[str]) -> None:
    write_scenario(HEADER.format(name="binds", binds="{ns/pg-w-0: n1}"), name="t/ok.yaml")
    write_scenario(HEADER.format(name="binds nothing", binds="{}"), name="t/bad.yaml")
    assert cli.main(["test", "t"]) == cli.EXIT_FAILED
    assert capsys.readouterr().out == (
        "FAIL  t/bad.yaml: binds nothing\n"
        "  expect.binds (t/bad.yaml:5:3):\n"
        "    + ns/pg-w-0 -> n1: unexpected\n"
        "PASS  t/ok.yaml: binds\n"
        "1 passed, 1 failed\n")
    assert cli.main(["test", "t", "--run", "^binds$"]) == cli.EXIT_OK
    assert capsys.readouterr().out.endswith("1 passed, 0 failed\n")


def test_cli_json_output(write_scenario: WriteScenario, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_scenario(HEADER.format(name="binds", binds="{ns/pg-w-0: n1}"))
    assert cli.main(["test", path, "--output", "json"]) == cli.EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"] == {"passed": 1, "failed": 0, "xfailed": 0, "xpassed": 0, "errors": 0}
    assert doc["results"][0]["outcome"] == "pass"


def test_cli_exits_1_on_a_bad_scenario_file(write_scenario: WriteScenario, capsys: pytest.CaptureFixture[str]) -> None:
    write_scenario("apiVersion: vpolicy/v1\nkind: Scenario\nname: x\nexpect: {bind: {}}\n", name="t/bad.yaml")
    assert cli.main(["test", "t"]) == cli.EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert captured.err == ("t/bad.yaml:4:10: error[scenario.unknown-key]: unknown key 'expect.bind' "
                            "(did you mean 'binds'?)\n")
    assert captured.out == "0 passed, 0 failed, 1 error\n"


def test_cli_exits_1_for_a_missing_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["test", "no/such/dir"]) == cli.EXIT_BAD_INPUT
    assert "error[scenario.missing-file]: no such file or folder: no/such/dir" in capsys.readouterr().err


def _two_nodes() -> str:
    from tests.harness.conftest import CLUSTER

    return CLUSTER + """\
---
apiVersion: v1
kind: Node
metadata: {name: n9}
status:
  allocatable: {cpu: "1", memory: 1Gi, pods: "110"}
"""


def test_a_scenario_that_breaks_a_declared_property_fails(write_scenario: WriteScenario) -> None:
    # declared-property.vpol says `nothing_ready` (false on purpose: allocate binds the pod) and
    # `within_capability` (true); the scenario's own expectations all hold.
    header = HEADER.format(name="breaks a property", binds="{ns/pg-w-0: n1}") + f"policy: {DECLARED}\n"
    result = testing.run_scenario(scenario.load_scenario(write_scenario(header)))
    assert result.outcome == "fail"
    assert len(result.failures) == 1
    assert result.failures[0].startswith("  property nothing_ready (")
    assert result.failures[0].endswith(
        "declared-property.vpol:19):\n    property nothing_ready held when the session opened and is false after it")


def test_module_properties_are_checked_after_every_scenario(write_scenario: WriteScenario) -> None:
    # pdb's `budgets_kept` holds here (no budgets), so a passing scenario stays passing with it on.
    header = HEADER.format(name="pdb on", binds="{ns/pg-w-0: n1}") + (
        'conf: |\n  actions: "allocate"\n  tiers:\n  - plugins:\n    - name: pdb\n    - name: predicates\n')
    result = testing.run_scenario(scenario.load_scenario(write_scenario(header)))
    assert (result.outcome, result.failures) == ("pass", [])

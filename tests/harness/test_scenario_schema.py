"""The scenario header is checked strictly: every mistake has a code, a position and a help line.

Each case pins the code, the line and column, the message and the help of every diagnostic, in the
order they are reported (sorted by position).
"""
from __future__ import annotations

import pytest

from tests.harness.conftest import WriteScenario
from vpolicy.errors import PolicyError
from vpolicy.harness import scenario

Pinned = tuple[str, int, int, str, str | None]


def diagnostics_of(path: str) -> list[Pinned]:
    with pytest.raises(PolicyError) as caught:
        scenario.load_scenario(path)
    return [(d.code, d.span.line if d.span else 0, d.span.col if d.span else 0, d.message, d.help)
            for d in caught.value.diagnostics]


EXPECT_KEYS_TEXT = ("binds, binds_include, binds_exclude, bound, bind_count, pipelined, pipelined_include, nominated, "
                    "evictions, evictions_include, podgroups, unschedulable, unschedulable_reasons")


@pytest.mark.parametrize("header, expected", [
    pytest.param("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        expext:
          binds: {}
        """, [
        ("scenario.missing-key", 1, 1, "missing expect",
         f"add expect: with at least one of {EXPECT_KEYS_TEXT}"),
        ("scenario.unknown-key", 4, 1, "unknown key 'expext'", "did you mean 'expect'?"),
    ], id="misspelt-top-level-key"),
    pytest.param("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        expect:
          bind: {ns/pg-w-0: n1}
        """, [
        ("scenario.unknown-key", 5, 3, "unknown key 'expect.bind'", "did you mean 'binds'?"),
    ], id="misspelt-expectation"),
    pytest.param("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        expect:
          binds: [ns/pg-w-0]
        """, [
        ("scenario.wrong-type", 5, 10, "expect.binds must be a mapping, got a list",
         "write binds: {namespace/pod: node}, or {} for none"),
    ], id="binds-given-a-list"),
    pytest.param("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        expect:
          bind_count: two
        """, [
        ("scenario.wrong-type", 5, 15, "expect.bind_count must be a count (0 or more), got 'two'",
         "write bind_count: 3"),
    ], id="bind-count-given-text"),
    pytest.param("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: 3
        expect: {binds: {}}
        """, [
        ("scenario.wrong-type", 3, 7, "name must be a string, got a number (3)",
         "quote the value: YAML reads unquoted numbers, booleans and null as other types"),
    ], id="name-is-a-number"),
    pytest.param("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        expect: {binds: {}}
        """, [
        ("scenario.missing-key", 1, 1, "missing name", "add name: <one line saying what Volcano does>"),
    ], id="missing-name"),
    pytest.param("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        expect: {}
        """, [
        ("scenario.missing-key", 4, 1, "expect lists no expectation", f"add at least one of {EXPECT_KEYS_TEXT}"),
    ], id="empty-expect"),
    pytest.param("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        conf: |
          actions: "allocate"
        policy: p.vpol
        expect: {binds: {}}
        """, [
        ("scenario.conflicting-keys", 6, 1, "policy conflicts with conf: a scenario runs one policy",
         "keep one of conf, policy"),
    ], id="conf-and-policy"),
    pytest.param("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        expect:
          binds: {pg-w-0: n1}
        """, [
        ("scenario.bad-value", 5, 11, "expect.binds: pod 'pg-w-0' must be written namespace/name",
         "e.g. default/pg-w-0"),
    ], id="pod-without-namespace"),
    pytest.param("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        expect:
          podgroups: {ns/pg: Runing}
        """, [
        ("scenario.bad-value", 5, 22, "expect.podgroups.ns/pg: unknown phase 'Runing'", "did you mean 'Running'?"),
    ], id="misspelt-phase"),
    pytest.param("""\
        apiVersion: vpolicy/v2
        kind: Scenario
        name: x
        xfail: ""
        expect: {binds: {}}
        """, [
        ("scenario.bad-value", 1, 13, "apiVersion must be vpolicy/v1, got vpolicy/v2", "write apiVersion: vpolicy/v1"),
        ("scenario.bad-value", 4, 8, "xfail must say why the scenario is known to fail",
         'write e.g. xfail: "engine bug: ..."'),
    ], id="wrong-api-version-and-empty-xfail"),
    pytest.param("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        expect:
          binds: {ns/pg-w-1: n1}
          pipelined: {ns/pg-w-0: n2}
        """, [
        ("scenario.unknown-object", 5, 11, "expect.binds: no pod ns/pg-w-1 in the cluster", "did you mean 'ns/pg-w-0'?"),
        ("scenario.unknown-object", 6, 26, "expect.pipelined: no node n2 in the cluster",
         "add the node to the cluster documents of this file"),
    ], id="pod-and-node-not-in-cluster"),
    pytest.param("", [
        ("scenario.misplaced-header", 2, 1, "the first document of a scenario must be its header (kind: Scenario)",
         ("start the file with apiVersion: vpolicy/v1, kind: Scenario, name and expect, then `---` and the cluster "
          "objects")),
    ], id="no-header"),
])
def test_header_mistakes_are_pinned(write_scenario: WriteScenario, header: str, expected: list[Pinned]) -> None:
    assert diagnostics_of(write_scenario(header)) == expected


def test_an_inline_conf_error_points_into_the_scenario_file(write_scenario: WriteScenario) -> None:
    path = write_scenario("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        conf: |
          actions: "allocate"
          tier:
          - plugins: [{name: gang}]
        expect: {binds: {}}
        """)
    assert diagnostics_of(path) == [
        ("conf.unknown-key", 6, 3, "unknown key 'tier' in the scheduler conf", "did you mean 'tiers'?"),
    ]


def test_a_rendered_header_error_quotes_the_line_with_a_caret(write_scenario: WriteScenario) -> None:
    path = write_scenario("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        expect:
          binds_includ: {ns/pg-w-0: n1}
        """)
    with pytest.raises(PolicyError) as caught:
        scenario.load_scenario(path)
    assert caught.value.diagnostics[0].render() == (
        "case.yaml:5:3: error[scenario.unknown-key]: unknown key 'expect.binds_includ'\n"
        "    5 |   binds_includ: {ns/pg-w-0: n1}\n"
        "      |   ^^^^^^^^^^^^\n"
        "   help: did you mean 'binds_include'?")


def test_a_valid_header_is_read_with_its_policy_choice_and_xfail(write_scenario: WriteScenario) -> None:
    path = write_scenario("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: one pod, one node
        xfail: "engine bug: none, this is a test"
        conf: |
          actions: "allocate"
          tiers:
          - plugins: [{name: gang}]
        expect:
          binds: {ns/pg-w-0: n1}
          unschedulable: []
        """)
    loaded = scenario.load_scenario(path)
    assert (loaded.name, loaded.xfail) == ("one pod, one node", "engine bug: none, this is a test")
    assert loaded.expect.binds == {"ns/pg-w-0": "n1"}
    assert loaded.expect.unschedulable == ()
    assert (loaded.header.policy.kind, loaded.header.policy.line_offset) == ("conf", 5)
    assert loaded.policy.actions == ("allocate",)
    assert loaded.warnings == ()  # the loader's "ignoring kind Scenario" is dropped


def test_conf_file_is_relative_to_the_scenario_file(write_scenario: WriteScenario) -> None:
    path = write_scenario("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        conf_file: ../confs/allocate-only.conf
        expect: {binds: {}}
        """, name="tests/case.yaml")
    conf = write_scenario('actions: "allocate"\ntiers:\n- plugins: [{name: gang}]\n', name="confs/allocate-only.conf",
                          cluster="")
    loaded = scenario.load_scenario(path)
    assert (loaded.header.policy.kind, loaded.header.policy.path) == ("conf_file", "tests/../" + conf)
    assert loaded.policy.actions == ("allocate",)


def test_a_missing_conf_file_is_reported_where_it_is_named(write_scenario: WriteScenario) -> None:
    path = write_scenario("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: x
        conf_file: nope.conf
        expect: {binds: {}}
        """)
    assert diagnostics_of(path) == [
        ("scenario.missing-file", 4, 12, "conf_file: no such file: nope.conf (looked for nope.conf)",
         "paths are relative to the folder of the scenario file"),
    ]

"""`vpolicy check`: cross-object checks on cluster manifests, flags without rules, kinds of files, output."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from vpolicy import cli
from vpolicy.harness import check
from vpolicy.harness.policy import policy_root

REPO = policy_root().parent


def _queue(name: str, spec: str) -> str:
    return textwrap.dedent(f"""\
        ---
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata:
          name: {name}
        spec:
        """) + textwrap.indent(textwrap.dedent(spec), "  ")


def _podgroup(name: str, queue: str) -> str:
    return textwrap.dedent(f"""\
        ---
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata: {{name: {name}, namespace: ns}}
        spec: {{queue: {queue}, minMember: 1}}
        """)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in a temporary folder so spans render as short relative names."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _write(name: str, text: str) -> str:
    Path(name).write_text(text, encoding="utf-8")
    return name


def _rendered(paths: list[str]) -> list[str]:
    return [d.render() for d in check.check_paths(paths).diagnostics]


# queues ----------------------------------------------------------------------------------------------------
def test_a_guarantee_above_deserved_points_at_the_guarantee_with_a_note_at_the_deserved(in_tmp: Path) -> None:
    _write("q.yaml", _queue("q1", """\
        deserved: {cpu: "2"}
        guarantee:
          resource: {cpu: "4", memory: 1Gi}
        """))
    [diag] = check.check_paths(["q.yaml"]).diagnostics
    assert (diag.code, str(diag.span)) == ("check.queue-bounds-order", "q.yaml:9:21")
    assert diag.render() == (
        "q.yaml:9:21: error[check.queue-bounds-order]: queue 'q1': guarantee cpu 4 is above deserved cpu 2\n"
        '    9 |     resource: {cpu: "4", memory: 1Gi}\n'
        "      |                     ^^^\n"
        "   help: Volcano requires guarantee <= deserved <= capability for each resource; lower the guarantee or "
        "raise the deserved\n"
        "   note: q.yaml:7:19: deserved cpu is set here")


@pytest.mark.parametrize("spec, message", [
    pytest.param('capability: {memory: 1Gi}\ndeserved: {memory: 2Gi}\n',
                 "queue 'q1': deserved memory 2Gi is above capability memory 1Gi", id="deserved-over-capability"),
    pytest.param('capability: {cpu: 500m}\nguarantee:\n  resource: {cpu: "1"}\n',
                 "queue 'q1': guarantee cpu 1 is above capability cpu 500m", id="guarantee-over-capability"),
    pytest.param('capability: {nvidia.com/gpu: "2"}\ndeserved: {nvidia.com/gpu: "3"}\n',
                 "queue 'q1': deserved nvidia.com/gpu 3 is above capability nvidia.com/gpu 2", id="extended-resource"),
])
def test_each_pair_of_bounds_is_ordered_per_resource(in_tmp: Path, spec: str, message: str) -> None:
    _write("q.yaml", _queue("q1", spec))
    assert [(d.code, d.message) for d in check.check_paths(["q.yaml"]).diagnostics] == [
        ("check.queue-bounds-order", message)]


def test_bounds_on_different_resources_are_not_compared(in_tmp: Path) -> None:
    _write("q.yaml", _queue("q1", 'capability: {cpu: "1"}\ndeserved: {memory: 8Gi}\nguarantee:\n'
                                  '  resource: {nvidia.com/gpu: "1"}\n'))
    assert check.check_paths(["q.yaml"]).diagnostics == []


def test_children_whose_deserved_add_up_above_the_parent_are_reported_at_the_parent(in_tmp: Path) -> None:
    _write("q.yaml", _queue("research", 'deserved: {cpu: "10"}\n')
           + _queue("nlp", 'parent: research\ndeserved: {cpu: "6"}\n')
           + _queue("vision", 'parent: research\ndeserved: {cpu: "6"}\n'))
    assert _rendered(["q.yaml"]) == [
        "q.yaml:7:19: error[check.children-over-parent]: queue 'research': its children's deserved cpu add up to "
        "12, above its own 10\n"
        '    7 |   deserved: {cpu: "10"}\n'
        "      |                   ^^^^\n"
        "   help: Volcano requires the children's deserved to fit in the parent's; lower a child's or raise the "
        "parent's\n"
        "   note: q.yaml:15:19: queue 'nlp': deserved cpu 6\n"
        "   note: q.yaml:23:19: queue 'vision': deserved cpu 6"]


def test_children_guarantees_are_summed_too_and_an_unset_parent_bound_is_not_compared(in_tmp: Path) -> None:
    _write("q.yaml", _queue("p", 'guarantee:\n  resource: {cpu: "1"}\n')
           + _queue("c1", 'parent: p\nguarantee:\n  resource: {cpu: "1", memory: 1Gi}\n')
           + _queue("c2", 'parent: p\nguarantee:\n  resource: {cpu: "1"}\n'))
    assert [(d.code, d.message, str(d.span)) for d in check.check_paths(["q.yaml"]).diagnostics] == [
        ("check.children-over-parent", "queue 'p': its children's guarantee cpu add up to 2, above its own 1",
         "q.yaml:8:21")]


def test_a_child_capability_above_an_ancestors_is_reported_at_the_child(in_tmp: Path) -> None:
    _write("q.yaml", _queue("top", 'capability: {cpu: "8"}\n')
           + _queue("mid", 'parent: top\n')
           + _queue("leaf", 'parent: mid\ncapability: {cpu: "16"}\n'))
    [diag] = check.check_paths(["q.yaml"]).diagnostics
    assert diag.render() == (
        "q.yaml:22:21: error[check.capability-over-parent]: queue 'leaf': capability cpu 16 is above capability "
        "cpu 8 of its ancestor 'top'\n"
        '   22 |   capability: {cpu: "16"}\n'
        "      |                     ^^^^\n"
        "   help: a queue can never use more than its ancestors allow; lower this capability\n"
        "   note: q.yaml:7:21: queue 'top': capability cpu")


def test_a_missing_parent_queue_suggests_the_closest_name(in_tmp: Path) -> None:
    _write("q.yaml", _queue("research", "weight: 1\n") + _queue("nlp", "parent: reserch\n"))
    assert _rendered(["q.yaml"]) == [
        "q.yaml:14:11: error[check.missing-parent-queue]: queue 'nlp' names parent 'reserch', which does not exist\n"
        "   14 |   parent: reserch\n"
        "      |           ^^^^^^^\n"
        "   help: did you mean 'research'?"]


def test_a_loop_of_parents_is_reported_once_at_the_first_queue_of_the_loop(in_tmp: Path) -> None:
    _write("q.yaml", _queue("a", "parent: b\n") + _queue("b", "parent: a\n"))
    assert [(d.code, d.message, str(d.span)) for d in check.check_paths(["q.yaml"]).diagnostics] == [
        ("check.queue-cycle", "queue 'a' is its own ancestor: a -> b -> a", "q.yaml:7:11")]


def test_a_root_queue_whose_parent_leads_back_to_it_is_a_loop(in_tmp: Path) -> None:
    _write("q.yaml", _queue("root", "parent: q\n") + _queue("q", "parent: root\n"))
    assert [(d.code, d.message, str(d.span), d.help) for d in check.check_paths(["q.yaml"]).diagnostics] == [
        ("check.queue-cycle", "queue 'root' is its own ancestor: root -> q -> root", "q.yaml:7:11",
         "root is the top of the queue tree: remove its spec.parent")]


# podgroups and pods -----------------------------------------------------------------------------------------
def test_a_podgroup_in_a_missing_queue_suggests_the_closest_name(in_tmp: Path) -> None:
    _write("c.yaml", _queue("vision", "weight: 1\n") + _podgroup("pg", "visoin"))
    assert _rendered(["c.yaml"]) == [
        "c.yaml:12:15: error[check.missing-queue]: podgroup ns/pg names queue 'visoin', which does not exist; "
        "Volcano never schedules it\n"
        "   12 | spec: {queue: visoin, minMember: 1}\n"
        "      |               ^^^^^^\n"
        "   help: did you mean 'vision'?"]


def test_a_podgroup_in_a_queue_with_children_is_a_job_in_a_non_leaf_queue(in_tmp: Path) -> None:
    _write("c.yaml", _queue("research", "weight: 1\n") + _queue("nlp", "parent: research\n")
           + _podgroup("pg", "research"))
    assert _rendered(["c.yaml"]) == [
        "c.yaml:19:15: error[check.job-in-non-leaf-queue]: podgroup ns/pg is in queue 'research', which has child "
        "queues (nlp); jobs may only be submitted to leaf queues\n"
        "   19 | spec: {queue: research, minMember: 1}\n"
        "      |               ^^^^^^^^\n"
        "   help: submit it to one of nlp\n"
        "   note: c.yaml:5:9: queue 'research'"]


def test_a_podgroup_in_root_is_in_a_non_leaf_queue(in_tmp: Path) -> None:
    _write("c.yaml", _podgroup("pg", "root"))
    assert [(d.code, d.message) for d in check.check_paths(["c.yaml"]).diagnostics] == [
        ("check.job-in-non-leaf-queue", "podgroup ns/pg is in queue 'root', which has child queues (default); jobs "
                                        "may only be submitted to leaf queues")]


def test_a_vcjob_naming_a_missing_queue_points_at_its_spec_queue(in_tmp: Path) -> None:
    _write("j.yaml", textwrap.dedent("""\
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: train, namespace: ns}
        spec:
          queue: nowhere
          minAvailable: 1
          tasks:
          - name: w
            replicas: 1
            template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
        """))
    assert [(d.code, str(d.span)) for d in check.check_paths(["j.yaml"]).diagnostics] == [
        ("check.missing-queue", "j.yaml:5:10")]


def test_a_pod_naming_a_missing_podgroup_points_at_its_annotation(in_tmp: Path) -> None:
    _write("c.yaml", _podgroup("train", "default") + textwrap.dedent("""\
        ---
        apiVersion: v1
        kind: Pod
        metadata:
          name: p1
          namespace: ns
          annotations: {scheduling.k8s.io/group-name: trian}
        spec:
          containers: [{name: c, resources: {requests: {cpu: "1"}}}]
        """))
    assert _rendered(["c.yaml"]) == [
        "c.yaml:12:47: error[check.missing-podgroup]: pod ns/p1 belongs to podgroup 'trian', which does not exist "
        "in namespace 'ns'; Volcano never schedules it\n"
        "   12 |   annotations: {scheduling.k8s.io/group-name: trian}\n"
        "      |                                               ^^^^^\n"
        "   help: did you mean 'train'?"]


def test_manifests_given_together_are_checked_as_one_cluster(in_tmp: Path) -> None:
    _write("queues.yaml", _queue("team", "weight: 1\n"))
    _write("jobs.yaml", _podgroup("pg", "team"))
    assert check.check_paths(["queues.yaml", "jobs.yaml"]).diagnostics == []
    assert [d.code for d in check.check_paths(["jobs.yaml"]).diagnostics] == ["check.missing-queue"]


def test_loader_errors_come_before_any_cross_object_check(in_tmp: Path) -> None:
    _write("c.yaml", _queue("q1", 'deserved: {cpu: "2x"}\n') + _podgroup("pg", "nowhere"))
    assert [d.code for d in check.check_paths(["c.yaml"]).diagnostics] == ["load.bad-quantity"]


def test_loader_warnings_are_located_warnings(in_tmp: Path) -> None:
    _write("c.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    [diag] = check.check_paths(["c.yaml"]).diagnostics
    assert (diag.code, diag.severity, str(diag.span), diag.message) == (
        "load.warning", "warning", "c.yaml:2:1", "ignoring kind Deployment (not used for scheduling)")


# confs and policies -----------------------------------------------------------------------------------------
CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
    enableJobOrder: false
    enablePredicate: false
  - name: gang
    enableBestNode: true
"""


def test_a_flag_for_a_callback_the_plugin_has_no_rule_for_is_a_warning_at_the_flag(in_tmp: Path) -> None:
    _write("c.conf", CONF)
    run = check.check_paths(["c.conf"])
    assert [d.render().replace(str(policy_root()), "POLICIES") for d in run.diagnostics] == [
        "c.conf:6:5: warning[check.flag-without-rule]: plugin 'priority' has no predicate rule, so "
        "'enablePredicate' has no effect\n"
        "    6 |     enablePredicate: false\n"
        "      |     ^^^^^^^^^^^^^^^\n"
        "   help: remove the flag, or add a `predicate` rule to POLICIES/volcano/priority.vpol\n"
        "   note: c.conf:4:11: plugin 'priority' is here",
        "c.conf:8:5: warning[check.flag-without-rule]: 'enableBestNode' switches a callback vpolicy does not "
        "implement; it has no effect on plugin 'gang'\n"
        "    8 |     enableBestNode: true\n"
        "      |     ^^^^^^^^^^^^^^\n"
        "   help: remove the flag (Volcano accepts it on any plugin)\n"
        "   note: c.conf:7:11: plugin 'gang' is here"]
    assert run.errors == 0


def test_a_flag_in_a_policy_use_is_checked_against_the_used_module(in_tmp: Path) -> None:
    _write("flags_policy.vpol", 'policy p\n\nactions allocate\n\ntier {\n    use "volcano/priority.vpol" '
                     '{enableJobOrder: false, enablePredicate: false}\n}\n')
    assert [(d.code, str(d.span), d.message) for d in check.check_paths(["flags_policy.vpol"]).diagnostics] == [
        ("check.flag-without-rule", "flags_policy.vpol:6:57",
         "plugin 'priority' has no predicate rule, so 'enablePredicate' has no effect")]


def test_a_conf_in_a_configmap_of_a_dump_is_checked_where_it_is_written(in_tmp: Path) -> None:
    _write("c.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vc, namespace: volcano-system}\ndata:\n"
                     "  volcano-scheduler.conf: |\n" + textwrap.indent(CONF, "    ")
           + "---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1'}}\n")
    assert check.file_kind("c.yaml") == "cluster"
    assert [(d.code, str(d.span)) for d in check.check_paths(["c.yaml"]).diagnostics] == [
        ("check.flag-without-rule", "c.yaml:11:9"), ("check.flag-without-rule", "c.yaml:13:9")]


def test_an_unknown_plugin_or_flag_in_a_conf_is_an_error(in_tmp: Path) -> None:
    _write("c.conf", 'actions: "allocate"\ntiers:\n- plugins:\n  - name: numaaware\n  - name: gang\n'
                     '    enableJobRedy: true\n')
    assert [(d.code, str(d.span), d.help) for d in check.check_paths(["c.conf"]).diagnostics] == [
        ("conf.unknown-plugin", "c.conf:4:11", "did you mean 'numa-aware'?"),
        ("conf.unknown-flag", "c.conf:6:5", "did you mean 'enableJobReady'?")]


def test_a_policy_file_reports_checker_errors_with_their_spans(in_tmp: Path) -> None:
    _write("m.vpol", "plugin m\n\nrule r: job_valid(job) = job.minAvaliable > 0\n")
    [diag] = check.check_paths(["m.vpol"]).diagnostics
    assert (diag.code, str(diag.span), diag.help) == ("check.unknown-attribute", "m.vpol:3:30",
                                                      "did you mean 'min_available'?")


def test_a_policy_that_is_not_utf8_is_located_and_the_other_files_are_still_checked(in_tmp: Path) -> None:
    Path("latin1.vpol").write_bytes(b'plugin p\nlet a = "caf\xe9"\n')
    Path("latin1.conf").write_bytes(b'actions: allocate\n# caf\xe9\n')
    _write("typo.vpol", 'plugin p\nrule r: job_valid(job) = 1 + "a"\n')
    run = check.check_paths(["latin1.vpol", "latin1.conf", "typo.vpol"])
    assert [(d.code, str(d.span)) for d in run.diagnostics] == [
        ("conf.unreadable", "latin1.conf:2:6"), ("input.unreadable", "latin1.vpol:2:13"),
        ("check.type-mismatch", "typo.vpol:2:26")]
    assert _rendered(["latin1.vpol"]) == [
        "latin1.vpol:2:13: error[input.unreadable]: cannot read latin1.vpol: not UTF-8 text (byte 0xe9: invalid "
        "continuation byte)\n"
        '    2 | let a = "caf\ufffd"\n'
        "      |             ^\n"
        "   help: policy files are UTF-8 text; convert it, e.g. with iconv -f latin1 -t utf-8"]


def test_a_used_module_that_cannot_be_read_is_located_with_a_note_at_the_use(in_tmp: Path) -> None:
    _write("p.vpol", 'policy p\ntier { use "m.vpol" }\n')
    Path("m.vpol").write_bytes(b"plugin m\n# \xff\n")
    (diag,) = check.check_paths(["p.vpol"]).diagnostics
    assert (diag.code, str(diag.span), [(str(s), note) for s, note in diag.related]) == (
        "input.unreadable", f"{in_tmp / 'm.vpol'}:2:3", [("p.vpol:2:8", "used here")])


def test_a_scenario_file_is_checked_as_vpolicy_test_reads_it(in_tmp: Path) -> None:
    _write("s.yaml", "apiVersion: vpolicy/v1\nkind: Scenario\nname: x\nexpect: {bind: {}}\n")
    assert [(d.code, str(d.span), d.help) for d in check.check_paths(["s.yaml"]).diagnostics] == [
        ("scenario.unknown-key", "s.yaml:4:10", "did you mean 'binds'?")]


@pytest.mark.parametrize("text, name, kind", [
    pytest.param("plugin x\n", "a.vpol", "policy", id="vpol"),
    pytest.param("actions: allocate\n", "a.conf", "conf", id="conf-suffix"),
    pytest.param("actions: allocate\ntiers: []\n", "a.yaml", "conf", id="conf-yaml"),
    pytest.param("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {volcano-scheduler.conf: 'x'}\n",
                 "a.yaml", "conf", id="configmap-only"),
    pytest.param("apiVersion: vpolicy/v1\nkind: Scenario\n", "a.yaml", "scenario", id="scenario"),
    pytest.param("# a comment\n---\napiVersion: vpolicy/v1\nkind: 'Scenario'\n---\nkind: Node\n", "a.yaml",
                 "scenario", id="scenario-after-an-empty-document"),
    pytest.param('{"kind": "List", "apiVersion": "v1", "items": []}', "a.json", "cluster", id="json"),
    pytest.param("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n", "a.yaml", "cluster", id="cluster"),
    pytest.param("key: [unclosed\n", "a.yaml", "cluster", id="bad-yaml-goes-to-the-cluster-loader"),
])
def test_the_kind_of_a_file_is_told_by_its_content(in_tmp: Path, text: str, name: str, kind: str) -> None:
    _write(name, text)
    assert check.file_kind(name) == kind


# the command ------------------------------------------------------------------------------------------------
def test_the_shipped_policies_check_clean_and_the_examples_without_errors() -> None:
    # Every scenario under policies/tests is loaded by tests/test_scenarios.py; the modules are checked here.
    library = check.check_paths(sorted(str(p) for p in (REPO / "policies").rglob("*.vpol")))
    assert [d.one_line() for d in library.diagnostics] == []
    assert len(library.files) >= 10
    examples = check.check_paths([str(REPO / "examples")])
    assert [d.one_line() for d in examples.diagnostics if d.severity == "error" or d.code.startswith("check.")] == []


def test_cli_prints_diagnostics_sorted_by_location_then_a_summary_and_exits_1(
        in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write("b.yaml", _podgroup("pg", "nowhere"))
    _write("a.vpol", "plugin m\n\nrule r: job_valid(job) = job.nope\n")
    assert cli.main(["check", "b.yaml", "a.vpol"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.index("a.vpol:3:") < err.index("b.yaml:5:")
    assert err.endswith("2 file(s) checked: 2 error(s), 0 warning(s)\n")


def test_cli_json_output_has_every_field_an_editor_needs(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write("q.yaml", _queue("research", 'deserved: {cpu: "1"}\n') + _queue("nlp", 'parent: research\n'
                                                                                'deserved: {cpu: "2"}\n'))
    assert cli.main(["check", "q.yaml", "--output", "json"]) == cli.EXIT_BAD_INPUT
    assert json.loads(capsys.readouterr().out) == {
        "files": ["q.yaml"], "errors": 1, "warnings": 0,
        "diagnostics": [{
            "code": "check.children-over-parent", "severity": "error",
            "message": "queue 'research': its children's deserved cpu add up to 2, above its own 1",
            "file": "q.yaml", "line": 7, "col": 19, "end_line": 7, "end_col": 21,
            "help": "Volcano requires the children's deserved to fit in the parent's; lower a child's or raise the "
                    "parent's",
            "related": [{"file": "q.yaml", "line": 15, "col": 19, "message": "queue 'nlp': deserved cpu 2"}]}]}


def test_cli_exits_0_when_only_warnings_are_found(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write("c.conf", CONF)
    assert cli.main(["check", "c.conf"]) == cli.EXIT_OK
    assert capsys.readouterr().err.endswith("1 file(s) checked: 0 error(s), 2 warning(s)\n")

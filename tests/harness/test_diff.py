"""`vpolicy diff`: pods and podgroups whose fate differs between two policies, with each side's reasons."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vpolicy import cli
from vpolicy.harness import diff
from vpolicy.harness.policy import policy_root
from vpolicy.model.decisions import Decisions, Eviction, PodGroupStatus

# One 2-cpu node and a 3-pod gang of 1-cpu pods: with gang nothing binds, without it two pods do.
CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: train, namespace: ns}
spec: {minMember: 3}
status: {phase: Inqueue}
""" + "".join(f"""\
---
apiVersion: v1
kind: Pod
metadata: {{name: train-{i}, namespace: ns, annotations: {{scheduling.k8s.io/group-name: train}}}}
spec:
  schedulerName: volcano
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]
""" for i in range(3))
GANG = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n' \
       '- plugins:\n  - name: predicates\n  - name: nodeorder\n'
NO_GANG = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n' \
          '- plugins:\n  - name: predicates\n  - name: nodeorder\n'


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("cluster.yaml").write_text(CLUSTER, encoding="utf-8")
    Path("gang.conf").write_text(GANG, encoding="utf-8")
    Path("nogang.conf").write_text(NO_GANG, encoding="utf-8")


@pytest.mark.usefixtures("files")
def test_pods_that_change_fate_are_listed_with_the_reasons_of_each_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff", "--cluster", "cluster.yaml", "--conf", "gang.conf", "--conf", "nogang.conf"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if not line.startswith("  A: ")] == [
        "A: --conf gang.conf",
        "B: --conf nogang.conf",
        "pod ns/train-0: pending -> bound to n1",
        "  B: bound to n1",
        "pod ns/train-1: pending -> bound to n1",
        "  B: bound to n1",
        "0 podgroups and 2 pods change fate (of 1 podgroup, 3 pods)"]
    # Side A's own words: why the gang is pending, said once (the pod's reasons, or else its podgroup's condition).
    reasons = [line for line in lines if line.startswith("  A: ")]
    assert len(reasons) == 2
    for line in reasons:
        assert line.startswith("  A: pending: ") and "Insufficient cpu" in line
        assert line.count("3/3 tasks in gang unschedulable") == 1


@pytest.mark.usefixtures("files")
def test_json_output_names_both_sides_and_each_change(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff", "--cluster", "cluster.yaml", "--conf", "nogang.conf", "--conf", "gang.conf",
                     "--output", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["a"], doc["b"], doc["podgroups"], doc["summary"]) == (
        {"kind": "conf", "path": "nogang.conf"}, {"kind": "conf", "path": "gang.conf"}, [],
        {"podgroups": 1, "pods": 3, "changed": 2})
    first = doc["pods"][0]
    assert (first["pod"], first["a"], first["b"]["fate"]) == ("ns/train-0", {"fate": "bound", "node": "n1"}, "pending")
    assert any("Insufficient cpu" in reason for reason in first["b"]["reasons"])


@pytest.mark.usefixtures("files")
@pytest.mark.parametrize("b, code", [
    pytest.param("gang.conf", 0, id="same-policy-exits-0"),
    pytest.param("nogang.conf", 2, id="different-decisions-exit-2"),
])
def test_exit_code_flag_exits_2_only_when_the_decisions_differ(capsys: pytest.CaptureFixture[str], b: str,
                                                               code: int) -> None:
    assert cli.main(["diff", "--cluster", "cluster.yaml", "--conf", "gang.conf", "--conf", b, "--exit-code"]) == code
    assert capsys.readouterr().out.endswith(
        "no podgroup or pod changes fate (of 1 podgroup, 3 pods)\n" if code == 0
        else "0 podgroups and 2 pods change fate (of 1 podgroup, 3 pods)\n")


@pytest.mark.usefixtures("files")
def test_a_native_policy_and_a_conf_can_be_compared() -> None:
    result = diff.diff_policies(["cluster.yaml"], diff.PolicyRef("policy", str(policy_root() / "default.vpol")),
                                diff.PolicyRef("conf", "nogang.conf"))
    # default.vpol runs preempt: its per-task phase pipelines each task that fits the node's FutureIdle
    # (no victim needed) and commits it alone, gang or not, as Volcano's preempt does
    assert [(c.key, c.a.short(), c.b.short()) for c in result.changes] == [
        ("ns/train-0", "pipelined to n1", "bound to n1"), ("ns/train-1", "pipelined to n1", "bound to n1")]


@pytest.mark.usefixtures("files")
@pytest.mark.parametrize("sides", [
    pytest.param(["--conf", "gang.conf"], id="one"),
    pytest.param(["--conf", "gang.conf", "--policy", "a.vpol", "--conf", "nogang.conf"], id="three"),
])
def test_anything_but_two_policies_is_bad_input(capsys: pytest.CaptureFixture[str], sides: list[str]) -> None:
    assert cli.main(["diff", "--cluster", "cluster.yaml", *sides]) == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err == (
        "error[diff.two-policies]: give exactly two of --policy FILE / --conf FILE (A, then B); "
        f"got {len(sides) // 2}\n")


@pytest.mark.usefixtures("files")
def test_a_bad_conf_is_reported_as_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    Path("bad.conf").write_text('actions: "allocat"\n', encoding="utf-8")
    assert cli.main(["diff", "--cluster", "cluster.yaml", "--conf", "gang.conf", "--conf", "bad.conf"]) == 1
    assert "error[conf.unknown-action]" in capsys.readouterr().err


@pytest.mark.parametrize("pod_reasons, shown", [
    pytest.param(["not scheduled in this session"], "pending: not scheduled in this session; podgroup ns/g: no room",
                 id="the-podgroup-condition-is-added"),
    pytest.param(["gang: no room"], "pending: gang: no room", id="but-not-when-the-pod-reasons-say-it"),
])
def test_a_pending_pod_gets_its_podgroups_unschedulable_condition(pod_reasons: list[str], shown: str) -> None:
    left, right = Decisions(), Decisions()
    left.unschedulable = {"ns/p": pod_reasons}
    left.podgroups = right.podgroups = {"ns/g": PodGroupStatus("Inqueue", ({"type": "Unschedulable",
                                                                          "message": "no room"},))}
    right.binds = {"ns/p": "n1"}
    result = diff.compare(diff.PolicyRef("conf", "a"), diff.PolicyRef("conf", "b"), left, right, pods=["ns/p"],
                          groups={"ns/p": "ns/g"})
    assert [(c.key, c.a.long(), c.b.long()) for c in result.changes] == [("ns/p", shown, "bound to n1")]


def test_evictions_and_podgroup_phases_are_fates_too() -> None:
    left, right = Decisions(), Decisions()
    left.evictions = [Eviction("ns/v", "preempt", "ns/hi", "gang.vpol:3")]
    left.podgroups = {"ns/hi": PodGroupStatus("Running"), "ns/lo": PodGroupStatus("Running")}
    right.podgroups = {"ns/hi": PodGroupStatus("Inqueue", ({"type": "Unschedulable", "message": "no room"},)),
                       "ns/lo": PodGroupStatus("Running")}
    result = diff.compare(diff.PolicyRef("conf", "a"), diff.PolicyRef("conf", "b"), left, right, pods=["ns/v"])
    assert diff.format_text(result) == (
        "A: --conf a\n"
        "B: --conf b\n"
        "podgroup ns/hi: Running -> Inqueue\n"
        "  A: Running\n"
        "  B: Inqueue: Unschedulable: no room\n"
        "pod ns/v: evicted -> untouched\n"
        "  A: evicted: preempt for ns/hi, victim chosen by the rule at gang.vpol:3\n"
        "  B: untouched\n"
        "1 podgroup and 1 pod change fate (of 2 podgroups, 1 pod)\n")

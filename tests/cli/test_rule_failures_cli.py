"""A policy that checks but whose rule fails on the cluster it meets (here: a list index past its end)
is bad input to every command that runs sessions: one located `eval.failed` line on stderr naming the
rule, exit 1, never a traceback."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vpolicy.cli import main

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = str(ROOT / "examples" / "cluster.yaml")
WORKLOAD = str(ROOT / "examples" / "workload.yaml")
# after the module's path (a `use` resolves beside the policy file, to an absolute path)
LINE = ":3:1: error[eval.failed]: rule idx.r: list index out of range " \
       "(test the length first: if len(xs) > i then xs[i] else ...)"


@pytest.fixture
def policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    Path("idx.vpol").write_text("plugin idx\nlet xs = [1, 2]\nrule r: job_valid(job) = xs[5] > 0\n", encoding="utf-8")
    Path("p.vpol").write_text(textwrap.dedent("""\
        policy p
        actions enqueue, allocate, backfill
        tier {
          use "volcano/gang.vpol"
          use "idx.vpol"
        }
        """), encoding="utf-8")
    return "p.vpol"


@pytest.mark.parametrize("argv", [
    pytest.param(["dry-run", "--cluster", CLUSTER, "--policy", "p.vpol"], id="dry-run"),
    pytest.param(["explain", "--cluster", CLUSTER, "--policy", "p.vpol", "--no-fix", "research/vit-huge-worker-1"],
                 id="explain"),
    pytest.param(["verify", "p.vpol", "--bound", "2", "--worlds", "5"], id="verify"),
    pytest.param(["simulate", "--cluster", CLUSTER, "--workload", WORKLOAD, "--policy", "p.vpol", "--out", "sim",
                  "--no-progress"], id="simulate"),
])
def test_a_rule_failing_on_the_cluster_is_one_located_line(policy: str, argv: list[str],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code = main(argv)
    err = capsys.readouterr().err
    assert (code, err) == (1, f"{Path('idx.vpol').resolve()}{LINE}\n")


def test_the_check_refuses_what_it_can_know(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rec.vpol"
    path.write_text("plugin rec\nlet f(x: int): int = f(x) + 1\nrule r: job_valid(job) = f(1) > 0\n", encoding="utf-8")
    assert main(["check", str(path)]) == 1
    assert f"{path}:2:22: error[check.endless-recursion]: 'f' calls itself whatever its arguments, so it never " \
           "returns" in capsys.readouterr().err


def test_a_scenario_whose_rule_fails_is_an_error_of_that_scenario(policy: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    Path("s.yaml").write_text(textwrap.dedent("""\
        apiVersion: vpolicy/v1
        kind: Scenario
        name: a rule that fails
        policy: p.vpol
        expect: {binds: {}}
        ---
        apiVersion: v1
        kind: Node
        metadata: {name: n1}
        status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
        ---
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata: {name: pg, namespace: ns}
        spec: {minMember: 1}
        status: {phase: Inqueue}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: pg-0, namespace: ns, annotations: {scheduling.k8s.io/group-name: pg}}
        spec:
          schedulerName: volcano
          containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
        """), encoding="utf-8")
    code = main(["test", "s.yaml"])
    assert (code, capsys.readouterr().err) == (1, f"{Path('idx.vpol').resolve()}{LINE}\n")

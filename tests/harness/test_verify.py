"""`vpolicy verify`: proofs for the shipped policies and confs, counterexamples for broken ones that
`vpolicy dry-run` reproduces, declared properties, and the YAML the counterexamples are written in."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vpolicy import cli
from vpolicy.engine.session import run_session
from vpolicy.errors import PolicyError
from vpolicy.harness import policy as policies
from vpolicy.harness import verify, verify_props, verify_worlds, verify_yaml
from vpolicy.load import conf as conf_loader
from vpolicy.load.cluster import load_cluster

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = Path(__file__).resolve().parent / "data"
BROKEN = str(DATA / "preempt-without-priority.conf")
DECLARED = str(DATA / "declared-property.vpol")
DEFAULT_POLICY = str(ROOT / "policies" / "default.vpol")


@pytest.fixture
def helm_conf(tmp_path: Path) -> str:
    path = tmp_path / "helm.conf"
    path.write_text(conf_loader.helm_default_conf_text(), encoding="utf-8")
    return str(path)


def statuses(run: verify.VerifyRun) -> dict[str, str]:
    return {r.name: r.status for r in run.results}


def test_volcano_default_conf_is_proved_at_bound_1_exhaustively() -> None:
    run = verify.verify(None, bound=1)
    assert run.exhaustive and run.represents == run.space == verify_worlds.space(1) == 300
    assert run.worlds == 208  # canonical: reclaimable and empty queues are invisible to it, jobs relabelled
    assert set(statuses(run).values()) == {"proved"}
    methods = {r.name: r.method for r in run.results}
    assert methods["preempt-lower-priority-only"].startswith("structural: the policy runs no preempt action")
    assert methods["node-capacity"] == ("search: no counterexample in all 208 canonical clusters, standing for all "
                                        "300 clusters within bound 1 (exhaustive)")


@pytest.mark.parametrize("target", [pytest.param("helm", id="helm-conf"), pytest.param("default", id="default-policy")])
def test_shipped_confs_prove_every_builtin_property_at_bound_1(target: str, helm_conf: str) -> None:
    """The default run's stand-in for the bound-2 proof below (bound 1: every cluster, in a second)."""
    file = helm_conf if target == "helm" else DEFAULT_POLICY
    run = verify.verify(file, bound=1)
    assert run.exhaustive and run.represents == run.space
    assert statuses(run) == {name: "proved" for name in verify_props.BUILTIN}, verify.format_text(run)


@pytest.mark.slow
@pytest.mark.parametrize("target", [pytest.param("helm", id="helm-conf"), pytest.param("default", id="default-policy")])
def test_shipped_confs_prove_every_builtin_property_at_bound_2(target: str) -> None:
    """Every cluster of bound 2 (1,704,100, run as 132,128 / 192,690 canonical ones: 2-6 minutes of CPU)."""
    file = str(ROOT / "examples" / "volcano-scheduler.conf") if target == "helm" else DEFAULT_POLICY
    run = verify.verify(file, bound=2)
    assert run.exhaustive and run.represents == run.space == 1_704_100
    assert statuses(run) == {name: "proved" for name in verify_props.BUILTIN}, verify.format_text(run)
    methods = {r.name: r.method for r in run.results}
    if target == "default":
        assert methods["preempt-lower-priority-only"].startswith("symbolic (Z3)")
        assert methods["guarantee-kept"].startswith("symbolic (Z3)")


def test_preempt_tier_without_priority_rule_is_refuted_by_the_exhaustive_search_at_once() -> None:
    """The default (exhaustive) search samples a few contended clusters first: the counterexample shows
    there, not after thousands of small clusters."""
    run = verify.verify(BROKEN, properties=["preempt-lower-priority-only"], bound=2)
    (result,) = run.results
    assert run.exhaustive and result.status == "violated"
    assert result.counterexample is not None and result.counterexample.reproduced
    assert run.presampled <= verify.PRESAMPLE and run.worlds == 0


@pytest.mark.parametrize("target", [pytest.param("helm", id="helm-conf"), pytest.param("default", id="default-policy")])
def test_shipped_confs_hold_every_builtin_property_at_bound_2(target: str, helm_conf: str) -> None:
    file = helm_conf if target == "helm" else DEFAULT_POLICY
    run = verify.verify(file, bound=2, worlds=300)
    assert run.ok, verify.format_text(run)
    assert all(r.status in ("proved", "held") for r in run.results)
    if target == "default":
        preempt = next(r for r in run.results if r.name == "preempt-lower-priority-only")
        assert preempt.status == "proved"
        assert "rules encoded exactly" in preempt.method


def test_preempt_tier_without_priority_rule_has_a_counterexample_dry_run_reproduces(tmp_path: Path) -> None:
    run = verify.verify(BROKEN, properties=["preempt-lower-priority-only"], bound=2, worlds=300)
    (result,) = run.results
    assert result.status == "violated" and not run.ok
    ce = result.counterexample
    assert ce is not None and ce.reproduced
    assert ce.violations and "is preempted for" in ce.violations[0]
    path = tmp_path / "ce.yaml"
    path.write_text(ce.yaml, encoding="utf-8")
    snapshot = load_cluster([path])
    decisions = run_session(snapshot, policies.resolve(snapshot, conf=BROKEN)).decisions
    groups = {pg.key: pg for pg in snapshot.podgroups}
    pods = {p.key: p for p in snapshot.pods}
    bad = [e for e in decisions.evictions if e.action == "preempt"
           and snapshot.job_priority(groups[f"ns/{pods[e.pod].group}"]) >= snapshot.job_priority(groups[e.for_job])]
    assert bad, decisions.evictions


def test_counterexample_is_small_and_written_with_its_reason(tmp_path: Path) -> None:
    run = verify.verify(BROKEN, properties=["preempt-lower-priority-only"], bound=2, worlds=300)
    ce = run.results[0].counterexample
    assert ce is not None
    assert ce.size[2] == 2  # two jobs: the victim's and the preemptor's
    assert ce.yaml.startswith("# Counterexample to 'preempt-lower-priority-only' found by vpolicy verify.\n")
    written = verify.write_counterexamples(run, str(tmp_path))
    assert written == [str(tmp_path / "preempt-lower-priority-only.yaml")]


def test_declared_properties_are_checked_as_session_invariants() -> None:
    run = verify.verify(DECLARED, properties=["within_capability", "nothing_ready"], bound=2, worlds=200)
    assert statuses(run) == {"within_capability": "held", "nothing_ready": "violated"}
    origin = {r.name: r.origin for r in run.results}
    assert origin["nothing_ready"].endswith("tests/harness/data/declared-property.vpol:19")
    ce = run.results[1].counterexample
    assert ce is not None and ce.reproduced
    assert ce.violations == ["property nothing_ready held when the session opened and is false after it"]


def test_unknown_property_is_bad_input() -> None:
    with pytest.raises(PolicyError) as err:
        verify.verify(None, properties=["node-capacaty"])
    (diag,) = err.value.diagnostics
    assert (diag.code, diag.help) == ("verify.unknown-property", "did you mean 'node-capacity'?")


def test_cli_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["verify", "--bound", "1"]) == 0
    assert "PROVED    node-capacity" in capsys.readouterr().out
    assert cli.main(["verify", BROKEN, "--property", "preempt-lower-priority-only", "--worlds", "300",
                     "--output", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False
    assert doc["properties"][0]["counterexample"]["reproduced"] is True
    assert cli.main(["verify", "--property", "nope"]) == 1
    assert "error[verify.unknown-property]" in capsys.readouterr().err


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed-{s}") for s in range(3)])
def test_worlds_written_as_yaml_load_back_unchanged(seed: int, tmp_path: Path) -> None:
    specs, _ = verify_worlds.worlds(3, 20, seed)
    for spec in specs:
        snapshot = verify_worlds.build(spec)
        path = tmp_path / "w.yaml"
        path.write_text(verify_yaml.to_yaml(snapshot), encoding="utf-8")
        loaded = load_cluster([path])
        assert loaded.nodes == snapshot.nodes
        assert loaded.pods == snapshot.pods
        assert loaded.podgroups == snapshot.podgroups
        assert loaded.queues == snapshot.queues
        assert loaded.priority_classes == snapshot.priority_classes


def test_bound_1_is_searched_exhaustively_and_bigger_bounds_are_sampled() -> None:
    assert verify_worlds.worlds(1, 300, 0)[1] is True
    specs, exhaustive = verify_worlds.worlds(2, 50, 0)
    assert exhaustive is False and len(list(specs)) == 50

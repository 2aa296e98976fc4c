"""`verify --property hard-topology-within-tier`: proved for Volcano's conf with the network-topology-aware
plugin, and refuted (with a counterexample that dry-run reproduces) when the plugin's HyperNode
gradient is switched off, since hard mode is then not enforced, as in Volcano."""
from __future__ import annotations

from pathlib import Path

from vpolicy.harness import verify

CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: network-topology-aware{flag}
"""


def test_the_plugin_keeps_every_hard_mode_job_within_its_tier(tmp_path: Path) -> None:
    conf = tmp_path / "on.yaml"
    conf.write_text(CONF.format(flag=""), encoding="utf-8")
    run = verify.verify(str(conf), bound=1)
    result = next(r for r in run.results if r.name == "hard-topology-within-tier")
    assert (result.status, result.counterexample) == ("proved", None)


def test_without_the_gradient_a_hard_mode_gang_spreads_and_the_counterexample_reproduces(tmp_path: Path) -> None:
    conf = tmp_path / "off.yaml"
    conf.write_text(CONF.format(flag="\n    enabledHyperNodeGradient: false"), encoding="utf-8")
    run = verify.verify(str(conf), properties=["hard-topology-within-tier"], bound=1)
    [result] = run.results
    assert result.status == "violated"
    assert result.counterexample is not None and result.counterexample.reproduced
    assert "topology.above-highest-tier" in result.counterexample.violations[0]


def test_policies_without_topology_rules_do_not_run_it_by_default() -> None:
    run = verify.verify(None, bound=1)
    assert "hard-topology-within-tier" not in [r.name for r in run.results]

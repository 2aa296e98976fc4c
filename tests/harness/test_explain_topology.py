"""`vpolicy explain` on a hard-mode gang held by its network topology: it names the tier, the most free
domain and what would make the gang fit, rather than blaming the greedy order (the solver's room
ignores domains)."""
from __future__ import annotations

from pathlib import Path

from vpolicy.harness import explain

ROOT = Path(__file__).resolve().parent.parent.parent
SCENARIOS = ROOT / "policies" / "tests" / "network-topology-aware"


def _explain(tmp_path: Path, scenario: str) -> explain.Explanation:
    header, cluster = (SCENARIOS / scenario).read_text(encoding="utf-8").split("\n---\n", 1)
    conf = header.split("conf: |\n", 1)[1].split("expect:", 1)[0]
    (tmp_path / "conf.yaml").write_text("\n".join(line[2:] for line in conf.splitlines()), encoding="utf-8")
    (tmp_path / "cluster.yaml").write_text(cluster, encoding="utf-8")
    return explain.explain([str(tmp_path / "cluster.yaml")], "c1/pg1", conf=str(tmp_path / "conf.yaml"), fixes=False)


def test_a_gang_too_large_for_any_leaf_is_explained_by_its_topology(tmp_path: Path) -> None:
    e = _explain(tmp_path, "hard-above-highest-tier-binds-nothing.yaml")
    assert e.summary == ("c1/pg1 is Inqueue, 3 pods pending: network topology (hard, highest tier 1): needs 6 cpu under one "
                         "tier-1 HyperNode; the most free is s0 with 4; free 2 more there, or allow a higher tier")


def test_a_sub_group_that_fits_no_leaf_is_named_with_its_shortfall(tmp_path: Path) -> None:
    """Sub-group workers/a asks 4 cpu in its two pending pods (Volcano's SubJob minResources); the only
    leaf with room, s0, has 2 free."""
    e = _explain(tmp_path, "subgroup-min-resources-prunes-a-leaf.yaml")
    assert e.summary == ("c1/pg1 is Inqueue, 2 pods pending: sub-group workers/a (hard, highest tier 1): needs 4 cpu "
                         "under one tier-1 HyperNode; the most free is s0 with 2; free 2 more there, or allow a higher "
                         "tier")

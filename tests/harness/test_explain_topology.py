"""`vpolicy explain` on a hard-mode gang held by its network topology: it names the tier, the most free
domain and what would make the gang fit, rather than blaming the greedy order (the solver's room
ignores domains)."""
from __future__ import annotations

from pathlib import Path

from vpolicy.harness import explain

ROOT = Path(__file__).resolve().parent.parent.parent
SCENARIO = ROOT / "policies" / "tests" / "network-topology-aware" / "hard-above-highest-tier-binds-nothing.yaml"


def test_a_gang_too_large_for_any_leaf_is_explained_by_its_topology(tmp_path: Path) -> None:
    header, cluster = SCENARIO.read_text(encoding="utf-8").split("\n---\n", 1)
    conf = header.split("conf: |\n", 1)[1].split("expect:", 1)[0]
    (tmp_path / "conf.yaml").write_text("\n".join(line[2:] for line in conf.splitlines()), encoding="utf-8")
    (tmp_path / "cluster.yaml").write_text(cluster, encoding="utf-8")
    e = explain.explain([str(tmp_path / "cluster.yaml")], "c1/pg1", conf=str(tmp_path / "conf.yaml"), fixes=False)
    assert e.summary == ("c1/pg1 is Inqueue, 3 pods pending: network topology (hard, highest tier 1): needs 6 cpu under one "
                         "tier-1 HyperNode; the most free is s0 with 4; free 2 more there, or allow a higher tier")

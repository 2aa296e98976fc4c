"""explain says when a BE pod waits for oversubscribed room, and when an evicting node turns it away
(the cluster and conf of policies/tests/colocation/be-pod-waits-for-lent-room.yaml)."""
from __future__ import annotations

import re
from pathlib import Path

from vpolicy.harness import explain
from vpolicy.harness import policy as policies
from vpolicy.load import conf as conf_loader
from vpolicy.load.cluster import load_cluster

SCENARIO = Path(__file__).resolve().parents[2] / "policies" / "tests" / "colocation" / "be-pod-waits-for-lent-room.yaml"


def test_a_waiting_be_pod_is_told_about_lent_room_and_the_evicting_node(tmp_path: Path) -> None:
    header, cluster = SCENARIO.read_text().split("\n---\n", 1)
    (tmp_path / "cluster.yaml").write_text(cluster)
    conf_text = "\n".join(line[2:] for line in re.search(r"conf: \|\n((?:  .*\n)+)", header + "\n")
                          .group(1).splitlines())  # type: ignore[union-attr]  # reason: the scenario has a conf
    compiled = policies.from_conf(conf_loader.parse_conf_text(conf_text, file="conf.yaml"))
    world = load_cluster([tmp_path / "cluster.yaml"])
    text = explain.format_text(explain.explain_snapshot(world, compiled, "ns1/etl-0", fixes=False))
    assert "usage.offline_pods_avoid_evicting_nodes: node(s) are evicting offline pods " \
           "(volcano.sh/offline-job-evicting) on node n1" in text
    assert "node n2: free kubernetes.io/batch-cpu 1000" in text
    assert "(Insufficient kubernetes.io/batch-cpu); batch resources are what the node agent lends from idle " \
           "online capacity: BE pods wait for oversubscribed room (docs/agent.md)" in text

"""The HyperNode controller on a real API server: `vpolicy controllers` under deploy/'s RBAC discovers
HyperNodes from kwok nodes' labels (the ConfigMap's `label` source), follows a relabelled node and a
deleted one, and the scheduler keeps a hard-mode gang inside one of the discovered leaves."""
from __future__ import annotations

from typing import Any

import pytest

e2e = pytest.importorskip("tests.e2e.cluster")  # the real control plane's helpers (tests/e2e)

HYPERNODES = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
SPINE, LEAF = "e2e.vpolicy.io/spine", "e2e.vpolicy.io/leaf"
CONF = f"""networkTopologyDiscovery:
- source: label
  enabled: true
  config:
    networkTopologyTypes:
      fabric:
      - nodeLabel: {SPINE}
      - nodeLabel: {LEAF}
      - nodeLabel: kubernetes.io/hostname
"""


def tree(cluster: Any) -> dict[tuple[int, str], list[str]]:
    out = {}
    for h in cluster.items(HYPERNODES):
        labels = h["metadata"].get("labels") or {}
        value = labels.get(LEAF) or labels.get(SPINE)
        if value and value.startswith("e2e-"):
            out[(h["spec"]["tier"], value)] = sorted(m["selector"]["exactMatch"]["name"] for m in h["spec"]["members"])
    return out


def test_hypernodes_follow_node_labels_and_hold_a_hard_gang(cluster: Any) -> None:
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "volcano-controller-configmap", "namespace": "volcano-system"},
                   "data": {"volcano-controller.conf": CONF}})
    a = cluster.kwok_nodes("hn-a", 2, cpu="2", labels={SPINE: "e2e-s1", LEAF: "e2e-l1"})
    b = cluster.kwok_nodes("hn-b", 1, cpu="2", labels={SPINE: "e2e-s1", LEAF: "e2e-l2"})
    controllers = e2e.controllers(cluster, "hypernode-controllers", "--controllers", "queue,hypernode")
    try:
        e2e.eventually(lambda: tree(cluster).get((1, "e2e-l1")) == sorted(a)
                       and tree(cluster).get((1, "e2e-l2")) == b, 60, "leaf HyperNodes from the labels")
        e2e.eventually(lambda: any((h.get("status") or {}).get("nodeCount") == 3 for h in cluster.items(HYPERNODES)
                                   if (h["metadata"].get("labels") or {}).get(SPINE) == "e2e-s1"),
                       60, "the spine's status.nodeCount")
        cluster.call("PATCH", f"/api/v1/nodes/{b[0]}", {"metadata": {"labels": {LEAF: "e2e-l1"}}},
                     content_type="application/merge-patch+json")
        e2e.eventually(lambda: tree(cluster).get((1, "e2e-l1")) == sorted([*a, *b])
                       and (1, "e2e-l2") not in tree(cluster), 60, "the relabelled node moved, its old leaf gone")
        cluster.call("DELETE", f"/api/v1/nodes/{a[1]}")
        e2e.eventually(lambda: tree(cluster).get((1, "e2e-l1")) == sorted([a[0], *b]), 60, "the deleted node left")
        c = cluster.kwok_nodes("hn-c", 2, cpu="2", labels={SPINE: "e2e-s1", LEAF: "e2e-l3"})
        e2e.eventually(lambda: tree(cluster).get((1, "e2e-l3")) == sorted(c), 60, "a new leaf")
        ns = cluster.namespace("hn")
        scheduler = e2e.scheduler(cluster, "hypernode-scheduler", conf=_conf_with_plugin(cluster))
        try:
            cluster.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                            "metadata": {"name": "gang", "namespace": ns},
                            "spec": {"minMember": 2, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}})
            for i in range(2):
                cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
                    "name": f"gang-{i}", "namespace": ns, "annotations": {"scheduling.k8s.io/group-name": "gang"}},
                    "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox", "resources": {
                        "requests": {"cpu": "2"}}}]}})
            placed = e2e.eventually(lambda: [p["spec"].get("nodeName") for p in cluster.pods(ns)
                                             if p["spec"].get("nodeName")] if len([
                                                 p for p in cluster.pods(ns) if p["spec"].get("nodeName")]) == 2 else None,
                                    60, "the gang bound")
            leaves = [sorted([a[0], *b]), sorted(c)]
            assert sorted(placed) in leaves  # both pods under one leaf
        finally:
            scheduler.stop()
    finally:
        controllers.stop()
        cluster.retire()


def _conf_with_plugin(cluster: Any) -> Any:
    """The shipped conf with the network-topology-aware plugin in its second tier."""
    path = e2e.shipped_conf(cluster.workdir)
    text = path.read_text()
    out = cluster.workdir / "volcano-scheduler-topology.conf"
    out.write_text(text.rstrip() + "\n  - name: network-topology-aware\n")
    return out

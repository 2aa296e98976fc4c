"""The live path reads network topology as the file loader does: HyperNodes from the informers and a
PodGroup's networkTopology reach the snapshot the scheduler's sessions use."""
from __future__ import annotations

from cluster_adapter.convert import to_snapshot
from vpolicy.model import hypernodes as hn


def test_hypernodes_and_podgroup_topology_from_live_objects() -> None:
    snapshot = to_snapshot([
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"rack": "r1"}},
         "status": {"allocatable": {"cpu": "2", "pods": "10"}}},
        {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "leaf"},
         "spec": {"tier": 1, "tierName": "leaf",
                  "members": [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "r1"}}}}]}},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "ns"},
         "spec": {"minMember": 1, "networkTopology": {"mode": "hard", "highestTierName": "leaf"}}},
    ])
    (leaf,) = snapshot.hypernodes
    assert (leaf.name, leaf.tier, leaf.tier_name) == ("leaf", 1, "leaf")
    assert hn.HyperNodeTree(snapshot.hypernodes, [("n1", {"rack": "r1"})]).real_nodes["leaf"] == {"n1"}
    (group,) = snapshot.podgroups
    assert group.network_topology == hn.NetworkTopology("hard", None, "leaf")

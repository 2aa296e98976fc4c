"""HyperNode controller against the emulator: label discovery creates, updates and deletes HyperNodes as
nodes come, go and are relabelled; HyperNodes from elsewhere are left alone; UFM/RoCE discover nothing."""
from __future__ import annotations

from typing import Any

from cluster_adapter.controllers import hypernode
from tests.adapter.conftest import node
from tests.adapter.kubeemu import EmulatorThread
from tests.controllers.conftest import Manager, create, delete, listed, settle

SPINE, LEAF = "network.example.com/spine", "network.example.com/leaf"
CONF = f"""networkTopologyDiscovery:
- source: label
  enabled: true
  config:
    networkTopologyTypes:
      fabric:
      - nodeLabel: {SPINE}
      - nodeLabel: {LEAF}
      - nodeLabel: kubernetes.io/hostname
- source: ufm
  enabled: true
  config: {{endpoint: "https://ufm:8080"}}
"""


def config_map(text: str = CONF) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": hypernode.CONFIG_NAME, "namespace": hypernode.CONFIG_NAMESPACE},
            "data": {hypernode.CONFIG_KEY: text}}


def racked(name: str, spine: str, leaf: str) -> dict[str, Any]:
    return node(name, **{SPINE: spine, LEAF: leaf, "kubernetes.io/hostname": name})


def tree(emu: EmulatorThread) -> dict[tuple[int, str], list[str]]:
    """(tier, the label value it stands for) -> member names, of every HyperNode in the cluster."""
    out = {}
    for h in listed(emu, "hypernodes"):
        labels = h["metadata"].get("labels") or {}
        value = labels.get(LEAF) or labels.get(SPINE) or h["metadata"]["name"]
        out[(h["spec"]["tier"], value)] = sorted(m["selector"]["exactMatch"]["name"] for m in h["spec"]["members"])
    return out


def names(emu: EmulatorThread) -> dict[str, str]:
    return {(h["metadata"].get("labels") or {}).get(LEAF) or (h["metadata"].get("labels") or {}).get(SPINE, ""):
            h["metadata"]["name"] for h in listed(emu, "hypernodes")}


def test_label_discovery_builds_the_tree_and_follows_node_changes(emu: EmulatorThread, manager: Manager) -> None:
    create(emu, config_map(), racked("n1", "s1", "l1"), racked("n2", "s1", "l1"), racked("n3", "s1", "l2"),
           node("n4"))
    controllers = manager("hypernode")
    settle(controllers)
    ids = names(emu)
    assert tree(emu) == {(1, "l1"): ["n1", "n2"], (1, "l2"): ["n3"], (2, "s1"): sorted([ids["l1"], ids["l2"]])}
    spine = next(h for h in listed(emu, "hypernodes") if h["spec"]["tier"] == 2)
    assert (spine["spec"]["tierName"], spine["metadata"]["labels"][hypernode.SOURCE_LABEL]) == (SPINE, "label")
    assert spine["status"]["nodeCount"] == 3  # the nodes under its two leaves

    delete(emu, "nodes", "n3", ns="")  # l2 loses its last node
    create(emu, racked("n5", "s2", "l3"))  # a new rack under a new spine
    settle(controllers)
    ids = names(emu)
    assert tree(emu) == {(1, "l1"): ["n1", "n2"], (2, "s1"): [ids["l1"]], (1, "l3"): ["n5"], (2, "s2"): [ids["l3"]]}

    kept = names(emu)["l1"]
    emu.call(lambda e: _relabel(e, "n2", {LEAF: "l3", SPINE: "s2"}))
    settle(controllers)
    assert tree(emu)[(1, "l3")] == ["n2", "n5"] and tree(emu)[(1, "l1")] == ["n1"]
    assert names(emu)["l1"] == kept  # an existing HyperNode keeps its name


def _relabel(e: Any, name: str, labels: dict[str, str]) -> None:
    """What `kubectl label node` does."""
    current = e.get("nodes", "", name)
    current["metadata"]["labels"].update(labels)
    e.put_object(current)


def test_hypernodes_written_by_hand_are_left_alone(emu: EmulatorThread, manager: Manager) -> None:
    manual = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "by-hand"},
              "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n1"}}}]}}
    create(emu, config_map(), racked("n1", "s1", "l1"), manual)
    settle(manager("hypernode"))
    assert "by-hand" in [h["metadata"]["name"] for h in listed(emu, "hypernodes")]
    assert len(listed(emu, "hypernodes")) == 3


def test_without_the_configmap_or_with_only_unimplemented_sources_nothing_is_discovered(
        emu: EmulatorThread, manager: Manager) -> None:
    create(emu, racked("n1", "s1", "l1"))
    controllers = manager("hypernode")
    settle(controllers)
    assert listed(emu, "hypernodes") == []
    create(emu, config_map("networkTopologyDiscovery:\n- source: roce\n  enabled: true\n"))
    settle(controllers)
    assert listed(emu, "hypernodes") == []


def test_the_label_config_drops_the_hostname_and_reads_tiers_from_the_bottom() -> None:
    config = {"networkTopologyTypes": {
        "fabric": [{"nodeLabel": "a"}, {"nodeLabel": "b"}, {"nodeLabel": "kubernetes.io/hostname"}],
        "a-name-longer-than-twenty": [{"nodeLabel": "x"}, {"nodeLabel": "h"}],
        "twice": [{"nodeLabel": "x"}, {"nodeLabel": "x"}]}}
    assert hypernode.parse_label_config(config) == {"fabric": ["b", "a"]}


def test_a_vcjob_partition_policy_reaches_its_podgroup_and_pods() -> None:
    from cluster_adapter.controllers.job import build

    task = {"name": "t0", "replicas": 4, "partitionPolicy": {"partitionSize": 2, "minPartitions": 2,
                                                             "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "nt", "namespace": "ns",
                                                                               "uid": "u1"},
           "spec": {"minAvailable": 4, "tasks": [task]}}
    group = build.podgroup_for(job, {})
    assert group["spec"]["subGroupPolicy"] == [{
        "name": "t0", "subGroupSize": 2, "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "t0"}},
        "matchLabelKeys": ["volcano.sh/partition-id"], "minSubGroups": 2,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}]
    labels = [build.pod_for(job, task, i, default_scheduler="volcano")["metadata"]["labels"] for i in range(4)]
    assert [lab["volcano.sh/partition-id"] for lab in labels] == ["0", "0", "1", "1"]

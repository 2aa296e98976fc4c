"""HyperNodes and the networkTopology / subGroupPolicy fields, read from manifests as Volcano's API writes them."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpolicy.errors import PolicyError
from vpolicy.load.cluster import load_cluster

NODES = """\
apiVersion: v1
kind: Node
metadata: {name: n0, labels: {rack: r0}}
status: {allocatable: {cpu: "8", pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {rack: r0}}
status: {allocatable: {cpu: "8", pods: "110"}}
"""

LEAF = """\
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf0}
spec:
  tier: 1
  tierName: leaf
  members:
  - type: Node
    selector: {labelMatch: {matchLabels: {rack: r0}}}
"""

PODGROUP = """\
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns}
spec:
  minMember: 2
  networkTopology: {mode: soft, highestTierName: leaf}
  subGroupPolicy:
  - name: workers
    subGroupSize: 2
    minSubGroups: 1
    matchLabelKeys: [group]
    networkTopology: {highestTierAllowed: 1}
"""


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]  # reason: test helper
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return load_cluster(path)


def test_a_hypernode_and_a_podgroup_topology_are_read(tmp_path: Path) -> None:
    snap = _load(tmp_path, NODES + LEAF + PODGROUP)
    (leaf,) = snap.hypernodes
    assert (leaf.name, leaf.tier, leaf.tier_name) == ("leaf0", 1, "leaf")
    assert leaf.members[0].selector.match_labels == {"rack": "r0"}
    pg = next(g for g in snap.podgroups if g.name == "pg")
    assert pg.network_topology is not None
    assert (pg.network_topology.mode, pg.network_topology.highest_tier_name) == ("soft", "leaf")
    (policy,) = pg.sub_group_policy
    assert (policy.sub_group_size, policy.min_sub_groups, policy.match_label_keys) == (2, 1, ("group",))
    assert policy.network_topology is not None and policy.network_topology.mode == "hard"  # the API default
    assert policy.network_topology.highest_tier_allowed == 1


def test_a_vcjob_topology_reaches_its_podgroup(tmp_path: Path) -> None:
    job = """\
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j, namespace: ns}
spec:
  networkTopology: {mode: hard, highestTierAllowed: 1}
  tasks:
  - name: w
    replicas: 2
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
"""
    snap = _load(tmp_path, NODES + job)
    (pg,) = snap.podgroups
    assert pg.network_topology is not None and pg.network_topology.highest_tier_allowed == 1


@pytest.mark.parametrize("members, code, line", [
    pytest.param("  - type: HyperNode\n    selector: {exactMatch: {name: ghost}}\n",
                 "load.hypernode-unknown-member", 13, id="unknown-hypernode"),
    pytest.param("  - type: HyperNode\n    selector: {regexMatch: {pattern: x}}\n", "load.bad-value", 18,
                 id="hypernode-member-by-regex"),
    pytest.param("  - type: Node\n    selector: {exactMatch: {name: n0}, regexMatch: {pattern: n}}\n",
                 "load.bad-value", 18, id="two-selectors"),
])
def test_bad_hypernodes_are_located_errors(tmp_path: Path, members: str, code: str, line: int) -> None:
    text = NODES + """\
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: spine}
spec:
  tier: 2
  members:
""" + members
    with pytest.raises(PolicyError) as raised:
        _load(tmp_path, text)
    found = [(d.code, d.span.line if d.span else 0) for d in raised.value.diagnostics]
    assert (code, line) in found, found


def test_hypernodes_and_network_topology_survive_writing_and_reading_back(tmp_path: Path) -> None:
    from benchmarks import topology as workload
    from vpolicy.harness import verify_yaml

    snapshot, _gangs = workload.generate(workload.Size("T", 24, 1.2), seed=3)
    path = tmp_path / "c.yaml"
    path.write_text(verify_yaml.to_yaml(snapshot), encoding="utf-8")
    again = load_cluster(path)
    assert again.hypernodes == snapshot.hypernodes
    assert [g.network_topology for g in again.podgroups] == [g.network_topology for g in snapshot.podgroups]


def test_a_node_member_the_cluster_lacks_is_a_warning_and_the_hypernode_stays(tmp_path: Path) -> None:
    text = NODES + """\
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf}
spec:
  tier: 1
  members:
  - type: Node
    selector: {exactMatch: {name: n0}}
  - type: Node
    selector: {exactMatch: {name: gone}}
"""
    snap = _load(tmp_path, text)
    assert [h.name for h in snap.hypernodes] == ["leaf"]
    assert any("names member Node 'gone'" in w and "ignored" in w for w in snap.warnings)


def test_a_vcjob_partition_policy_becomes_a_sub_group_policy_and_partition_labels(tmp_path: Path) -> None:
    job = """\
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: nt, namespace: ns}
spec:
  minAvailable: 4
  tasks:
  - name: t0
    replicas: 4
    partitionPolicy: {totalPartitions: 2, partitionSize: 2, minPartitions: 2,
                      networkTopology: {mode: hard, highestTierAllowed: 1}}
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
"""
    snap = _load(tmp_path, NODES + job)
    (policy,) = snap.podgroups[0].sub_group_policy
    assert (policy.name, policy.sub_group_size, policy.min_sub_groups, policy.match_label_keys) == \
        ("t0", 2, 2, ("volcano.sh/partition-id",))
    assert policy.network_topology is not None and policy.network_topology.highest_tier_allowed == 1
    pods = sorted((*snap.pods, *snap.deferred_pods), key=lambda p: p.name)
    assert [p.labels["volcano.sh/partition-id"] for p in pods] == ["0", "0", "1", "1"]
    assert all(policy.selects(p.labels) for p in pods)

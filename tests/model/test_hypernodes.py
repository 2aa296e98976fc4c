"""The HyperNode tree: members resolved against nodes, ancestors and LCA, and the problems it reports."""
from __future__ import annotations

import pytest

from vpolicy.model import hypernodes as hn


def _node_member(name: str) -> hn.Member:
    return hn.Member("Node", hn.MemberSelector(exact=name))


def _hn_member(name: str) -> hn.Member:
    return hn.Member("HyperNode", hn.MemberSelector(exact=name))


def _two_leaves_one_spine() -> hn.HyperNodeTree:
    return hn.HyperNodeTree(
        [hn.HyperNode("leaf0", 1, (_node_member("n0"), _node_member("n1"))),
         hn.HyperNode("leaf1", 1, (hn.Member("Node", hn.MemberSelector(regex="^m")),)),
         hn.HyperNode("spine", 2, (_hn_member("leaf0"), _hn_member("leaf1")), tier_name="spine")],
        [("n0", {}), ("n1", {}), ("m0", {}), ("m1", {}), ("x", {})])


def test_a_domain_holds_the_nodes_of_its_members_and_their_members() -> None:
    tree = _two_leaves_one_spine()
    assert tree.real_nodes["leaf1"] == {"m0", "m1"}
    assert tree.real_nodes["spine"] == {"n0", "n1", "m0", "m1"}
    assert tree.problems == []


@pytest.mark.parametrize("a, b, lca", [
    pytest.param("leaf0", "leaf0", "leaf0", id="same"),
    pytest.param("leaf0", "leaf1", "spine", id="siblings"),
    pytest.param("leaf0", "spine", "spine", id="ancestor"),
    pytest.param("", "leaf1", "leaf1", id="nothing-yet"),
])
def test_the_lowest_common_ancestor_of_two_domains(a: str, b: str, lca: str) -> None:
    assert _two_leaves_one_spine().lca(a, b) == lca


def test_a_node_outside_every_domain_has_no_leaf_and_tiers_name_their_numbers() -> None:
    tree = _two_leaves_one_spine()
    assert tree.leaf_of == {"n0": "leaf0", "n1": "leaf0", "m0": "leaf1", "m1": "leaf1"}
    assert tree.tier_of_name("spine") == 2
    assert tree.highest_allowed("leaf0", 1) == "leaf0"
    assert tree.highest_allowed("leaf0", 2) == "spine"


@pytest.mark.parametrize("hypernodes, code", [
    pytest.param([hn.HyperNode("a", 1, (_hn_member("b"),)), hn.HyperNode("b", 2, (_hn_member("a"),))],
                 "load.hypernode-cycle", id="cycle"),
    pytest.param([hn.HyperNode("a", 2, (_hn_member("ghost"),))], "load.hypernode-unknown-member", id="unknown-hn"),
    pytest.param([hn.HyperNode("a", 1, (_node_member("ghost"),))], "load.hypernode-unknown-member",  # a warning
                 id="unknown-node"),
    pytest.param([hn.HyperNode("a", 1, (_node_member("n0"),)), hn.HyperNode("b", 1, (_node_member("n0"),))],
                 "load.hypernode-member-in-two-domains", id="node-twice-in-a-tier"),
    pytest.param([hn.HyperNode("a", 1, ()), hn.HyperNode("p", 2, (_hn_member("a"),)),
                  hn.HyperNode("q", 2, (_hn_member("a"),))], "load.hypernode-member-in-two-domains",
                 id="two-parents"),
    pytest.param([hn.HyperNode("a", 2, ()), hn.HyperNode("p", 2, (_hn_member("a"),))],
                 "load.hypernode-tier-order", id="member-not-below"),
])
def test_an_unusable_topology_is_reported(hypernodes: list[hn.HyperNode], code: str) -> None:
    tree = hn.HyperNodeTree(hypernodes, [("n0", {})])
    assert code in [p.code for p in tree.problems]


def test_a_node_in_two_tiers_is_fine() -> None:
    tree = hn.HyperNodeTree([hn.HyperNode("a", 1, (_node_member("n0"),)), hn.HyperNode("b", 2, (_node_member("n0"),))],
                            [("n0", {})])
    assert tree.problems == []
    assert tree.leaf_of["n0"] == "a"


def test_label_members_choose_nodes_by_their_labels() -> None:
    sel = hn.MemberSelector(match_labels={"rack": "r1"},
                            match_expressions=(hn.LabelRequirement("zone", "In", ("z1", "z2")),))
    tree = hn.HyperNodeTree([hn.HyperNode("r1", 1, (hn.Member("Node", sel),))],
                            [("a", {"rack": "r1", "zone": "z1"}), ("b", {"rack": "r1"}), ("c", {"rack": "r2", "zone": "z1"})])
    assert tree.real_nodes["r1"] == {"a"}

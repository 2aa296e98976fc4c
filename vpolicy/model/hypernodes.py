"""Network topology as plain data: HyperNodes (Volcano's `topology.volcano.sh/v1alpha1`), the tree they
form over the nodes, and a job's `networkTopology` / `subGroupPolicy`.

A HyperNode is one network domain: `spec.tier` (1 = closest to the nodes, e.g. a leaf switch),
an optional `spec.tierName`, and `spec.members`, each of type Node or HyperNode chosen by exact name,
regular expression (Node members only) or labels (Node members only). The members of all HyperNodes form a
tree (a forest, under the virtual cluster root): `HyperNodeTree` resolves members against the cluster's
nodes once, and answers what the scheduler asks of it: the real nodes under a domain, a domain's parent,
ancestors and children, the lowest common ancestor of two domains, and the lowest domain of a node.

It also finds what makes a topology unusable (`HyperNodeTree.problems`): a HyperNode member that names no
HyperNode, a cycle, a HyperNode claimed by two parents, a node in two domains of the same tier, a child
whose tier is not below its parent's. The loader reports them as errors at the HyperNode's name.

This module does not read YAML (`vpolicy.load.kinds` does) and does not schedule (`vpolicy.engine` does).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Literal, Mapping, Sequence

from vpolicy.model.affinity import LabelSelector, Requirement
from vpolicy.source import Span

# The name Volcano gives the virtual domain above every HyperNode (framework.ClusterTopHyperNode).
CLUSTER_ROOT = "<cluster-top-hypernode>"
# The PodGroup annotation older Volcano releases kept a job's allocated HyperNode in.
# Volcano's NetworkTopologySpec default for highestTierAllowed when a hard-mode job names no tier.
DEFAULT_HIGHEST_TIER = 1
ALLOCATED_HYPERNODE_ANNOTATION = "volcano.sh/job-allocated-hypernode"

MemberType = Literal["Node", "HyperNode"]
TopologyMode = Literal["hard", "soft"]


# A matchExpressions entry, as in every other label selector of the model.
LabelRequirement = Requirement


@dataclass(frozen=True, slots=True)
class MemberSelector:
    """Exactly one of the three ways Volcano's webhook allows (exactMatch, regexMatch, labelMatch)."""

    exact: str | None = None
    regex: str | None = None
    match_labels: Mapping[str, str] | None = None
    match_expressions: tuple[LabelRequirement, ...] = ()

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        if self.exact is not None:
            return name == self.exact
        if self.regex is not None:
            try:
                return re.search(self.regex, name) is not None
            except re.error:
                return False
        if self.match_labels is None and not self.match_expressions:
            return False
        return labels_match(self.match_labels or {}, self.match_expressions, labels)


@dataclass(frozen=True, slots=True)
class Member:
    type: MemberType
    selector: MemberSelector


@dataclass(frozen=True, slots=True)
class HyperNode:
    name: str
    tier: int
    members: tuple[Member, ...] = ()
    tier_name: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    origin: Span | str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class NetworkTopology:
    """A job's (or sub-group's) `networkTopology`: hard mode never spans above `highest_tier_allowed`;
    soft mode only prefers low tiers. `highest_tier_name` names a tier by the HyperNodes' tierName and is
    resolved per session (`HyperNodeTree.tier_of_name`)."""

    mode: TopologyMode = "hard"
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""


@dataclass(frozen=True, slots=True)
class SubGroupPolicy:
    """One entry of a PodGroup's `spec.subGroupPolicy`: the pods it selects (labelSelector) are split
    into sub-groups by the values of `match_label_keys`; each sub-group is a gang of `sub_group_size`
    pods that must stay inside one domain when `network_topology` says so; the job needs at least
    `min_sub_groups` of them."""

    name: str
    network_topology: NetworkTopology | None = None
    sub_group_size: int | None = None
    min_sub_groups: int = 0
    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[LabelRequirement, ...] = ()
    match_label_keys: tuple[str, ...] = ()

    def selects(self, labels: Mapping[str, str]) -> bool:
        """Whether the pod belongs to one of the policy's sub-groups: it matches the labelSelector and
        has a non-empty value for every matchLabelKey (Volcano's getSubJobMatchValues: a pod missing one
        joins no sub-group of this policy)."""
        if any(not labels.get(k) for k in self.match_label_keys):
            return False
        if not self.match_labels and not self.match_expressions:
            return True
        return labels_match(self.match_labels, self.match_expressions, labels)

    def group_of(self, labels: Mapping[str, str]) -> str:
        """The sub-group a selected pod belongs to: the policy name and its values of matchLabelKeys."""
        return "/".join([self.name, *(labels.get(k, "") for k in self.match_label_keys)])


@dataclass(frozen=True, slots=True)
class TopologyProblem:
    code: str  # load.hypernode-<kebab>
    message: str
    hypernode: str
    help: str
    warning: bool = False  # a node the cluster no longer has: the member is ignored, as Volcano does


def labels_match(match_labels: Mapping[str, str], expressions: Sequence[LabelRequirement],
                 labels: Mapping[str, str]) -> bool:
    return LabelSelector(tuple(match_labels.items()), tuple(expressions)).matches(labels)


class HyperNodeTree:
    """The HyperNodes of one snapshot resolved against its nodes. Built once per session; immutable after."""

    def __init__(self, hypernodes: Sequence[HyperNode], nodes: Iterable[tuple[str, Mapping[str, str]]]):
        self.hypernodes: dict[str, HyperNode] = {h.name: h for h in hypernodes}
        self.problems: list[TopologyProblem] = []
        self._ancestors: dict[str, tuple[list[str], frozenset[str]]] = {}
        node_list = list(nodes)
        self.parent: dict[str, str] = {}
        self.children: dict[str, list[str]] = {h.name: [] for h in hypernodes}
        self.direct_nodes: dict[str, list[str]] = {h.name: [] for h in hypernodes}
        self._resolve(node_list)
        self._find_cycles()
        self.real_nodes: dict[str, frozenset[str]] = {}
        for name in self.hypernodes:
            self._collect(name, set())
        self.real_nodes[CLUSTER_ROOT] = frozenset(n for n, _ in node_list)
        self.tiers: list[int] = sorted({h.tier for h in hypernodes})
        self.max_tier = self.tiers[-1] if self.tiers else 0
        self.min_tier = self.tiers[0] if self.tiers else 0
        self.tier_names: dict[str, int] = {h.tier_name: h.tier for h in hypernodes if h.tier_name}
        # the lowest domain of each node (Volcano's FindHyperNodeForNode: lowest tier first)
        self.leaf_of: dict[str, str] = {}
        for tier in self.tiers:
            for name in sorted(n for n, h in self.hypernodes.items() if h.tier == tier):
                for node in self.real_nodes.get(name, ()):
                    self.leaf_of.setdefault(node, name)
        self._check_tiers(node_list)

    # queries ---------------------------------------------------------------------------------------
    def tier(self, name: str) -> int:
        if name == CLUSTER_ROOT:
            return self.max_tier + 1
        hn = self.hypernodes.get(name)
        return hn.tier if hn is not None else 0

    def ancestors(self, name: str) -> list[str]:
        """`name` itself, then its parent, grandparent, ... (not the virtual root). Kept per name: the
        tree never changes once built, and node scores ask for every candidate node of every task."""
        found = self._ancestors.get(name)
        if found is None:
            out: list[str] = []
            seen: set[str] = set()
            current = name
            while current and current in self.hypernodes and current not in seen:
                out.append(current)
                seen.add(current)
                current = self.parent.get(current, "")
            found = self._ancestors[name] = (out, frozenset(out))
        return found[0]

    def lca(self, a: str, b: str) -> str:
        """The lowest common ancestor of two domains; "" with "" is the other one; none in common is the
        cluster root."""
        if not a:
            return b
        if not b:
            return a
        if a == b:
            return a
        self.ancestors(a)
        up = self._ancestors[a][1]
        for name in self.ancestors(b):
            if name in up:
                return name
        return CLUSTER_ROOT

    def within(self, name: str, ancestor: str) -> bool:
        """`name` is `ancestor` or lies under it (everything lies under the cluster root)."""
        if ancestor == CLUSTER_ROOT:
            return True
        self.ancestors(name)
        return ancestor in self._ancestors[name][1]

    def descendants(self, name: str) -> list[str]:
        """Breadth first, `name` first; the cluster root's are every top domain and all below."""
        start = [h for h in self.hypernodes if h not in self.parent] if name == CLUSTER_ROOT else [name]
        out, queue, seen = [], list(start), set(start)
        if name == CLUSTER_ROOT:
            out.append(CLUSTER_ROOT)
        while queue:
            current = queue.pop(0)
            out.append(current)
            for child in self.children.get(current, ()):
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
        return out

    def highest_allowed(self, allocated: str, tier: int) -> str:
        """The highest ancestor of `allocated` whose tier is at most `tier` ("" when even `allocated` is
        above it); the cluster root when the tier reaches above every HyperNode (Volcano main's
        ClusterTopHyperNode, one tier above the highest: a job allowed that high may go anywhere)."""
        found = ""
        for name in self.ancestors(allocated):
            if self.tier(name) > tier:
                return found
            found = name
        return CLUSTER_ROOT if found and tier >= self.tier(CLUSTER_ROOT) else found

    def tier_of_name(self, tier_name: str) -> int | None:
        return self.tier_names.get(tier_name)

    def holds_to_a_tier(self, spec: NetworkTopology | None) -> bool:
        """Whether a hard-mode `spec` really limits the tier: it gives highestTierAllowed, names a tier
        some HyperNode carries, or gives neither (the API's default tier 1). A highestTierName no
        HyperNode carries leaves Volcano's HighestTierAllowed unset (updateJobTier only logs), and
        IsHardTopologyMode is then false: the job is placed as one without a hard limit."""
        if spec is None or spec.mode != "hard":
            return False
        return (spec.highest_tier_allowed is not None or not spec.highest_tier_name
                or self.tier_of_name(spec.highest_tier_name) is not None)

    def highest_tier(self, spec: NetworkTopology | None) -> int:
        """A job's highest allowed tier: highestTierAllowed, else the tier `highestTierName` names, else
        Volcano's default 1 (a name no HyperNode carries also gives 1 here, but such a hard-mode job is
        not held to it: `holds_to_a_tier`); 0 without a networkTopology."""
        if spec is None:
            return 0
        if spec.highest_tier_allowed is not None:
            return spec.highest_tier_allowed
        if spec.highest_tier_name:
            found = self.tier_of_name(spec.highest_tier_name)
            if found is not None:
                return found
        return DEFAULT_HIGHEST_TIER

    def span_of(self, nodes: Iterable[str]) -> str:
        """The lowest domain holding every one of `nodes` (the cluster root when one is in no domain)."""
        found = ""
        for node in nodes:
            leaf = self.leaf_of.get(node)
            if leaf is None:
                return CLUSTER_ROOT
            found = self.lca(found, leaf)
        return found

    def domain_of(self, node: str, tier: int) -> str:
        """The domain of tier `tier` (or the lowest one above it) that holds `node`, "" when none."""
        for name in self.ancestors(self.leaf_of.get(node, "")):
            if self.tier(name) >= tier:
                return name
        return ""

    # building ------------------------------------------------------------------------------------------
    def _resolve(self, nodes: list[tuple[str, Mapping[str, str]]]) -> None:
        names = {name for name, _labels in nodes}
        seen: dict[str, set[str]] = {}
        for hn in self.hypernodes.values():
            for member in hn.members:
                sel = member.selector
                if member.type == "HyperNode":
                    child = sel.exact or ""
                    if child not in self.hypernodes:
                        self._problem("unknown-member", f"HyperNode {hn.name} names member HyperNode {child!r}, "
                                      "which does not exist", hn.name,
                                      "create that HyperNode, or correct the name in spec.members")
                        continue
                    if child == hn.name:
                        self._problem("cycle", f"HyperNode {hn.name} is a member of itself", hn.name,
                                      "remove the member that names the HyperNode itself")
                        continue
                    other = self.parent.get(child)
                    if other is not None and other != hn.name:
                        self._problem("member-in-two-domains", f"HyperNode {child} is a member of both {other} "
                                      f"and {hn.name}", hn.name, "a domain has one parent: keep it in one of them")
                        continue
                    self.parent[child] = hn.name
                    self.children[hn.name].append(child)
                else:
                    if sel.exact is not None:  # by name: a lookup, not a scan of every node
                        matched = [sel.exact] if sel.exact in names else []
                    else:
                        matched = [name for name, labels in nodes if sel.matches(name, labels)]
                    if sel.exact is not None and not matched:
                        self._problem("unknown-member", f"HyperNode {hn.name} names member Node {sel.exact!r}, "
                                      "which is not in the cluster: the member is ignored", hn.name,
                                      "correct the node name, or remove the member (the node may also be deleted "
                                      "or not yet created)", warning=True)
                    have = seen.setdefault(hn.name, set())
                    for m in matched:
                        if m not in have:
                            have.add(m)
                            self.direct_nodes[hn.name].append(m)

    def _find_cycles(self) -> None:
        reported: set[str] = set()
        for start in self.hypernodes:
            path, name = [start], self.parent.get(start)
            while name is not None and name not in path:
                path.append(name)
                name = self.parent.get(name)
            if name is not None:
                cycle = path[path.index(name):]
                key = min(cycle)
                if key not in reported:
                    reported.add(key)
                    self._problem("cycle", "HyperNodes form a cycle: " + " -> ".join([*cycle, name]), key,
                                  "HyperNodes form a tree: a HyperNode cannot be a member of its own member")
                for member in cycle:  # break it, so every later walk ends
                    self.parent.pop(member, None)

    def _collect(self, name: str, visiting: set[str]) -> frozenset[str]:
        done = self.real_nodes.get(name)
        if done is not None:
            return done
        visiting.add(name)
        found = set(self.direct_nodes.get(name, ()))
        for child in self.children.get(name, ()):
            if child not in visiting:
                found |= self._collect(child, visiting)
        result = self.real_nodes[name] = frozenset(found)
        return result

    def _check_tiers(self, nodes: list[tuple[str, Mapping[str, str]]]) -> None:
        for child, parent in sorted(self.parent.items()):
            if self.hypernodes[child].tier >= self.hypernodes[parent].tier:
                self._problem("tier-order", f"HyperNode {child} (tier {self.hypernodes[child].tier}) is a member "
                              f"of {parent} (tier {self.hypernodes[parent].tier}): a member's tier must be lower",
                              parent, "give the parent a higher spec.tier than each of its members")
        for tier in self.tiers:
            owner: dict[str, str] = {}
            for name in sorted(n for n, h in self.hypernodes.items() if h.tier == tier):
                for node in sorted(self.direct_nodes.get(name, ())):
                    if node in owner:
                        self._problem("member-in-two-domains", f"node {node} is a member of both {owner[node]} and "
                                      f"{name}, two domains of tier {tier}", name,
                                      "a node belongs to one domain per tier: narrow the selectors")
                    else:
                        owner[node] = name

    def _problem(self, code: str, message: str, hypernode: str, help: str, *, warning: bool = False) -> None:
        self.problems.append(TopologyProblem(f"load.hypernode-{code}", message, hypernode, help, warning))


def empty_tree() -> HyperNodeTree:
    return HyperNodeTree((), ())

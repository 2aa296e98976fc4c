"""The DSL's network-topology functions (catalogue: `lang.builtins.FUNCTIONS`): domain arithmetic over
the session's HyperNode tree, which rules reach through `cluster` (`engine.topology` binds
`cluster.topology`, whose `tree` is a `model.hypernodes.HyperNodeTree`).

Primitives only: how a domain is scored or chosen is written in `policies/volcano/network-topology-aware.vpol`.
"""
from __future__ import annotations

from typing import Any, Callable


def lca_tier(cluster: Any, a: str, b: str) -> int:
    """The tier of the lowest common domain of two domains: 0 when either is "", one above the highest
    tier when only the cluster holds both."""
    if not a or not b:
        return 0
    tree = cluster.topology.tree
    return int(tree.tier(tree.lca(a, b)))


def ancestor_at(cluster: Any, name: str, tier: int) -> str:
    """The highest domain holding `name` whose tier is at most `tier` ("" when `name` is above it)."""
    return str(cluster.topology.tree.highest_allowed(name, tier)) if name else ""


def within(cluster: Any, name: str, ancestor: str) -> bool:
    """Domain `name` is `ancestor` or lies under it."""
    return bool(cluster.topology.tree.within(name, ancestor))


def tasks_within(tasks: list[Any], domain: Any) -> int:
    """How many of `tasks` sit on a node of `domain` (a hypernode), whatever their status."""
    count = getattr(domain, "count_tasks", None)
    if count is not None:  # a session's HyperNodeInfo keeps the answer until the state changes
        return int(count(tasks))
    names = set(domain.node_names)
    return sum(1 for t in tasks if t.node_name in names)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "lca_tier": lca_tier,
    "ancestor_at": ancestor_at,
    "within": within,
    "tasks_within": tasks_within,
    "pow": lambda a, b: float(a) ** float(b),
    "tier_of": lambda domain: int(domain.tier),
}

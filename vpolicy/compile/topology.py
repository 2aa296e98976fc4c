"""The DSL's network-topology functions (catalogue: `lang.builtins.FUNCTIONS`): domain arithmetic over
the session's HyperNode tree, which rules reach through `cluster` (`engine.topology` binds
`cluster.topology`, whose `tree` is a `model.hypernodes.HyperNodeTree`).

Primitives only: how a domain is scored or chosen is written in `policies/volcano/network-topology-aware.vpol`.
"""
from __future__ import annotations

from typing import Any, Callable

from vpolicy.compile import ir

# What a node rule may read of its node and still answer every node of one lowest domain alike: the
# node's domains (`node.hypernode`, `node.hypernodes`) and nothing else of it.
DOMAIN_ATTRS = frozenset({"hypernode", "hypernodes"})


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


def node_reads(term: ir.Term, node: str, functions: dict[str, tuple[tuple[str, ...], ir.Term]]) -> frozenset[str] | None:
    """The attributes `term` reads of the node variable `node`, through the helpers it passes the node
    to; None when the node itself escapes (given to a built-in, compared, bound to another name, put in
    a list): then any of its fields may matter. A rule whose reads are within `DOMAIN_ATTRS` answers
    all nodes of one lowest domain alike, so the engine asks it once per domain (`by_domain`)."""
    found: set[str] = set()
    seen: set[tuple[str, int]] = set()

    def walk(t: object, var: str) -> bool:
        if isinstance(t, ir.GetAttr) and isinstance(t.obj, ir.Var) and t.obj.name == var:
            found.add(t.name)
            return True
        if isinstance(t, ir.Var):
            return t.name != var
        if isinstance(t, ir.CallUser):
            for i, arg in enumerate(t.args):
                if isinstance(arg, ir.Var) and arg.name == var and t.func in functions:
                    params, body = functions[t.func]
                    if (t.func, i) not in seen:
                        seen.add((t.func, i))
                        if not walk(body, params[i]):
                            return False
                elif not walk(arg, var):
                    return False
            return True
        if isinstance(t, tuple):
            return all(walk(c, var) for c in t)
        if isinstance(t, (str, int, float, bool)) or t is None or isinstance(t, ir.Label):
            return True
        return all(walk(getattr(t, f), var) for f in getattr(t, "__dataclass_fields__", {}))

    return frozenset(found) if walk(term, node) else None


def by_domain(term: ir.Term, node: str, functions: dict[str, tuple[tuple[str, ...], ir.Term]]) -> bool:
    """Whether a node rule sees its node only through the node's HyperNodes (`node_reads`)."""
    reads = node_reads(term, node, functions)
    return reads is not None and bool(reads) and reads <= DOMAIN_ATTRS


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "lca_tier": lca_tier,
    "ancestor_at": ancestor_at,
    "within": within,
    "tasks_within": tasks_within,
    "pow": lambda a, b: float(a) ** float(b),
    "tier_of": lambda domain: int(domain.tier),
}

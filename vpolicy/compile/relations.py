"""Built-ins that count pods per topology domain: the DSL side of pod affinity, topology spread and
host ports (docs/dsl.md, "Pods per topology domain").

Each answers for one node (a session NodeInfo) or for a batch of nodes at once (a `NodeBatch`, as
`compile.vectorize` hands it), reading the session's pod index through the `term` or the task
(`vpolicy.engine.pod_relations`, duck-typed: this package never imports the engine). Their answers
change as tasks are placed, so `compile.lower.classify` marks a rule calling one as depending on
placements ("pods"), and the engine recomputes it when a count it reads has changed.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

# Built-ins whose answers follow the session's placements (see compile.lower.classify).
PLACEMENT_FUNCTIONS = frozenset({"pods_in_domain", "pods_anywhere", "domain_min", "domain_count",
                                 "placed_anti_affinity", "placed_preferred_affinity", "host_ports_free",
                                 "volume_limits_ok", "volume_binding_ok"})


def _rows(index: Any, node: Any) -> tuple[np.ndarray, bool]:
    """The index rows `node` stands for, and whether it is a single node (answer a scalar)."""
    rows = getattr(node, "rows", None)
    if rows is not None:
        return np.asarray(rows), False
    infos = getattr(node, "infos", None)
    if infos is not None:
        return np.array([index.row[n.name] for n in infos], dtype=np.int64), False
    return np.array([index.row[node.name]], dtype=np.int64), True


def _answer(values: np.ndarray, single: bool, kind: type) -> Any:
    return kind(values[0]) if single else values


def pods_in_domain(term: Any, node: Any) -> Any:
    rows, single = _rows(term.index, node)
    return _answer(term.index.in_domain(term, rows), single, int)


def pods_anywhere(term: Any) -> int:
    return int(term.index.anywhere(term))


def domain_min(term: Any) -> int:
    return int(term.index.domain_min(term))


def domain_count(term: Any) -> int:
    return int(term.index.domain_count(term))


def matches_term(task: Any, term: Any) -> bool:
    return bool(term.index.matches(task, term))


def has_label(node: Any, key: str) -> Any:
    infos = getattr(node, "infos", None)
    if infos is not None:
        return np.array([key in n.labels for n in infos], dtype=bool)
    return key in node.labels


def placed_anti_affinity(task: Any, node: Any) -> Any:
    rel = task.relations
    if not rel.anti_owners:
        return 0
    rows, single = _rows(rel.index, node)
    return _answer(rel.index.owners_in_domain(task, rows), single, int)


def placed_preferred_affinity(task: Any, node: Any) -> Any:
    rel = task.relations
    if not rel.preferred_owners:
        return 0
    rows, single = _rows(rel.index, node)
    return _answer(rel.index.owner_preference(task, rows), single, int)


def image_bytes(task: Any, node: Any) -> Any:
    rel = task.relations
    if not rel.images or rel.index is None:
        return 0
    rows, single = _rows(rel.index, node)
    return _answer(rel.index.image_bytes(rel.images, rows), single, int)


def volume_zone_ok(task: Any, node: Any) -> Any:
    rel = task.relations
    if not rel.volumes or rel.index is None:
        return True
    rows, single = _rows(rel.index, node)
    return _answer(rel.index.volume_zone_ok(task, rows), single, bool)


def volume_node_affinity_ok(task: Any, node: Any) -> Any:
    rel = task.relations
    if not rel.volumes or rel.index is None:
        return True
    rows, single = _rows(rel.index, node)
    return _answer(rel.index.volume_node_affinity_ok(task, rows), single, bool)


def volume_limits_ok(task: Any, node: Any) -> Any:
    rel = task.relations
    if not rel.attachable or rel.index is None:
        return True
    rows, single = _rows(rel.index, node)
    return _answer(rel.index.volume_limits_ok(task, rows), single, bool)


def volume_binding_ok(task: Any, node: Any) -> Any:
    rel = task.relations
    if not rel.delayed_claims or rel.index is None:
        return True
    rows, single = _rows(rel.index, node)
    return _answer(rel.index.volume_binding_ok(task, rows), single, bool)


def host_ports_free(task: Any, node: Any) -> Any:
    rel = task.relations
    if not rel.host_ports:
        return True
    rows, single = _rows(rel.index, node)
    return _answer(rel.index.ports_free(task, rows), single, bool)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "pods_in_domain": pods_in_domain,
    "pods_anywhere": pods_anywhere,
    "domain_min": domain_min,
    "domain_count": domain_count,
    "matches_term": matches_term,
    "has_label": has_label,
    "placed_anti_affinity": placed_anti_affinity,
    "placed_preferred_affinity": placed_preferred_affinity,
    "host_ports_free": host_ports_free,
    "image_bytes": image_bytes,
    "volume_zone_ok": volume_zone_ok,
    "volume_node_affinity_ok": volume_node_affinity_ok,
    "missing_claims": lambda task: task.relations.missing_claims,
    "unbound_immediate_claims": lambda task: task.relations.unbound_immediate_claims,
    "foreign_ephemeral_claims": lambda task: task.relations.foreign_claims,
    "volume_limits_ok": volume_limits_ok,
    "volume_binding_ok": volume_binding_ok,
}
# The same functions answer a NodeBatch with an array (compile.vectorize's `_vec_function`).
VECTOR_FUNCTIONS = frozenset({"pods_in_domain", "has_label", "placed_anti_affinity", "placed_preferred_affinity",
                              "host_ports_free", "image_bytes", "volume_zone_ok", "volume_node_affinity_ok",
                              "volume_limits_ok", "volume_binding_ok"})

"""Differences between vpolicy and the pinned Volcano that are kept on purpose, each with the Go line
that decides Volcano's side (docs/conformance.md explains each one).

A listed divergence is recognised from the case and the two outcomes; a difference it explains is
counted as `listed`, not as a failure. Keep this list short: every entry is a place where vpolicy does
not make Volcano's decision.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.compare import Outcome
from conformance.generate import GROUP, ROLE, Case


@dataclass(frozen=True)
class Divergence:
    key: str
    go_line: str  # file:line in volcano.sh/volcano at the pinned version
    why: str
    matches: Callable[[Case, Outcome, Outcome, list[str]], bool]


def _best_effort_pods(case: Case) -> dict[str, dict[str, Any]]:
    out = {}
    for o in case.objects:
        if o["kind"] != "Pod" or o["spec"].get("nodeName"):
            continue
        if not any(c.get("resources", {}).get("requests") for c in o["spec"].get("containers", [])):
            out[f"{o['metadata']['namespace']}/{o['metadata']['name']}"] = o
    return out


def _fits_somewhere(pod: dict[str, Any], case: Case) -> bool:
    """Whether a best-effort pod passes the node checks the families draw (readiness, cordon, node
    selector, NoSchedule taints) on some node; pod-count room is not checked."""
    tolerated = {(t.get("key"), t.get("value")) for t in pod["spec"].get("tolerations", [])}
    selector = pod["spec"].get("nodeSelector", {})
    for node in case.objects:
        if node["kind"] != "Node" or node["spec"].get("unschedulable"):
            continue
        if not any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", [])):
            continue
        labels = node["metadata"].get("labels", {})
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        if all((t["key"], t.get("value")) in tolerated for t in node["spec"].get("taints", [])
               if t["effect"] in ("NoSchedule", "NoExecute")):
            return True
    return False


def _backfill_stops_at_first_failure(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> bool:
    if "backfill" not in case.conf.split("tiers")[0]:
        return False
    best_effort = _best_effort_pods(case)
    touched = {line.split()[1].rstrip(":") for line in lines}
    return bool(touched) and touched <= set(best_effort) and \
        any(not _fits_somewhere(pod, case) for pod in best_effort.values())


def _reclaim_counts_only_reclaimed(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> bool:
    actions = case.conf.split("tiers")[0]
    if "reclaim" not in actions:
        return False
    return bool(lines) and all(line.startswith("pipeline ") or
                               (line.startswith("evict ") and line.endswith("only volcano")) for line in lines)


def _placement_fields(pod: dict[str, Any]) -> str:
    spec = pod["spec"]
    return repr([spec.get("nodeSelector"), spec.get("affinity"), spec.get("tolerations")])


def _heterogeneous_role_pods(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> bool:
    """Some job has pods of one (non-empty) role that differ in selector, affinity or tolerations, and
    every difference is a pod of such a role."""
    by_role: dict[tuple[str, str], set[str]] = {}
    names: dict[tuple[str, str], set[str]] = {}
    for o in case.objects:
        if o["kind"] != "Pod" or o["spec"].get("nodeName"):
            continue
        meta = o["metadata"]
        role = meta.get("annotations", {}).get(ROLE) or meta.get("labels", {}).get(ROLE)
        if not role:
            continue
        key = (meta.get("annotations", {}).get(GROUP, ""), role)
        by_role.setdefault(key, set()).add(_placement_fields(o))
        names.setdefault(key, set()).add(f"{meta['namespace']}/{meta['name']}")
    mixed = set().union(*(names[k] for k, fields in by_role.items() if len(fields) > 1)) if by_role else set()
    touched = {line.split()[1].rstrip(":") for line in lines}
    return bool(mixed) and bool(touched) and touched <= mixed


def _full_nodes(case: Case, volcano: Outcome) -> set[str]:
    """Nodes whose pod slots Volcano's outcome fills (pods already there, plus its binds and pipelined)."""
    slots = {o["metadata"]["name"]: int(o["status"]["allocatable"].get("pods", "110"))
             for o in case.objects if o["kind"] == "Node"}
    count: dict[str, int] = {}
    for o in case.objects:
        node = o["spec"].get("nodeName") if o["kind"] == "Pod" else None
        if node:
            count[node] = count.get(node, 0) + 1
    for _, node in (*volcano.binds, *volcano.pipelined):
        count[node] = count.get(node, 0) + 1
    return {n for n, cap in slots.items() if count.get(n, 0) >= cap}


def _backfill_onto_a_full_node(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> bool:
    if "backfill" not in case.conf.split("tiers")[0]:
        return False
    best_effort = _best_effort_pods(case)
    ok = all(line.startswith("bind ") and line.split()[1].rstrip(":") in best_effort and "volcano -," in line
             for line in lines)
    return bool(lines) and ok and bool(_full_nodes(case, volcano))


DIVERGENCES: tuple[Divergence, ...] = (
    Divergence(
        key="backfill-v1.10-ignores-pod-slots",
        go_line="pkg/scheduler/plugins/predicates/predicates.go:395-403 (v1.10.0)",
        why="v1.10.0's predicate collects NodePodNumberExceeded but returns success unless another filter "
            "fails, so backfill (which, unlike allocate, does not compare the task with the node's idle "
            "pods) scores a node whose pod slots are full, picks it, fails to allocate there and leaves "
            "the best-effort pod pending; main returns the failure, and vpolicy places the pod on a node "
            "with a free slot. Matched when every difference is a best-effort pod vpolicy binds and "
            "Volcano leaves pending while some node's slots are full in Volcano's outcome.",
        matches=_backfill_onto_a_full_node),
    Divergence(
        key="predicate-cache-assumes-one-template-per-role",
        go_line="pkg/scheduler/util/predicate_helper.go:47-70 (v1.10.0)",
        why="Volcano caches each node's predicate error per job and role (`taskGroupID`) and, once a task of "
            "a role has failed on a node, refuses that node to the role's later tasks without checking them: "
            "right for vcjob pods made from one template, wrong when pods of one role differ (here in node "
            "selector, affinity or tolerations). vpolicy checks every task; the same in main. Matched when "
            "every difference is a pending pod of a role whose pods differ in those fields.",
        matches=_heterogeneous_role_pods),
    Divergence(
        key="reclaim-v1.10-counts-only-reclaimed",
        go_line="pkg/scheduler/actions/reclaim/reclaim.go:184-207 (v1.10.0)",
        why="v1.10.0's reclaim evicts a victim before looking at the node's room and pipelines the task only "
            "when the evicted resources alone cover its request; main (and vpolicy) start from the node's "
            "future idle, evict only while the request does not fit, and pipeline a task that already fits. "
            "Matched when the conf runs reclaim and every difference is a pipelined pod or a pod only "
            "Volcano evicted.",
        matches=_reclaim_counts_only_reclaimed),
    Divergence(
        key="backfill-v1.10-stops-at-first-unplaceable",
        go_line="pkg/scheduler/actions/backfill/backfill.go:77 (v1.10.0)",
        why="v1.10.0's backfill leaves its whole loop (`break`) at the first best-effort task no node "
            "passes, and allocates each task on its own; main goes on with the next task and commits one "
            "statement per job when it is ready (vpolicy stops as v1.10.0 does since 26fd059). Matched "
            "when every difference is a best-effort pod and some pending best-effort pod fits no node.",
        matches=_backfill_stops_at_first_failure),
)


def explain(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> Divergence | None:
    for d in DIVERGENCES:
        if d.matches(case, volcano, vpolicy, lines):
            return d
    return None


def describe() -> list[dict[str, Any]]:
    return [{"key": d.key, "go_line": d.go_line, "why": d.why} for d in DIVERGENCES]

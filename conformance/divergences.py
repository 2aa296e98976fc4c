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
from conformance.generate import Case


@dataclass(frozen=True)
class Divergence:
    key: str
    go_line: str  # file:line in volcano.sh/volcano at the pinned version
    why: str
    matches: Callable[[Case, Outcome, Outcome, list[str]], bool]


def _capacity_reclaims_on_any_dimension(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> bool:
    """The conf reclaims with the capacity plugin and every difference is a pod vpolicy's reclaim
    pipelined or evicted where Volcano did nothing (vpolicy reclaims on a dimension below deserved)."""
    actions = case.conf.split("tiers")[0]
    if "reclaim" not in actions or "name: capacity" not in case.conf:
        return False
    return bool(lines) and all((line.startswith("pipeline ") and ": volcano -," in line) or
                               (line.startswith("evict ") and line.endswith("only vpolicy")) for line in lines)


def _overfull_nodes(case: Case, volcano: Outcome) -> set[str]:
    """Nodes holding more pods in Volcano's outcome (pods already there, releasing ones too, plus its
    binds and pipelined pods) than their allocatable pod count."""
    slots = {o["metadata"]["name"]: int(o["status"]["allocatable"].get("pods", "110"))
             for o in case.objects if o["kind"] == "Node"}
    count: dict[str, int] = {}
    for o in case.objects:
        node = o["spec"].get("nodeName") if o["kind"] == "Pod" else None
        if node:
            count[node] = count.get(node, 0) + 1
    for _, node in (*volcano.binds, *volcano.pipelined):
        count[node] = count.get(node, 0) + 1
    return {n for n, cap in slots.items() if count.get(n, 0) > cap}


def _placed_beyond_pod_slots(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> bool:
    """Every difference is a pod Volcano placed (vpolicy did not) on a node it filled beyond its slots."""
    overfull = _overfull_nodes(case, volcano)
    if not overfull or not lines:
        return False
    placed = {p: n for p, n in (*volcano.binds, *volcano.pipelined)}
    for line in lines:
        words = line.split()
        if words[0] not in ("bind", "pipeline") or "vpolicy -" not in line:
            return False
        if placed.get(words[1].rstrip(":")) not in overfull:
            return False
    return True


def _has_pod_relations(pod: dict[str, Any]) -> bool:
    spec = pod["spec"]
    affinity = spec.get("affinity", {})
    return bool(spec.get("topologySpreadConstraints") or affinity.get("podAffinity")
                or affinity.get("podAntiAffinity") or any(
                    p.get("hostPort") for c in spec.get("containers", []) for p in c.get("ports", [])))


def _preempt_pipelines_without_predicate(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> bool:
    """The conf preempts and every difference is a pod with pod relations Volcano pipelined and vpolicy
    did not."""
    if "preempt" not in case.conf.split("tiers")[0] or not lines:
        return False
    pods = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in case.objects if o["kind"] == "Pod"}
    for line in lines:
        words = line.split()
        pod = pods.get(words[1].rstrip(":"))
        if words[0] != "pipeline" or "vpolicy -" not in line or pod is None or not _has_pod_relations(pod):
            return False
    return True


DIVERGENCES: tuple[Divergence, ...] = (
    Divergence(
        key="preempt-v1.10-pipelines-without-predicate",
        go_line="pkg/scheduler/actions/preempt/preempt.go:291,315 (v1.10.0)",
        why="version gap: v1.10.0's preempt pipelines the preemptor on a node once the queue is "
            "Allocatable and its request fits FutureIdle, without asking the predicates again, so a "
            "preemptor whose pod affinity, anti-affinity, topology spread or host port fails there "
            "(resolvable failures pass the preempt-flavour predicate) is pipelined, with or without "
            "evictions; main asks PredicateFn too (`preemptorFitsOnNode`), as vpolicy does. Matched when "
            "the conf preempts and every difference is a pod with such terms that Volcano pipelined and "
            "vpolicy did not.",
        matches=_preempt_pipelines_without_predicate),
    Divergence(
        key="predicates-v1.10-passes-full-pod-slots",
        go_line="pkg/scheduler/plugins/predicates/predicates.go:395-403 (v1.10.0)",
        why="version gap: v1.10.0's predicate records NodePodNumberExceeded when a node's pods fill its "
            "slots but returns success unless another filter fails, so a task whose request fits the "
            "node's FutureIdle (a releasing pod gives its slot back there) is pipelined onto a full node; "
            "main returns the failure (`if len(predicateStatus) > 0`), as vpolicy does. Matched when every "
            "difference is a pod Volcano placed, and vpolicy did not, on a node Volcano's outcome fills "
            "beyond its pod slots (the backfill family's cases are bridged in backfill_main.go).",
        matches=_placed_beyond_pod_slots),
    Divergence(
        key="capacity-v1.10-preemptive-needs-every-dimension",
        go_line="pkg/scheduler/plugins/capacity/capacity.go:255-271 (v1.10.0)",
        why="version gap: v1.10.0's capacity answers Preemptive only when the queue's allocated plus the "
            "task's request stays within deserved on every dimension the task asks for "
            "(LessEqualWithDimension), though its comment says one dimension suffices; main does what the "
            "comment says (LessEqualPartlyWithDimensionZeroFiltered), and vpolicy follows main. Matched "
            "when the conf reclaims with capacity and every difference is a pod vpolicy's reclaim pipelined "
            "or evicted where Volcano did nothing (a loose test: it cannot tell this gap from another "
            "difference of the same shape).",
        matches=_capacity_reclaims_on_any_dimension),
)


def explain(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> Divergence | None:
    for d in DIVERGENCES:
        if d.matches(case, volcano, vpolicy, lines):
            return d
    return None


def describe() -> list[dict[str, Any]]:
    return [{"key": d.key, "go_line": d.go_line, "why": d.why} for d in DIVERGENCES]

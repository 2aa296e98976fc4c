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


DIVERGENCES: tuple[Divergence, ...] = (
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

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


def _reclaim_counts_only_reclaimed(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> bool:
    actions = case.conf.split("tiers")[0]
    if "reclaim" not in actions:
        return False
    return bool(lines) and all(line.startswith("pipeline ") or
                               (line.startswith("evict ") and line.endswith("only volcano")) for line in lines)


DIVERGENCES: tuple[Divergence, ...] = (
    Divergence(
        key="reclaim-v1.10-counts-only-reclaimed",
        go_line="pkg/scheduler/actions/reclaim/reclaim.go:184-207 (v1.10.0)",
        why="v1.10.0's reclaim evicts a victim before looking at the node's room and pipelines the task only "
            "when the evicted resources alone cover its request; main (and vpolicy) start from the node's "
            "future idle, evict only while the request does not fit, and pipeline a task that already fits. "
            "Matched when the conf runs reclaim and every difference is a pipelined pod or a pod only "
            "Volcano evicted.",
        matches=_reclaim_counts_only_reclaimed),
)


def explain(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> Divergence | None:
    for d in DIVERGENCES:
        if d.matches(case, volcano, vpolicy, lines):
            return d
    return None


def describe() -> list[dict[str, Any]]:
    return [{"key": d.key, "go_line": d.go_line, "why": d.why} for d in DIVERGENCES]

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





DIVERGENCES: tuple[Divergence, ...] = ()


def explain(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> Divergence | None:
    for d in DIVERGENCES:
        if d.matches(case, volcano, vpolicy, lines):
            return d
    return None


def describe() -> list[dict[str, Any]]:
    return [{"key": d.key, "go_line": d.go_line, "why": d.why} for d in DIVERGENCES]

"""Solver outcomes. `Unknown` (timeout, resource limit, incompleteness) is its own case and is never
collapsed into `Unsat`: callers that need a decision fall back to the exact evaluator's witness."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vpolicy.compile.ir import Label


@dataclass(frozen=True, slots=True)
class Sat:
    model: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Unsat:
    core: tuple[Label, ...] = ()


@dataclass(frozen=True, slots=True)
class Unknown:
    reason: str


Result = Sat | Unsat | Unknown


class SolverError(Exception):
    """The backend failed on a term it should handle (a bug, not a user mistake)."""

"""Groups of labelled constraints, solved with assumptions, and their minimal unsat cores.

`explain` needs more than `Z3Backend.check`: a rule instance (one predicate rule on one node class, one
queue's allocatable check with its numbers) is a *group* of constraints that stands or falls together,
and the user wants the smallest set of groups that still conflict. Each group is asserted as
`indicator -> And(group)`, checked under assumptions, and the core Z3 returns is shrunk by deletion
(drop one group, re-check; keep it dropped while the rest stays unsat) until every group left is needed.

Each check is bounded by Z3's resource units (`rlimit`), not by time, so the same question gets the same
core on a busy machine as on an idle one. `Unknown` (the limit reached) is never read as `Unsat`: a
deletion check that comes back unknown keeps
its group and marks the core as not proved minimal; a first check that comes back unknown is returned
as `Unknown`. This module knows nothing of scheduling: groups come from `compile.encode_*`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import z3

from vpolicy.compile import ir
from vpolicy.solve.backend_z3 import Z3Backend, resource_count
from vpolicy.solve.result import Result, Sat, Unknown, Unsat

# Z3 resource units per check: about two seconds of Z3's work on a loaded 2-core machine (1.5M units/s
# measured), the timeout it replaces; explain's questions (a few task classes over node classes) need
# thousands.
CHECK_RLIMIT = 3_000_000


@dataclass(frozen=True, slots=True)
class Group:
    """Constraints that belong to one rule instance; they enter or leave a core together."""

    label: ir.Label
    terms: tuple[ir.Term, ...]


@dataclass(frozen=True, slots=True)
class CoreResult:
    """The outcome of `minimal_core`: `result` is Sat, Unknown, or Unsat with the kept groups' labels;
    `minimal` says every label in the core was shown necessary (no deletion check came back unknown)."""

    result: Result
    groups: tuple[Group, ...] = ()
    minimal: bool = False
    checks: int = 0
    ms: float = 0.0


class GroupSolver:
    """One Z3 solver over fixed groups; each check picks the groups that are on by assumption."""

    def __init__(self, backend: Z3Backend, groups: Sequence[Group], *, hard: Sequence[ir.Term] = (),
                 rlimit: int = CHECK_RLIMIT):
        self.backend = backend
        self.groups = list(groups)
        self.solver = z3.Solver(ctx=backend.ctx)
        self.solver.set("rlimit", max(1, rlimit))  # per check, counted from where Z3's counter stands
        for term in hard:  # domain constraints (counts are >= 0): always on, never in a core
            self.solver.add(backend.translate(term))
        self.indicators: list[z3.BoolRef] = []
        for i, group in enumerate(self.groups):
            flag = z3.Bool(f"g{i}|{group.label.rule_id}", backend.ctx)
            self.indicators.append(flag)
            body = z3.And(*(backend.translate(t) for t in group.terms)) if group.terms else z3.BoolVal(True, backend.ctx)
            self.solver.add(z3.Implies(flag, body))
        self.checks = 0

    def check(self, active: Sequence[int]) -> tuple[Result, list[int]]:
        """Solve with the groups `active` on; on Unsat also return the indices in Z3's core."""
        self.checks += 1
        self.backend.calls += 1
        before = resource_count(self.solver)
        answer = self.solver.check(*(self.indicators[i] for i in active))
        self.backend.rlimit_spent += resource_count(self.solver) - before
        if answer == z3.sat:
            return Sat(self.backend.model_values(self.solver.model())), []
        if answer == z3.unsat:
            names = {str(c) for c in self.solver.unsat_core()}
            core = [i for i in active if str(self.indicators[i]) in names]
            return Unsat(tuple(self.groups[i].label for i in core)), core
        return Unknown(self.solver.reason_unknown() or "unknown"), []


def minimal_core(backend: Z3Backend, groups: Sequence[Group], *, hard: Sequence[ir.Term] = (),
                 rlimit: int = CHECK_RLIMIT, drop_first: Sequence[int] = ()) -> CoreResult:
    """Solve all groups together; when they conflict, shrink Z3's core to a minimal one by deletion.

    Several minimal cores may exist (a task blocked both by its queue and by full nodes); deletion is
    tried first on the groups listed in `drop_first` (in that order), so the core keeps the others when
    it can: callers list the groups they would rather not show."""
    started = time.perf_counter()
    gs = GroupSolver(backend, groups, hard=hard, rlimit=rlimit)
    result, core = gs.check(range(len(gs.groups)))
    if not isinstance(result, Unsat):
        return CoreResult(result, checks=gs.checks, ms=_ms(started))
    minimal = True
    rank = {g: i for i, g in enumerate(drop_first)}
    # With a preference, start from every group (Z3's first core may have missed the preferred ones);
    # each successful deletion shrinks to the solver's core again, so this stays a few checks.
    kept = sorted(range(len(gs.groups)) if rank else core, key=lambda g: (rank.get(g, len(rank)), g))
    i = 0
    while i < len(kept):
        trial = kept[:i] + kept[i + 1:]
        answer, smaller = gs.check(trial)
        if isinstance(answer, Unsat):
            kept = [k for k in trial if k in set(smaller)] or trial
            continue  # groups before i stay (a necessary group is in every core of a subset)
        if isinstance(answer, Unknown):
            minimal = False
        i += 1
    chosen = tuple(gs.groups[k] for k in sorted(kept))
    return CoreResult(Unsat(tuple(g.label for g in chosen)), chosen, minimal, gs.checks, _ms(started))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)

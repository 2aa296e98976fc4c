"""Rule coverage for `vpolicy test --coverage`: which rules ever decided something across a suite.

A rule is *covered* when at least one of its answers, in some scenario's session, decided something:
a non-zero order or vote, a false predicate / allocatable / job_ready / job_valid, a true `overused`, a
list of victims, a non-zero node score (the table is `vpolicy.engine.runtime.DECIDES`). Every other rule
of the modules the suite loaded is listed with its span and why it is uncovered: switched off by the
conf or policy of every scenario, enabled but never called (its action never ran, or no session reached
it), or called but never deciding (its answer never differed from what the other rules gave).

`CoverageRecorder` learns the rules of each compiled policy (`add_policy`) and counts sessions run
inside `recording()`; `result()` freezes that into a `Coverage`. The counting itself happens in the
engine's runtime, switched on only inside `recording()`. Nothing here prints: `format_text` and
`to_json` give what the CLI writes.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from vpolicy.compile.ir import Label
from vpolicy.engine import runtime
from vpolicy.engine.session import CompiledPolicy
from vpolicy.lang.builtins import CALLBACKS
from vpolicy.source import Span

Status = Literal["decided", "never-decided", "never-called", "switched-off"]
_WHY: dict[Status, str] = {
    "never-decided": "called {calls} time{s}, never decided",
    "never-called": "never called",
    "switched-off": "switched off ({flag}: false) wherever it was loaded",
}


@dataclass(frozen=True, slots=True)
class RuleUse:
    """One rule across the suite: its id (`plugin.rule`), callback, span and counts."""

    rule_id: str
    callback: str
    span: Span
    enabled: bool
    calls: int
    decided: int

    @property
    def status(self) -> Status:
        if self.decided:
            return "decided"
        if self.calls:
            return "never-decided"
        return "never-called" if self.enabled else "switched-off"

    def why(self) -> str:
        """Why the rule is uncovered, in words ("" for a covered rule)."""
        status = self.status
        if status == "decided":
            return ""
        flag = CALLBACKS[self.callback].flag if self.callback in CALLBACKS else None
        return _WHY[status].format(calls=self.calls, s="" if self.calls == 1 else "s", flag=flag or "its flag")


@dataclass(frozen=True, slots=True)
class Coverage:
    rules: tuple[RuleUse, ...]  # sorted by span

    @property
    def covered(self) -> list[RuleUse]:
        return [r for r in self.rules if r.status == "decided"]

    @property
    def uncovered(self) -> list[RuleUse]:
        return [r for r in self.rules if r.status != "decided"]

    def summary(self) -> str:
        total, done = len(self.rules), len(self.covered)
        percent = f" ({100 * done // total}%)" if total else ""
        return f"rule coverage: {done} of {total} rules decided something{percent}"


@dataclass(slots=True)
class CoverageRecorder:
    """Collects the rules of every policy the suite uses and the counts of its sessions."""

    counts: runtime.RuleCounts = field(default_factory=runtime.RuleCounts)
    _rules: dict[Label, str] = field(default_factory=dict)  # label -> callback
    _enabled: set[Label] = field(default_factory=set)

    def add_policy(self, policy: CompiledPolicy) -> None:
        for tier in policy.tiers:
            for plugin in tier:
                for callback, rules in plugin.module.rules.items():
                    for rule in rules:
                        self._rules.setdefault(rule.label, callback)
                    if callback in CALLBACKS:
                        self._enabled.update(rule.label for rule in plugin.rules(callback))

    @contextmanager
    def recording(self) -> Iterator[None]:
        """Sessions run inside this block count their rule calls here."""
        with runtime.recording_coverage(self.counts):
            yield

    def result(self) -> Coverage:
        uses = [RuleUse(label.rule_id, callback, label.span, label in self._enabled,
                        self.counts.calls.get(label, 0), self.counts.decided.get(label, 0))
                for label, callback in self._rules.items()]
        return Coverage(tuple(sorted(uses, key=lambda u: (u.span.file, u.span.line, u.span.col, u.rule_id))))


def format_text(coverage: Coverage) -> str:
    """The summary line, then one line per uncovered rule: `file:line:col: id (callback): why`."""
    lines = [coverage.summary()]
    for use in coverage.uncovered:
        lines.append(f"  {_where(use.span)}: {use.rule_id} ({use.callback}): {use.why()}")
    return "\n".join(lines) + "\n"


def to_json(coverage: Coverage) -> dict[str, object]:
    return {
        "covered": len(coverage.covered),
        "total": len(coverage.rules),
        "rules": [{"rule": u.rule_id, "callback": u.callback, "file": _short(u.span.file), "line": u.span.line,
                   "col": u.span.col, "status": u.status, "calls": u.calls, "decided": u.decided}
                  for u in coverage.rules],
    }


def _short(file: str) -> str:
    """A rule file relative to the working folder when it lies under it (shorter report lines)."""
    try:
        return Path(file).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return file


def _where(span: Span) -> str:
    return f"{_short(span.file)}:{span.line}:{span.col}"

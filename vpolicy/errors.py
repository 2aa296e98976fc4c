"""Diagnostics: the one way user mistakes are reported, from the DSL, confs, manifests and scenarios.

Every diagnostic has a stable code (`<stage>.<kebab-name>`, documented in docs/diagnostics.md), a span,
a message and an optional help line. `render` gives the single textual form used by the CLI, the JSON
reporter and `str(PolicyError)`. Exceptions are only for the API boundary: `PolicyError` carries the
diagnostics of bad input; broken invariants raise ordinary exceptions.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Iterable, Literal

from vpolicy.source import Span, snippet

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    message: str
    span: Span | None = None
    help: str | None = None
    severity: Severity = "error"
    related: tuple[tuple[Span, str], ...] = field(default=())

    def one_line(self) -> str:
        where = f"{self.span}: " if self.span else ""
        hint = f" ({self.help})" if self.help else ""
        return f"{where}{self.severity}[{self.code}]: {self.message}{hint}"

    def render(self, *, with_snippet: bool = True) -> str:
        where = f"{self.span}: " if self.span else ""
        lines = [f"{where}{self.severity}[{self.code}]: {self.message}"]
        if with_snippet and self.span is not None:
            text = snippet(self.span)
            if text:
                lines.append(text)
        if self.help:
            lines.append(f"   help: {self.help}")
        for span, note in self.related:
            lines.append(f"   note: {span}: {note}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"code": self.code, "severity": self.severity, "message": self.message}
        if self.span is not None:
            out.update(file=self.span.file, line=self.span.line, col=self.span.col)
        if self.help:
            out["help"] = self.help
        return out


def sort_key(d: Diagnostic) -> tuple[str, int, int, str]:
    if d.span is None:
        return ("", 0, 0, d.code)
    return (d.span.file, d.span.line, d.span.col, d.code)


def sorted_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    return sorted(diags, key=sort_key)


class PolicyError(Exception):
    """Bad input (policy, conf, snapshot, scenario): one or more diagnostics, rendered one per line."""

    def __init__(self, diagnostics: Iterable[Diagnostic]):
        self.diagnostics = sorted_diagnostics(diagnostics)
        super().__init__("\n".join(d.one_line() for d in self.diagnostics))

    @classmethod
    def single(cls, code: str, message: str, span: Span | None = None, help: str | None = None) -> "PolicyError":
        return cls([Diagnostic(code=code, message=message, span=span, help=help)])


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """A 'did you mean' help line for a misspelt name, or None when nothing is close."""
    match = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"did you mean '{match[0]}'?" if match else None

"""Source locations shared by every front-end: policy files, confs, cluster manifests, scenarios.

A `Span` names a file and a 1-based line/column range. It is the only location type in vpolicy, so the
DSL parser, the YAML loaders and the solver's unsat cores all point at text the same way. This module
does not render diagnostics (see `errors`), and it reads files only through `SourceFile`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Span:
    """A region of one file; `line`/`col` are 1-based, `end_*` inclusive of the last character."""

    file: str
    line: int
    col: int
    end_line: int | None = None
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    @property
    def short(self) -> str:
        """`file:line`, the form the decision document uses for rule references."""
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file's name as the user wrote it and its text, so snippets can be shown under diagnostics."""

    name: str
    text: str
    # The text split into lines once, on the first `line_text` (a dump's thousands of spans each ask for a
    # line: splitting per call made loading quadratic in the file's size).
    _lines: list[str] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def read(cls, path: str | Path) -> "SourceFile":
        return cls(name=str(path), text=Path(path).read_text(encoding="utf-8"))

    def line_text(self, line: int) -> str:
        lines = self._lines
        if lines is None:
            lines = self.text.splitlines()
            object.__setattr__(self, "_lines", lines)  # a cache, not state: frozen for callers
        return lines[line - 1] if 0 < line <= len(lines) else ""


_SOURCES: dict[str, SourceFile] = {}


def remember(source: SourceFile) -> SourceFile:
    """Keep a file's text so a diagnostic rendered later can quote the offending line."""
    _SOURCES[source.name] = source
    return source


def snippet(span: Span) -> str:
    """The source line of `span` with a caret under the spanned columns, or "" if the text is unknown."""
    source = _SOURCES.get(span.file)
    if source is None:
        try:
            source = remember(SourceFile.read(span.file))
        except OSError:
            return ""
    text = source.line_text(span.line)
    if not text:
        return ""
    width = 1
    if span.end_line == span.line and span.end_col is not None and span.end_col >= span.col:
        width = span.end_col - span.col + 1
    gutter = f"{span.line:>5} | "
    return f"{gutter}{text}\n{' ' * (len(gutter) - 2)}| {' ' * (span.col - 1)}{'^' * width}"

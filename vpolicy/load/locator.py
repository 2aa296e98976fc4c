"""Where a value of a loaded object is written: the one interface the field readers point through.

The readers of `vpolicy.load.fields` and `vpolicy.load.kinds` work on plain mappings and lists (`dict`,
`list`, and ruamel's `CommentedMap`/`CommentedSeq`, which are those types too), whichever parser made
them. To blame a value they ask a `Locator` for its span. Three kinds of locator exist:

- `yaml_spans.YamlFile`: a file read with ruamel's round-trip loader; every node knows its position.
- `dumpfile.FastObject`: one object of a big dump read by a C parser, which keeps no positions. Its spans
  are `LazySpan`s: the position is worked out only when someone reads it (a diagnostic is rendered, a
  warning is written), by re-reading just that object's text with the round-trip loader. A clean load of
  a big dump therefore never pays for positions.
- `objects.ObjectFile`: an object from the API server (the live side): every span is the object itself.

A `LazySpan` is a `Span` (so every consumer keeps its types) whose fields are computed on first access.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

from vpolicy.source import Span


class Locator(Protocol):
    """Spans of the nodes of one object (or file), and scalars as they were written."""

    @property
    def name(self) -> str: ...

    def node_span(self, node: Any) -> Span: ...

    def key_span(self, mapping: Any, key: Any) -> Span: ...

    def value_span(self, mapping: Any, key: Any) -> Span: ...

    def item_span(self, seq: Any, index: int) -> Span: ...

    def value_text(self, mapping: Any, key: Any) -> str: ...


class LazySpan(Span):
    """A span whose position is found on first use: `resolve(*args)` returns the real Span. (Arguments
    rather than a closure: a big dump makes hundreds of thousands of these and reads almost none.)"""

    __slots__ = ("_resolve", "_args", "_span")

    def __init__(self, resolve: Callable[..., Span], *args: Any):  # (Span's generated __init__ is bypassed)
        object.__setattr__(self, "_resolve", resolve)
        object.__setattr__(self, "_args", args)
        object.__setattr__(self, "_span", None)

    def resolved(self) -> Span:
        span: Span | None = object.__getattribute__(self, "_span")
        if span is None:
            span = object.__getattribute__(self, "_resolve")(*object.__getattribute__(self, "_args"))
            while isinstance(span, LazySpan):
                span = span.resolved()
            object.__setattr__(self, "_span", span)
            object.__setattr__(self, "_resolve", None)  # let the re-read text go
            object.__setattr__(self, "_args", ())
        return span

    @property
    def file(self) -> str:
        return self.resolved().file

    @property
    def line(self) -> int:
        return self.resolved().line

    @property
    def col(self) -> int:
        return self.resolved().col

    @property
    def end_line(self) -> int | None:
        return self.resolved().end_line

    @property
    def end_col(self) -> int | None:
        return self.resolved().end_col

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazySpan):
            other = other.resolved()
        return self.resolved() == other

    def __hash__(self) -> int:
        return hash(self.resolved())

    def __repr__(self) -> str:
        return repr(self.resolved())

    def __str__(self) -> str:
        return str(self.resolved())

    @property
    def short(self) -> str:
        return self.resolved().short


def resolved(span: Span) -> Span:
    """`span` itself, or the real span behind a `LazySpan`."""
    return span.resolved() if isinstance(span, LazySpan) else span

"""YAML and JSON files read with positions, so every value can be pointed at as `file:line:col`.

`read_yaml`/`parse_yaml` read a (multi-document) YAML or JSON text with ruamel.yaml's round-trip
loader, which gives every mapping and sequence an `.lc` with the 0-based line/column of each key,
value and item. `YamlFile` turns those into 1-based `vpolicy.source.Span`s, with an end column taken
from the source line so carets underline the whole token. The text is registered with
`vpolicy.source.remember`, so diagnostics rendered later quote the offending line.

Malformed input raises `PolicyError` with a `<stage>.yaml-syntax` (or `<stage>.duplicate-key`)
diagnostic located at ruamel's problem mark, with a one-line message and a help line; `stage` is
`load` for cluster dumps and may be another stage's name for other YAML inputs (scenarios, confs).

This module does not know any Kubernetes kind: it only reads text and locates nodes. Interpreting
the documents is the job of `vpolicy.load.fields` and the loaders built on it (`vpolicy.load.cluster`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.reader import ReaderError

from vpolicy.errors import Diagnostic, PolicyError
from vpolicy.load import textfile
from vpolicy.source import SourceFile, Span, remember

# ruamel's problem texts, matched by substring, with the advice a user needs for each (most specific first).
_SYNTAX_HELP: tuple[tuple[str, str], ...] = (
    ("mapping values are not allowed", "a plain value may not contain ': '; quote it, or fix this line's indentation"),
    ("'\\t'", "indent with spaces: YAML does not allow tabs for indentation"),
    ("expected <block end>", "this line is indented differently from the lines it belongs with"),
    ("undefined alias", "define the &anchor before the *alias that uses it"),
    ("unexpected end of stream", "a quote, bracket or brace opened earlier is never closed"),
    ("expected ',' or", "a flow list or mapping is not closed, or two of its items lack a comma between them"),
    ("could not find expected ':'", "a key is missing its ':' or a quoted key is not closed"),
)
_DEFAULT_SYNTAX_HELP = "fix the syntax at this position; `kubectl ... -o yaml` output always parses"
_DUPLICATE_KEY = re.compile(r'found duplicate key "(.*?)" with value')
_FLOW_STOPS = frozenset(",[]{}")
_ONE_TUPLE = re.compile(r"\(('[^']*'),\)")


@dataclass(frozen=True, slots=True)
class YamlFile:
    """One file's documents (CommentedMap/CommentedSeq/scalars/None) and the means to locate them."""

    source: SourceFile
    documents: tuple[Any, ...]
    # Lines of the file before `source.text` when only a region of it was parsed (`parse_region`): spans
    # count from the file's first line; `source` holds the region, under the file's name.
    line_offset: int = 0

    @property
    def name(self) -> str:
        return self.source.name

    def node_span(self, node: CommentedMap | CommentedSeq) -> Span:
        """Where a mapping or sequence starts: its first key or item."""
        return self._span(node.lc.line, node.lc.col, flow=False)

    def key_span(self, mapping: CommentedMap, key: Any) -> Span:
        """Where a key is written; the mapping's start for a key merged in with `<<: *anchor` (it has no
        position of its own)."""
        if key not in mapping.lc.data:
            return self.node_span(mapping)
        line, col = mapping.lc.key(key)
        return self._span(line, col, flow=_is_flow(mapping))

    def value_span(self, mapping: CommentedMap, key: Any) -> Span:
        """Where a key's value is written; the key itself when the value is null (nothing to point at)."""
        value = mapping.get(key)
        if value is None:
            return self.key_span(mapping, key)
        if isinstance(value, (CommentedMap, CommentedSeq)) and not _is_flow(value):
            return self.node_span(value)
        if key not in mapping.lc.data:  # merged in with `<<: *anchor`
            return self.node_span(mapping)
        line, col = mapping.lc.value(key)
        return self._span(line, col, flow=_is_flow(mapping))

    def item_span(self, seq: CommentedSeq, index: int) -> Span:
        line, col = seq.lc.item(index)
        return self._span(line, col, flow=_is_flow(seq))

    def value_text(self, mapping: CommentedMap, key: Any) -> str:
        """A scalar value as written in the file (`1e3`, `0.10`), not as YAML resolved it (1000.0, 0.1).

        Strings come back as parsed (quotes and escapes resolved); numbers as their source token, so
        quantities written as bare numbers keep every digit.
        """
        value = mapping.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(int(value))  # exact already, whatever base or underscores it was written with
        if key not in mapping.lc.data:  # merged in with `<<: *anchor`: no text of its own here
            return str(value)
        line, col = mapping.lc.value(key)
        text = self.source.line_text(line + 1)  # region-relative, as `source` holds the region
        width = _token_width(text, col, flow=_is_flow(mapping))
        token = text[col:col + width]
        return token if token else str(value)

    def document_span(self, index: int) -> Span:
        """Where document `index` starts, whatever it holds (also for scalar or empty documents)."""
        doc = self.documents[index] if 0 <= index < len(self.documents) else None
        if isinstance(doc, (CommentedMap, CommentedSeq)):
            return self.node_span(doc)
        nodes = list(_new_yaml().compose_all(self.source.text))
        if 0 <= index < len(nodes) and nodes[index] is not None:
            mark = nodes[index].start_mark
            return self._span(mark.line, mark.column, flow=False)
        return Span(self.name, 1 + self.line_offset, 1)

    def _span(self, line0: int, col0: int, *, flow: bool) -> Span:
        text = self.source.line_text(line0 + 1)
        width = _token_width(text, col0, flow=flow)
        line = line0 + 1 + self.line_offset
        return Span(self.name, line, col0 + 1, line, col0 + width)


def read_yaml(path: str | Path, *, stage: str = "load") -> YamlFile:
    """Read and parse one file; unreadable or malformed input raises PolicyError."""
    name = str(path)
    try:
        text = textfile.read_text(path, bom=True)
    except textfile.UnreadableFile as exc:
        if exc.missing:
            raise PolicyError.single(
                f"{stage}.unreadable-file", f"no such file: {name}", exc.span,
                help="check the path; folders are read for *.yaml, *.yml and *.json files") from None
        what = "cluster dumps" if stage == "load" else f"{stage} files"
        hint = f"{what} must be UTF-8 text files"
        raise PolicyError([exc.diagnostic(f"{stage}.unreadable-file", help=hint)]) from exc
    return parse_yaml(text, name=name, stage=stage)


def parse_yaml(text: str, *, name: str, stage: str = "load") -> YamlFile:
    """Parse text already in memory (tests, stdin); `name` is what spans will call the file."""
    source = remember(SourceFile(name=name, text=text))
    try:
        documents = tuple(_new_yaml().load_all(text))
    except DuplicateKeyError as exc:
        raise PolicyError([_duplicate_key(exc, source, stage)]) from exc
    except MarkedYAMLError as exc:
        raise PolicyError([_syntax_error(exc, source, stage)]) from exc
    except ReaderError as exc:
        line, col = _line_col(text, exc.position)
        raise PolicyError.single(
            f"{stage}.yaml-syntax", f"invalid {_language(name)}: {exc.reason} (character {exc.character!r})",
            Span(name, line, col), help="remove the control character; YAML text must be printable") from exc
    except YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PolicyError.single(f"{stage}.yaml-syntax", f"invalid {_language(name)}: {first}",
                                 Span(name, 1, 1), help=_DEFAULT_SYNTAX_HELP) from exc
    return YamlFile(source=source, documents=documents)


def parse_region(region: str, *, name: str, line_offset: int, stage: str = "load") -> YamlFile:
    """Parse `region`, the text of file `name` from line `line_offset + 1` on (whole lines; a first line
    that starts mid-line is padded with spaces to its column), so that spans point into the whole file.

    Used to locate a problem found in one object of a dump too big for the round-trip loader: only that
    object's text is re-read. The region is not `remember`ed (the caller registers the whole file's text
    for snippets); a syntax error in it is reported at its position in the file.
    """
    source = SourceFile(name=name, text=region)
    try:
        documents = tuple(_new_yaml().load_all(region))
    except DuplicateKeyError as exc:
        raise PolicyError([_shifted(_duplicate_key(exc, source, stage), line_offset)]) from exc
    except MarkedYAMLError as exc:
        raise PolicyError([_shifted(_syntax_error(exc, source, stage, line_offset=line_offset), line_offset)]) from exc
    return YamlFile(source=source, documents=documents, line_offset=line_offset)


def _shifted(diagnostic: Diagnostic, lines: int) -> Diagnostic:
    def move(span: Span | None) -> Span | None:
        if span is None:
            return None
        end = span.end_line + lines if span.end_line is not None else None
        return Span(span.file, span.line + lines, span.col, end, span.end_col)

    related = tuple((moved, note) for span, note in diagnostic.related if (moved := move(span)) is not None)
    return replace(diagnostic, span=move(diagnostic.span), related=related)


def _new_yaml() -> YAML:
    # A fresh round-trip loader per file: ruamel's YAML objects keep per-stream state.
    return YAML(typ="rt")


def _is_flow(node: CommentedMap | CommentedSeq) -> bool:
    return bool(node.fa.flow_style())


def _language(name: str) -> str:
    return "JSON" if name.lower().endswith(".json") else "YAML"


def _mark_span(source: SourceFile, line0: int, col0: int) -> Span:
    text = source.line_text(line0 + 1)
    width = _token_width(text, col0, flow=False) if col0 < len(text) else 1
    return Span(source.name, line0 + 1, col0 + 1, line0 + 1, col0 + width)


def _syntax_error(exc: MarkedYAMLError, source: SourceFile, stage: str, *, line_offset: int = 0) -> Diagnostic:
    """`line_offset`: the lines of the file before `source` (a region re-read alone), for the line the message
    names; the spans are moved by the caller."""
    mark = exc.problem_mark or exc.context_mark
    span = _mark_span(source, mark.line, mark.column) if mark is not None else Span(source.name, 1, 1)
    problem = _ONE_TUPLE.sub(r"\1", (exc.problem or str(exc)).strip())  # ruamel prints some tokens as ('{',)
    message = f"invalid {_language(source.name)}: {problem}"
    if exc.context and exc.context_mark is not None and exc.context_mark is not mark:
        where = f"line {exc.context_mark.line + 1 + line_offset}, column {exc.context_mark.column + 1}"
        message += f" ({exc.context.strip()} at {where})"
    advice = next((text for needle, text in _SYNTAX_HELP if needle in problem), _DEFAULT_SYNTAX_HELP)
    return Diagnostic(code=f"{stage}.yaml-syntax", message=message, span=span, help=advice)


def _duplicate_key(exc: DuplicateKeyError, source: SourceFile, stage: str) -> Diagnostic:
    mark = exc.problem_mark
    span = _mark_span(source, mark.line, mark.column) if mark is not None else Span(source.name, 1, 1)
    found = _DUPLICATE_KEY.search(exc.problem or "")
    key = found.group(1) if found else "?"
    related: tuple[tuple[Span, str], ...] = ()
    if exc.context_mark is not None:
        related = ((_mark_span(source, exc.context_mark.line, exc.context_mark.column), "in this mapping"),)
    return Diagnostic(code=f"{stage}.duplicate-key", message=f'duplicate key "{key}"', span=span,
                      help="a key may appear once per mapping; delete or merge the repeated one", related=related)


def _line_col(text: str, position: int) -> tuple[int, int]:
    before = text[:position]
    line = before.count("\n") + 1
    return line, position - (before.rfind("\n") + 1) + 1


def _token_width(line: str, col: int, *, flow: bool) -> int:
    """Width of the scalar token starting at `col` (at least 1): a quoted string, or a plain scalar."""
    if col >= len(line):
        return 1
    opener = line[col]
    if opener in "\"'":
        i = col + 1
        while i < len(line):
            char = line[i]
            if opener == '"' and char == "\\":
                i += 2
                continue
            if char == opener:
                if opener == "'" and line[i + 1:i + 2] == "'":
                    i += 2
                    continue
                return i - col + 1
            i += 1
        return len(line) - col  # the string goes on to the next line: underline to the end of this one
    if opener in "|>[{&*!":
        return 1
    end = len(line)
    for i in range(col, len(line)):
        char = line[i]
        after = line[i + 1:i + 2]
        if char == "#" and i > col and line[i - 1] in " \t":
            end = i
            break
        if char == ":" and (after in ("", " ", "\t") or (flow and after in _FLOW_STOPS)):
            end = i
            break
        if flow and char in _FLOW_STOPS:
            end = i
            break
    return max(1, len(line[col:end].rstrip()))

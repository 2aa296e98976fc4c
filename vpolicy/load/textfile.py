"""Reading a file the user named as UTF-8 text, with every way that can fail told as a located problem.

Every command reads files the user names: policies, confs, cluster dumps, scenarios, workloads. A file
that is missing, is a folder, cannot be opened or is not UTF-8 must be reported like any other mistake
in the input, `file:line:col: error[code]: message (help)`, never as a bare `OSError` or
`UnicodeDecodeError` that names no file. `read_text` is the one place that reads such a file and raises
`UnreadableFile` with the reason and the span to blame; each caller words the diagnostic with its own
code and help (`load.unreadable-file`, `conf.unreadable`, `input.unreadable`, ...).

Text that is not UTF-8 is blamed at its first bad byte (line and column counted in characters, as every
other diagnostic counts them, so editors jump there), and the text decoded with U+FFFD in place of the
bad bytes is remembered (`source.remember`) so the diagnostic can quote that line: rendering a snippet
must never read the file again and fail the same way. A missing file or a folder is blamed at `:1:1`.
This module parses nothing.
"""
from __future__ import annotations

import codecs
from pathlib import Path

from vpolicy.errors import Diagnostic
from vpolicy.source import SourceFile, Span, remember


class UnreadableFile(Exception):
    """Why `file` cannot be read as text (`reason`, one short clause) and where to point (`span`)."""

    def __init__(self, file: str, reason: str, span: Span, *, missing: bool = False, not_utf8: bool = False):
        super().__init__(f"{span}: {reason}")
        self.file = file
        self.reason = reason
        self.span = span
        self.missing = missing  # no file or folder at that path at all (callers may word that apart)
        self.not_utf8 = not_utf8  # read, but not UTF-8 text (the help then says how to convert it)

    def diagnostic(self, code: str, *, help: str, what: str | None = None) -> Diagnostic:
        """`cannot read <what>: <reason>` at the span; `what` defaults to the file's name."""
        return Diagnostic(code, f"cannot read {what or self.file}: {self.reason}", self.span, help=help)


def read_text(path: str | Path, *, bom: bool = False) -> str:
    """The text of `path` decoded as UTF-8 (with `bom`, a leading byte-order mark is dropped, as
    `utf-8-sig` does); raises `UnreadableFile` when it cannot be read."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UnreadableFile(name, reason, Span(name, 1, 1), missing=isinstance(exc, FileNotFoundError)) from exc
    return decode(name, data, bom=bom)


def decode(name: str, data: bytes, *, bom: bool = False) -> str:
    """`data` (already read from `name`: a decompressed file, standard input) as UTF-8 text, as `read_text`."""
    if bom and data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(name, data, exc) from exc


def _not_utf8(name: str, data: bytes, exc: UnicodeDecodeError) -> UnreadableFile:
    """The first byte that is not UTF-8, by line and column; the file's text is remembered for snippets."""
    before = data[:exc.start].decode("utf-8")  # valid: decoding failed no earlier than here
    line = before.count("\n") + 1
    col = len(before) - (before.rfind("\n") + 1) + 1
    remember(SourceFile(name, data.decode("utf-8", errors="replace")))
    reason = f"not UTF-8 text (byte 0x{data[exc.start]:02x}: {exc.reason})"
    return UnreadableFile(name, reason, Span(name, line, col, line, col), not_utf8=True)

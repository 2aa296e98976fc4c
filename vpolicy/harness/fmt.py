"""`vpolicy fmt [--check] FILE...`: rewrite policy files in the one canonical layout, keeping comments.

The layout itself is `vpolicy.lang.fmt.format_module` (it reads only the AST). That function keeps a
comment only where it is a declaration's `doc` (the comment lines directly above a `let`, `rule`,
`property`, or a `param` without a doc string); this module puts every other comment back with the
declaration it was in or above, so `fmt` never loses a comment nor moves one to another declaration:
a comment above `actions`, `tier` or a documented `param` stays directly above it; a comment at the end
of a line, inside a declaration, or above a doc block moves to its own line above the declaration (and
above its doc), after a blank line and followed by one so it does not become part of the doc; comments
above the header stay there, and comments after the last declaration stay at the end. Formatting is
idempotent and never changes what the file means: `parse(format_text(x)) == parse(x)` and
`format_text(format_text(x)) == format_text(x)`. Lines are counted at "\n" only, as the parser counts
them (a string may hold "\x85", which `str.splitlines` would split at).

`format_file` returns a `Formatted` result (old text, new text, unified diff) and never writes;
`run_fmt` is the command: it rewrites changed files, or with `check` only prints their diffs, and
reports syntax errors as diagnostics. Only `.vpol` files are formatted (confs and manifests are YAML).
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, TextIO

from vpolicy.errors import Diagnostic, PolicyError, sorted_diagnostics
from vpolicy.lang import ast
from vpolicy.lang.fmt import format_module
from vpolicy.lang.parse import parse_text
from vpolicy.load import textfile
from vpolicy.source import Span

SUFFIX = ".vpol"
HEADER = -1  # the owner of comments above the `plugin`/`policy` line
NO_POLICIES = "fmt.no-policies"
UNREADABLE = "fmt.unreadable"
EXIT_OK, EXIT_CHANGED = 0, 1


@dataclass(frozen=True, slots=True)
class Comment:
    line: int  # 1-based
    text: str  # after the '#', right-stripped
    alone: bool  # nothing but blanks before it on its line


@dataclass(frozen=True, slots=True)
class Formatted:
    path: str
    old: str
    new: str

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self) -> str:
        """A unified diff from the file to its formatted text ("" when it is already formatted)."""
        lines = difflib.unified_diff(_lines(self.old, keepends=True), _lines(self.new, keepends=True),
                                     self.path, f"{self.path} (formatted)")
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def format_text(text: str, file: str = "<text>") -> str:
    """The canonical layout of a policy text, comments kept; raises PolicyError on a syntax error."""
    module = parse_text(text, file)
    laid_out = format_module(module)
    dropped = _dropped_comments(text, module)
    if not dropped:
        return laid_out
    return _put_back(laid_out, file, dropped, len(module.decls))


def format_file(path: str | Path) -> Formatted:
    """The file's text and its formatted text; PolicyError on a syntax error or an unreadable file."""
    try:
        text = textfile.read_text(path)
    except textfile.UnreadableFile as exc:
        raise PolicyError([exc.diagnostic(UNREADABLE, help="policy files are UTF-8 text")]) from exc
    return Formatted(str(path), text, format_text(text, str(path)))


def collect(paths: Sequence[str]) -> tuple[list[Path], list[Diagnostic]]:
    """Policy files under `paths` (folders searched recursively for *.vpol, sorted)."""
    files: list[Path] = []
    problems: list[Diagnostic] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob(f"*{SUFFIX}") if p.is_file())
            if not found:
                problems.append(Diagnostic(NO_POLICIES, f"no policy files (*{SUFFIX}) under {raw}", Span(raw, 1, 1),
                                           help="point at a .vpol file or a folder holding some"))
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            problems.append(Diagnostic(UNREADABLE, f"no such file or folder: {raw}", Span(raw, 1, 1),
                                       help="give .vpol files or folders holding them"))
    return list(dict.fromkeys(files)), problems


def run_fmt(paths: Sequence[str], *, check: bool, out: TextIO, err: TextIO) -> int:
    """Format (or with `check`, diff) every file; exit 1 when a file has errors or, with `check`, would
    change. Without `check`, changed files are rewritten and named on `out`."""
    files, problems = collect(paths)
    changed = 0
    for path in files:
        try:
            result = format_file(path)
        except PolicyError as exc:
            problems.extend(exc.diagnostics)
            continue
        if not result.changed:
            continue
        changed += 1
        if check:
            out.write(result.diff())
        else:
            path.write_text(result.new, encoding="utf-8")
            print(f"formatted {path}", file=out)
    for d in sorted_diagnostics(problems):
        print(d.render(), file=err)
    if check and changed:
        print(f"{changed} of {len(files)} file(s) would be reformatted", file=err)
    return EXIT_CHANGED if problems or (check and changed) else EXIT_OK


# comments -----------------------------------------------------------------------------------------------
def comments(text: str) -> list[Comment]:
    """Every `#` comment outside strings (strings never span lines, so a line's quotes balance)."""
    found = []
    for number, line in enumerate(_lines(text), start=1):
        quoted = escaped = False
        for col, char in enumerate(line):
            if quoted:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    quoted = False
            elif char == '"':
                quoted = True
            elif char == "#":
                found.append(Comment(number, line[col + 1:].rstrip(), not line[:col].strip()))
                break
    return found


def _dropped_comments(text: str, module: ast.Module) -> list[tuple[int, Comment]]:
    """Comments the layout would lose, each with the index of the declaration it goes above
    (`len(module.decls)`: after the last one)."""
    found = comments(text)
    alone = {c.line: c for c in found if c.alone}
    lines = _lines(text)
    docs: set[int] = set()
    for decl in module.decls:
        doc = getattr(decl, "doc", "")
        if isinstance(decl, ast.Param) and _has_doc_string(lines, decl):
            continue  # a parameter's trailing string is its doc; comments above it are not
        block = _block_above(alone, decl.span.line)
        if doc and block and "\n".join(c.text.removeprefix(" ") for c in block) == doc:
            docs.update(c.line for c in block)
    ends = [(d.span.end_line or d.span.line) for d in module.decls]
    dropped = []
    for comment in found:
        if comment.line in docs:
            continue
        if comment.line < module.span.line:
            owner = HEADER  # above the `plugin`/`policy` line: it stays there
        else:
            owner = next((i for i, end in enumerate(ends) if comment.line <= end), len(module.decls))
        dropped.append((owner, comment))
    return dropped


def _has_doc_string(lines: list[str], param: ast.Param) -> bool:
    """Whether the parameter is written with a trailing doc string (not only `from "KEY"`)."""
    span = param.span
    end_line, end_col = span.end_line or span.line, span.end_col or len(lines[span.line - 1])
    written = "\n".join(lines[span.line - 1:end_line])
    written = written[span.col - 1:len(written) - len(lines[end_line - 1]) + end_col].rstrip()
    if not written.endswith('"'):
        return False
    return not (param.conf_key and re.search(r'\bfrom\s+"' + re.escape(param.conf_key) + '"$', written))


def _block_above(alone: dict[int, Comment], line: int) -> list[Comment]:
    block = []
    number = line - 1
    while number in alone:
        block.append(alone[number])
        number -= 1
    return list(reversed(block))


def _put_back(laid_out: str, file: str, dropped: list[tuple[int, Comment]], count: int) -> str:
    """`laid_out` with each dropped comment on its own line above its declaration (and that one's doc)."""
    module = parse_text(laid_out, file)
    alone = {c.line: c for c in comments(laid_out) if c.alone}
    by_owner: dict[int, list[str]] = {}
    for owner, comment in dropped:
        by_owner.setdefault(owner, []).append(f"#{comment.text}")
    lines = _lines(laid_out)
    before: dict[int, list[str]] = {}  # 1-based line of laid_out -> lines to put above it
    for index, block in by_owner.items():
        if index >= count or index == HEADER:
            continue
        decl = module.decls[index]
        top = decl.span.line - len(_block_above(alone, decl.span.line))
        # Directly above a declaration that takes a doc, the block would become (part of) that doc.
        takes_doc = not isinstance(decl, (ast.Actions, ast.Tier)) and not (isinstance(decl, ast.Param) and decl.doc)
        # Directly under the declaration before, the block would join the two (next time they are not
        # adjacent, so `format_module` would part them): part them now.
        parted = [""] if lines[top - 2].strip() else []
        before[top] = parted + block + ([""] if takes_doc else [])
    out: list[str] = list(by_owner.get(HEADER, ()))
    for number, line in enumerate(lines, start=1):
        out.extend(before.get(number, ()))
        out.append(line)
    if count in by_owner:
        out.extend(["", *by_owner[count]])
    return "\n".join(out) + "\n"


def _lines(text: str, *, keepends: bool = False) -> list[str]:
    """The lines of `text` as the parser counts them: split at "\n" only (a string may hold "\x85")."""
    lines = text.split("\n")
    last = lines.pop()
    if keepends:
        lines = [line + "\n" for line in lines]
    return lines + [last] if last else lines

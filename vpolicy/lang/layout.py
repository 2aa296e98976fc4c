"""Documents that lay themselves out within a line width: Wadler's "prettier printer", as Prettier runs it.

What it does: `lang.fmt` describes a declaration as a `Doc` (text, possible line breaks, groups that
break together, indentation) and `render(doc, width)` picks the layout: a `group` is printed on one line
when it fits in what is left of the line (up to the next possible break after it), otherwise its own
`line`s become newlines and the groups inside it are tried again, outermost first. `fill` packs items
onto each line as long as the next one fits (long list literals). `flat_text` prints a document on one
line whatever its width (string holes cannot span lines).

Breaks: `line` (a space, or a newline), `softline` (nothing, or a newline), `hardline` (always a
newline). A group holding a hard line, or marked `broken`, always breaks, and so do the groups around it.
Indentation: `nest(n, d)` adds `n` to the indentation of `d`'s new lines; `align(d)` sets it to the
column where `d` starts (hanging layouts such as `when a` / `and b`).

What it does not do: know anything about the DSL (`lang.fmt` does), or break text: a `text` wider
than the line stays whole, so the only lines over the width are ones holding such text.
Invariant: rendering is a pure function of the document and the width (formatting is idempotent).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Break(Enum):
    SOFT = ""  # nothing when flat
    LINE = " "  # one space when flat
    HARD = "\n"  # never flat


@dataclass(frozen=True, slots=True)
class Text:
    text: str
    hard: bool = False  # (no text holds a line break)


@dataclass(frozen=True, slots=True)
class Line:
    kind: Break
    hard: bool


@dataclass(frozen=True, slots=True)
class Concat:
    parts: tuple["Doc", ...]
    hard: bool


@dataclass(frozen=True, slots=True)
class Nest:
    indent: int
    doc: "Doc"
    hard: bool


@dataclass(frozen=True, slots=True)
class Align:
    doc: "Doc"
    hard: bool


@dataclass(frozen=True, slots=True)
class Group:
    doc: "Doc"
    hard: bool  # breaks whatever the width: it holds a hard line or was built `broken`
    name: str = ""  # for `if_broken`: how this group was printed


@dataclass(frozen=True, slots=True)
class IfBroken:
    """`broken` if the group called `name` (printed before this) broke, else `flat`."""

    name: str
    broken: "Doc"
    flat: "Doc"
    hard: bool


@dataclass(frozen=True, slots=True)
class Fill:
    """Items and separators alternating (`item, sep, item, ...`): a separator breaks only when the next
    item would not fit on the line."""

    parts: tuple["Doc", ...]
    hard: bool


@dataclass(frozen=True, slots=True)
class _FillRest:
    """On the printer's stack only: the parts of a fill after the one being printed."""

    parts: tuple["Doc", ...]
    line: int  # the output line the item before them started on
    hard: bool = False


Doc = Text | Line | Concat | Nest | Align | Group | IfBroken | Fill

line = Line(Break.LINE, hard=False)
softline = Line(Break.SOFT, hard=False)
hardline = Line(Break.HARD, hard=True)
EMPTY = Text("")


def text(value: str) -> Doc:
    assert "\n" not in value, value
    return Text(value)


def concat(*parts: Doc | str) -> Doc:
    docs = tuple(Text(p) if isinstance(p, str) else p for p in parts)
    return Concat(docs, hard=any(d.hard for d in docs))


def join(separator: Doc | str, docs: Iterable[Doc]) -> Doc:
    items: list[Doc | str] = []
    for doc in docs:
        if items:
            items.append(separator)
        items.append(doc)
    return concat(*items)


def nest(indent: int, doc: Doc) -> Doc:
    return Nest(indent, doc, doc.hard)


def align(doc: Doc) -> Doc:
    return Align(doc, doc.hard)


def group(doc: Doc, *, broken: bool = False, name: str = "") -> Doc:
    return Group(doc, hard=broken or doc.hard, name=name)


def if_broken(name: str, broken: Doc, flat: Doc) -> Doc:
    """Choose by how the group `name`, printed earlier, came out. A hard line in `broken` does not break
    the groups around: write a `line`, which breaks because they do."""
    return IfBroken(name, broken, flat, hard=flat.hard)


def fill(items: Iterable[Doc], separator: Doc) -> Doc:
    parts: list[Doc] = []
    for item in items:
        if parts:
            parts.append(separator)
        parts.append(item)
    return Fill(tuple(parts), hard=any(p.hard for p in parts))


# ---------------------------------------------------------------------------------------------- printing
_FLAT, _BREAK = False, True
_Command = tuple[int, bool, "Doc | _FillRest"]  # indentation, broken?, document


def render(doc: Doc, width: int) -> str:
    """`doc` laid out in `width` columns; no line ends in blanks."""
    out: list[str] = []
    column = lines = 0
    broke: dict[str, bool] = {}  # named group -> whether it broke
    stack: list[_Command] = [(0, _BREAK, doc)]
    while stack:
        indent, broken, d = stack.pop()
        if isinstance(d, Text):
            out.append(d.text)
            column += len(d.text)
        elif isinstance(d, Concat):
            stack.extend((indent, broken, p) for p in reversed(d.parts))
        elif isinstance(d, Nest):
            stack.append((indent + d.indent, broken, d.doc))
        elif isinstance(d, Align):
            stack.append((column, broken, d.doc))
        elif isinstance(d, Group):
            flat = not broken or (not d.hard and _fits((indent, _FLAT, d.doc), stack, width - column, broke))
            stack.append((indent, not flat, d.doc))
            if d.name:
                broke[d.name] = not flat
        elif isinstance(d, IfBroken):
            stack.append((indent, broken, d.broken if broke.get(d.name, False) else d.flat))
        elif isinstance(d, Fill):
            if broken and len(d.parts) > 1:  # print the first item, then decide on each separator
                stack.append((indent, broken, _FillRest(d.parts[1:], lines)))
                stack.append((indent, broken, d.parts[0]))
            else:
                stack.extend((indent, broken, p) for p in reversed(d.parts))
        elif isinstance(d, _FillRest):
            separator, item = d.parts[0], d.parts[1]
            rest: list[_Command] = [(indent, broken, _FillRest(d.parts[2:], -1))] if len(d.parts) > 2 else []
            # The separator stays flat when the item before it took one line and the next item fits flat
            # on this line (a separator holds one line break).
            together = d.line == lines and not item.hard and _fits(
                (indent, _FLAT, concat(separator, item)), stack + rest, width - column, broke)
            if rest:
                stack.append((indent, broken, _FillRest(d.parts[2:], lines + (not together))))
            stack.append((indent, broken, item))
            stack.append((indent, not together, separator))
        elif broken or d.kind is Break.HARD:
            while out and out[-1].endswith(" "):  # no blanks at the end of a line
                out[-1] = out[-1].rstrip(" ")
            out.append("\n" + " " * indent)
            column = indent
            lines += 1
        else:
            out.append(d.kind.value)
            column += len(d.kind.value)
    return "".join(out)


def flat_text(doc: Doc) -> str:
    """`doc` on one line, every group flat (a hard line here is a bug in the caller)."""
    parts: list[str] = []
    stack = [doc]
    while stack:
        d = stack.pop()
        if isinstance(d, Text):
            parts.append(d.text)
        elif isinstance(d, (Concat, Fill)):
            stack.extend(reversed(d.parts))
        elif isinstance(d, (Nest, Align, Group)):
            stack.append(d.doc)
        elif isinstance(d, IfBroken):
            stack.append(d.flat)
        elif isinstance(d, _FillRest):
            raise AssertionError("a fill's rest is never part of a document")
        else:
            if d.kind is Break.HARD:
                raise ValueError("a hard line cannot be printed flat")
            parts.append(d.kind.value)
    return "".join(parts)


def _fits(command: _Command, rest: list[_Command], room: int, broke: dict[str, bool]) -> bool:
    """Whether `command` printed flat, and what follows it up to the next line break, takes at most
    `room` columns (Prettier's `fits`: the commands after it keep their own modes, and a group not yet
    printed counts as broken there, so its first line ends the measure)."""
    stack = [command]
    at = len(rest)
    while room >= 0:
        if not stack:
            if at == 0:
                return True
            at -= 1
            stack.append(rest[at])
            continue
        indent, broken, d = stack.pop()
        if isinstance(d, Text):
            room -= len(d.text)
        elif isinstance(d, (Concat, Fill)):
            stack.extend((indent, broken, p) for p in reversed(d.parts))
        elif isinstance(d, (Nest, Align)):
            stack.append((indent, broken, d.doc))
        elif isinstance(d, Group):
            stack.append((indent, broken or d.hard, d.doc))
        elif isinstance(d, IfBroken):
            stack.append((indent, broken, d.broken if broke.get(d.name, False) else d.flat))
        elif isinstance(d, _FillRest):
            if broken:
                return True  # its next separator may break
            stack.extend((indent, broken, p) for p in reversed(d.parts))
        elif broken or d.kind is Break.HARD:
            return True  # the line ends here
        else:
            room -= len(d.kind.value)
    return False

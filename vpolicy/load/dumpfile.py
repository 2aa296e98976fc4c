"""One cluster dump (a file, a `.gz` file, or standard input) -> its top-level objects as `View`s.

Two ways to read, chosen by size, that give the same objects and, when a mistake is found, the same
diagnostic at the same `file:line:col`:

- **Exact** (inputs under `FAST_PATH_BYTES`, and every policy, conf and scenario file elsewhere): ruamel's
  round-trip loader (`yaml_spans`), every node with its position. Pure Python: about 1 MB/s.
- **Fast** (bigger inputs): C parsers, and only the fields the readers use. JSON is decoded by msgspec;
  YAML is parsed by rapidyaml and handed over as JSON (`emit_json`, in C) to the same decoder. Each
  object is decoded twice, both in C: once for its `kind`/`apiVersion`, then with its kind's declared
  shape (`vpolicy.load.shapes`), which skips managedFields, images, env and the rest inside the decoder.
  Objects of kinds the loader does not use are never decoded past their kind. A `kind: List` is read
  item by item: JSON items as zero-copy `msgspec.Raw` slices, YAML items cut out by their `- ` lines
  at the list's column (a block list's items start there and nothing else does) and parsed in chunks,
  so memory stays near the file's size.

  Fast objects carry no positions. Their locator (`FastObject`) answers every span request with a
  `LazySpan`: only when a diagnostic or warning is actually written is that one object's text re-read
  with the round-trip loader (`yaml_spans.parse_region`), so the position is exact and a clean load
  pays nothing for it.

What the fast path hands to the exact one instead, to stay exact: a YAML chunk with something JSON
cannot carry the way ruamel reads it (plain `~`, `True`, `0x1F`, `010`, tags, merge keys, bare dates), or
one rapidyaml or msgspec refuses (each of its items is then read alone, the refused ones exactly); a
ConfigMap holding the scheduler conf (the conf loader needs its literal block's position). Known
differences on malformed big inputs: a duplicate key is not reported (the last value wins); a number
written as a key (`{1: 2}`) is read as the string "1"; a plain `True`, `~` and the like inside a flow
mapping after a comma (`{a: 1, b: True}`) is read as a string.

Inputs: `-` is standard input (JSON when it starts with `{` or `[`, else YAML); a file whose first bytes
are gzip's magic is decompressed; `.json` (before any `.gz`) means JSON, anything else YAML.
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import mmap
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import msgspec

from vpolicy.errors import PolicyError
from vpolicy.load import shapes, textfile, yaml_spans
from vpolicy.load.fields import WRONG_TYPE, Problems, View
from vpolicy.load.locator import LazySpan
from vpolicy.source import SourceFile, Span, remember

# Inputs at least this big take the fast path (`VPOLICY_FAST_PATH_BYTES=0`: every input, to compare the two).
FAST_PATH_BYTES = int(os.environ.get("VPOLICY_FAST_PATH_BYTES", 512 * 1024))
STDIN = "-"
STDIN_NAME = "<stdin>"
CONF_KEY = "volcano-scheduler.conf"
UNREADABLE = "load.unreadable-file"
_CHUNK_BYTES = 1 << 20  # YAML items parsed together; a chunk the fast path refuses is re-read item by item
# A big file is mapped, not read: its pages are the kernel's file cache, and those this process has read are
# handed back (`_Dump.release_pages`) every so many objects, so its resident memory holds the objects read
# so far and a window of the file, not the whole file beside them (1.1 GB of an L dump's 2.1 GB peak).
_RELEASE_EVERY = 2048  # JSON List items
_RELEASE_CHUNKS = 32  # YAML chunks of _CHUNK_BYTES
Buffer = bytes | mmap.mmap
_GZIP_MAGIC = b"\x1f\x8b"
_DOC_MARKER = re.compile(rb"^(?:---|\.\.\.)(?=[ \t\r\n]|$)", re.M)
_MARKER_LINE = re.compile(rb"\n(?:---|\.\.\.)")
_CONTENT = re.compile(rb"^[ \t]*[^ \t\r\n#]", re.M)
_DASH = re.compile(rb" *-(?:[ \t]|\r?\n)")
_ITEMS_KEY = re.compile(rb"^items:[ \t]*(?:#[^\n]*)?\r?$", re.M)
_FIRST_CONTENT = re.compile(rb"^( *)(\S)", re.M)
# Plain scalars that ruamel reads as something other than what rapidyaml's JSON says (null, bool, int),
# tags and merge keys; a chunk holding one is read item by item, those items exactly. Searched after `: `,
# `- ` and `[` (how block YAML writes values): each search has a literal prefix, which Python's regular
# expressions scan for at memchr speed (one pattern with the three alternatives is six times slower).
_RISKY_VALUE = rb"(?:~|!|<<|True|TRUE|False|FALSE|Null|NULL|0[0-9xXoObB]|\+[0-9]|\.[0-9])"
_RISKY = tuple(re.compile(re.escape(prefix) + _RISKY_VALUE) for prefix in (b": ", b"- ", b"["))


def _risky(body: bytes) -> bool:
    return b"<<:" in body or any(pattern.search(body) for pattern in _RISKY)


class _Head(TypedDict, total=False):
    kind: Any
    apiVersion: Any


class _ListHead(TypedDict, total=False):
    kind: Any
    apiVersion: Any
    items: list[msgspec.Raw] | None


_HEAD = msgspec.json.Decoder(_Head)
# `{"apiVersion": "v1", "kind": "Pod", ...`: an object as kubectl writes it (keys sorted). The kind named there
# picks the shape decoder without a first pass for the head; the decoded object must then name the same.
_LEADING_HEAD = re.compile(rb'\s*\{\s*"apiVersion"\s*:\s*"([^"\\]*)"\s*,\s*"kind"\s*:\s*"([^"\\]*)"')
_LEADING_BYTES = 512
_ITEM_SEPARATOR = re.compile(rb"[ \t\r\n]*,[ \t\r\n]*")  # between two items of a JSON array
_LIST_HEAD = msgspec.json.Decoder(_ListHead)
_ANY = msgspec.json.Decoder()
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])


@functools.cache
def _shape_decoder(kind: str) -> msgspec.json.Decoder[Any] | None:
    shape = shapes.SHAPES.get(kind)
    if shape is None:
        return None
    whole = {"apiVersion": shapes.KEEP, "kind": shapes.KEEP, **shape}  # `_collect` reads both
    return msgspec.json.Decoder(shapes.decoder_type(whole, f"{kind}Shape"))


def read_input(raw: str | Path) -> tuple[str, Buffer]:
    """The name spans will use and the bytes of one input (decompressed; a big plain file mapped into memory,
    read only); raises UnreadableFile."""
    if str(raw) == STDIN:
        return STDIN_NAME, sys.stdin.buffer.read()
    name = str(raw)
    try:
        with open(raw, "rb") as handle:
            if os.fstat(handle.fileno()).st_size >= FAST_PATH_BYTES and handle.read(2) != _GZIP_MAGIC:
                return name, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            handle.seek(0)
            data = handle.read()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise textfile.UnreadableFile(name, reason, Span(name, 1, 1),
                                      missing=isinstance(exc, FileNotFoundError)) from exc
    if data.startswith(_GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise textfile.UnreadableFile(name, f"not a valid gzip file ({exc})", Span(name, 1, 1)) from exc
    return name, data


def is_json(name: str, data: Buffer) -> bool:
    base = name[:-3] if name.lower().endswith(".gz") else name
    if name == STDIN_NAME:
        return isinstance(data, bytes) and data.lstrip()[:1] in (b"{", b"[")  # (stdin is read, not mapped)
    return base.lower().endswith(".json")


def read_objects(raw: str | Path, problems: Problems, *, wanted: Callable[[str, str], bool],
                 fast: bool | None = None) -> Iterator[View]:
    """The top-level objects of one input (`kind: List`s unpacked only on the fast path), every problem
    with reading it recorded in `problems`. `wanted(group, kind)` says which kinds are read past their
    kind; `fast` forces a path (None: by size)."""
    try:
        name, data = read_input(raw)
    except textfile.UnreadableFile as exc:
        _unreadable(exc, problems)
        return
    problems.file_order.setdefault(name, len(problems.file_order))
    if fast is None:
        fast = len(data) >= FAST_PATH_BYTES
    if fast:
        path = None if name == STDIN_NAME else str(raw)
        yield from _Dump(name, data, problems, wanted, path).objects()
        return
    yield from _exact_objects(name, data if isinstance(data, bytes) else data[:], problems)


def _unreadable(exc: textfile.UnreadableFile, problems: Problems) -> None:
    if exc.missing:
        problems.error(UNREADABLE, f"no such file: {exc.file}", exc.span,
                       "check the path; folders are read for *.yaml, *.yml and *.json files")
    else:
        problems.diagnostics.append(exc.diagnostic(UNREADABLE, help="cluster dumps must be UTF-8 text files"))


def _exact_objects(name: str, data: bytes, problems: Problems) -> Iterator[View]:
    try:
        loaded = yaml_spans.parse_yaml(textfile.decode(name, data, bom=True), name=name)
    except textfile.UnreadableFile as exc:
        _unreadable(exc, problems)
        return
    except PolicyError as exc:
        problems.diagnostics.extend(exc.diagnostics)
        return
    for index, document in enumerate(loaded.documents):
        if document is None:
            continue  # an empty document, e.g. after a trailing `---`
        if not isinstance(document, dict):
            _not_an_object(problems, index, document, loaded.document_span(index))
            continue
        yield View(loaded, problems, document, kind="object")


def _not_an_object(problems: Problems, index: int, document: object, span: Span) -> None:
    problems.error(WRONG_TYPE, f"document {index + 1}: expected a Kubernetes object (a mapping), "
                               f"got {'a list' if isinstance(document, list) else 'a scalar'}", span,
                   "each document is one object with apiVersion, kind and metadata; "
                   "wrap several in `kind: List` with `items:`")


# --- the fast path ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Region:
    """Where one object is written: bytes [start, end) of the input. `item` is its index in the `items`
    of a List parsed whole (`start`/`end` then cover that whole document); `seq` says the region is a
    YAML block-list item (`- ...`), whose object is the region's first item."""

    start: int
    end: int
    item: int | None = None
    seq: bool = False


class _Fallback(Exception):
    """The fast path cannot read this part as the exact path would; read it another way."""


@dataclass(slots=True)
class _Dump:
    name: str
    _data: Buffer | None
    problems: Problems
    wanted: Callable[[str, str], bool]
    # The input's path when it can be read again: its bytes are then let go once every object is read (an
    # L dump is a gigabyte), and read again only if a span is asked for later.
    _path: str | None = None
    _text: str | None = None
    _ascii: bool | None = None
    _json_items: tuple[int, int, list[msgspec.Raw]] = (0, 0, [])  # a JSON List: its bytes, its items
    _json_offsets: list[int] = field(default_factory=list)
    _scratch: _Scratch = field(default_factory=lambda: _Scratch())  # (defined below)

    @property
    def data(self) -> Buffer:
        if self._data is None:
            _, self._data = read_input(self._path or self.name)
        return self._data

    def release_pages(self) -> None:
        """Hand the pages of a mapped input this process has read back to the kernel's cache (they are read
        again from there if used again): what is resident of the file is what was read since the last call."""
        if isinstance(self._data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
            self._data.madvise(mmap.MADV_DONTNEED)

    def objects(self) -> Iterator[View]:
        data = self.data
        bom = 3 if data[:3] == b"\xef\xbb\xbf" else 0
        try:
            self._check_utf8()
        except textfile.UnreadableFile as exc:
            _unreadable(exc, self.problems)
            return
        if is_json(self.name, data):
            yield from self._json_document(bom, len(data), index=0)
        else:
            yield from self._yaml(bom)
        self._scratch = _Scratch()  # (its tree and buffer are megabytes)
        if self._path is not None:
            self._data = None
            self._json_items = (*self._json_items[:2], [])

    # JSON ---------------------------------------------------------------------------------------------
    def _json_document(self, start: int, end: int, *, index: int, text: bytes | None = None) -> Iterator[View]:
        """One JSON document: bytes [start, end) of the input, or `text` (YAML turned JSON) for them."""
        body: bytes | memoryview = memoryview(self.data)[start:end] if text is None else text
        try:
            head = _LIST_HEAD.decode(body)
        except msgspec.ValidationError:  # not an object at all (a list or a scalar), or a number JSON cannot hold
            if text is not None:
                yield from self._exact_region(_Region(start, end), index)
                return
            try:
                value = _ANY.decode(body)
            except msgspec.MsgspecError:
                value = None
            first = len(body) - len(bytes(body).lstrip())
            _not_an_object(self.problems, index, value, self._start_span(start + first))
            return
        except msgspec.DecodeError as exc:
            if text is not None:  # rapidyaml's JSON refused: let the exact loader say what is wrong
                yield from self._exact_region(_Region(start, end), index)
            else:
                self._syntax(exc, start)
            return
        items = head.get("items")
        kind = head.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
            if text is None:
                self._json_items = (start, end, items)
            for position, raw in enumerate(items):
                if position % _RELEASE_EVERY == 0:
                    self.release_pages()
                # A JSON item's bytes are found only when a span is asked for.
                region = _Region(start, end, item=position) if text is not None else self._json_item_region(position)
                yield from self._one(raw, region)
            return
        yield from self._one(body, _Region(start, end))

    def _one(self, raw: bytes | memoryview | msgspec.Raw, region: _Region | Callable[[], _Region]) -> Iterator[View]:
        as_written = self._decode_as_written(raw)
        if as_written is not None:
            yield from self._view(as_written, as_written["kind"], region)
            return
        try:
            head = _HEAD.decode(raw)
        except msgspec.ValidationError:  # an item that is not a mapping
            where = LazySpan(lambda: self._start_span(_region(region).start))
            self.problems.error(WRONG_TYPE, "items[]: expected a mapping, got "
                                + _describe(_ANY.decode(raw)), where, "write key: value pairs here")
            return
        kind, version = head.get("kind"), head.get("apiVersion")
        group = version.split("/", 1)[0] if isinstance(version, str) and "/" in version else ""
        if isinstance(kind, str) and isinstance(version, str) and not kind.endswith("List") \
                and not self.wanted(group, kind):
            node: dict[str, Any] = dict(head)  # read no further: only its kind is reported
        else:
            try:
                node = self._decode_object(raw, kind)
            except msgspec.MsgspecError:  # e.g. a number beyond what JSON decoders hold: read it exactly
                yield FastObject(self, region, {}).exact_view(self.problems)
                return
        yield from self._view(node, kind, region)

    def _decode_as_written(self, raw: bytes | memoryview | msgspec.Raw) -> dict[str, Any] | None:
        """The object decoded with its kind's shape in one pass when it starts as kubectl writes it (apiVersion,
        then kind) and the decoded object names that same kind and version; else None (the caller decodes its
        head first, then the rest: two passes)."""
        written = _LEADING_HEAD.match(memoryview(raw)[:_LEADING_BYTES])
        if written is None:
            return None
        version, kind = written.group(1).decode("utf-8", "replace"), written.group(2).decode("utf-8", "replace")
        group = version.split("/", 1)[0] if "/" in version else ""
        decoder = _shape_decoder(kind) if self.wanted(group, kind) else None
        if decoder is None:
            return None
        try:
            node: dict[str, Any] = decoder.decode(raw)
        except msgspec.MsgspecError:
            return None
        return node if node.get("kind") == kind and node.get("apiVersion") == version else None

    def _view(self, node: dict[str, Any], kind: object, region: _Region | Callable[[], _Region]) -> Iterator[View]:
        obj = FastObject(self, region, node)
        if kind == "ConfigMap" and isinstance(node.get("data"), dict) and CONF_KEY in node["data"]:
            yield obj.exact_view(self.problems)  # the conf loader points into its literal block
            return
        yield View(obj, self.problems, node, kind="object")

    @staticmethod
    def _decode_object(raw: bytes | memoryview | msgspec.Raw, kind: object) -> dict[str, Any]:
        decoder = _shape_decoder(kind) if isinstance(kind, str) else None
        if decoder is not None:
            try:
                node: dict[str, Any] = decoder.decode(raw)
                return node
            except msgspec.ValidationError:
                pass  # a field of another type than the shape says: decode it all, the reader reports it
        whole: dict[str, Any] = _ANY.decode(raw)
        return whole

    def _json_item_region(self, position: int) -> Callable[[], _Region]:
        def find() -> _Region:
            doc_start, doc_end, items = self._json_items
            if not items:  # let go with the input's bytes: find them again
                items = _LIST_HEAD.decode(memoryview(self.data)[doc_start:doc_end]).get("items") or []
                self._json_items = (doc_start, doc_end, items)
            starts = self._json_offsets  # the items are in order: each is found after the one before
            data = self.data
            pos = doc_start if not starts else starts[-1] + len(items[len(starts) - 1])
            while len(starts) <= position:
                item = items[len(starts)]
                # Right after the comma that ends the item before, as a JSON array is written; else searched
                # for (a copy of the item, and a search through everything before it: a second per 100 MB).
                after = _ITEM_SEPARATOR.match(data, pos) if starts else None
                if after is not None and data[after.end():after.end() + min(len(item), 64)] == bytes(
                        memoryview(item)[:64]):
                    pos = after.end()
                else:
                    pos = data.find(bytes(item), pos)
                starts.append(pos)
                pos += len(item)
            return _Region(starts[position], starts[position] + len(items[position]))

        return find

    def _syntax(self, exc: msgspec.DecodeError, start: int) -> None:
        found = re.search(r"\(byte (\d+)\)", str(exc))
        offset = start + int(found.group(1)) if found else start
        message = re.sub(r"\s*\(byte \d+\)", "", str(exc)).replace("JSON is malformed: ", "")
        self.problems.error("load.yaml-syntax", f"invalid JSON: {message}", self._start_span(offset),
                            "fix the syntax at this position; `kubectl ... -o json` output always parses")

    # YAML ---------------------------------------------------------------------------------------------
    def _yaml(self, start: int) -> Iterator[View]:
        for index, (doc_start, doc_end) in enumerate(self._documents(start)):
            yield from self._yaml_document(doc_start, doc_end, index)

    def _documents(self, start: int) -> list[tuple[int, int]]:
        """Byte ranges of the documents (marker line included), empty ones left out."""
        data = self.data
        # A pattern that starts with a literal ("\n") is scanned for in C; one anchored at line starts (`^`,
        # re.M) would scan a big dump in Python's engine. (Two `find`s, one per marker, took twice as long:
        # "\n" and "-" are each a few bytes apart in YAML, and `find` stops at every candidate.)
        cuts = [found.start() + 1 for found in _MARKER_LINE.finditer(data, start)
                if _DOC_MARKER.match(data, found.start() + 1)]
        bounds = [start, *sorted(c for c in cuts if c > start), len(data)]
        out = []
        for a, b in zip(bounds, bounds[1:]):
            if _has_content(data, a, b):
                out.append((a, b))
        return out

    def _yaml_document(self, start: int, end: int, index: int) -> Iterator[View]:
        items = self._list_items(start, end)
        if items is None:
            try:
                body = self.data[start:end]
                if _risky(body):
                    raise _Fallback
                if _DOC_MARKER.match(body):  # `---` would make it a stream of one document
                    body = b"   " + body[3:]
                text = _yaml_to_json(body)
            except _Fallback:
                yield from self._exact_region(_Region(start, end), index)
                return
            yield from self._json_document(start, end, index=index, text=text)
            return
        chunk: list[tuple[int, int]] = []
        size = chunks = 0
        self.release_pages()  # the list was scanned whole for its items
        for a, b in items:
            chunk.append((a, b))
            size += b - a
            if size >= _CHUNK_BYTES:
                yield from self._yaml_chunk(chunk)
                chunk, size, chunks = [], 0, chunks + 1
                if chunks % _RELEASE_CHUNKS == 0:
                    self.release_pages()
        if chunk:
            yield from self._yaml_chunk(chunk)

    def _list_items(self, start: int, end: int) -> list[tuple[int, int]] | None:
        """The byte ranges of the items of a block-style `kind: List` document, or None when the document
        is not one (or not laid out so that its items can be cut apart by lines)."""
        data = self.data
        key = _ITEMS_KEY.search(data, start, end)
        if key is None:
            return None
        first = _FIRST_CONTENT.search(data, key.end() + 1, end)
        if first is None or first.group(2) != b"-" or not _DASH.match(data, first.start(), end):
            return None
        column = len(first.group(1))
        # Each item starts with a dash at the list's column followed by a blank; the list ends at the first
        # line indented no deeper than its dashes that is not an item. Both are found in one pass by a pattern
        # with a literal prefix ("\n"), which the regular expression engine scans for in C.
        shallower = rb"| {0,%d}-" % (column - 1) if column else b""
        lines = re.compile(rb"\n(?:( {%d}-(?=[ \t\r\n]))| {0,%d}[^ \r\n#\-]%s)" % (column, column, shallower))
        starts: list[int] = [first.start()]
        stop = end
        for found in lines.finditer(data, first.start(), min(len(data), end + column + 2)):
            if found.end() > end:  # (read past `end` only to see what follows a line's indent, as before)
                break
            if found.group(1) is None:
                stop = found.start() + 1
                break
            starts.append(found.start() + 1)
        rest = data[start:key.start()] + b"items:\n" + data[stop:end]
        try:
            head = _HEAD.decode(_yaml_to_json(rest))
        except (_Fallback, msgspec.MsgspecError):
            return None
        if not (isinstance(head.get("kind"), str) and head["kind"].endswith("List")):
            return None
        return list(zip(starts, [*starts[1:], stop]))

    def _yaml_chunk(self, items: list[tuple[int, int]]) -> Iterator[View]:
        data = self.data
        body = data[items[0][0]:items[-1][1]]
        raws: list[msgspec.Raw] | None = None
        if not _risky(body):
            try:
                raws = _RAW_LIST.decode(_yaml_to_json_into(body, self._scratch))  # (raws: used before the next chunk)
            except (_Fallback, msgspec.MsgspecError):
                raws = None
            if raws is not None and len(raws) != len(items):
                raws = None
        if raws is None:  # read each item alone; the ones the fast path cannot read, exactly
            for a, b in items:
                yield from self._yaml_item(a, b)
            return
        for raw, (a, b) in zip(raws, items):
            yield from self._one(raw, _Region(a, b, seq=True))

    def _yaml_item(self, start: int, end: int) -> Iterator[View]:
        region = _Region(start, end, seq=True)
        body = self.data[start:end]
        if not _risky(body):
            try:
                raws = _RAW_LIST.decode(_yaml_to_json(body))
            except (_Fallback, msgspec.MsgspecError):
                raws = []
            if len(raws) == 1:
                yield from self._one(raws[0], region)
                return
        yield from self._exact_region(region, None)

    def _exact_region(self, region: _Region, index: int | None) -> Iterator[View]:
        try:
            loaded, documents = self.parse_region(region)
        except PolicyError as exc:
            self.problems.diagnostics.extend(exc.diagnostics)
            return
        if region.seq and len(documents) == 1 and isinstance(documents[0], list) and len(documents[0]) == 1:
            documents = (documents[0][0],)  # a List's item, cut out with its `- `
        for position, document in enumerate(documents):
            if document is None:
                continue
            if not isinstance(document, dict):
                _not_an_object(self.problems, index or position, document, loaded.document_span(position))
                continue
            yield View(loaded, self.problems, document, kind="object")

    # positions ----------------------------------------------------------------------------------------
    def text(self) -> str:
        """The whole input as text, decoded once and remembered so diagnostics can quote its lines."""
        if self._text is None:
            data = self.data
            self._text = textfile.decode(self.name, data[:] if isinstance(data, mmap.mmap) else data)
            remember(SourceFile(self.name, self._text))
        return self._text

    def _check_utf8(self) -> None:
        self._ascii = _is_ascii(self.data)
        if not self._ascii:
            self.text()  # raises UnreadableFile, located, if it is not UTF-8

    def _char(self, offset: int) -> int:
        if self._ascii is None:
            self._ascii = _is_ascii(self.data)
        return offset if self._ascii else len(self.data[:offset].decode("utf-8", errors="replace"))

    def line_col(self, offset: int) -> tuple[int, int]:
        """0-based line and column (in characters) of byte `offset`."""
        data = self.data
        line = data.count(b"\n", 0, offset) if isinstance(data, bytes) else data[:offset].count(b"\n")
        line_start = self.data.rfind(b"\n", 0, offset) + 1
        col = len(self.data[line_start:offset].decode("utf-8", errors="replace"))
        return line, col

    def _start_span(self, offset: int) -> Span:
        line, col = self.line_col(offset)
        self.text()
        return Span(self.name, line + 1, col + 1, line + 1, col + 1)

    def parse_region(self, region: _Region) -> tuple[yaml_spans.YamlFile, tuple[Any, ...]]:
        """Region's text read by the round-trip loader, positions counted in the whole file."""
        text = self.text()
        line, col = self.line_col(region.start)
        a, b = self._char(region.start), self._char(region.end)
        loaded = yaml_spans.parse_region(" " * col + text[a:b], name=self.name, line_offset=line)
        return loaded, loaded.documents


def _region(region: _Region | Callable[[], _Region]) -> _Region:
    return region if isinstance(region, _Region) else region()


class FastObject:
    """The locator of one object read by the fast path: spans are worked out when first read, from that
    object's text re-read exactly (see the module's docstring).

    A span names its node by its path from the object's root (keys and indices), found when the span is
    made, and holds only the object's `_Place`: the snapshot keeps spans (every model object's `origin`)
    long after reading, and a span that held the decoded tree would keep every object's whole tree alive
    through the session (a gigabyte at L)."""

    __slots__ = ("_place", "_root")

    def __init__(self, dump: _Dump, region: _Region | Callable[[], _Region], root: dict[str, Any]):
        self._place = _Place(dump, region)
        self._root = root

    @property
    def name(self) -> str:
        return self._place.dump.name

    def node_span(self, node: Any) -> Span:
        return LazySpan(self._place.resolve, "node_span", _path(self._root, node), None)

    def key_span(self, mapping: Any, key: Any) -> Span:
        return LazySpan(self._place.resolve, "key_span", _path(self._root, mapping), key)

    def value_span(self, mapping: Any, key: Any) -> Span:
        return LazySpan(self._place.resolve, "value_span", _path(self._root, mapping), key)

    def item_span(self, seq: Any, index: int) -> Span:
        return LazySpan(self._place.resolve, "item_span", _path(self._root, seq), index)

    def value_text(self, mapping: Any, key: Any) -> str:
        value = mapping.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, float):
            return repr(value)  # the shortest text that reads back as this number
        return str(value)

    def exact_view(self, problems: Problems) -> View:
        loaded, root = self._place.exact()
        return View(loaded, problems, root, kind="object")


class _Place:
    """Where one fast object is written, and its text re-read exactly once a span of it is asked for."""

    __slots__ = ("dump", "_region", "_exact")

    def __init__(self, dump: _Dump, region: _Region | Callable[[], _Region]):
        self.dump = dump
        self._region = region
        self._exact: tuple[yaml_spans.YamlFile, Any] | None = None

    def exact(self) -> tuple[yaml_spans.YamlFile, Any]:
        if self._exact is None:
            region = _region(self._region)
            loaded, documents = self.dump.parse_region(region)
            root = documents[0] if documents else None
            if region.seq and isinstance(root, list) and root:
                root = root[0]
            elif region.item is not None and isinstance(root, dict):
                items = root.get("items")
                root = items[region.item] if isinstance(items, list) and region.item < len(items) else root
            self._exact = (loaded, root)
        return self._exact

    def resolve(self, method: str, path: tuple[Any, ...] | None, key: Any) -> Span:
        loaded, root = self.exact()
        exact: Any = _follow(root, path)
        if exact is None:  # a node the re-read does not have (it should not happen): blame the object
            whole: Any = root
            return loaded.node_span(whole) if isinstance(root, (dict, list)) else Span(self.dump.name, 1, 1)
        is_list, is_map = isinstance(exact, list), isinstance(exact, dict)
        if method == "item_span" and is_list and isinstance(key, int) and key < len(exact):
            return loaded.item_span(exact, key)
        if method in ("key_span", "value_span") and is_map and key in exact:
            return loaded.key_span(exact, key) if method == "key_span" else loaded.value_span(exact, key)
        return loaded.node_span(exact)


def _path(root: Any, node: Any) -> tuple[Any, ...] | None:
    """The keys and indices that lead from `root` to `node` (the very object), breadth first: the spans a
    clean load makes are of the root and its `metadata`, found at once. None when it is not inside."""
    if node is root:
        return ()
    frontier: list[tuple[tuple[Any, ...], Any]] = [((), root)]
    while frontier:
        deeper: list[tuple[tuple[Any, ...], Any]] = []
        for path, value in frontier:
            steps = value.items() if isinstance(value, dict) else enumerate(value)
            for step, child in steps:
                if child is node:
                    return (*path, step)
                if isinstance(child, (dict, list)):
                    deeper.append(((*path, step), child))
        frontier = deeper
    return None


def _follow(root: Any, path: tuple[Any, ...] | None) -> Any:
    """The exact tree's node at `path` (a mapping or list, as the fast one had there); None if it has none."""
    if path is None:
        return None
    node = root
    for step in path:
        if isinstance(node, dict) and not isinstance(step, int) and step in node:
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and step < len(node):
            node = node[step]
        else:
            return None
    return node if isinstance(node, (dict, list)) else None


def _is_ascii(data: Buffer) -> bool:
    if isinstance(data, bytes):
        return data.isascii()
    # a mapped file, a slice at a time; a slice small enough that each reuses the memory the last one freed
    # (64 MiB slices were each fresh memory the kernel had to hand over page by page: M JSON 0.19 -> 0.05 s)
    step = 1 << 20
    return all(data[at:at + step].isascii() for at in range(0, len(data), step))


def _has_content(data: Buffer, start: int, end: int) -> bool:
    """Whether bytes [start, end) hold more than a document marker, blank lines and comments."""
    marker = _DOC_MARKER.match(data, start, end)
    if marker is not None:
        line_end = data.find(b"\n", marker.end(), end)
        line_end = end if line_end < 0 else line_end
        after = data[marker.end():line_end].strip()
        if after and not after.startswith(b"#"):
            return True  # `--- {a: 1}`, `--- |`
        start = line_end
    return _CONTENT.search(data, start, end) is not None


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f'the string "{value}"'
    return "a list" if isinstance(value, list) else type(value).__name__


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """rapidyaml prints its parse errors on file descriptor 2 before raising; the caller reports them."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class _Scratch:
    """rapidyaml's tree and the JSON buffer, kept from one chunk of a big YAML dump to the next. Made anew for
    each chunk, their few megabytes were handed back to the kernel by the allocator and faulted in again,
    chunk after chunk (M YAML's read: 2.4 CPU s with these kept, 3.4 without)."""

    __slots__ = ("tree", "buffer")

    def __init__(self) -> None:
        self.tree: Any = None
        self.buffer = bytearray()


def _yaml_to_json(body: bytes) -> bytes:
    """YAML text as JSON text, both by rapidyaml in C; _Fallback when rapidyaml refuses it."""
    return bytes(_yaml_to_json_into(body, _Scratch()))


def _yaml_to_json_into(body: bytes, own: _Scratch) -> memoryview:
    """`_yaml_to_json` in the scratch's tree and buffer: a view of the buffer, valid until it is used again."""
    import ryml  # type: ignore[import-untyped]  # reason: rapidyaml ships no type information

    if own.tree is None:
        own.tree = ryml.Tree()
    tree = own.tree
    tree.clear()
    tree.clear_arena()  # (keeps the memory, for the next chunk)
    try:
        with _quiet_stderr():
            ryml.parse_in_arena(body, tree=tree)
    except Exception as exc:  # ryml.ExceptionParse and its kin  # noqa: BLE001  # reason: any refusal falls back
        raise _Fallback from exc
    if b"&" in body or b"*" in body:
        tree.resolve()  # anchors and aliases
    # Into a buffer of ours: `ryml.emit_json` never frees the C buffer it writes the JSON in (rapidyaml 0.15:
    # 1.2 MB a chunk, 170 MB of an M dump's read), and hands it over as a str that is encoded once more.
    if len(own.buffer) < 2 * len(body) + 4096:  # JSON is about 1.5x the YAML it comes from
        own.buffer = bytearray(2 * len(body) + 4096)
    failed, size = ryml.emit_json_to_substr(tree, tree.root_id(), own.buffer)
    if failed:
        own.buffer = bytearray(size + size // 4)
        failed, size = ryml.emit_json_to_substr(tree, tree.root_id(), own.buffer)
    return memoryview(own.buffer)[:size]


def wanted_from(known: Mapping[tuple[str, str], object]) -> Callable[[str, str], bool]:
    """`wanted` for `read_objects` from a table keyed by (API group, kind)."""
    return lambda group, kind: (group, kind) in known

"""Typed, located reads of Kubernetes object fields: the loader's one choke point for input mistakes.

A `View` is one mapping inside one loaded object, with the path that leads to it
(`spec.containers[0]`) and the span to blame when something inside is missing. Its readers
(`text`, `integer`, `flag`, `quantities`, `timestamp`, `choice`, ...) return a usable value in every
case and record each mistake as a `Diagnostic` in the shared `Problems`, so one pass over the input
reports all of its errors. Null values count as absent, as the Kubernetes API treats them.

Messages read `<path>: <what is wrong>`; every diagnostic has a help line saying what to write.
This module knows field *types*, not Kubernetes *kinds*: which fields a Pod or Queue has, and what
they mean, is in `vpolicy.load.kinds` and `vpolicy.load.vcjob`. Views read plain `dict`s and `list`s
(ruamel's round-trip nodes are those types too), whichever parser produced them; positions come from
the view's `Locator` (`vpolicy.load.locator`), so the same readers serve exactly-located small files,
big dumps read by a C parser, and objects from the API server.
"""
from __future__ import annotations

import datetime
import functools
from dataclasses import dataclass, field
from collections.abc import Callable, Mapping
from typing import Any, Iterator, Sequence, TypeVar, cast

from ruamel.yaml.scalarbool import ScalarBoolean

from vpolicy.errors import Diagnostic, did_you_mean
from vpolicy.load.locator import Locator
from vpolicy.model import quantity, resources
from vpolicy.source import Span

MISSING_FIELD = "load.missing-field"
WRONG_TYPE = "load.wrong-type"
BAD_QUANTITY = "load.bad-quantity"
BAD_VALUE = "load.bad-value"
QUANTITY_HELP = "quantities look like 500m, 2, 1.5Gi, 1e3"
# The largest amount a quantity may hold, in vpolicy's unit for its resource (thousandths of a cpu or of
# an extended resource; bytes; pods). Kubernetes' resource.Quantity holds at most 2^63-1 and hands cpu to
# the scheduler as an int64 of thousandths (`MilliValue()`), so no real cluster has more; anything larger
# (`1e400`) is a typo, and the engine's arithmetic, which goes through floats, could not hold it.
MAX_AMOUNT = 2**63 - 1
TOO_LARGE_HELP = "check the exponent and the suffix; Kubernetes quantities hold at most 2^63-1"


@dataclass(slots=True)
class Problems:
    """Everything wrong (diagnostics) or merely noteworthy (warnings) found while loading."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    file_order: dict[str, int] = field(default_factory=dict)  # files in the order they were read
    _warnings: list[tuple[tuple[int, int, int], str]] = field(default_factory=list)
    # What readers found in identical input (a job's pods share one spec), valid for this load only; an
    # entry is kept only for input that reported nothing, as reports carry the position of their object.
    memo: dict[Any, Any] = field(default_factory=dict)

    def count(self) -> int:
        """How many errors and warnings so far (a reader compares before and after to see it reported none)."""
        return len(self.diagnostics) + len(self._warnings)

    def error(self, code: str, message: str, span: Span, help: str,
              related: tuple[tuple[Span, str], ...] = ()) -> None:
        self.diagnostics.append(Diagnostic(code=code, message=message, span=span, help=help, related=related))

    def warn(self, span: Span, message: str) -> None:
        rank = self.file_order.setdefault(span.file, len(self.file_order))
        self._warnings.append(((rank, span.line, span.col), f"{span}: {message}"))

    @property
    def warnings(self) -> tuple[str, ...]:
        """One line per warning, `file:line:col: message`, in reading order of files, then by position."""
        return tuple(text for _, text in sorted(self._warnings, key=lambda w: w[0]))


@dataclass(slots=True)  # not frozen: a frozen dataclass sets each field through object.__setattr__, and a
class View:             # big dump's readers make ~15 views per pod (2.0 -> 0.6 us each); none is ever changed
    """One mapping of one object: where it is, how it is reached, and which kind of object holds it.
    Treat it as immutable: readers hand views around and keep them."""

    file: Locator
    problems: Problems
    node: dict[Any, Any]
    kind: str
    path: str = ""
    anchor: Span | None = None  # what to point at when a field inside is missing; the mapping itself if None
    # Or where that anchor is, worked out only if asked for: (a mapping, its key) or (a list, an index). A
    # big dump's views are made by the hundred thousand and almost never blamed.
    anchor_in: tuple[Any, Any] | None = None

    # Location -------------------------------------------------------------------------------------
    def span(self) -> Span:
        if self.anchor is not None:
            return self.anchor
        if self.anchor_in is not None:
            container, at = self.anchor_in
            if isinstance(container, list):
                return self.file.item_span(container, at)
            return self.file.key_span(container, at)
        return self.file.node_span(self.node)

    def key_span(self, key: str) -> Span:
        return self.file.key_span(self.node, key) if key in self.node else self.span()

    def value_span(self, key: str) -> Span:
        return self.file.value_span(self.node, key) if key in self.node else self.span()

    def field_path(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return self.node.get(key) is not None

    def keys(self) -> Iterator[str]:
        return (str(k) for k in self.node)

    # Structure ------------------------------------------------------------------------------------
    def mapping(self, key: str, *, required: bool = False) -> View | None:
        value = self.node.get(key)
        if value is None:
            if required:
                self.missing(key)
            return None
        if not isinstance(value, dict):
            self.wrong_type(key, "a mapping")
            return None
        return View(self.file, self.problems, value, self.kind, self.field_path(key), anchor_in=(self.node, key))

    def mappings(self, key: str) -> list[View]:
        """A list of mappings (containers, taints, terms); items of another type are reported and skipped."""
        items = self._sequence(key)
        views = []
        path = self.field_path(key)
        for index, item in enumerate(items):
            if isinstance(item, dict):
                views.append(View(self.file, self.problems, item, self.kind, f"{path}[{index}]",
                                  anchor_in=(items, index)))
            elif item is not None:
                self._report_type(self.file.item_span(items, index), f"{path}[{index}]", "a mapping", item)
        return views

    def sequence_length(self, key: str) -> int:
        return len(self._sequence(key))

    # Scalars --------------------------------------------------------------------------------------
    def text(self, key: str, *, required: bool = False, default: str = "") -> str:
        value = self.node.get(key)
        if value is None:
            if required:
                self.missing(key)
            return default
        if not isinstance(value, str):
            self.wrong_type(key, "a string")
            return default
        if required and not value:
            self.missing(key)
        return value if type(value) is str else str(value)  # ruamel's quoted scalars: plain str

    def integer(self, key: str, *, default: int, minimum: int | None = None) -> int:
        found = self.optional_integer(key, minimum=minimum)
        return default if found is None else found

    def optional_integer(self, key: str, *, minimum: int | None = None) -> int | None:
        value = self.node.get(key)
        if value is None:
            return None
        if not isinstance(value, int) or _is_bool(value):
            self.wrong_type(key, "an integer")
            return None
        if minimum is not None and value < minimum:
            self.bad_value(key, f"must be at least {minimum}, got {value}", f"write a whole number >= {minimum}")
            return None
        return int(value)

    def flag(self, key: str, *, default: bool) -> bool:
        value = self.node.get(key)
        if value is None:
            return default
        if not _is_bool(value):
            self.wrong_type(key, "a boolean (true or false)")
            return default
        return bool(value)

    def choice(self, key: str, allowed: Sequence[str], *, default: str) -> str:
        """One of a closed set of strings (a phase, an operator, a taint effect)."""
        value = self.text(key, default=default)
        if value == "" and "" not in allowed:
            return default
        if value not in allowed:
            listed = ", ".join(a for a in allowed if a)
            self.bad_value(key, f'"{value}" is not one of {listed}',
                           did_you_mean(value, allowed) or f"use one of {listed}")
            return default
        return value

    def timestamp(self, key: str) -> float | None:
        """An RFC 3339 time as epoch seconds (a time without offset is taken as UTC); None when absent."""
        value = self.node.get(key)
        if value is None:
            return None
        if not isinstance(value, (str, datetime.date)):
            self.wrong_type(key, "an RFC 3339 time such as 2024-05-01T12:00:00Z")
            return None
        seconds = rfc3339_seconds(value)
        if seconds is None:
            self.bad_value(key, f"{_describe(value)} is not an RFC 3339 time",
                           "write times like 2024-05-01T12:00:00Z")
        return seconds

    # Collections of scalars -----------------------------------------------------------------------
    def texts(self, key: str) -> tuple[str, ...]:
        items = self._sequence(key)
        out = []
        for index, item in enumerate(items):
            if isinstance(item, str):
                out.append(item)
            else:
                self._report_type(self.file.item_span(items, index), f"{self.field_path(key)}[{index}]",
                                  "a string", item)
        return tuple(out)

    def text_map(self, key: str) -> dict[str, str]:
        """labels, annotations, nodeSelector: string keys to string values."""
        view = self.mapping(key)
        if view is None:
            return {}
        out: dict[str, str] = {}
        for name in view.node:  # as YAML read it: `{1: 2}` has the integer key 1, not "1"
            item = view.node[name]
            if isinstance(item, str):
                out[str(name)] = item
            else:
                view._report_type(view.file.value_span(view.node, name), view.field_path(str(name)), "a string",
                                  item)
        return out

    def named_keys(self) -> Iterator[str]:
        """The mapping's keys that are names (strings); any other key (`{1: 2}`: YAML reads the integer
        1) is reported where it is written, not left out in silence."""
        for name in self.node:
            if isinstance(name, str):
                yield name
            else:
                self.problems.error(WRONG_TYPE, f"{self.field_path(str(name))}: a key must be a name, not "
                                    f"{_describe(name)}", self.file.key_span(self.node, name),
                                    "quote it if it is meant as text")

    def int_map(self, key: str, *, minimum: int = 0) -> dict[str, int]:
        view = self.mapping(key)
        if view is None:
            return {}
        out: dict[str, int] = {}
        for name in view.named_keys():
            found = view.optional_integer(name, minimum=minimum)
            if found is not None:
                out[name] = found
        return out

    def quantities(self, key: str) -> dict[str, int] | None:
        """A ResourceList in vpolicy units, zero entries kept (a request of 0 is not an absent request).

        None when the field is absent; bad or negative amounts are reported and left out.
        """
        view = self.mapping(key)
        if view is None:
            return None
        out: dict[str, int] = {}
        for name in view.named_keys():
            amount = view.quantity(name, name)
            if amount is not None:
                out[name] = amount
        return out

    def quantity(self, key: str, resource: str) -> int | None:
        value = self.node.get(key)
        if value is None:
            return None
        if _is_bool(value) or not isinstance(value, (str, int, float)):
            self.problems.error(BAD_QUANTITY, f"{self.field_path(key)}: expected a quantity, got {_describe(value)}",
                                self.value_span(key), QUANTITY_HELP)
            return None
        written = self.file.value_text(self.node, key)
        try:
            amount = _parse_quantity(written, resource)
        except ValueError as exc:
            self.problems.error(BAD_QUANTITY, f"{self.field_path(key)}: {exc}", self.value_span(key), QUANTITY_HELP)
            return None
        if amount < 0:
            self.problems.error(BAD_QUANTITY, f"{self.field_path(key)}: must not be negative, got '{written}'",
                                self.value_span(key), "resource amounts are zero or more")
            return None
        problem = too_large(written, amount, resource)
        if problem is not None:
            self.problems.error(BAD_QUANTITY, f"{self.field_path(key)}: {problem}", self.value_span(key),
                                TOO_LARGE_HELP)
            return None
        return amount

    def plain_quantity(self, key: str) -> int | None:
        """A quantity in plain units (Kubernetes `Value()`), for counters such as vGPU numbers; None if bad.

        Only for values `quantity` already read: errors were reported there, so none are repeated here.
        """
        if self.node.get(key) is None:
            return None
        try:
            return _parse_value(self.file.value_text(self.node, key))
        except ValueError:
            return None

    # Reporting ------------------------------------------------------------------------------------
    def missing(self, key: str) -> None:
        where = self.field_path(key)
        self.problems.error(MISSING_FIELD, f"{self.kind} is missing {where}", self.span(),
                            f"add {where} to this {self.kind}")

    def wrong_type(self, key: str, expected: str) -> None:
        self._report_type(self.value_span(key), self.field_path(key), expected, self.node.get(key))

    def bad_value(self, key: str, problem: str, help: str) -> None:
        self.problems.error(BAD_VALUE, f"{self.field_path(key)}: {problem}", self.value_span(key), help)

    def _report_type(self, span: Span, where: str, expected: str, value: Any) -> None:
        self.problems.error(WRONG_TYPE, f"{where}: expected {expected}, got {_describe(value)}", span,
                            _type_help(expected, value))

    def _sequence(self, key: str) -> list[Any]:
        value = self.node.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.wrong_type(key, "a list")
            return []
        return value


# A dump repeats a few quantities ("500m", "1Gi") thousands of times; exact parsing goes through Fractions.
# (Errors are not cached: a ValueError is raised again each time, and reported where it is written.)
_parse_quantity = functools.lru_cache(maxsize=8192)(quantity.parse_quantity)
_parse_value = functools.lru_cache(maxsize=1024)(quantity.parse_value)


_Reader = TypeVar("_Reader", bound=Callable[..., Any])


def memoized(reader: _Reader) -> _Reader:
    """`reader(view, **options)` answered from `view.problems.memo` when the same object (the very dict,
    unchanged: informers replace an object's dict when it changes) was read with the same options and
    reported nothing. The live scheduler keeps one memo across sessions, so a snapshot after one change
    re-reads only the changed objects; a file load's memo lives for that load only."""
    name = reader.__qualname__
    last_options: list[tuple[dict[str, Any], tuple[Any, ...]]] = []  # the same options come pod after pod

    @functools.wraps(reader)
    def read(view: View, **options: Any) -> Any:
        memo = view.problems.memo
        if last_options and last_options[0][0] == options:
            extra = last_options[0][1]
        else:
            extra = tuple((k, tuple(sorted(v.items())) if isinstance(v, Mapping) else v) for k, v in options.items())
            last_options[:] = [({k: dict(v) if isinstance(v, Mapping) else v for k, v in options.items()}, extra)]
        key = (name, id(view.node), extra)
        held = memo.get(key)
        if held is not None and held[0] is view.node:
            return held[1]
        before = view.problems.count()
        result = reader(view, **options)
        if view.problems.count() == before:
            memo[key] = (view.node, result)  # the node is kept with it, so its id cannot be reused
        return result

    return cast(_Reader, read)


def too_large(written: str, amount: int, resource: str) -> str | None:
    """Why a quantity's `amount` (in vpolicy's unit for `resource`) is more than `MAX_AMOUNT`, or None."""
    if abs(amount) <= MAX_AMOUNT:
        return None
    if resources.milli_scaled(resource):
        return f"'{written}' is too large: at most {MAX_AMOUNT}m (2^63-1 thousandths)"
    return f"'{written}' is too large: at most {MAX_AMOUNT} (2^63-1)"


def _is_bool(value: object) -> bool:
    return isinstance(value, (bool, ScalarBoolean))



def rfc3339_seconds(value: object) -> float | None:
    """A YAML timestamp or an RFC 3339 string as epoch seconds (no offset: UTC); None when it is neither
    (a bare date included)."""
    moment: datetime.datetime | None = None
    if isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()

def _describe(value: object) -> str:
    if value is None:
        return "null"
    if _is_bool(value):
        return f"the boolean {str(bool(value)).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f'the string "{value}"'
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, datetime.date):
        return f"the date {value.isoformat()}"
    return type(value).__name__


def _type_help(expected: str, value: object) -> str:
    if expected == "a string" and isinstance(value, (int, float)):  # bools are ints too
        shown = str(bool(value)).lower() if _is_bool(value) else str(value)
        return f'quote the value: "{shown}"'
    if isinstance(value, str) and expected in ("an integer", "a boolean (true or false)"):
        return "remove the quotes around the value"
    if expected == "a mapping":
        return "write key: value pairs here"
    if expected == "a list":
        return "write a list here, one '- ' item per line"
    return f"write {expected} here"

"""Label and field selectors as the API server parses and applies them.

Label selectors: `k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, comma-joined (AND).
Field selectors: `f=v`, `f==v`, `f!=v`, comma-joined; a field the kind does not support is a
`BadRequest`, as on a real server. A missing field reads as "" (so `spec.nodeName=` means unbound).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from tests.adapter.kubeemu.resources import Kind

_SET_OP = re.compile(r"^\s*(!?)([A-Za-z0-9./_-]+)\s+(in|notin)\s*\(([^)]*)\)\s*$")
_EQ_OP = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|!=|=)\s*([A-Za-z0-9._-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)([A-Za-z0-9./_-]+)\s*$")

Predicate = Callable[[Mapping[str, Any]], bool]


class SelectorError(ValueError):
    """The selector text is malformed or names an unsupported field (HTTP 400)."""


@dataclass(frozen=True, slots=True)
class Selector:
    predicates: tuple[Predicate, ...] = ()

    def __call__(self, obj: Mapping[str, Any] | None) -> bool:
        return obj is not None and all(p(obj) for p in self.predicates)


def _split(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in (x.strip() for x in parts) if p]


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    meta = obj.get("metadata") or {}
    labels: Mapping[str, str] = meta.get("labels") or {}
    return labels


def parse_labels(text: str | None) -> Selector:
    predicates: list[Predicate] = []
    for part in _split(text or ""):
        if m := _SET_OP.match(part):
            if m.group(1):
                raise SelectorError(f"unable to parse requirement: {part!r}")
            key, op = m.group(2), m.group(3)
            values = frozenset(v.strip() for v in m.group(4).split(",") if v.strip())
            predicates.append(_label_in(key, values, negate=op == "notin"))
        elif m := _EQ_OP.match(part):
            key, op, value = m.groups()
            predicates.append(_label_in(key, frozenset({value}), negate=op == "!="))
        elif m := _EXISTS.match(part):
            predicates.append(_label_exists(m.group(2), negate=m.group(1) == "!"))
        else:
            raise SelectorError(f"unable to parse requirement: {part!r}")
    return Selector(tuple(predicates))


def field_value(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def parse_fields(text: str | None, kind: Kind) -> Selector:
    allowed = {"metadata.name", "metadata.namespace", *kind.fields}
    predicates: list[Predicate] = []
    for part in _split(text or ""):
        m = _EQ_OP.match(part)
        if not m:
            raise SelectorError(f"invalid field selector: {part!r}")
        path, op, value = m.groups()
        if path not in allowed:
            raise SelectorError(f'"{path}" is not a known field selector: only "{", ".join(sorted(allowed))}"')
        predicates.append(_field_is(path, value, negate=op == "!="))
    return Selector(tuple(predicates))


def _label_in(key: str, values: frozenset[str], *, negate: bool) -> Predicate:
    def check(obj: Mapping[str, Any]) -> bool:
        return (_labels(obj).get(key) in values) != negate
    return check


def _label_exists(key: str, *, negate: bool) -> Predicate:
    def check(obj: Mapping[str, Any]) -> bool:
        return (key in _labels(obj)) != negate
    return check


def _field_is(path: str, value: str, *, negate: bool) -> Predicate:
    def check(obj: Mapping[str, Any]) -> bool:
        return (field_value(obj, path) == value) != negate
    return check


def both(first: Selector, second: Selector) -> Selector:
    return Selector(first.predicates + second.predicates)

"""Unchecked-looking reads of fields written as the API writes them: the readers' fast path, which reports nothing.

A big dump's pods are read by the hundred thousand, and almost all are exactly as the API server wrote
them: every name a string, every time RFC 3339. `fields.View`'s readers check each value and record a
located diagnostic for each mistake, at about a microsecond per field through the view objects they
make. The functions here read the same fields from the plain mappings directly and raise `NotPlain` at
the first value that is not the ordinary case (a wrong type, an unreadable time, anything a `View` would
report, and some things it would accept, such as a key that is not a string). The caller then reads the
whole object again through the `View` readers, which report exactly as before: this module never
decides what a mistake is or where it is, so diagnostics keep one source.

The contract, checked by `tests/load/test_plain.py` on generated objects: when a function here returns a
value, the `View` reader of the same field returns the same value and reports nothing. A reader using
this module must call it before it reports anything itself, so that falling back never reports twice.
Readers with a plain twin (`kinds._plain_meta`, `kinds._plain_pod_status`, `affinity._plain_images`): a
field added to the checked reader is added to its twin and to the test's generator, or the fast path
reads it as absent.
"""
from __future__ import annotations

import functools
from typing import Any

from vpolicy.load.fields import rfc3339_seconds


class NotPlain(Exception):
    """A field is not written as the API writes it: read the object through `fields.View`."""


def mapping(node: dict[Any, Any], key: str) -> dict[Any, Any] | None:
    """A mapping field; None when absent or null."""
    value = node.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise NotPlain


def mappings(node: dict[Any, Any], key: str) -> list[dict[Any, Any]]:
    """A list of mappings (null items left out, as `View.mappings` leaves them); [] when absent or null."""
    value = node.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise NotPlain
    out = []
    for item in value:
        if isinstance(item, dict):
            out.append(item)
        elif item is not None:
            raise NotPlain
    return out


def text(node: dict[Any, Any], key: str) -> str:
    """A string field; "" when absent or null (as `View.text` without `required`)."""
    value = node.get(key)
    if value is None:
        return ""
    if type(value) is str:
        return value
    raise NotPlain


def text_map(node: dict[Any, Any], key: str) -> dict[str, str]:
    """labels, annotations, nodeSelector: a copy, every key and value a plain string."""
    value = node.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise NotPlain
    for name, item in value.items():
        if type(item) is not str or type(name) is not str:
            raise NotPlain
    return dict(value)


def timestamp(node: dict[Any, Any], key: str) -> float | None:
    """An RFC 3339 time as epoch seconds; None when absent or null."""
    value = node.get(key)
    if value is None:
        return None
    if type(value) is not str:
        raise NotPlain  # (ruamel's YAML timestamps, and mistakes)
    seconds = _seconds(value)
    if seconds is None:
        raise NotPlain
    return seconds


# A dump repeats its times: the objects made in one second, and the conditions that changed with them.
@functools.lru_cache(maxsize=1 << 16)
def _seconds(value: str) -> float | None:
    return rfc3339_seconds(value)

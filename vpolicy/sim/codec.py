"""ClusterSnapshot and Decisions <-> plain JSON values, for session records.

Encoding is generic over the model's frozen dataclasses: a field equal to its default is left out, so a
pod is mostly its name, uid, request and status; `origin` (where an object was read, not part of its
equality) is dropped; Resources become `{name: int}`, enums their value, tuples lists. Decoding reads
the dataclass field types back (`typing.get_type_hints`), so `decode_snapshot(encode_snapshot(s)) == s`
for every snapshot (the property the record tests check).

This module does no I/O and knows no file layout: `vpolicy.sim.record` writes and reads the records.
"""
from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any

from vpolicy.model import affinity as _affinity
from vpolicy.model import snapshot as snap
from vpolicy.model.decisions import Decisions, Eviction, PodGroupStatus
from vpolicy.model.resources import Resources

# Fields that say where an object was read: not part of the object, and not JSON.
_SKIPPED = frozenset({"origin", "conf_origin"})
Json = Any


def encode(value: object) -> Json:
    """A model value as JSON: dataclasses as objects of their non-default fields."""
    if isinstance(value, Resources):
        return value.to_dict()
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Json] = {}
        for f in _fields(type(value)):
            item = getattr(value, f.name)
            if _is_default(f, item):
                continue
            out[f.name] = encode(item)
        return out
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    return value


def decode(cls: type[Any], data: Mapping[str, Json]) -> Any:
    """The dataclass `cls` from what `encode` made of one."""
    hints = _hints(cls)
    kwargs = {name: _decode_as(hints[name], value) for name, value in data.items() if name in hints}
    return cls(**kwargs)


def encode_snapshot(s: snap.ClusterSnapshot) -> dict[str, Json]:
    return typing.cast(dict[str, Json], encode(s))


def decode_snapshot(data: Mapping[str, Json]) -> snap.ClusterSnapshot:
    return typing.cast(snap.ClusterSnapshot, decode(snap.ClusterSnapshot, data))


def encode_decisions(d: Decisions) -> dict[str, Json]:
    """What a replay compares: binds, pipelined, evictions and PodGroup phases (not reasons or stats)."""
    out: dict[str, Json] = {}
    if d.binds:
        out["binds"] = dict(sorted(d.binds.items()))
    if d.pipelined:
        out["pipelined"] = dict(sorted(d.pipelined.items()))
    if d.evictions:
        out["evictions"] = [[e.pod, e.action, e.for_job, e.rule] for e in d.evictions]
    if d.podgroups:
        out["phases"] = {k: s.phase for k, s in sorted(d.podgroups.items())}
    return out


def decode_decisions(data: Mapping[str, Json]) -> Decisions:
    return Decisions(
        binds=dict(data.get("binds", {})), pipelined=dict(data.get("pipelined", {})),
        evictions=[Eviction(*e) for e in data.get("evictions", [])],
        podgroups={k: PodGroupStatus(v) for k, v in data.get("phases", {}).items()})


def field_types(cls: type[Any]) -> dict[str, Any]:
    """The declared type of each encoded field of a model dataclass."""
    return _hints(cls)


def item_type(hint: Any) -> Any:
    """The item type of a `tuple[X, ...]` field."""
    return typing.get_args(hint)[0]


def decode_field(cls: type[Any], name: str, value: Json) -> Any:
    """One field's value, decoded by its declared type."""
    return _decode_as(_hints(cls)[name], value)


_MODEL_NAMES: dict[str, Any] = {**vars(_affinity), **vars(snap)}
_FIELDS: dict[type[Any], tuple[dataclasses.Field[Any], ...]] = {}
_HINTS: dict[type[Any], dict[str, Any]] = {}


def _fields(cls: type[Any]) -> tuple[dataclasses.Field[Any], ...]:
    if cls not in _FIELDS:
        # derived fields (init=False) are recomputed by the constructor, so they are not encoded
        _FIELDS[cls] = tuple(f for f in dataclasses.fields(cls) if f.name not in _SKIPPED and f.init)
    return _FIELDS[cls]


def _hints(cls: type[Any]) -> dict[str, Any]:
    if cls not in _HINTS:
        # the model's modules name each other's types only for type checkers (vpolicy.model.volumes does,
        # to avoid an import cycle): resolve those names in the model's namespace
        hints = typing.get_type_hints(cls, localns=_MODEL_NAMES)
        _HINTS[cls] = {f.name: hints[f.name] for f in _fields(cls)}
    return _HINTS[cls]


def _is_default(f: dataclasses.Field[Any], value: object) -> bool:
    if f.default is not dataclasses.MISSING:
        return bool(value == f.default)
    if f.default_factory is not dataclasses.MISSING:
        return bool(value == f.default_factory())
    return False


def _decode_as(hint: Any, value: Json) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return _decode_as(options[0], value)  # the model's unions are `X | None` (origins are skipped)
    if hint is Resources:
        return Resources(value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return decode(hint, value)
    if origin is tuple:
        item = args[0]
        return tuple(_decode_as(item, v) for v in value)
    if origin in (Mapping, dict, typing.Mapping):
        return {k: _decode_as(args[1], v) for k, v in value.items()}
    if hint is float:
        return float(value)
    return value

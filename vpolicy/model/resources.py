"""Exact integer resource vectors, with Volcano's units and comparison rules.

Units (Volcano's): `cpu` in millicores, `memory` and `ephemeral-storage` in bytes, `pods` as a count,
every other (scalar/extended) resource in milli-units (`nvidia.com/gpu: 1` is 1000). Values are Python
ints, so sums never drift; Volcano's float epsilon (0.1 milli-unit) therefore reduces to exact equality.

Comparisons come in the flavours Volcano uses, named after them: a missing dimension counts as zero
(`le`), or only the dimensions named by the left side are compared (`le_on_dims_of`). This module does
not parse quantities (see `quantity`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
# Dimensions stored in their natural unit rather than milli-units.
_NATURAL_UNIT = frozenset({MEMORY, PODS, "ephemeral-storage"})


def milli_scaled(name: str) -> bool:
    """True when `name` is stored in milli-units (cpu and every extended resource)."""
    return name not in _NATURAL_UNIT


if TYPE_CHECKING:
    from typing import Protocol, TypeVar, overload

    _MappingBase = Mapping[str, int]
    _T = TypeVar("_T")

    class _Get(Protocol):
        """Mapping.get's signature, for the values dict's bound `get` each instance stores."""

        @overload
        def __call__(self, key: str, /) -> int | None: ...
        @overload
        def __call__(self, key: str, default: int, /) -> int: ...
        @overload
        def __call__(self, key: str, default: _T, /) -> int | _T: ...
else:
    _MappingBase = object


class Resources(_MappingBase):
    """An immutable mapping resource-name -> int; zero entries are dropped so equality is by content.

    At run time a plain class registered as a `Mapping` rather than derived from it (type checkers see a
    Mapping): `isinstance(x, Resources)` runs on every rule evaluation, and an ABC-derived class pays for
    ABCMeta's instance check each time.
    """

    # `get` is the values dict's own bound method, stored per instance: rules call it hundreds of
    # thousands of times a session, and a Python-level method would add a frame to each call.
    __slots__ = ("_v", "_hash", "_share", "get")
    if TYPE_CHECKING:
        get: _Get

    def __init__(self, values: Mapping[str, int] | Iterable[tuple[str, int]] = ()):
        # exact-type checks first: isinstance against the Mapping ABC is slow on this hot path
        if type(values) is dict:
            items: Iterable[tuple[str, int]] = values.items()
        elif type(values) is Resources:
            items = values._v.items()
        else:
            items = values.items() if isinstance(values, Mapping) else values
        self._v: dict[str, int] = {k: int(v) for k, v in items if v}
        self._hash: int | None = None
        self._share: tuple[object, float] | None = None
        self.get = self._v.get

    @classmethod
    def _raw(cls, values: dict[str, int]) -> "Resources":
        """Wrap a dict already free of zero entries and of non-int values (internal fast path)."""
        out = cls.__new__(cls)
        out._v = values
        out._hash = None
        out._share = None
        out.get = values.get
        return out

    # Mapping protocol ---------------------------------------------------------------------------
    def __getitem__(self, key: str) -> int:
        return self._v.get(key, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self._v)

    def __len__(self) -> int:
        return len(self._v)

    def __contains__(self, key: object) -> bool:
        return key in self._v

    def keys(self) -> KeysView[str]:
        return self._v.keys()

    def items(self) -> ItemsView[str, int]:
        return self._v.items()

    def values(self) -> ValuesView[int]:
        return self._v.values()

    def __eq__(self, other: object) -> bool:
        if type(other) is Resources:
            return self._v == other._v
        if isinstance(other, (int, float)):  # before the (slow) Mapping check: never equal
            return NotImplemented
        if isinstance(other, Mapping):
            return self._v == {k: v for k, v in other.items() if v}
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._v.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"Resources({self._v!r})"

    # Arithmetic ---------------------------------------------------------------------------------
    def __add__(self, other: Mapping[str, int]) -> "Resources":
        return self._combine(other, 1)

    def __sub__(self, other: Mapping[str, int]) -> "Resources":
        return self._combine(other, -1)

    def _combine(self, other: Mapping[str, int], sign: int) -> "Resources":
        out = self._v.copy()
        if type(other) is Resources:  # ints with no zero entries: only sums that cancel need dropping
            for k, v in other._v.items():
                n = out.get(k, 0) + sign * v
                if n:
                    out[k] = n
                else:
                    out.pop(k, None)
            return Resources._raw(out)
        for k, v in other.items():
            out[k] = out.get(k, 0) + sign * v
        return Resources._raw({k: int(v) for k, v in out.items() if v})

    def __neg__(self) -> "Resources":
        return Resources({k: -v for k, v in self._v.items()})

    def scale(self, factor: float) -> "Resources":
        """Multiply every dimension, rounding down (used by overcommit factors)."""
        return Resources({k: int(v * factor) for k, v in self._v.items()})

    def times(self, n: int) -> "Resources":
        return Resources({k: v * n for k, v in self._v.items()})

    def clamp_min_zero(self) -> "Resources":
        return Resources({k: v for k, v in self._v.items() if v > 0})

    def without(self, *names: str) -> "Resources":
        return Resources({k: v for k, v in self._v.items() if k not in names})

    def only(self, names: Iterable[str]) -> "Resources":
        keep = set(names)
        return Resources({k: v for k, v in self._v.items() if k in keep})

    def dims(self) -> frozenset[str]:
        """Dimensions with a positive value: the resources a request actually asks for."""
        return frozenset(k for k, v in self._v.items() if v > 0)

    def is_empty(self, *, ignore: Iterable[str] = (PODS,)) -> bool:
        """Volcano's IsEmpty: nothing requested beyond the ignored dims (a best-effort request)."""
        for k, v in self._v.items():
            if v > 0 and k not in ignore:
                return False
        return True

    # Comparisons (Volcano's flavours) ------------------------------------------------------------
    def le(self, other: Mapping[str, int]) -> bool:
        """Every dimension of self <= other's, a missing dimension counting as zero on both sides, equal
        within 0.1 (Volcano's LessEqual with minResource: the same as <= between integers, and right
        against a float64 such as proportion's deserved)."""
        names = set(self._v) | set(other)
        return all(self._v.get(k, 0) < other.get(k, 0) + 0.1 for k in names)

    def le_on_dims_of(self, other: Mapping[str, int], dims: Iterable[str]) -> bool:
        """self <= other on the given dimensions only (Volcano's LessEqualWithDimension)."""
        return all(self._v.get(k, 0) <= other.get(k, 0) for k in dims)

    def any_gt(self, other: Mapping[str, int]) -> list[str]:
        """Dimensions where self exceeds other (missing = 0): the 'Insufficient <res>' list."""
        return sorted(k for k, v in self._v.items() if v > other.get(k, 0))

    def max_ratio(self, denominators: Mapping[str, int], *, names: Iterable[str] | None = None) -> float:
        """max over names of self/denominator; 0/0 = 0 and x/0 = 1 (Volcano's share convention).

        The last answer over all dimensions is kept with its denominator (both immutable): job orders
        ask a job's share of the cluster total on every comparison."""
        if names is None and type(denominators) is Resources:
            memo = self._share
            if memo is not None and memo[0] is denominators:
                return memo[1]
            best = self._max_ratio(denominators, denominators.keys())
            self._share = (denominators, best)
            return best
        return self._max_ratio(denominators, denominators.keys() if names is None else names)

    def _max_ratio(self, denominators: Mapping[str, int], names: Iterable[str]) -> float:
        best = 0.0
        for k in names:
            num, den = self._v.get(k, 0), denominators.get(k, 0)
            share = (0.0 if num == 0 else 1.0) if den == 0 else num / den
            best = max(best, share)
        return best

    def to_dict(self) -> dict[str, int]:
        return dict(self._v)


Mapping.register(Resources)

ZERO = Resources()


def total(vectors: Iterable[Mapping[str, int]]) -> Resources:
    out: dict[str, int] = {}
    for vec in vectors:
        # a Resources' own dict: its items() is a Python-level call, and a session sums 100,000 of them
        for k, v in (vec._v if type(vec) is Resources else vec).items():
            out[k] = out.get(k, 0) + v
    return Resources(out)


def names(vectors: Iterable[Resources]) -> dict[str, None]:
    """Every resource name in `vectors`, in the order first seen."""
    seen: dict[str, int] = {}
    for vec in vectors:
        seen.update(vec._v)  # the values are left behind: only the names, in order, are wanted
    return dict.fromkeys(seen)

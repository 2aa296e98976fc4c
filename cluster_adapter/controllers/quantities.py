"""Resource lists of pod specs: requests summed exactly, written back as Kubernetes quantities.

A container's requests count, or its limits when it sets no requests (what the API server's
defaulting does, and what Volcano's `addResourceList` assumes). Arithmetic is on exact fractions
(`vpolicy.model.quantity`), so `500m + 500m` is `1`, never `0.99999`.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from vpolicy.model import quantity

_BYTES = frozenset({"memory", "ephemeral-storage"})
_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def container_requests(container: Mapping[str, Any]) -> dict[str, Fraction]:
    resources = container.get("resources") or {}
    source = resources.get("requests") or resources.get("limits") or {}
    out: dict[str, Fraction] = {}
    for name, value in source.items():
        try:
            out[name] = quantity.parse_exact(value)
        except ValueError:
            continue  # the API server would have refused it; nothing to add
    return out


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Fraction]:
    return add(container_requests(c) for c in spec.get("containers") or [] if isinstance(c, Mapping))


def add(lists: Iterable[Mapping[str, Fraction]]) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for values in lists:
        for name, amount in values.items():
            total[name] = total.get(name, Fraction(0)) + amount
    return total


def scaled(values: Mapping[str, Fraction], times: int) -> dict[str, str]:
    return render({name: amount * times for name, amount in values.items()})


def render(values: Mapping[str, Fraction]) -> dict[str, str]:
    return {name: text(name, amount) for name, amount in sorted(values.items())}


def text(name: str, amount: Fraction) -> str:
    """`2`, `1500m`, `4Gi`, `1536Mi`, `3000000` — the shortest exact form (binary suffixes for bytes)."""
    if amount.denominator == 1:
        whole = int(amount)
        if name in _BYTES:
            for suffix, size in _BINARY:
                if whole and whole % size == 0:
                    return f"{whole // size}{suffix}"
        return str(whole)
    milli = amount * 1000
    if milli.denominator == 1:
        return f"{int(milli)}m"
    return f"{-(-milli.numerator // milli.denominator)}m"  # below a millicore: round up, as Kubernetes does

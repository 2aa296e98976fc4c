"""Kubernetes quantities (`500m`, `1.5Gi`, `1e3`, `2k`) parsed exactly into vpolicy's integer units.

This module implements the whole grammar of apimachinery's `resource.Quantity`:

    quantity  ::= sign? number suffix?          (surrounding whitespace is trimmed, as UnmarshalJSON does)
    number    ::= digits | digits "." digits? | "." digits
    suffix    ::= binarySI | decimalSI | exponent
    binarySI  ::= Ki | Mi | Gi | Ti | Pi | Ei                 (powers of 1024)
    decimalSI ::= n | u | m | k | M | G | T | P | E           (10^-9 .. 10^18)
    exponent  ::= ("e" | "E") sign? digits                    (an integer power of ten, as ParseQuantity
                                                               accepts; "E" alone is exa)

Values are kept as `fractions.Fraction` until the very end and then rounded *up*, away from zero, to
the integer unit, as `Quantity.MilliValue()`/`Value()` do: `0.5m` cpu is 1 millicore, `500m` bytes of
memory is 1 byte. Units follow `resources`: cpu and every extended resource in milli-units; memory,
ephemeral-storage and pods in their natural unit.

Bad text raises `ValueError` with a one-line reason; turning that into a located diagnostic is the
loader's job (`vpolicy.load.cluster`). This module knows nothing about YAML or spans.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

from vpolicy.model import resources

# Exponents beyond this are certainly typos; refusing them keeps Fraction arithmetic small.
_MAX_EXPONENT = 1000

_DECIMAL_SI: dict[str, int] = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
# Suffixes people write that Kubernetes rejects, and what they most likely meant.
_SUFFIX_HINTS: dict[str, str] = {
    "K": "'k' (1000) or 'Ki' (1024)",
    "KB": "'k' (1000) or 'Ki' (1024)",
    "MB": "'M' (10^6) or 'Mi' (2^20)",
    "GB": "'G' (10^9) or 'Gi' (2^30)",
    "TB": "'T' (10^12) or 'Ti' (2^40)",
    "B": "no suffix (a plain number of bytes)",
}

_NUMBER = re.compile(r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)\Z", re.DOTALL)
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)\Z")
_FRACTIONAL_EXPONENT = re.compile(r"[eE][+-]?[0-9]*\.[0-9]*\Z")


def parse_exact(text: str | int | float) -> Fraction:
    """The exact value of a quantity, before any rounding (`"1.5Gi"` -> 1610612736)."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a quantity: expected a number or a string such as 500m")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise ValueError(f"{text!r} is not a quantity: it must be a finite number")
        # repr() is the shortest text that reads back as the same float, i.e. what the user wrote.
        return parse_exact(repr(text))
    stripped = text.strip()
    if not stripped:
        raise ValueError("empty quantity: expected a number such as 500m, 2, 1.5Gi or 1e3")
    match = _NUMBER.match(stripped)
    if match is None:
        raise ValueError(f"'{text}' is not a quantity: it must start with a number")
    sign, number, suffix = match.groups()
    value = Fraction(number if not number.endswith(".") else number[:-1])
    value *= _suffix_factor(text, suffix)
    return -value if sign == "-" else value


def parse_value(text: str | int | float) -> int:
    """Kubernetes `Quantity.Value()`: the quantity in plain units, rounded up (away from zero)."""
    return _round_away(parse_exact(text))


def parse_milli_value(text: str | int | float) -> int:
    """Kubernetes `Quantity.MilliValue()`: the quantity in thousandths, rounded up (away from zero)."""
    return _round_away(parse_exact(text) * 1000)


def parse_quantity(text: str | int | float, resource: str) -> int:
    """A quantity of `resource` in vpolicy's unit for it: milli for cpu and extended resources, else plain."""
    return parse_milli_value(text) if resources.milli_scaled(resource) else parse_value(text)


def _suffix_factor(text: str, suffix: str) -> Fraction:
    if suffix in _DECIMAL_SI:
        return Fraction(10) ** _DECIMAL_SI[suffix]
    if suffix in _BINARY_SI:
        return Fraction(2) ** _BINARY_SI[suffix]
    exponent = _EXPONENT.match(suffix)
    if exponent is not None:
        power = int(exponent.group(1))
        if abs(power) > _MAX_EXPONENT:
            raise ValueError(f"'{text}' is not a quantity: exponent {power} is out of range")
        return Fraction(10) ** power
    raise ValueError(f"'{text}' is not a quantity: {_describe_bad_suffix(suffix)}")


def _describe_bad_suffix(suffix: str) -> str:
    if _FRACTIONAL_EXPONENT.match(suffix):
        return f"exponent '{suffix}' must be a whole number, as in 1e3 or 2E-3"
    if suffix[:1].isspace():
        return f"no space is allowed between the number and its suffix '{suffix.strip()}'"
    hint = _SUFFIX_HINTS.get(suffix)
    if hint is None:
        folded = {s.lower(): s for s in _BINARY_SI}
        if suffix.lower() in folded:
            hint = f"'{folded[suffix.lower()]}'"
    described = f"unknown suffix '{suffix}'"
    return f"{described} (did you mean {hint}?)" if hint else described


def _round_away(value: Fraction) -> int:
    magnitude = math.ceil(abs(value))
    return -magnitude if value < 0 else magnitude

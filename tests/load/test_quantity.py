"""Kubernetes quantities parse exactly into vpolicy units, rounding up as Kubernetes does."""
from __future__ import annotations

from fractions import Fraction

import pytest

from vpolicy.model import quantity


@pytest.mark.parametrize("text, resource, expected", [
    pytest.param("500m", "cpu", 500, id="milli-cpu"),
    pytest.param("2", "cpu", 2000, id="whole-cpu"),
    pytest.param("1.5", "cpu", 1500, id="decimal-cpu"),
    pytest.param(".5", "cpu", 500, id="leading-dot"),
    pytest.param("1.", "cpu", 1000, id="trailing-dot"),
    pytest.param("+1", "cpu", 1000, id="plus-sign"),
    pytest.param("-1.5", "cpu", -1500, id="minus-sign"),
    pytest.param("0", "cpu", 0, id="zero"),
    pytest.param(" 2 ", "cpu", 2000, id="surrounding-space-trimmed"),
    pytest.param("0.5m", "cpu", 1, id="half-milli-rounds-up"),
    pytest.param("-0.5m", "cpu", -1, id="negative-rounds-away-from-zero"),
    pytest.param("100n", "cpu", 1, id="nano-rounds-up"),
    pytest.param("250u", "cpu", 1, id="micro-rounds-up"),
    pytest.param("1e3", "cpu", 1_000_000, id="exponent"),
    pytest.param("1.5E-3", "cpu", 2, id="negative-exponent-rounds-up"),
    pytest.param("12e+2", "pods", 1200, id="exponent-with-plus"),
    pytest.param("2k", "pods", 2000, id="kilo-pods"),
    pytest.param("1M", "memory", 10**6, id="mega"),
    pytest.param("1G", "memory", 10**9, id="giga"),
    pytest.param("1T", "memory", 10**12, id="tera"),
    pytest.param("1P", "memory", 10**15, id="peta"),
    pytest.param("1E", "memory", 10**18, id="exa-not-exponent"),
    pytest.param("1Ki", "memory", 1024, id="kibi"),
    pytest.param("128Mi", "ephemeral-storage", 134_217_728, id="mebi-ephemeral-storage-in-bytes"),
    pytest.param("1.5Gi", "memory", 1_610_612_736, id="fractional-gibi"),
    pytest.param("1Ti", "memory", 2**40, id="tebi"),
    pytest.param("1Pi", "memory", 2**50, id="pebi"),
    pytest.param("1Ei", "memory", 2**60, id="exbi"),
    pytest.param("500m", "memory", 1, id="milli-byte-rounds-up"),
    pytest.param("1e-3", "memory", 1, id="tiny-memory-rounds-up"),
    pytest.param("1", "nvidia.com/gpu", 1000, id="extended-resource-in-milli"),
    pytest.param("1024", "volcano.sh/vgpu-memory", 1_024_000, id="vgpu-memory-in-milli"),
    pytest.param("110", "pods", 110, id="pods-as-count"),
    pytest.param(3, "cpu", 3000, id="yaml-int"),
    pytest.param(0.1, "cpu", 100, id="yaml-float-exact"),
    pytest.param(1e3, "memory", 1000, id="yaml-float-exponent"),
])
def test_quantities_convert_to_vpolicy_units(text: str | int | float, resource: str, expected: int) -> None:
    assert quantity.parse_quantity(text, resource) == expected


@pytest.mark.parametrize("text, message", [
    pytest.param("", "empty quantity: expected a number such as 500m, 2, 1.5Gi or 1e3", id="empty"),
    pytest.param("abc", "'abc' is not a quantity: it must start with a number", id="no-number"),
    pytest.param("--1", "'--1' is not a quantity: it must start with a number", id="double-sign"),
    pytest.param("1gi", "'1gi' is not a quantity: unknown suffix 'gi' (did you mean 'Gi'?)", id="lowercase-binary"),
    pytest.param("1K", "'1K' is not a quantity: unknown suffix 'K' (did you mean 'k' (1000) or 'Ki' (1024)?)",
                 id="uppercase-kilo"),
    pytest.param("2GB", "'2GB' is not a quantity: unknown suffix 'GB' (did you mean 'G' (10^9) or 'Gi' (2^30)?)",
                 id="bytes-unit"),
    pytest.param("1x", "'1x' is not a quantity: unknown suffix 'x'", id="unknown-suffix"),
    pytest.param("1e", "'1e' is not a quantity: unknown suffix 'e'", id="lowercase-e-alone"),
    pytest.param("1e1.5", "'1e1.5' is not a quantity: exponent 'e1.5' must be a whole number, as in 1e3 or 2E-3",
                 id="fractional-exponent"),
    pytest.param("1.5.5", "'1.5.5' is not a quantity: unknown suffix '.5'", id="two-dots"),
    pytest.param("1 Gi", "'1 Gi' is not a quantity: no space is allowed between the number and its suffix 'Gi'",
                 id="space-before-suffix"),
    pytest.param("1e5000", "'1e5000' is not a quantity: exponent 5000 is out of range", id="huge-exponent"),
    pytest.param("\u0663", "'\u0663' is not a quantity: it must start with a number", id="non-ascii-digit"),
    pytest.param(True, "True is not a quantity: expected a number or a string such as 500m", id="boolean"),
    pytest.param(float("inf"), "inf is not a quantity: it must be a finite number", id="infinity"),
])
def test_malformed_quantities_raise_value_error_saying_why(text: str | bool | float, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        quantity.parse_quantity(text, "cpu")
    assert str(caught.value) == message


def test_parse_value_and_milli_value_mirror_kubernetes_value_and_milli_value() -> None:
    assert quantity.parse_value("1500m") == 2
    assert quantity.parse_milli_value("1500m") == 1500
    assert quantity.parse_value("3") == 3


def test_parse_exact_keeps_the_unrounded_value() -> None:
    assert quantity.parse_exact("1.5Gi") == Fraction(3, 2) * 2**30
    assert quantity.parse_exact("0.5m") == Fraction(1, 2000)

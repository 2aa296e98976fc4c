"""The built-ins the later Volcano plugins brought (docs/plugins.md): time, text, IntOrString, sorting."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from vpolicy.compile import functions


@pytest.mark.parametrize(("text", "seconds"), [
    pytest.param("0:00", 0, id="midnight-one-digit-hour"), pytest.param("09:30", 34200, id="two-digit-hour"),
    pytest.param("23:59", 86340, id="last-minute"), pytest.param("1:0", -1, id="minutes-need-two-digits"),
    pytest.param("63:59", -1, id="no-hour-63"), pytest.param("0:00_01:00", -1, id="no-separator"),
    pytest.param(" 1:00", -1, id="no-spaces"),
])
def test_clock_time_reads_go_15_04_layout(text: str, seconds: int) -> None:
    """tdm_test.go Test_parseRevocableZone's accepted and refused window ends."""
    assert functions.clock_time(text) == seconds


@pytest.mark.parametrize(("text", "whole", "value"), [
    pytest.param("30%", 5, 2, id="percent-rounds-up"), pytest.param("50%", 5, 3, id="half-rounds-up"),
    pytest.param("99%", 5, 5, id="almost-all"), pytest.param("3", 5, 3, id="integer"),
    pytest.param("x", 5, 0, id="neither-is-zero"),
])
def test_int_or_percent_is_kubernetes_get_value_from_int_or_percent_rounding_up(text: str, whole: int,
                                                                                 value: int) -> None:
    assert functions.int_or_percent(text, whole) == value


def test_timestamps_read_rfc3339_and_refuse_anything_else() -> None:
    assert functions.timestamp("1970-01-01T00:01:00Z") == 60.0
    assert functions.timestamp("1970-01-01T00:01:00") == 60.0  # no offset: UTC
    assert functions.timestamp("yesterday") == -1.0
    assert functions.time_of_day(86_400 * 3 + 61) == 61.0


@given(st.lists(st.tuples(st.integers(-5, 5), st.text(max_size=3))))
def test_sort_by_orders_by_key_and_keeps_ties_in_their_order(pairs: list[tuple[int, str]]) -> None:
    items = [(i, text) for i, (_, text) in enumerate(pairs)]
    keys = [key for key, _ in pairs]
    ordered = functions.FUNCTIONS["sort_by"](items, keys)
    assert ordered == [item for _, item in sorted(zip(keys, items), key=lambda kv: (kv[0], kv[1][0]))]

"""Durations as written in confs and workload files."""
from __future__ import annotations

import pytest

from vpolicy.model import durations


@pytest.mark.parametrize(("text", "seconds"), [
    ("800ms", 0.8), ("90s", 90.0), ("45m", 2_700.0), ("1h30m", 5_400.0), ("1d", 86_400.0), ("1.5h", 5_400.0),
    ("2", 2.0), (" 1m30s ", 90.0), ("1m500ms", 60.5),
])
def test_written_durations_read_as_seconds(text: str, seconds: float) -> None:
    assert durations.seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "1y", "m", "1s2", "1 s", "s1"])
def test_anything_else_is_no_duration(text: str) -> None:
    assert durations.seconds(text) is None


@pytest.mark.parametrize(("text", "seconds"), [
    pytest.param("1h2m3s4ms5us6ns", 3723.004005006, id="every-unit"),
    pytest.param("1h2m3s4ms5µs6ns", 3723.004005006, id="micro-sign"),
    pytest.param("-1.5h", -5400.0, id="negative-fraction"),
    pytest.param("0", 0.0, id="bare-zero"),
    pytest.param("300ms", 0.3, id="milliseconds"),
    pytest.param("2h45m", 9900.0, id="hours-and-minutes"),
])
def test_go_durations_read_as_time_parse_duration_reads_them(text: str, seconds: float) -> None:
    assert durations.go_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "1", "1d", "1 h", "h", "5m30", "+", "1.5"])
def test_go_refuses_what_parse_duration_refuses(text: str) -> None:
    """A bare number other than 0 has no unit, and `d` is no unit of Go's (sla, cdp and tdm then read none)."""
    assert durations.go_seconds(text) is None

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

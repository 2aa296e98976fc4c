"""Durations as people write them in confs and workload files: `800ms`, `90s`, `45m`, `2h`, `1h30m`,
`1d`, `1.5h`, or a bare number of seconds.

Only the text form. Each caller says which values it accepts (a session budget must be above zero, a
workload's times may be zero) and words its own errors.
"""
from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|[dhms])")
_UNITS = {"d": 86_400.0, "h": 3_600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def seconds(text: str) -> float | None:
    """The seconds `text` writes, or None when it is not a duration."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return total if text and pos == len(text) else None


# Go's time.ParseDuration units (a conf's `sla-waiting-time`, a pod's `volcano.sh/cooldown-time`)
_GO_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3_600.0}


def go_seconds(text: str) -> float | None:
    """The seconds a Go `time.ParseDuration` text writes (`1h2m3s4ms5us6ns`, `-1.5h`, `0`), or None
    when Go would refuse it (no unit, an unknown unit, spaces, an empty text)."""
    sign = -1.0 if text.startswith("-") else 1.0
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    pos, total = 0, 0.0
    for match in _GO_PART.finditer(body):
        if match.start() != pos:
            return None
        total += float(match.group(1)) * _GO_UNITS[match.group(2)]
        pos = match.end()
    return sign * total if body and pos == len(body) else None

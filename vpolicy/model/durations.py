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

"""Kubernetes times as text: metav1.Time (`2024-05-01T10:00:00Z`, whole seconds), and back.

One place for the scheduler side (`convert`) and the controllers, which may not import each other.
"""
from __future__ import annotations

import datetime


def rfc3339(epoch: float) -> str:
    """`2024-05-01T10:00:00Z` (whole seconds, as metav1.Time serialises)."""
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def local_zone(epoch: float) -> datetime.tzinfo:
    """The process's local time zone (TZ, else /etc/localtime) as it stands at `epoch`: the zone
    Volcano's scheduler reads `time.Now()` in (tdm's daily windows)."""
    zone = datetime.datetime.fromtimestamp(epoch).astimezone().tzinfo
    return zone if zone is not None else datetime.timezone.utc


def parse_rfc3339(text: object) -> float | None:
    """Epoch seconds of an RFC 3339 time; None for anything else (missing, empty, malformed)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None

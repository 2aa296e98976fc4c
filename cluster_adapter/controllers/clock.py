"""The controllers' clock: wall time in seconds since the epoch, passed in, never read directly.

Cron schedules, policy timeouts, `ttlSecondsAfterFinished` and status timestamps all ask the clock the
controller manager was built with. Production uses `SystemClock`; tests use `FakeClock` and move it by
hand, so an hour of CronJob schedules passes in milliseconds. The work queues compare due times with
this clock too, so a delayed request becomes ready when the (fake) clock passes it.
"""
from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (UTC)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class ScaledClock:
    """Wall time running `speed` times faster from the moment it was made (`vpolicy controllers
    --clock-speed`): an hour of cron schedules against a real cluster in a couple of minutes, for
    end-to-end tests and demonstrations. Timestamps the controllers write are on this clock."""

    def __init__(self, speed: float, start: float | None = None) -> None:
        self.speed = float(speed)
        self.start = time.time() if start is None else float(start)

    def now(self) -> float:
        return self.start + (time.time() - self.start) * self.speed


class FakeClock:
    """A clock that moves only when told to (tests)."""

    def __init__(self, start: float) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, epoch: float) -> None:
        with self._lock:
            self._now = float(epoch)


def go_duration(seconds: float) -> str:
    """A metav1.Duration as Go prints it: `1h2m3s`, `45s`, `0s`."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"

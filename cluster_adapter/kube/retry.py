"""One write, tried again on transient failures with exponential backoff, and only while we may write.

`attempt` is the choke point every scheduler write passes: it asks the write gate (the leader
elector: "do we still hold the lease?") before *each* try, so losing the lease stops writes at once,
even between the retries of one call. Transient errors (429, 5xx, no answer) wait — `Retry-After`
when the server sent one — and try again, up to `ApplySettings.attempts`. Other errors are raised at
once: what a conflict or a missing object means depends on the write (see `binder`, `status`).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from cluster_adapter.config import ApplySettings
from cluster_adapter.kube.client import APIError

_T = TypeVar("_T")
Gate = Callable[[], bool]


class NotLeader(Exception):
    """The write gate is closed: this process must not write (it lost, or never held, the lease)."""


def always() -> bool:
    return True


def attempt(fn: Callable[[], _T], *, settings: ApplySettings, gate: Gate = always,
            on_error: Callable[[APIError], None] = lambda _: None,
            sleep: Callable[[float], None] = time.sleep) -> _T:
    delay = settings.backoff_initial_s
    for index in range(max(1, settings.attempts)):
        if not gate():
            raise NotLeader("not the leader: write skipped")
        try:
            return fn()
        except APIError as exc:
            on_error(exc)
            if not exc.transient or index == settings.attempts - 1:
                raise
            wait = exc.retry_after if exc.retry_after is not None else delay
            sleep(min(wait, settings.backoff_max_s))
            delay = min(delay * 2, settings.backoff_max_s)
    raise AssertionError("unreachable")  # pragma: no cover

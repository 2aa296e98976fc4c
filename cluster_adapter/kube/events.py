"""Events on pods (`Scheduled`, `FailedScheduling`, `Preempted`, ...), recorded once, not once a second.

A pending pod gets the same verdict every session; writing it every period would flood the API. An
event is written when its (reason, message) for that pod differs from the last one written, or when
the last one is older than `event_repeat_s` — roughly what client-go's event correlator achieves.
Events are best effort: a failure is counted and logged, never retried, never fatal.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from cluster_adapter.config import ApplySettings
from cluster_adapter.kube import retry
from cluster_adapter.kube.client import APIError, KubeClient

log = logging.getLogger(__name__)
_REMEMBERED = 50_000  # pods whose last event is remembered (oldest forgotten first)


class EventRecorder:
    def __init__(self, client: KubeClient, settings: ApplySettings, *, clock: Callable[[], float],
                 gate: retry.Gate = retry.always, on_error: Callable[[APIError], None] = lambda _: None) -> None:
        self.client, self.settings, self.clock, self.gate, self.on_error = client, settings, clock, gate, on_error
        self._last: OrderedDict[str, tuple[str, str, float]] = OrderedDict()
        self._lock = threading.Lock()
        self.written = 0

    def record(self, uid: str, event: dict[str, Any]) -> bool:
        """Write `event` unless the same one was written for this pod recently. True if written."""
        if not self.settings.write_events:
            return False
        reason, message = str(event.get("reason", "")), str(event.get("message", ""))
        now = self.clock()
        with self._lock:
            last = self._last.get(uid)
            if last is not None and last[:2] == (reason, message) and now - last[2] < self.settings.event_repeat_s:
                return False
        try:
            retry.attempt(lambda: self.client.create_event(event["metadata"]["namespace"], event),
                          settings=ApplySettings(attempts=1), gate=self.gate, on_error=self.on_error)
        except APIError as exc:
            log.info("event %s for %s not written: %s", reason, uid, exc)
            return False
        with self._lock:
            self._last[uid] = (reason, message, now)
            self._last.move_to_end(uid)
            while len(self._last) > _REMEMBERED:
                self._last.popitem(last=False)
            self.written += 1
        return True

"""Leader election on a `coordination.k8s.io/v1` Lease, with client-go's rules and Volcano's timings.

Candidates race for one Lease (`volcano-system/volcano` by default). The holder renews it every
`retry_period` (2 s); a candidate takes it over only when the record has not changed for
`lease_duration` (15 s) *as measured by its own clock since it last saw the record change* (clock
skew between machines does not matter, as in client-go). Every write is an update with the
resourceVersion read just before, so two candidates can never both succeed.

`is_leader()` — the write gate of every scheduler write — is true only while the last successful
renewal is younger than `renew_deadline` (10 s < 15 s): a leader cut off from the API stops writing
before anyone else may start. When a renewal finds another holder, or the deadline passes, leading
stops at once and `on_lost` is called (the scheduler then exits, as Volcano's does, to start clean).

Not done: the client-go `LeaderElection` class is not used because it reads the global default
client configuration, exits the process on a bad config, and does not release the lease on stop.
"""
from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from cluster_adapter.config import LeaderSettings
from cluster_adapter.kube.client import APIConflict, APIError, APINotFound, KubeClient

log = logging.getLogger(__name__)


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


class LeaderElector:
    def __init__(self, client: KubeClient, settings: LeaderSettings, *, on_lost: Callable[[], None] = lambda: None,
                 wall: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic,
                 on_error: Callable[[APIError], None] = lambda _: None) -> None:
        self.client, self.settings = client, settings
        self.identity = settings.identity or default_identity()
        self.on_lost, self.on_error = on_lost, on_error
        self._wall, self._mono = wall, monotonic
        self._leading = False
        self._renewed_at = float("-inf")  # monotonic time of our last successful write of the lease
        self._observed: tuple[Any, ...] | None = None  # (holder, renewTime, transitions) last seen
        self._observed_at = float("-inf")
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.transitions_seen = 0

    # The write gate --------------------------------------------------------------------------------
    def is_leader(self) -> bool:
        with self._lock:
            return self._leading and self._mono() - self._renewed_at < self.settings.renew_deadline_s

    # Acquiring and renewing ------------------------------------------------------------------------
    def acquire(self, stop: threading.Event) -> bool:
        """Block until this candidate holds the lease (True) or `stop` is set (False)."""
        while not stop.is_set():
            if self.try_acquire_or_renew():
                log.info("%s: acquired the lease %s/%s", self.identity, self.settings.namespace, self.settings.name)
                return True
            stop.wait(self.settings.retry_period_s)
        return False

    def start_renewing(self, stop: threading.Event) -> None:
        self._thread = threading.Thread(target=self._renew_loop, args=(stop,), name="leader-renew", daemon=True)
        self._thread.start()

    def _renew_loop(self, stop: threading.Event) -> None:
        while not stop.wait(self.settings.retry_period_s):
            if not self.is_leading():
                return
            renewed = self.try_acquire_or_renew()
            if not renewed and not self.is_leader():
                self._lose("could not renew the lease within the renew deadline")
                return

    def is_leading(self) -> bool:
        with self._lock:
            return self._leading

    def try_acquire_or_renew(self) -> bool:
        now_wall = self._wall()
        try:
            lease = self.client.get_lease(self.settings.namespace, self.settings.name)
        except APINotFound:
            return self._create(now_wall)
        except APIError as exc:
            self.on_error(exc)
            return False
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("leaseTransitions"))
        if record != self._observed:
            self._observed, self._observed_at = record, self._mono()
        duration = float(spec.get("leaseDurationSeconds") or self.settings.lease_duration_s)
        if holder and holder != self.identity:
            if self._observed_at + duration > self._mono():
                if self.is_leading():
                    self._lose(f"the lease is held by {holder}")
                return False
        new_spec = dict(spec)
        new_spec.update(holderIdentity=self.identity, leaseDurationSeconds=int(self.settings.lease_duration_s),
                        renewTime=_micro(now_wall))
        if holder != self.identity:
            new_spec["acquireTime"] = _micro(now_wall)
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": lease.get("metadata") or {},
                "spec": new_spec}
        try:
            self.client.replace_lease(self.settings.namespace, self.settings.name, body)
        except APIConflict:
            return False
        except APIError as exc:
            self.on_error(exc)
            return False
        self._renewed(holder != self.identity)
        return True

    def release(self) -> None:
        """Give the lease up (empty holder, 1 s duration) so a successor need not wait for expiry."""
        if not self.is_leading():
            return
        with self._lock:
            self._leading = False
        try:
            lease = self.client.get_lease(self.settings.namespace, self.settings.name)
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != self.identity:
                return
            spec.update(holderIdentity=None, leaseDurationSeconds=1, renewTime=_micro(self._wall()))
            self.client.replace_lease(self.settings.namespace, self.settings.name,
                                      {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                       "metadata": lease.get("metadata") or {}, "spec": spec})
            log.info("%s: released the lease", self.identity)
        except APIError as exc:
            log.info("%s: could not release the lease: %s", self.identity, exc)

    # helpers ----------------------------------------------------------------------------------------
    def _create(self, now_wall: float) -> bool:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.settings.name, "namespace": self.settings.namespace},
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.settings.lease_duration_s),
                         "acquireTime": _micro(now_wall), "renewTime": _micro(now_wall), "leaseTransitions": 0}}
        try:
            self.client.create_lease(self.settings.namespace, body)
        except APIError as exc:
            self.on_error(exc)
            return False
        self._renewed(True)
        return True

    def _renewed(self, acquired: bool) -> None:
        with self._lock:
            self._leading = True
            self._renewed_at = self._mono()
        if acquired:
            self.transitions_seen += 1

    def _lose(self, why: str) -> None:
        with self._lock:
            was = self._leading
            self._leading = False
        if was:
            log.warning("%s: lost leadership: %s", self.identity, why)
            self.on_lost()


def _micro(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int((epoch % 1) * 1e6):06d}Z"

"""The controller manager: one store, one client, the enabled controllers, and who drives them.

Three ways to drive the same controllers:

- `run()` — the daemon: informers (list+watch, `cluster_adapter.kube.informers`) feed the store, the
  store's handlers enqueue, worker threads drain the queues; with leader election nothing is written
  before the lease is held, and losing it ends the run (exit 3), as Volcano's controller manager does;
- `run_once()` — `--once`: list every resource into the store (every object arrives as "added"),
  process what that enqueues, list again, and repeat until a round changes nothing; then exit 0.
  Work delayed to the future (policy timeouts, the next cron schedule, a TTL) is not waited for;
- `step()` — one list-and-drain round in the caller's thread, for tests with a fake clock.

Controllers are independent of each other; the order they are drained in (registry order: queue,
podgroup, job, cronjob, gc) only makes `--once` converge in fewer rounds.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from cluster_adapter.controllers import framework
from cluster_adapter.controllers.api import Api
from cluster_adapter.controllers.clock import Clock, SystemClock
from cluster_adapter.controllers.events import Recorder
from cluster_adapter.controllers.options import ManagerSettings, Options
from cluster_adapter.controllers.store import Store
from cluster_adapter.kube import retry
from cluster_adapter.kube.client import APINotFound, KubeClient, Resource
from cluster_adapter.kube.informers import Informer
from cluster_adapter.kube.leader import LeaderElector

log = logging.getLogger(__name__)

EXIT_OK, EXIT_BAD_INPUT, EXIT_LOST_LEASE = 0, 1, 3
MAX_ROUNDS = 50  # `--once`: list-and-drain rounds before giving up on quiet (each round is cheap)
MAX_DRAINS = 200  # drains inside one round (a drain can enqueue more work for another controller)


class ControllerManager:
    def __init__(self, client: KubeClient, settings: ManagerSettings, *, clock: Clock | None = None,
                 stop: threading.Event | None = None) -> None:
        self.client, self.settings = client, settings
        self.clock = clock or SystemClock()
        self.stop = stop or threading.Event()
        known = framework.load_builtin()
        self.names = framework.select(settings.controllers, list(known))
        self.controllers = [known[name]() for name in self.names]
        self.resources = _union(c.resources for c in self.controllers)
        self.store = Store([r.name for r in self.resources])
        self.elector = LeaderElector(client, settings.leader, on_lost=self._on_lost) if settings.leader.enabled \
            else None
        gate = self.elector.is_leader if self.elector else retry.always
        self.api = Api(client, self.store, settings.apply, clock=self.clock, gate=gate)
        self.events = Recorder(client, settings.apply, clock=self.clock, gate=gate)
        self.options = Options(settings=settings, api=self.api, store=self.store, clock=self.clock, events=self.events)
        for controller in self.controllers:
            controller.initialize(self.options)
        self.lost_lease = threading.Event()
        self.informers: list[Informer] = []

    def controller(self, name: str) -> framework.Controller:
        for controller in self.controllers:
            if controller.name in (name, f"{name}-controller"):
                return controller
        raise KeyError(name)

    # caller-driven ------------------------------------------------------------------------------------
    def relist(self) -> None:
        """List every resource into the store; differences reach the handlers as adds/updates/deletes."""
        for res in self.resources:
            try:
                listed = self.client.list(res)
            except APINotFound:
                if not res.optional:
                    raise
                listed = {"items": []}
            items = [i for i in listed.get("items") or [] if isinstance(i, dict)]
            for item in items:
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
            self.store.replace(res.name, items)

    def drain(self) -> int:
        """Process queued work until no controller has any ready; returns how many items were handled."""
        total = 0
        for _ in range(MAX_DRAINS):
            done = sum(controller.drain() for controller in self.controllers)
            total += done
            if done == 0:
                break
        return total

    def step(self) -> int:
        self.relist()
        return self.drain()

    def run_once(self) -> int:
        if self.elector is not None and not self.elector.acquire(self.stop):
            return EXIT_OK
        try:
            for _ in range(MAX_ROUNDS):
                if self.step() == 0:
                    break
            else:
                log.warning("--once: still busy after %d rounds; stopping anyway", MAX_ROUNDS)
        finally:
            if self.elector is not None:
                self.elector.release()
        return EXIT_OK

    # the daemon ---------------------------------------------------------------------------------------
    def run(self) -> int:
        for res in self.resources:
            self.informers.append(Informer(self.client, res, self.store, self.settings.informers,
                                           stop=self.stop).start())
        deadline = self.settings.informers.sync_timeout_s
        for informer in self.informers:
            if not informer.synced.wait(deadline):
                log.error("informer %s did not list within %.0f s", informer.resource.name, deadline)
                self.stop.set()
                return EXIT_BAD_INPUT
        if self.elector is not None:
            if not self.elector.acquire(self.stop):
                return EXIT_OK
            self.elector.start_renewing(self.stop)
        threads = [t for controller in self.controllers for t in controller.run(self.stop)]
        log.info("controllers running: %s (%d workers)", ", ".join(self.names), len(threads))
        try:
            while not self.stop.wait(0.5):
                if self.lost_lease.is_set():
                    break
        finally:
            if self.elector is not None and not self.lost_lease.is_set():
                self.elector.release()
            self.stop.set()
            for thread in threads:
                thread.join(2)
        return EXIT_LOST_LEASE if self.lost_lease.is_set() else EXIT_OK

    def _on_lost(self) -> None:
        self.lost_lease.set()


def _union(groups: Iterable[tuple[Resource, ...]]) -> tuple[Resource, ...]:
    seen: dict[str, Resource] = {}
    for group in groups:
        for res in group:
            seen.setdefault(res.name, res)
    return tuple(seen.values())


__all__ = ["ControllerManager", "EXIT_BAD_INPUT", "EXIT_LOST_LEASE", "EXIT_OK"]

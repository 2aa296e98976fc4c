"""List+watch reflectors: keep a local copy of one resource in step with the API server.

One `Informer` per resource, each on its own daemon thread:

1. **list** (no resourceVersion known): the whole collection replaces the resource in the sink; the
   informer counts as synced from then on;
2. **watch** from the list's resourceVersion with bookmarks and a server-side timeout; every event is
   applied to the sink and advances the resourceVersion (bookmarks too), so when the stream ends —
   timeout, dropped connection, server restart — the next watch **resumes** where it stopped;
3. an ERROR event with code 410, or a 410 answer, means the server's history no longer reaches that
   resourceVersion: the informer **lists again**;
4. any other failure waits with exponential backoff (0.2 s doubling to 5 s, reset by success) and
   retries the same step: a 5xx outage never becomes a hot loop. A watch that ends within a second
   without a single event (not even a bookmark) counts as such a failure, as client-go's "very short
   watch" does: a server or proxy that closes every watch at once is retried with backoff, not spun on.

An optional resource (a CRD that may not be installed, e.g. Volcano Jobs) answering 404 counts as an
empty, synced collection and is listed again after the longest backoff.

Objects are plain JSON dicts; list items get `apiVersion`/`kind` stamped, as watch events carry them.
This module does not interpret objects (`cluster_adapter.convert` does) and does not hold them
(`cluster_adapter.cache` does, through the `Sink` protocol).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from cluster_adapter.config import InformerSettings
from cluster_adapter.kube.client import (APIError, APIExpired, APINotFound, APIServerError, APIUnavailable, KubeClient,
                                         Resource)

log = logging.getLogger(__name__)
SHORT_WATCH_S = 1.0  # a watch that ends sooner with no event at all counts as a failure (client-go's rule)


class Sink(Protocol):
    def replace(self, resource: str, items: list[dict[str, Any]]) -> None: ...

    def apply(self, resource: str, event_type: str, obj: dict[str, Any]) -> None: ...


class Informer:
    def __init__(self, client: KubeClient, resource: Resource, sink: Sink, settings: InformerSettings, *,
                 stop: threading.Event, on_error: Callable[[APIError], None] = lambda _: None) -> None:
        self.client = client
        self.resource = resource
        self.sink = sink
        self.settings = settings
        self.stop = stop
        self.on_error = on_error
        self.synced = threading.Event()
        self.resource_version: str | None = None
        self.lists = 0  # how many times the collection was listed (1 + relists)
        self.watches = 0
        self._backoff = settings.backoff_initial_s
        self._thread = threading.Thread(target=self.run, name=f"informer-{resource.name}", daemon=True)

    def start(self) -> "Informer":
        self._thread.start()
        return self

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                else:
                    self._watch()
            except APIExpired:
                log.info("%s: resourceVersion %s expired; listing again", self.resource.name, self.resource_version)
                self.resource_version = None
            except APINotFound as exc:
                if not self.resource.optional:
                    self._failed(exc)
                    continue
                log.info("%s: not served by this cluster (%s); treating it as empty", self.resource.name, exc)
                self.sink.replace(self.resource.name, [])
                self.synced.set()
                self.stop.wait(self.settings.backoff_max_s)
            except APIError as exc:
                self._failed(exc)
            except Exception:  # noqa: BLE001  # reason: an informer thread must never die silently
                log.exception("%s: unexpected failure in the informer", self.resource.name)
                self._sleep()

    def _list(self) -> None:
        listed = self.client.list(self.resource)
        items = [self._stamp(item) for item in listed.get("items") or [] if isinstance(item, dict)]
        self.sink.replace(self.resource.name, items)
        self.resource_version = str((listed.get("metadata") or {}).get("resourceVersion") or "") or None
        self.lists += 1
        self._backoff = self.settings.backoff_initial_s
        self.synced.set()
        if self.resource_version is None:  # a server without resourceVersions: poll by listing
            self.stop.wait(self.settings.backoff_max_s)

    def _watch(self) -> None:
        assert self.resource_version is not None
        self.watches += 1
        started, events = time.monotonic(), 0
        for event in self.client.watch(self.resource, self.resource_version, self.settings.watch_timeout_s):
            if self.stop.is_set():
                return
            events += 1
            kind = event.get("type")
            raw = event.get("object")
            obj: dict[str, Any] = raw if isinstance(raw, dict) else {}
            if kind == "ERROR":
                code = obj.get("code")
                if code == 410:
                    raise APIExpired(f"watch {self.resource.name}: {obj.get('message', 'expired')}", status=410)
                raise APIServerError(f"watch {self.resource.name}: {code} {obj.get('reason')}: {obj.get('message')}",
                                     status=int(code) if isinstance(code, int) else None)
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self.sink.apply(self.resource.name, kind, self._stamp(obj))
            if rv:
                self.resource_version = str(rv)
            self._backoff = self.settings.backoff_initial_s
        if events == 0 and time.monotonic() - started < SHORT_WATCH_S and not self.stop.is_set():
            # client-go's "very short watch": a server or proxy that ends every watch at once must
            # not make us reconnect in a hot loop; resume from the same resourceVersion after backoff.
            raise APIUnavailable(f"watch {self.resource.name}: ended after less than {SHORT_WATCH_S:g} s "
                                 "with no events")

    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        return obj

    def _failed(self, exc: APIError) -> None:
        log.warning("%s: %s; retrying in %.1f s", self.resource.name, exc, self._backoff)
        self.on_error(exc)
        self._sleep()

    def _sleep(self) -> None:
        self.stop.wait(self._backoff)
        self._backoff = min(self._backoff * 2, self.settings.backoff_max_s)

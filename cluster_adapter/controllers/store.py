"""The controllers' object store: informer-fed copies of the objects they read, with change handlers.

It is the `Sink` the adapter's informers write to (`cluster_adapter.kube.informers`), and what
`--once` and the tests fill by listing (`replace`). Unlike the scheduler's `ObjectCache` it tells its
readers *what changed*: every add, update and delete — from a watch event or from the difference
between two lists — is handed to the handlers registered for that resource with the previous
version, the way client-go's informers call `AddFunc/UpdateFunc/DeleteFunc`. Controllers turn those
calls into work-queue requests; they never act inside a handler.

An update whose resourceVersion equals the held one is not a change (a resync, or the watch echoing
a write we already recorded). `record` stores the answer of our own write at once (Volcano's
`cache.Update(newJob)` after `UpdateStatus`) and tells the handlers, as the watch would a moment
later; `mark_deleting` shows an object we deleted as terminating until the watch or the next list
removes it (and then the handlers hear of the deletion).

Readers get deep copies: controllers build new objects from them freely.
"""
from __future__ import annotations

import builtins
import copy
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from cluster_adapter.timestamps import rfc3339

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects
Handler = Callable[[str, dict[str, Any], dict[str, Any] | None], None]  # (ADDED|MODIFIED|DELETED, obj, previous)


class Store:
    def __init__(self, resources: Iterable[str]) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, dict[Key, dict[str, Any]]] = {name: {} for name in resources}
        self._handlers: dict[str, list[Handler]] = {}

    @property
    def resources(self) -> tuple[str, ...]:
        return tuple(self._objects)

    def on(self, resource: str, handler: Handler) -> None:
        self._handlers.setdefault(resource, []).append(handler)

    # informer side (Sink) ----------------------------------------------------------------------------
    def replace(self, resource: str, items: list[dict[str, Any]]) -> None:
        """A full list: the differences to what was held become adds, updates and deletes."""
        changes: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
        with self._lock:
            old = self._objects.setdefault(resource, {})
            new = {key_of(o): o for o in items}
            for key, obj in new.items():
                held = old.get(key)
                if held is None:
                    changes.append(("ADDED", obj, None))
                elif _rv(held) != _rv(obj) or held.get("metadata", {}).get("deletionTimestamp") != \
                        obj.get("metadata", {}).get("deletionTimestamp"):
                    changes.append(("MODIFIED", obj, held))
            for key, held in old.items():
                if key not in new:
                    changes.append(("DELETED", held, held))
            self._objects[resource] = new
        self._notify(resource, changes)

    def apply(self, resource: str, event_type: str, obj: dict[str, Any]) -> None:
        with self._lock:
            store = self._objects.setdefault(resource, {})
            key = key_of(obj)
            held = store.get(key)
            change: tuple[str, dict[str, Any], dict[str, Any] | None]
            if event_type == "DELETED":
                if held is not None and _uid(held) and _uid(obj) and _uid(held) != _uid(obj):
                    # the end of an earlier object of that name: the one held (our own write's answer,
                    # say, a pod created again by a restart) replaced it and stays; handlers still hear it
                    change = ("DELETED", obj, obj)
                else:
                    store.pop(key, None)
                    change = ("DELETED", obj, held)
            else:
                if held is not None and _rv(held) == _rv(obj) and not held["metadata"].get("deletionTimestamp"):
                    return
                store[key] = obj
                change = ("MODIFIED" if held is not None else "ADDED", obj, held)
        self._notify(resource, [change])

    # controller side ---------------------------------------------------------------------------------
    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            obj = self._objects.get(resource, {}).get((namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def list(self, resource: str, namespace: str | None = None,
             where: Callable[[dict[str, Any]], bool] | None = None) -> builtins.list[dict[str, Any]]:
        with self._lock:
            found = [o for (ns, _), o in sorted(self._objects.get(resource, {}).items())
                     if (namespace is None or ns == namespace) and (where is None or where(o))]
            return copy.deepcopy(found)

    def owned_by(self, resource: str, namespace: str, uid: str) -> builtins.list[dict[str, Any]]:
        """Objects of `resource` in `namespace` whose controller ownerReference has this uid."""
        def owned(obj: dict[str, Any]) -> bool:
            return any(isinstance(r, dict) and r.get("uid") == uid and r.get("controller")
                       for r in obj.get("metadata", {}).get("ownerReferences") or [])
        return self.list(resource, namespace, owned)

    def record(self, resource: str, obj: dict[str, Any]) -> None:
        """Our own write's answer, stored at once (so the next read sees it) and handed to the handlers
        as the watch would hand it — every controller hears of it, the writer too, as with client-go.
        Kept only if newer than what is held; the watch's echo of it later is then no change."""
        if not obj.get("metadata"):
            return
        with self._lock:
            store = self._objects.setdefault(resource, {})
            held = store.get(key_of(obj))
            if held is not None and _rv(obj) <= _rv(held):
                return
            store[key_of(obj)] = obj
            change = ("MODIFIED" if held is not None else "ADDED", obj, held)
        self._notify(resource, [change])

    def mark_deleting(self, resource: str, namespace: str, name: str, now: float) -> None:
        with self._lock:
            held = self._objects.get(resource, {}).get((namespace, name))
            if held is not None and not held["metadata"].get("deletionTimestamp"):
                marked = copy.deepcopy(held)
                marked["metadata"]["deletionTimestamp"] = rfc3339(now)
                self._objects[resource][(namespace, name)] = marked

    def forget(self, resource: str, namespace: str, name: str) -> None:
        with self._lock:
            self._objects.get(resource, {}).pop((namespace, name), None)

    # helpers -----------------------------------------------------------------------------------------
    def _notify(self, resource: str, changes: builtins.list[tuple[str, dict[str, Any], dict[str, Any] | None]]) -> None:
        for change in changes:
            for handler in self._handlers.get(resource, []):
                try:
                    handler(*change)
                except Exception:  # noqa: BLE001  # reason: one bad handler must not stop the informer
                    log.exception("%s handler failed on %s %s", resource, change[0], key_of(change[1]))


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _uid(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _rv(obj: dict[str, Any]) -> int:
    raw = str((obj.get("metadata") or {}).get("resourceVersion") or "0")
    return int(raw) if raw.isdigit() else 0

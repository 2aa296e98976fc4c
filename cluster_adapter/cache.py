"""The informer-fed object cache, and the snapshot each session starts from.

The informers write (`replace` after a list, `apply` per watch event); the scheduler reads
`snapshot()`, which converts the current objects through `cluster_adapter.convert` — the file
loader's conversion — in the order a dump lists them (per resource, by namespace then name).
A snapshot is rebuilt only when something changed since the last one. The cache remembers which
objects changed since then: when every change replaced an object it already held (a watch MODIFIED
event, an assumption made or ended) only those objects are read again and put in place
(`vpolicy.SnapshotReader.patch`), at a cost proportional to the change; after an object is added or
deleted, or a list replaced, the reader walks every object (`SnapshotReader.read`, which still reads
again only what changed). Both are exact by construction and tested against a build from scratch.

**Assumptions** (Volcano's "assume" in its scheduler cache): after a bind succeeds, the pod is shown
bound to its node until the watch delivers a version of the pod that says so; after an eviction, it
is shown terminating until the watch delivers its deletion. Without this, a session that starts
before the watch catches up would place the same pod again or count an evicted pod as running. An
assumption ends when the server's object confirms or contradicts it (another uid, another node), or
after `assume_ttl_s`, after which the server's view wins whatever it says.

Writes that return the new object (status patches) are fed back with `apply_newer`, which keeps
whichever of the cached and the returned object has the higher resourceVersion, and never brings
back an object the cache no longer holds (the watch saw it deleted). A DELETED event removes the held
object only when its uid matches: an object created again under the same name stays.
"""
from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cluster_adapter import convert
from cluster_adapter.kube.client import SCHEDULER_RESOURCES
from vpolicy.model.snapshot import ClusterSnapshot

ASSUME_TTL_S = 30.0  # longer than any watch lag we expect; shorter than a human would wait
_EVICTED_AT = "1970-01-01T00:00:00Z"

_RESOURCES = tuple(res.name for res in SCHEDULER_RESOURCES)
Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects


@dataclass(frozen=True, slots=True)
class _Assumption:
    uid: str
    node: str  # bound to this node ("" for an eviction)
    evicted: bool
    until: float


class ObjectCache:
    def __init__(self, *, resources: tuple[str, ...] = _RESOURCES,
                 clock: Callable[[], float] = time.monotonic, assume_ttl_s: float = ASSUME_TTL_S) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, dict[Key, dict[str, Any]]] = {name: {} for name in resources}
        self._order: dict[str, list[Key]] = {}  # each resource's keys sorted, until one is added or removed
        self._assumed: dict[Key, _Assumption] = {}
        self._clock = clock
        self._ttl = assume_ttl_s
        self._generation = 0
        self._built: tuple[int, ClusterSnapshot] | None = None
        self._reader = convert.SnapshotReader()  # re-reads only the objects that changed, when that is exact
        self._reading = threading.Lock()  # taken before `_lock` when both are held
        # (resource, key) of each object replaced since the last snapshot; None after an object was added or
        # removed or a list replaced (the order changed: the next snapshot walks every object)
        self._changed: set[tuple[str, Key]] | None = None

    # informer side ----------------------------------------------------------------------------------
    def replace(self, resource: str, items: list[dict[str, Any]]) -> None:
        with self._lock:
            self._objects[resource] = {_key(o): o for o in items}
            self._order.pop(resource, None)
            self._changed = None
            self._generation += 1

    def apply(self, resource: str, event_type: str, obj: dict[str, Any]) -> None:
        with self._lock:
            store = self._objects.setdefault(resource, {})
            if event_type == "DELETED":
                held = store.get(_key(obj))
                if held is not None and _uid(held) and _uid(obj) and _uid(held) != _uid(obj):
                    return  # the end of an earlier object of that name; the one held replaced it
                if store.pop(_key(obj), None) is not None:
                    self._order.pop(resource, None)
                    self._changed = None
            else:
                if _key(obj) not in store:
                    self._order.pop(resource, None)
                    self._changed = None
                self._note_changed(resource, _key(obj))
                store[_key(obj)] = obj
            self._generation += 1

    def apply_newer(self, resource: str, obj: dict[str, Any]) -> None:
        """Store a write's answer over the held object unless the cache already holds a newer version.

        An object the cache no longer holds stays out: the watch (or a list) has since shown it deleted,
        and a late answer must not bring it back; one created again under its name comes by the watch."""
        with self._lock:
            store = self._objects.setdefault(resource, {})
            held = store.get(_key(obj))
            if held is None or _rv(held) >= _rv(obj):
                return
            store[_key(obj)] = obj
            self._note_changed(resource, _key(obj))
            self._generation += 1

    # scheduler side ---------------------------------------------------------------------------------
    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            obj = self._objects.get(resource, {}).get((namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def count(self, resource: str) -> int:
        with self._lock:
            return len(self._objects.get(resource, {}))

    def assume_bound(self, namespace: str, name: str, *, uid: str, node: str) -> None:
        with self._lock:
            self._assumed[(namespace, name)] = _Assumption(uid, node, False, self._clock() + self._ttl)
            self._note_changed("pods", (namespace, name))
            self._generation += 1

    def assume_evicted(self, namespace: str, name: str, *, uid: str) -> None:
        with self._lock:
            self._assumed[(namespace, name)] = _Assumption(uid, "", True, self._clock() + self._ttl)
            self._note_changed("pods", (namespace, name))
            self._generation += 1

    def assumed(self) -> int:
        with self._lock:
            return len(self._assumed)

    def objects(self) -> list[dict[str, Any]]:
        """Every cached object, assumptions applied, in dump order. The dicts must not be mutated."""
        with self._lock:
            return self._objects_locked()

    def snapshot(self) -> ClusterSnapshot:
        with self._reading:  # one reader at a time, each from the changes the one before it saw
            with self._lock:
                self._expire_locked()
                if self._built is not None and self._built[0] == self._generation:
                    return self._built[1]
                generation, changed = self._generation, self._changed_locked()
                self._changed = set()
                objects = self._objects_locked() if changed is None else []
            built = self._reader.patch(changed) if changed is not None and self._built is not None else None
            if built is None:
                if changed is not None:
                    with self._lock:
                        objects = self._objects_locked()
                        generation = self._generation  # (what changed meanwhile is read here too)
                        self._changed = set()
                built = self._reader.read(objects)
            with self._lock:
                self._built = (generation, built)
            return built

    # helpers ----------------------------------------------------------------------------------------
    def _note_changed(self, resource: str, key: Key) -> None:
        if self._changed is not None:
            self._changed.add((resource, key))

    def _changed_locked(self) -> list[dict[str, Any]] | None:
        """The objects replaced since the last snapshot, assumptions applied; None if the walk is needed.
        (A replaced object that is no longer held was deleted, and that already set `_changed` to None.)"""
        if self._changed is None:
            return None
        out: list[dict[str, Any]] = []
        for resource, key in sorted(self._changed):
            obj = self._objects.get(resource, {}).get(key)
            if obj is None:
                return None
            if resource == "pods" and key in self._assumed:
                obj = _overlay(obj, self._assumed[key])
            out.append(obj)
        return out

    def _objects_locked(self) -> list[dict[str, Any]]:
        self._expire_locked()
        out: list[dict[str, Any]] = []
        for resource, store in self._objects.items():
            order = self._order.get(resource)
            if order is None:
                order = self._order[resource] = sorted(store)
            for key in order:
                obj = store[key]
                if resource == "pods" and key in self._assumed:
                    obj = _overlay(obj, self._assumed[key])
                out.append(obj)
        return out

    def _expire_locked(self) -> None:
        now = self._clock()
        pods = self._objects.get("pods", {})
        for key, assumption in list(self._assumed.items()):
            pod = pods.get(key)
            meta = (pod or {}).get("metadata") or {}
            done = (pod is None or meta.get("uid") != assumption.uid or now > assumption.until
                    or (assumption.evicted and bool(meta.get("deletionTimestamp")))
                    or (not assumption.evicted and bool((pod or {}).get("spec", {}).get("nodeName"))))
            if done:
                del self._assumed[key]
                self._note_changed("pods", key)
                self._generation += 1


def _key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _uid(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _rv(obj: dict[str, Any]) -> int:
    raw = str((obj.get("metadata") or {}).get("resourceVersion") or "0")
    return int(raw) if raw.isdigit() else 0


def _overlay(pod: dict[str, Any], assumption: _Assumption) -> dict[str, Any]:
    if pod.get("metadata", {}).get("uid") != assumption.uid:
        return pod
    out = copy.deepcopy(pod)
    if assumption.evicted:
        out["metadata"]["deletionTimestamp"] = _EVICTED_AT  # only its presence matters: Releasing
    else:
        out.setdefault("spec", {})["nodeName"] = assumption.node
    version = out["metadata"].get("resourceVersion")
    if version:  # the snapshot reader reuses a pod read from the same version: an assumed state is another one
        out["metadata"]["resourceVersion"] = f"{version}+{'evicted' if assumption.evicted else assumption.node}"
    return out

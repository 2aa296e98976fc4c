"""Informer and cache edge cases measured against client-go's reflector: short watches, relists that
drop deleted objects, re-created objects, out-of-order write answers, unknown objects in events."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from cluster_adapter.cache import ObjectCache
from cluster_adapter.kube.client import PODS, APIUnavailable, KubeClient
from cluster_adapter.kube.informers import Informer
from tests.adapter.conftest import FAST_INFORMERS, eventually, load, pod, restart_watches, start
from tests.adapter.kubeemu import EmulatorThread


def names(cache: ObjectCache) -> set[str]:
    return {o["metadata"]["name"] for o in cache.objects() if o["kind"] == "Pod"}


def remove(emu: EmulatorThread, name: str) -> None:
    emu.call(lambda e: e._remove(e._kind_of({"apiVersion": "v1", "kind": "Pod"}), e.get("pods", "default", name)))


def uid(cache: ObjectCache, name: str) -> str | None:
    obj = cache.get("pods", "default", name)
    return obj["metadata"]["uid"] if obj else None


class ScriptedClient:
    """A client whose list answers rv 5 and whose watches replay `streams` in turn (then end at once)."""

    def __init__(self, items: list[dict[str, Any]] | None = None,
                 streams: list[list[dict[str, Any]] | Exception] | None = None) -> None:
        self.items = items or []
        self.streams = list(streams or [])
        self.watched_from: list[str] = []

    def list(self, res: Any) -> dict[str, Any]:
        return {"metadata": {"resourceVersion": "5"}, "items": [dict(i) for i in self.items]}

    def watch(self, res: Any, resource_version: str, timeout_s: int) -> Iterator[dict[str, Any]]:
        self.watched_from.append(resource_version)
        step = self.streams.pop(0) if self.streams else []
        if isinstance(step, Exception):
            raise step
        yield from step


def obj(name: str, rv: int, uid_: str = "u1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": name, "namespace": "default", "uid": uid_, "resourceVersion": str(rv)}}


# Fix 1: a watch that the server ends at once, with nothing in it, must not be retried in a hot loop ------
def test_watches_that_end_at_once_with_no_events_back_off_instead_of_spinning(stop: threading.Event) -> None:
    """client-go's reflector treats a watch that lasted under a second with no events as a failure
    ("very short watch") and backs off; a proxy or server that closes every watch must not make the
    informer reconnect thousands of times a second."""
    client = ScriptedClient()
    informer = Informer(client, PODS, ObjectCache(), FAST_INFORMERS, stop=stop).start()  # type: ignore[arg-type]
    assert informer.synced.wait(2)
    time.sleep(1.0)
    stop.set()
    assert informer.watches <= 12  # 0.05 s doubling to 0.2 s: about 7 in a second, not thousands
    assert informer.lists == 1  # and it still resumes from its resourceVersion rather than relisting
    assert set(client.watched_from) == {"5"}


def test_a_short_watch_that_delivered_events_is_resumed_at_once(stop: threading.Event) -> None:
    streams: list[list[dict[str, Any]] | Exception] = [[{"type": "ADDED", "object": obj(f"p{i}", 6 + i)}]
                                                      for i in range(20)]
    client = ScriptedClient(streams=streams)
    cache = ObjectCache()
    informer = Informer(client, PODS, cache, FAST_INFORMERS, stop=stop).start()  # type: ignore[arg-type]
    eventually(lambda: len(names(cache)) == 20, timeout=0.8)  # no backoff between streams with events
    assert informer.lists == 1


# Fix 2: a write's answer must not bring back an object the watch has since deleted ---------------------
def test_a_status_answer_applied_after_the_watch_deleted_the_pod_does_not_resurrect_it(
        emu: EmulatorThread, client: KubeClient, stop: threading.Event) -> None:
    load(emu, [pod("a")])
    cache = ObjectCache()
    Informer(client, PODS, cache, FAST_INFORMERS, stop=stop).start().synced.wait(5)
    written = client.patch_pod_status("default", "a", {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})
    eventually(lambda: cache.get("pods", "default", "a")["metadata"]["resourceVersion"]
               == written["metadata"]["resourceVersion"])
    remove(emu, "a")  # deleted after the patch; the scheduler thread feeds the answer back late
    eventually(lambda: names(cache) == set())
    cache.apply_newer("pods", written)
    assert names(cache) == set()


def test_a_status_answer_still_updates_a_held_object() -> None:
    cache = ObjectCache()
    cache.replace("pods", [obj("a", 5)])
    cache.apply_newer("pods", obj("a", 7, nodeName="x"))
    assert cache.get("pods", "default", "a")["metadata"]["resourceVersion"] == "7"
    cache.apply_newer("pods", obj("a", 6))
    assert cache.get("pods", "default", "a")["metadata"]["resourceVersion"] == "7"


# Fix 3: a DELETED event for an old uid must not remove the object that replaced it --------------------
def test_a_deletion_of_the_old_uid_leaves_the_re_created_object_in_place() -> None:
    cache = ObjectCache()
    cache.replace("pods", [obj("a", 5, "old")])
    cache.apply_newer("pods", obj("a", 9, "new"))  # a write answer that already saw the new pod
    cache.apply("pods", "DELETED", obj("a", 7, "old"))  # the watch catches up with the old pod's end
    assert uid(cache, "a") == "new"
    cache.apply("pods", "DELETED", obj("a", 10, "new"))
    assert uid(cache, "a") is None


# Checks of behaviour that was already right ----------------------------------------------------------
def test_a_relist_after_410_drops_objects_deleted_meanwhile(emu: EmulatorThread, client: KubeClient,
                                                             stop: threading.Event) -> None:
    load(emu, [pod("a"), pod("b")])
    cache = ObjectCache()
    informer = start(client, cache, stop)
    eventually(lambda: emu.call(lambda e: e.watch_count("pods")) == 1)
    blocked = restart_watches(emu)
    remove(emu, "a")
    load(emu, [pod("c")])
    emu.call(lambda e: e.compact())
    assert names(cache) == {"a", "b"}  # the cache is kept through the outage
    blocked.clear()
    eventually(lambda: informer.lists == 2 and names(cache) == {"b", "c"})


def test_a_pod_re_created_under_its_name_replaces_the_old_one_and_its_assumption(
        emu: EmulatorThread, client: KubeClient, stop: threading.Event) -> None:
    load(emu, [pod("a")])
    cache = ObjectCache()
    Informer(client, PODS, cache, FAST_INFORMERS, stop=stop).start().synced.wait(5)
    old = uid(cache, "a")
    assert old
    cache.assume_bound("default", "a", uid=old, node="n1")
    remove(emu, "a")
    load(emu, [pod("a")])
    eventually(lambda: uid(cache, "a") not in (None, old))
    (only,) = [o for o in cache.objects() if o["kind"] == "Pod"]
    assert not only["spec"].get("nodeName")


def test_unknown_objects_in_events_and_bookmarks(stop: threading.Event) -> None:
    streams: list[list[dict[str, Any]] | Exception] = [[
        {"type": "MODIFIED", "object": obj("new", 6)},  # never seen: an add
        {"type": "DELETED", "object": obj("ghost", 7)},  # never seen: nothing to do
        {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "42"}}},
    ]]
    client = ScriptedClient(items=[obj("kept", 3)], streams=streams)
    cache = ObjectCache()
    informer = Informer(client, PODS, cache, FAST_INFORMERS, stop=stop).start()  # type: ignore[arg-type]
    eventually(lambda: "42" in client.watched_from)
    assert names(cache) == {"kept", "new"} and informer.lists == 1


def test_connection_errors_keep_the_cache_and_resume_from_the_same_version(stop: threading.Event) -> None:
    streams: list[list[dict[str, Any]] | Exception] = [
        [{"type": "ADDED", "object": obj("b", 8)}],
        APIUnavailable("watch pods: no answer"), APIUnavailable("watch pods: no answer"),
        [{"type": "ADDED", "object": obj("c", 9)}]]
    client = ScriptedClient(items=[obj("a", 3)], streams=streams)
    cache = ObjectCache()
    informer = Informer(client, PODS, cache, FAST_INFORMERS, stop=stop).start()  # type: ignore[arg-type]
    eventually(lambda: names(cache) == {"a", "b", "c"})
    assert informer.lists == 1 and client.watched_from[:4] == ["5", "8", "8", "8"]

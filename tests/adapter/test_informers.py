"""Informers keep the cache in step with the server through dropped watches, 410s and outages."""
from __future__ import annotations

import threading
import time

import kmock

from cluster_adapter.cache import ObjectCache
from cluster_adapter.kube.client import NODES, VCJOBS, KubeClient
from cluster_adapter.kube.informers import Informer
from tests.adapter.conftest import FAST_INFORMERS, eventually, load, node, pod, restart_watches, start
from tests.adapter.kubeemu import EmulatorThread


def names(cache: ObjectCache, resource: str = "pods") -> set[str]:
    return {o["metadata"]["name"] for o in cache.objects() if o["kind"] == ("Pod" if resource == "pods" else "Node")}


def test_list_then_watch_mirrors_creates_updates_and_deletes(emu: EmulatorThread, client: KubeClient,
                                                             stop: threading.Event) -> None:
    load(emu, [pod("a")])
    cache = ObjectCache()
    start(client, cache, stop)
    assert names(cache) == {"a"}
    load(emu, [pod("b"), pod("a", node_name="n1")])
    eventually(lambda: names(cache) == {"a", "b"} and cache.get("pods", "default", "a")["spec"].get("nodeName") == "n1")
    emu.call(lambda e: e._remove(e._kind_of({"apiVersion": "v1", "kind": "Pod"}), e.get("pods", "default", "b")))
    eventually(lambda: names(cache) == {"a"})


def test_a_dropped_watch_resumes_from_its_resource_version_without_listing_again(
        emu: EmulatorThread, client: KubeClient, stop: threading.Event) -> None:
    cache = ObjectCache()
    informer = start(client, cache, stop)
    eventually(lambda: emu.call(lambda e: e.watch_count("pods")) == 1)
    emu.call(lambda e: e.drop_watches())
    load(emu, [pod("after-drop")])
    eventually(lambda: names(cache) == {"after-drop"})
    assert informer.lists == 1 and informer.watches >= 2


def test_an_expired_resource_version_makes_the_informer_list_again(emu: EmulatorThread, client: KubeClient,
                                                                   stop: threading.Event) -> None:
    load(emu, [pod("a")])
    cache = ObjectCache()
    informer = start(client, cache, stop)
    eventually(lambda: emu.call(lambda e: e.watch_count("pods")) == 1)
    blocked = restart_watches(emu)  # the informer cannot watch again while the server "restarts"...
    load(emu, [pod("b")])
    emu.call(lambda e: e.compact())  # ...and meanwhile its resourceVersion falls out of the history
    blocked.clear()
    eventually(lambda: informer.lists == 2 and names(cache) == {"a", "b"})


def test_an_expired_event_on_a_live_watch_makes_the_informer_list_again(emu: EmulatorThread, client: KubeClient,
                                                                        stop: threading.Event) -> None:
    cache = ObjectCache()
    informer = start(client, cache, stop)
    eventually(lambda: emu.call(lambda e: e.watch_count("pods")) == 1)
    emu.call(lambda e: e.drop_watches(expire=True))
    eventually(lambda: informer.lists == 2)


def test_an_outage_is_retried_with_backoff_not_in_a_hot_loop(emu: EmulatorThread, client: KubeClient,
                                                             stop: threading.Event) -> None:
    outage = threading.Event()
    outage.set()
    emu.call(lambda e: e.faults.append(
        lambda call: kmock.KubernetesError(status=503, reason="ServiceUnavailable", message="down")
        if outage.is_set() and call.plural == "nodes" else None))
    load(emu, [node("n1")])
    cache = ObjectCache()
    informer = Informer(client, NODES, cache, FAST_INFORMERS, stop=stop).start()
    time.sleep(1.0)
    attempts = emu.call(lambda e: e.count("list", "nodes"))
    assert not informer.synced.is_set()
    assert 2 <= attempts <= 12  # 0.05 s doubling to 0.2 s: about 7 tries in a second, not hundreds
    outage.clear()
    assert informer.synced.wait(2)
    assert names(cache, "nodes") == {"n1"}


def test_a_crd_that_is_not_installed_counts_as_an_empty_synced_collection(emu: EmulatorThread, client: KubeClient,
                                                                          stop: threading.Event) -> None:
    emu.call(lambda e: e.faults.append(
        lambda call: kmock.KubernetesError(status=404, reason="NotFound", message="no such resource")
        if call.plural == "jobs" else None))
    cache = ObjectCache()
    informer = Informer(client, VCJOBS, cache, FAST_INFORMERS, stop=stop).start()
    assert informer.synced.wait(2)
    assert cache.count("jobs") == 0


def test_bookmarks_keep_a_quiet_watch_resumable_after_compaction(emu: EmulatorThread, client: KubeClient,
                                                                stop: threading.Event) -> None:
    """Other resources move the resourceVersion on; a pods watch that saw no pod event still learns
    the current one from bookmarks, so after compaction it resumes instead of listing again."""
    cache = ObjectCache()
    informer = start(client, cache, stop)
    eventually(lambda: emu.call(lambda e: e.watch_count("pods")) == 1)
    listed_at = informer.resource_version
    load(emu, [node(f"n{i}") for i in range(5)])
    current = str(emu.call(lambda e: e.rv))
    eventually(lambda: informer.resource_version == current)  # bookmarks every 0.2 s
    assert listed_at != current
    emu.call(lambda e: (e.compact(), e.drop_watches()))
    eventually(lambda: informer.watches >= 2)
    load(emu, [pod("after")])
    eventually(lambda: names(cache) == {"after"})
    assert informer.lists == 1

"""The informer cache's snapshot after any sequence of watch events is the snapshot built from scratch.

`ObjectCache.snapshot` reads again only the objects replaced since the last snapshot (`SnapshotReader.patch`)
when every change replaced an object it held, and walks every object otherwise. Whatever the events (new
versions of pods, nodes, queues, podgroups and priority classes, pods added and deleted, binds and
evictions assumed, lists replaced), the snapshot must equal `snapshot_from_objects` of the same objects.
"""
from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings, strategies as st

from cluster_adapter.cache import ObjectCache
from cluster_adapter.kube.client import SCHEDULER_RESOURCES
from tests.adapter.conftest import EXAMPLE
from tests.adapter.kubeemu.server import read_objects
from vpolicy import snapshot_from_objects

_RESOURCE_OF = {res.kind: res.name for res in SCHEDULER_RESOURCES}
_KINDS = ("Pod", "Node", "Queue", "PodGroup", "PriorityClass")


def _cluster() -> dict[str, list[dict[str, Any]]]:
    """The example cluster without its vcjob (whose derived pods send every change to the full walk)."""
    by_resource: dict[str, list[dict[str, Any]]] = {}
    for index, obj in enumerate(o for o in read_objects(EXAMPLE) if o["kind"] != "Job"):
        obj.setdefault("metadata", {})["resourceVersion"] = str(index + 1)
        by_resource.setdefault(_RESOURCE_OF[obj["kind"]], []).append(obj)
    return by_resource


def _new_version(obj: dict[str, Any], rv: int, choice: int) -> dict[str, Any]:
    """A new dict for a changed object, as a watch event brings it (informers never edit one in place)."""
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = str(rv)
    kind = out["kind"]
    if kind == "Pod":
        out["metadata"].setdefault("labels", {})["touched"] = str(choice)
        if choice % 3 == 0:
            out["spec"]["priorityClassName"] = "missing-class"  # an unknown class: both ways must agree on it
    elif kind == "Node":
        out.setdefault("spec", {})["unschedulable"] = bool(choice % 2)
    elif kind == "Queue":
        out.setdefault("spec", {})["weight"] = 1 + choice % 7
    elif kind == "PodGroup":
        out.setdefault("spec", {})["minMember"] = choice % 4
    else:
        out["value"] = 10 * choice
    return out


_event = st.tuples(st.sampled_from(("modify", "modify", "modify", "add", "delete", "bind", "evict", "relist")),
                   st.sampled_from(_KINDS), st.integers(min_value=0, max_value=1000))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_event, min_size=1, max_size=4), min_size=1, max_size=8))
def test_the_cache_snapshot_equals_a_build_from_scratch_after_any_events(rounds: list[list[tuple[str, str, int]]]
                                                                         ) -> None:
    by_resource = _cluster()
    cache = ObjectCache(clock=lambda: 0.0)
    for resource, objs in by_resource.items():
        cache.replace(resource, objs)
    cache.snapshot()
    rv = 1000
    for events in rounds:  # a snapshot after each round of events, as the scheduler takes one per period
        for action, kind, choice in events:
            rv += 1
            resource = _RESOURCE_OF[kind]
            held = by_resource[resource]
            if action == "relist":
                cache.replace(resource, list(held))
            elif action == "add" and kind == "Pod":
                pod = _new_version(held[choice % len(held)], rv, choice)
                pod["metadata"].update(name=f"added-{rv}", uid=f"uid-{rv}")
                held.append(pod)
                cache.apply(resource, "ADDED", pod)
            elif action == "delete" and kind == "Pod" and len(held) > 1:
                cache.apply(resource, "DELETED", held.pop(choice % len(held)))
            elif action in ("bind", "evict") and held:
                meta = held[choice % len(held)]["metadata"] if kind == "Pod" else None
                if meta is not None and action == "bind":
                    cache.assume_bound(meta.get("namespace") or "default", meta["name"], uid=meta.get("uid", ""),
                                       node="cpu-1")
                elif meta is not None:
                    cache.assume_evicted(meta.get("namespace") or "default", meta["name"], uid=meta.get("uid", ""))
            elif held:
                at = choice % len(held)
                held[at] = _new_version(held[at], rv, choice)
                cache.apply(resource, "MODIFIED", held[at])
        assert cache.snapshot() == snapshot_from_objects(cache.objects(), strict=False)


def test_a_node_queue_or_podgroup_change_is_read_alone() -> None:
    """The benchmark's case (benchmarks.live_snapshot): one object replaced is read again, nothing walked."""
    by_resource = _cluster()
    cache = ObjectCache()
    for resource, objs in by_resource.items():
        cache.replace(resource, objs)
    cache.snapshot()
    reader = cache._reader  # noqa: SLF001  # reason: the test asks which way the snapshot was made
    for serial, kind in enumerate(("Pod", "PodGroup", "Node", "Queue")):
        held = by_resource[_RESOURCE_OF[kind]]
        held[0] = _new_version(held[0], 5000 + serial, serial + 1)
        cache.apply(_RESOURCE_OF[kind], "MODIFIED", held[0])
        assert cache.snapshot() == snapshot_from_objects(cache.objects(), strict=False)
        assert reader.patch_calls == serial + 1
    assert reader.full_builds == 1

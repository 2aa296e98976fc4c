"""The live scheduler's snapshot on a big cluster: the first one, then the next after one change.

`python -m benchmarks.live_snapshot --size M` fills `cluster_adapter.cache.ObjectCache` with the objects of
the realistic dump of `benchmarks.dumps` (whole objects, noise included, as informers hold them), takes the
first snapshot, then changes one object at a time as a watch event would (a new dict with a new
resourceVersion) and times the next snapshot: a Pod, a PodGroup, a Node and a Queue. Each change is
checked against a snapshot built from scratch (`vpolicy.snapshot_from_objects`) of the same objects.
"""
from __future__ import annotations

import argparse
import copy
import json
import time
from collections.abc import Sequence
from typing import Any

import msgspec

from benchmarks import dumps
from cluster_adapter.cache import ObjectCache
from cluster_adapter.kube.client import SCHEDULER_RESOURCES
import vpolicy

_RESOURCE_OF = {res.kind: res.name for res in SCHEDULER_RESOURCES}


def _changed(obj: dict[str, Any], serial: int) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    meta["resourceVersion"] = str(10_000_000 + serial)
    kind = out["kind"]
    if kind == "PodGroup":
        out.setdefault("status", {})["phase"] = "Inqueue"
    elif kind == "Node":
        out.setdefault("spec", {})["unschedulable"] = True
    elif kind == "Queue":
        out.setdefault("spec", {})["weight"] = int(out["spec"].get("weight", 1)) + 1
    elif kind == "Pod":
        meta.setdefault("labels", {})["touched"] = "yes"
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.live_snapshot")
    parser.add_argument("--size", default="M")
    parser.add_argument("--check", action="store_true", help="compare each snapshot with a build from scratch")
    args = parser.parse_args(argv)
    path = dumps.dump_path(args.size, "json")
    items: list[dict[str, Any]] = msgspec.json.decode(path.read_bytes())["items"]
    cache = ObjectCache()
    by_resource: dict[str, list[dict[str, Any]]] = {}
    for obj in items:
        resource = _RESOURCE_OF.get(obj["kind"])
        if resource is not None:
            by_resource.setdefault(resource, []).append(obj)
    for resource, objs in by_resource.items():
        cache.replace(resource, objs)
    out: dict[str, Any] = {"size": args.size, "objects": sum(len(v) for v in by_resource.values())}
    start, cpu = time.perf_counter(), time.process_time()
    first = cache.snapshot()
    out["first_snapshot_s"] = round(time.perf_counter() - start, 3)
    out["first_snapshot_cpu_s"] = round(time.process_time() - cpu, 3)
    out["pods"] = len(first.pods)
    for serial, kind in enumerate(("Pod", "PodGroup", "Node", "Queue")):
        resource = _RESOURCE_OF[kind]
        victim = by_resource[resource][len(by_resource[resource]) // 2]
        cache.apply(resource, "MODIFIED", _changed(victim, serial))
        start, cpu = time.perf_counter(), time.process_time()
        snap = cache.snapshot()
        out[f"after_one_{kind}_ms"] = round((time.perf_counter() - start) * 1000, 1)
        out[f"after_one_{kind}_cpu_ms"] = round((time.process_time() - cpu) * 1000, 1)
        if args.check:
            assert snap == vpolicy.snapshot_from_objects(cache.objects(), strict=False), kind
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

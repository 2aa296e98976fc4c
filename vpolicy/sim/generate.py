"""A seeded workload for a given cluster: mixed GPU training, inference and CPU batch jobs.

`generate_workload(cluster, seed=N, hours=H, jobs=J)` spreads J arrivals over H hours (busier in the
day than at night), spread over the cluster's leaf queues in proportion to their weights, each job
shaped to fit the cluster's nodes (no GPU job on a cluster without GPUs, no pod larger than the
largest node). About 30% are GPU training gangs (1-4 pods of 1-8 GPUs, 30 min to 4 h), 10% inference
services (2 pods, hours), 60% CPU batch jobs (1-8 pods, minutes). The same arguments always give the
same workload; `dump_workload` writes it in the YAML format `load_workload` reads.

The shapes follow the spirit of `benchmarks/generate.py` (which builds whole snapshots for timing
sessions, not arrivals over time); this module does not import it, since benchmarks are not shipped.
"""
from __future__ import annotations

import io
import math
import random
from typing import Any

from ruamel.yaml import YAML

from vpolicy.model import snapshot as snap
from vpolicy.load import manifest
from vpolicy.sim.workload import JobTemplate, Workload, format_duration, pod_request

GPU = "nvidia.com/gpu"
GI = 1024**3
# (kind, share of jobs)
_KINDS = (("train", 30), ("serve", 10), ("batch", 60))


def generate_workload(cluster: snap.ClusterSnapshot, *, seed: int, hours: float = 24.0, jobs: int = 150) -> Workload:
    rng = random.Random(f"generate:{seed}:{hours}:{jobs}")
    queues = _leaf_queues(cluster)
    largest = max((n.allocatable for n in cluster.nodes), key=lambda r: (r.get(GPU, 0), r.get("cpu", 0)),
                  default=None)
    max_gpus = max((n.allocatable.get(GPU, 0) // 1000 for n in cluster.nodes), default=0)
    max_cpu = max((n.allocatable.get("cpu", 0) // 1000 for n in cluster.nodes), default=1)
    classes = [pc.name for pc in cluster.priority_classes]
    kinds = [(k, w) for k, w in _KINDS if max_gpus or k == "batch"]
    templates = []
    for i in range(jobs):
        kind = rng.choices([k for k, _ in kinds], weights=[w for _, w in kinds])[0]
        name = rng.choices([q for q, _ in queues], weights=[w for _, w in queues])[0] if queues else "default"
        arrival = _arrival(rng, hours)
        priority = rng.choice([*classes, None]) if classes else None
        if kind == "train":
            gpus = rng.choice([g for g in (1, 2, 4, 8) if g <= max_gpus] or [1])
            pods = rng.choice((1, 1, 2, 4))
            cpu = min(4 * gpus, max_cpu)
            request = {"cpu": cpu * 1000, "memory": 32 * GI * gpus, GPU: 1000 * gpus}
            duration = rng.uniform(1800, 4 * 3600)
        elif kind == "serve":
            pods = 2
            request = {"cpu": min(4, max_cpu) * 1000, "memory": 16 * GI, GPU: 1000}
            duration = rng.uniform(2 * 3600, 8 * 3600)
        else:
            pods = rng.choice((1, 1, 2, 4, 8))
            request = {"cpu": min(rng.choice((1, 2, 4)), max_cpu) * 1000, "memory": rng.choice((2, 4, 8, 16)) * GI}
            duration = rng.uniform(300, 3600)
        if largest is not None:
            request = {k: min(v, largest.get(k, v)) for k, v in request.items()}
        templates.append(JobTemplate(
            name=f"{kind}-{i:04d}", requests=pod_request(request), duration=(round(duration), round(duration)),
            queue=name, at=round(arrival), pods=pods, min_available=pods if kind != "batch" else max(1, pods // 2),
            priority=priority))
    templates.sort(key=lambda t: (t.at, t.name))
    return Workload(name=f"generated: {jobs} jobs over {format_duration(hours * 3600)} (seed {seed})",
                    templates=tuple(templates), duration=hours * 3600.0,
                    description="made by `vpolicy simulate --generate-workload`")


def dump_workload(workload: Workload) -> str:
    """The workload in the YAML format of docs/simulate.md."""
    doc: dict[str, Any] = {"apiVersion": "vpolicy/v1", "kind": "Workload", "name": workload.name}
    if workload.description:
        doc["description"] = workload.description
    doc["start"] = manifest.timestamp(workload.start)
    if workload.duration is not None:
        doc["duration"] = format_duration(workload.duration)
    doc["jobs"] = [_template(t) for t in workload.templates]
    if workload.events:
        doc["events"] = [{"at": format_duration(e.at), "queue": e.queue, "state": e.state.value}
                         for e in workload.events]
    yaml = YAML(typ="rt")  # keeps the keys in the order of docs/simulate.md
    yaml.default_flow_style = None  # leaf mappings (requests) on one line, the rest as blocks
    yaml.width = 120
    buf = io.StringIO()
    yaml.dump(doc, buf)
    return buf.getvalue()


def _template(t: JobTemplate) -> dict[str, Any]:
    out: dict[str, Any] = {"name": t.name}
    if t.namespace != "default":
        out["namespace"] = t.namespace
    out["queue"] = t.queue
    out["at"] = format_duration(t.at)
    if t.count > 1:
        out.update(count=t.count, every=format_duration(t.every))
    if t.pods > 1:
        out["pods"] = t.pods
    if t.min_available != t.pods:
        out["min_available"] = t.min_available
    out["requests"] = manifest.quantities(t.requests, with_pods=False)
    if t.priority is not None:
        out["priority"] = t.priority
    low, high = t.duration
    out["duration"] = format_duration(low) if low == high else {"min": format_duration(low),
                                                                 "max": format_duration(high)}
    return out


def _leaf_queues(cluster: snap.ClusterSnapshot) -> list[tuple[str, int]]:
    parents = {q.parent for q in cluster.queues if q.parent}
    return [(q.name, q.weight) for q in cluster.queues
            if q.name not in parents and q.name != snap.ROOT_QUEUE and q.state is snap.QueueState.OPEN]


def _arrival(rng: random.Random, hours: float) -> float:
    """A time in [0, hours h): twice as likely at 14:00 as at 02:00 (rejection sampling)."""
    while True:
        t = rng.uniform(0.0, hours * 3600)
        day = (t / 3600) % 24
        if rng.random() < 0.75 - 0.25 * math.cos((day - 2) / 24 * 2 * math.pi):
            return t

"""What the usage plugin costs a session: Volcano's built-in conf side by side with the same conf plus usage,
on the `steady` workload, without node metrics and with fresh metrics on every node.

    python -m benchmarks.usage --size S|M [--seed N] [--runs K]

Rows (median CPU seconds of `run_session` over K runs, and the binds of the last):
- `default conf`: Volcano's built-in conf;
- `+ usage, no metrics`: the same plus usage; no node has metrics, so its rules answer at the freshness
  check (what listing the plugin costs by itself);
- `+ usage, every node measured`: every node has fresh CPU and memory load (drawn per node), its running
  pods started an hour ago (the metrics show them), so the shadow estimate holds only the pods the session
  itself places;
- `+ usage, pods just started`: as above with every running pod started 10 s ago, inside
  `metrics.interval`: every one is in its node's shadow estimate (the fold over a node's pods is longest).
This module asserts nothing.
"""
from __future__ import annotations

import dataclasses
import random

from benchmarks import plugin_cost
from vpolicy.model.snapshot import ClusterSnapshot, NodeUsage

NOW = 1_800_000_000.0


def measured(snapshot: ClusterSnapshot, *, started_ago: float, seed: int) -> ClusterSnapshot:
    rng = random.Random(seed)
    nodes = tuple(dataclasses.replace(n, usage=NodeUsage(cpu=rng.uniform(5, 75), memory=rng.uniform(5, 75),
                                                          at=NOW - 30)) for n in snapshot.nodes)
    pods = tuple(dataclasses.replace(p, started_at=NOW - started_ago) if p.node_name else p for p in snapshot.pods)
    return dataclasses.replace(snapshot, nodes=nodes, pods=pods)


def variants(snapshot: ClusterSnapshot, seed: int) -> list[tuple[str, ClusterSnapshot]]:
    return [("+ usage, no metrics", snapshot),
            ("+ usage, every node measured", measured(snapshot, started_ago=3600, seed=seed)),
            ("+ usage, pods just started", measured(snapshot, started_ago=10, seed=seed))]


if __name__ == "__main__":
    plugin_cost.main(__doc__.split("\n\n")[0], "usage", variants, now=NOW)

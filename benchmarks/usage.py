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

import argparse
import dataclasses
import random
import statistics
import time

from benchmarks import generate as gen
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.harness.policy import from_conf
from vpolicy.load import conf as conf_loader
from vpolicy.model.snapshot import ClusterSnapshot, NodeUsage

NOW = 1_800_000_000.0


def confs() -> tuple[CompiledPolicy, CompiledPolicy]:
    base = conf_loader.default_conf_text()
    with_usage = base.replace("  - name: nodeorder\n", "  - name: nodeorder\n  - name: usage\n", 1)
    if with_usage == base:
        raise RuntimeError("Volcano's default conf has no nodeorder line to put usage after")
    return (from_conf(conf_loader.parse_conf_text(base, file="default.conf")),
            from_conf(conf_loader.parse_conf_text(with_usage, file="usage.conf")))


def measured(snapshot: ClusterSnapshot, *, started_ago: float, seed: int) -> ClusterSnapshot:
    rng = random.Random(seed)
    nodes = tuple(dataclasses.replace(n, usage=NodeUsage(cpu=rng.uniform(5, 75), memory=rng.uniform(5, 75),
                                                          at=NOW - 30)) for n in snapshot.nodes)
    pods = tuple(dataclasses.replace(p, started_at=NOW - started_ago) if p.node_name else p for p in snapshot.pods)
    return dataclasses.replace(snapshot, nodes=nodes, pods=pods)


def timed(snapshot: ClusterSnapshot, policy: CompiledPolicy, runs: int) -> tuple[float, int]:
    seconds, binds = [], 0
    for _ in range(runs):
        t0 = time.process_time()
        result = run_session(snapshot, policy, now=NOW)
        seconds.append(time.process_time() - t0)
        binds = len(result.decisions.binds)
    return statistics.median(seconds), binds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(gen.SIZES), default="S")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    generated = gen.generate(gen.SIZES[args.size], "steady", seed=args.seed)
    base, usage = confs()
    rows = (("default conf", generated.snapshot, base),
            ("+ usage, no metrics", generated.snapshot, usage),
            ("+ usage, every node measured", measured(generated.snapshot, started_ago=3600, seed=args.seed), usage),
            ("+ usage, pods just started", measured(generated.snapshot, started_ago=10, seed=args.seed), usage))
    print(f"steady {args.size} seed {args.seed}, median of {args.runs} runs")
    for label, snapshot, policy in rows:
        seconds, binds = timed(snapshot, policy, args.runs)
        print(f"{label:34s} {seconds:7.2f} s CPU   binds {binds}")


if __name__ == "__main__":
    main()

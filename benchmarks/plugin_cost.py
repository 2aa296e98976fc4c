"""What turning one plugin on costs a steady session: the harness `benchmarks.numa` and `benchmarks.usage`
share. Volcano's built-in conf is timed beside the same conf with the plugin listed after nodeorder, on
the `steady` workload and on variants of its snapshot each benchmark draws; each row is the median CPU
seconds of `run_session` over K runs and the binds of the last. This module asserts nothing.
"""
from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from benchmarks import generate as gen
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.harness.policy import from_conf
from vpolicy.load import conf as conf_loader
from vpolicy.model.snapshot import ClusterSnapshot

# (label, snapshot) rows run with the plugin on, from the generated snapshot and the seed
Variants = Callable[[ClusterSnapshot, int], list[tuple[str, ClusterSnapshot]]]


def confs(plugin: str) -> tuple[CompiledPolicy, CompiledPolicy]:
    """Volcano's built-in conf, and the same with `plugin` after nodeorder."""
    base = conf_loader.default_conf_text()
    with_plugin = base.replace("  - name: nodeorder\n", f"  - name: nodeorder\n  - name: {plugin}\n", 1)
    if with_plugin == base:
        raise RuntimeError(f"Volcano's default conf has no nodeorder line to put {plugin} after")
    return (from_conf(conf_loader.parse_conf_text(base, file="default.conf")),
            from_conf(conf_loader.parse_conf_text(with_plugin, file=f"{plugin}.conf")))


def timed(snapshot: ClusterSnapshot, policy: CompiledPolicy, runs: int, *, now: float = 0.0) -> tuple[float, int]:
    seconds, binds = [], 0
    for _ in range(runs):
        t0 = time.process_time()
        result = run_session(snapshot, policy, now=now)
        seconds.append(time.process_time() - t0)
        binds = len(result.decisions.binds)
    return statistics.median(seconds), binds


def main(description: str, plugin: str, variants: Variants, *, now: float = 0.0) -> None:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--size", choices=sorted(gen.SIZES), default="S")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    generated = gen.generate(gen.SIZES[args.size], "steady", seed=args.seed)
    base, with_plugin = confs(plugin)
    rows = [("default conf", generated.snapshot, base)]
    rows += [(label, snapshot, with_plugin) for label, snapshot in variants(generated.snapshot, args.seed)]
    print(f"steady {args.size} seed {args.seed}, median of {args.runs} runs")
    for label, snapshot, policy in rows:
        seconds, binds = timed(snapshot, policy, args.runs, now=now)
        print(f"{label:34s} {seconds:7.2f} s CPU   binds {binds}")

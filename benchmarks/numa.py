"""What the numa-aware plugin costs a session: Volcano's built-in conf side by side with the same conf plus
numa-aware, on the `steady` workload, without Numatopologies and with one on every CPU node.

    python -m benchmarks.numa --size S|M [--seed N] [--runs K]

Rows (median CPU seconds of `run_session` over K runs, and the binds of the last):
- `default conf`: Volcano's built-in conf;
- `+ numa-aware, no Numatopology`: the same plus numa-aware; the cluster has no Numatopology, so its
  rules answer every pod without pinning anything (what listing the plugin costs by itself);
- `+ numa-aware, CPU nodes pinned`: every CPU node gets a Numatopology (32 CPUs over two NUMA nodes and
  sockets, static CPU manager, single-numa-node) and every pending pod is made Guaranteed, asking its cpu
  request rounded to whole CPUs (at least one) with the single-numa-node policy: every placement
  computes hints and takes CPUs.
This module asserts nothing.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

from benchmarks import generate as gen
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.harness.policy import from_conf
from vpolicy.load import conf as conf_loader
from vpolicy.model.numa import POD_POLICY_ANNOTATION, CpuInfo, NumaTopology
from vpolicy.model.snapshot import ClusterSnapshot

POLICY = "single-numa-node"


def confs() -> tuple[CompiledPolicy, CompiledPolicy]:
    base = conf_loader.default_conf_text()
    with_numa = base.replace("  - name: nodeorder\n", "  - name: nodeorder\n  - name: numa-aware\n", 1)
    if with_numa == base:
        raise RuntimeError("Volcano's default conf has no nodeorder line to put numa-aware after")
    return (from_conf(conf_loader.parse_conf_text(base, file="default.conf")),
            from_conf(conf_loader.parse_conf_text(with_numa, file="numa.conf")))


def pinned(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    cpus = {i: CpuInfo(numa=i // 16, socket=i // 16, core=i // 2) for i in range(32)}
    policies = {"CPUManagerPolicy": "static", "TopologyManagerPolicy": POLICY}
    topologies = tuple(NumaTopology(name=n.name, policies=policies, allocatable={"cpu": frozenset(cpus)}, cpus=cpus)
                       for n in snapshot.nodes if "nvidia.com/gpu" not in n.allocatable)
    pods = tuple(p if p.node_name else dataclasses.replace(
        p, guaranteed=True, container_cpus=(("c", max(1, p.resreq.get("cpu", 0) // 1000)),),
        annotations={**p.annotations, POD_POLICY_ANNOTATION: POLICY}) for p in snapshot.pods)
    return dataclasses.replace(snapshot, numatopologies=topologies, pods=pods)


def timed(snapshot: ClusterSnapshot, policy: CompiledPolicy, runs: int) -> tuple[float, int]:
    seconds, binds = [], 0
    for _ in range(runs):
        t0 = time.process_time()
        result = run_session(snapshot, policy)
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
    base, numa = confs()
    rows = (("default conf", generated.snapshot, base), ("+ numa-aware, no Numatopology", generated.snapshot, numa),
            ("+ numa-aware, CPU nodes pinned", pinned(generated.snapshot), numa))
    print(f"steady {args.size} seed {args.seed}, median of {args.runs} runs")
    for label, snapshot, policy in rows:
        seconds, binds = timed(snapshot, policy, args.runs)
        print(f"{label:34s} {seconds:7.2f} s CPU   binds {binds}")


if __name__ == "__main__":
    main()

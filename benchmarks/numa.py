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

import dataclasses

from benchmarks import plugin_cost
from vpolicy.model.numa import POD_POLICY_ANNOTATION, CpuInfo, NumaTopology
from vpolicy.model.snapshot import ClusterSnapshot

POLICY = "single-numa-node"


def pinned(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    cpus = {i: CpuInfo(numa=i // 16, socket=i // 16, core=i // 2) for i in range(32)}
    policies = {"CPUManagerPolicy": "static", "TopologyManagerPolicy": POLICY}
    topologies = tuple(NumaTopology(name=n.name, policies=policies, allocatable={"cpu": frozenset(cpus)}, cpus=cpus)
                       for n in snapshot.nodes if "nvidia.com/gpu" not in n.allocatable)
    pods = tuple(p if p.node_name else dataclasses.replace(
        p, guaranteed=True, container_cpus=(("c", max(1, p.resreq.get("cpu", 0) // 1000)),),
        annotations={**p.annotations, POD_POLICY_ANNOTATION: POLICY}) for p in snapshot.pods)
    return dataclasses.replace(snapshot, numatopologies=topologies, pods=pods)


def variants(snapshot: ClusterSnapshot, _seed: int) -> list[tuple[str, ClusterSnapshot]]:
    return [("+ numa-aware, no Numatopology", snapshot), ("+ numa-aware, CPU nodes pinned", pinned(snapshot))]


if __name__ == "__main__":
    plugin_cost.main(__doc__.split("\n\n")[0], "numa-aware", variants)

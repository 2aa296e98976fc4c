"""The `topology` workload: GPU gangs with a networkTopology on a cluster of HyperNode domains, in
volcano and optimize mode side by side.

    python -m benchmarks.topology --size S|M [--seed N] [--output table|json]

The cluster: 8-GPU nodes in leaf domains (tier 1) of 8, 16, 24 or 32 nodes, leaves grouped under
spines (tier 2) of about 128 nodes, spines under one tier-3 root. Some nodes run single-node jobs
(1-8 GPUs) so leaves start partly used. Pending: gangs of 8-256 GPUs (pods of 8, or 4 for the smaller
gangs), 70% hard mode (highest tier 1 when the gang fits a leaf, else 2), 30% soft mode (highest tier
1), asking for more GPUs than are free, so where each gang goes decides how many fit.

Figures per mode, from the decision document (never from engine state):
- `gangs_within_limit`: pending gangs placed whole (binds + pipelined + running >= minMember) with all
  their pods under one domain of at most their highest allowed tier;
- `gangs_placed`: placed whole, wherever;
- `stranded_gpus`: free GPUs in leaf domains that are partly used after the session (some GPU in use,
  some free): capacity a later leaf-sized gang cannot use;
- `hard_violations`: the validator's `topology.above-highest-tier` findings (must be 0);
- `session_ms`, `session_cpu_ms`: one `run_session`, wall and this process's CPU time (the machine may
  be shared).
The conf is Volcano's CI-style tiers with the network-topology-aware plugin. This module asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vpolicy.engine import validate
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.harness.policy import from_conf
from vpolicy.load import conf as conf_loader
from vpolicy.model import hypernodes as hn
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import (ClusterSnapshot, Node, Pod, PodGroup, PodGroupPhase, PriorityClass, Queue,
                                    TaskStatus)

GPU = "nvidia.com/gpu"
GIB = 1024 ** 3
NODE_GPUS = 8
LEAF_SIZES = (8, 16, 24, 32)
SPINE_NODES = 128  # leaves are grouped under a spine until it holds about this many nodes
GANG_GPUS = (8, 8, 16, 16, 16, 32, 32, 64, 64, 128, 256)  # drawn uniformly: small gangs are common
MODES = ("volcano", "optimize")
CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
    arguments:
      weight: 10
"""


@dataclass(frozen=True, slots=True)
class Size:
    name: str
    nodes: int
    demand: float  # pending GPUs / free GPUs


SIZES = {"S": Size("S", 128, 1.3), "M": Size("M", 1024, 1.3)}


@dataclass(frozen=True, slots=True)
class Gang:
    key: str
    gpus: int
    mode: str
    highest_tier: int


def generate(size: Size, *, seed: int = 1) -> tuple[ClusterSnapshot, list[Gang]]:
    """The cluster and its pending gangs; the same (size, seed) always gives the same snapshot."""
    rng = random.Random(f"topology:{size.name}:{seed}")
    nodes: list[Node] = []
    hypernodes: list[hn.HyperNode] = []
    leaves: list[str] = []
    spine_members: list[str] = []
    spine_nodes = 0
    spines: list[str] = []
    while len(nodes) < size.nodes:
        count = min(rng.choice(LEAF_SIZES), size.nodes - len(nodes))
        leaf = f"leaf{len(leaves)}"
        members = []
        for _ in range(count):
            name = f"n{len(nodes)}"
            nodes.append(Node(name, Resources({"cpu": 128_000, "memory": 1024 * GIB, "pods": 110,
                                               GPU: NODE_GPUS * 1000})))
            members.append(hn.Member("Node", hn.MemberSelector(exact=name)))
        hypernodes.append(hn.HyperNode(leaf, 1, tuple(members), tier_name="leaf"))
        leaves.append(leaf)
        spine_members.append(leaf)
        spine_nodes += count
        if spine_nodes >= SPINE_NODES or len(nodes) >= size.nodes:
            spine = f"spine{len(spines)}"
            hypernodes.append(hn.HyperNode(spine, 2, tuple(hn.Member("HyperNode", hn.MemberSelector(exact=m))
                                                          for m in spine_members), tier_name="spine"))
            spines.append(spine)
            spine_members, spine_nodes = [], 0
    hypernodes.append(hn.HyperNode("root", 3, tuple(hn.Member("HyperNode", hn.MemberSelector(exact=s))
                                                    for s in spines), tier_name="root"))
    pods: list[Pod] = []
    groups: list[PodGroup] = []
    free = 0
    for i, node in enumerate(nodes):  # a third of the nodes run a small single-node job
        if rng.random() < 1 / 3:
            used = rng.randint(1, NODE_GPUS)
            key = f"run{i}"
            groups.append(PodGroup("ns", key, key, queue="q", min_member=1, phase=PodGroupPhase.RUNNING))
            pods.append(_pod(f"{key}-0", key, used, node=node.name))
            free += NODE_GPUS - used
        else:
            free += NODE_GPUS
    leaf_max = max(LEAF_SIZES) * NODE_GPUS
    gangs: list[Gang] = []
    wanted = 0
    while wanted < free * size.demand:
        gpus = rng.choice(GANG_GPUS)
        mode = "hard" if rng.random() < 0.7 else "soft"
        tier = 1 if gpus <= leaf_max // 2 or mode == "soft" else 2
        key = f"g{len(gangs)}"
        per_pod = NODE_GPUS if gpus >= 16 or rng.random() < 0.5 else 4
        pod_count = gpus // per_pod
        groups.append(PodGroup("ns", key, key, queue="q", min_member=pod_count, phase=PodGroupPhase.INQUEUE,
                               creation=float(len(gangs)),
                               network_topology=hn.NetworkTopology(mode, tier)))  # type: ignore[arg-type]  # reason: literal drawn above
        pods.extend(_pod(f"{key}-{j}", key, per_pod, creation=float(len(gangs))) for j in range(pod_count))
        gangs.append(Gang(f"ns/{key}", gpus, mode, tier))
        wanted += gpus
    snapshot = ClusterSnapshot(nodes=tuple(nodes), pods=tuple(pods), podgroups=tuple(groups),
                               queues=(Queue("q", weight=1), Queue("root"), Queue("default")),
                               priority_classes=(PriorityClass("normal", 0),), namespaces=("ns",),
                               hypernodes=tuple(hypernodes))
    return snapshot, gangs


def _pod(name: str, group: str, gpus: int, *, node: str = "", creation: float = 0.0) -> Pod:
    request = Resources({"cpu": 8_000 * gpus, "memory": 64 * GIB * gpus, "pods": 1, GPU: gpus * 1000})
    status = TaskStatus.RUNNING if node else TaskStatus.PENDING
    return Pod("ns", name, name, request, status, node_name=node, phase="Running" if node else "Pending",
               group=group, creation=creation)


def policy() -> CompiledPolicy:
    return from_conf(conf_loader.parse_conf_text(CONF, file="<benchmark-topology>"))


def figures(snapshot: ClusterSnapshot, gangs: Sequence[Gang], document: Mapping[str, Any],
            compiled: CompiledPolicy) -> dict[str, Any]:
    """The workload's figures from the decision document (see the module docstring)."""
    tree = hn.HyperNodeTree(snapshot.hypernodes, ((n.name, n.labels) for n in snapshot.nodes))
    placed: dict[str, str] = {**document["pipelined"], **document["binds"]}
    by_group: dict[str, list[str]] = {}
    for pod in snapshot.pods:
        if pod.key in placed:
            by_group.setdefault(f"{pod.namespace}/{pod.group}", []).append(placed[pod.key])
    groups = {pg.key: pg for pg in snapshot.podgroups}
    within = placed_whole = 0
    for gang in gangs:
        nodes = by_group.get(gang.key, [])
        if len(nodes) < groups[gang.key].min_member:
            continue
        placed_whole += 1
        if tree.tier(tree.span_of(nodes)) <= gang.highest_tier:
            within += 1
    used = {n.name: 0 for n in snapshot.nodes}
    for pod in snapshot.pods:
        node = pod.node_name or placed.get(pod.key, "")
        if node:
            used[node] += pod.resreq.get(GPU, 0) // 1000
    stranded = 0
    for name, spec in tree.hypernodes.items():
        if spec.tier != 1:
            continue
        members = tree.real_nodes[name]
        in_use = sum(used[n] for n in members)
        capacity = NODE_GPUS * len(members)
        if 0 < in_use < capacity:
            stranded += capacity - in_use
    violations = [v for v in validate.validate(snapshot, document, policy=compiled)
                  if v.code == "topology.above-highest-tier"]
    return {"gangs": len(gangs), "gangs_within_limit": within, "gangs_placed": placed_whole,
            "gpus_placed": sum(g.gpus for g in gangs if len(by_group.get(g.key, [])) >= groups[g.key].min_member),
            "stranded_gpus": stranded, "hard_violations": len(violations)}


def run(size: Size, *, seed: int = 1, modes: Sequence[str] = MODES) -> dict[str, Any]:
    snapshot, gangs = generate(size, seed=seed)
    compiled = policy()
    out: dict[str, Any] = {"size": size.name, "seed": seed, "nodes": len(snapshot.nodes),
                           "leaves": sum(1 for h in snapshot.hypernodes if h.tier == 1), "gangs": len(gangs),
                           "pending_gpus": sum(g.gpus for g in gangs)}
    for mode in modes:
        start, cpu = time.perf_counter(), time.process_time()
        result = run_session(snapshot, compiled, mode=mode)
        elapsed, used = (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000
        document = result.decisions.to_document()
        out[mode] = {"session_ms": round(elapsed, 1), "session_cpu_ms": round(used, 1),
                     **figures(snapshot, gangs, document, compiled)}
    if "volcano" in out and "optimize" in out and out["volcano"]["gangs_within_limit"]:
        out["within_limit_optimize_over_volcano"] = round(
            out["optimize"]["gangs_within_limit"] / out["volcano"]["gangs_within_limit"], 3)
    return out


def table(result: Mapping[str, Any]) -> str:
    keys = ("gangs_within_limit", "gangs_placed", "gpus_placed", "stranded_gpus", "hard_violations", "session_ms",
            "session_cpu_ms")
    modes = [m for m in MODES if m in result]
    lines = [f"topology {result['size']} seed {result['seed']}: {result['nodes']} nodes, {result['leaves']} leaves, "
             f"{result['gangs']} gangs asking {result['pending_gpus']} GPUs",
             "| figure | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
    for key in keys:
        lines.append(f"| {key} | " + " | ".join(str(result[m][key]) for m in modes) + " |")
    if "within_limit_optimize_over_volcano" in result:
        lines.append(f"gangs within limit, optimize / volcano: {result['within_limit_optimize_over_volcano']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.topology", description=__doc__.split("\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), default="S")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mode", choices=(*MODES, "both"), default="both")
    p.add_argument("--output", choices=("table", "json"), default="table")
    args = p.parse_args(argv)
    modes = MODES if args.mode == "both" else (args.mode,)
    result = run(SIZES[args.size], seed=args.seed, modes=modes)
    print(json.dumps(result, indent=2) if args.output == "json" else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The worlds `verify` runs for the property `hard-topology-within-tier` (a hard-mode job never spans
above its highestTierAllowed): small clusters with a network topology, which the general worlds
(`verify_worlds`) do not have.

Each world: 2 to bound+1 nodes of 1 or 2 cpus, each node its own tier-1 HyperNode (a leaf), all leaves
under one tier-2 spine; 1 to bound hard-mode jobs of two 1-cpu tasks with minMember 1 or 2 and
highestTierAllowed 1 or 2, Inqueue; optionally a running one-task job on the first node. Within the
bound the worlds are enumerated in a fixed order, all of them when they are at most `limit`, else a
seeded sample of `limit`. A gang with highestTierAllowed 1 must then sit on one node, so a policy that
lets it spread is caught at once.
"""
from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from vpolicy.model import hypernodes as hn
from vpolicy.model import snapshot as snap
from vpolicy.model.resources import Resources

GIB = 1 << 30
NAMESPACE = "ns"
JOB_KINDS = tuple(itertools.product((1, 2), (1, 2)))  # (minMember, highestTierAllowed)


def space(bound: int) -> list[tuple[tuple[int, ...], tuple[tuple[int, int], ...], bool]]:
    """Every (node cpus, job kinds, a running job) within the bound."""
    out = []
    for n in range(2, max(2, bound + 1) + 1):
        for cpus in itertools.product((1, 2), repeat=n):
            for count in range(1, max(1, bound) + 1):
                for kinds in itertools.combinations_with_replacement(JOB_KINDS, count):
                    for running in (False, True):
                        out.append((cpus, kinds, running))
    return out


def worlds(bound: int, limit: int, seed: int = 0) -> tuple[Iterator[snap.ClusterSnapshot], bool, int]:
    """The worlds to run, whether that is all of them, and how many lie within the bound."""
    every = space(bound)
    if len(every) <= limit:
        return (build(*w) for w in every), True, len(every)
    chosen = random.Random(seed).sample(every, limit)
    return (build(*w) for w in chosen), False, len(every)


def build(cpus: tuple[int, ...], kinds: tuple[tuple[int, int], ...], running: bool) -> snap.ClusterSnapshot:
    nodes = tuple(snap.Node(name=f"n{i}", allocatable=_res(c * 1000), capacity=_res(c * 1000))
                  for i, c in enumerate(cpus))
    leaves = tuple(hn.HyperNode(f"l{i}", 1, (hn.Member("Node", hn.MemberSelector(exact=f"n{i}")),))
                   for i in range(len(cpus)))
    spine = hn.HyperNode("s0", 2, tuple(hn.Member("HyperNode", hn.MemberSelector(exact=leaf.name)) for leaf in leaves))
    groups, pods = [], []
    for j, (min_member, tier) in enumerate(kinds):
        name = f"j{j}"
        groups.append(snap.PodGroup(NAMESPACE, name, f"{NAMESPACE}/{name}", queue=snap.DEFAULT_QUEUE,
                                    min_member=min_member, phase=snap.PodGroupPhase.INQUEUE, creation=float(j),
                                    network_topology=hn.NetworkTopology("hard", tier)))
        pods += [_pod(f"{name}-t-{t}", name, creation=float(j)) for t in range(2)]
    if running:
        groups.append(snap.PodGroup(NAMESPACE, "busy", f"{NAMESPACE}/busy", queue=snap.DEFAULT_QUEUE, min_member=1,
                                    phase=snap.PodGroupPhase.RUNNING))
        pods.append(_pod("busy-t-0", "busy", node="n0"))
    return snap.ClusterSnapshot(nodes=nodes, pods=tuple(pods), podgroups=tuple(groups),
                                queues=(snap.Queue(name=snap.ROOT_QUEUE, weight=1, reclaimable=False),
                                        snap.Queue(name=snap.DEFAULT_QUEUE, weight=1, reclaimable=True)),
                                namespaces=(NAMESPACE,), hypernodes=(*leaves, spine))


def _res(cpu: int, pods: int = 4) -> Resources:
    return Resources({"cpu": cpu, "memory": 4 * GIB, "pods": pods})


def _pod(name: str, group: str, *, node: str = "", creation: float = 0.0) -> snap.Pod:
    return snap.Pod(namespace=NAMESPACE, name=name, uid=f"{NAMESPACE}/{name}",
                    resreq=Resources({"cpu": 1000, "memory": GIB, "pods": 1}),
                    status=snap.TaskStatus.RUNNING if node else snap.TaskStatus.PENDING, node_name=node,
                    phase="Running" if node else "Pending", scheduler_name="volcano", group=group,
                    annotations={snap.GROUP_NAME_ANNOTATION: group}, creation=creation)

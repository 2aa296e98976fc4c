"""`python -m benchmarks.volumes`: session time with CSI attach limits and delayed (WaitForFirstConsumer)
binding, beside the same cluster whose pods use no volumes.

    python -m benchmarks.volumes [--nodes 1000] [--jobs 200] [--replicas 8] [--runs 3] [--limit 4]

Every node has a CSINode allowing `--limit` volumes of one driver and one local PV of a no-provisioner
WaitForFirstConsumer class; every pending pod has a bound claim on its own CSI volume (counted against
the limit), and one pod in eight a delayed claim of the local class as well; a quarter of the nodes
already run a pod with a CSI volume. The plain run is the same cluster with every pod's claims removed,
so the ratio is what NodeVolumeLimits and delayed binding cost (`vpolicy.engine.volume_binding`).
Volcano's built-in conf.
"""
from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import replace

from vpolicy.engine.session import run_session
from vpolicy.harness.policy import from_conf
from vpolicy.load.conf import default_conf
from vpolicy.model import affinity, volumes
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import (ClusterSnapshot, Node, NodeSelectorTerm, Pod, PodGroup, PodGroupPhase, Queue,
                                    SelectorRequirement, TaskStatus)

GIB = 1024 ** 3
DRIVER = "ebs.csi.aws.com"


def cluster(nodes: int, jobs: int, replicas: int, limit: int, seed: int) -> ClusterSnapshot:
    rng = random.Random(seed)
    node_list = [Node(f"n{i}", Resources({"cpu": 16000, "memory": 64 * GIB, "pods": 110}),
                      labels={affinity.HOSTNAME_KEY: f"n{i}"}) for i in range(nodes)]
    csi = [volumes.CSINode(f"n{i}", limits={DRIVER: limit}, drivers=(DRIVER,)) for i in range(nodes)]
    pvs: list[volumes.PersistentVolume] = []
    claims: list[volumes.PersistentVolumeClaim] = []
    for i in range(nodes):
        term = NodeSelectorTerm((SelectorRequirement(affinity.HOSTNAME_KEY, "In", (f"n{i}",)),))
        pvs.append(volumes.PersistentVolume(f"local-{i}", storage_class="local", node_affinity=(term,),
                                            capacity=100 * GIB, access_modes=("ReadWriteOnce",)))
    pods: list[Pod] = []
    groups: list[PodGroup] = []

    def disk(name: str) -> str:
        pvs.append(volumes.PersistentVolume(name, attach=volumes.AttachedVolume(DRIVER, name), storage_class="gp3"))
        claims.append(volumes.PersistentVolumeClaim("ns", name, volume_name=name, storage_class="gp3"))
        return name

    for j in range(jobs):
        groups.append(PodGroup("ns", f"j{j}", f"uid-j{j}", min_member=replicas, phase=PodGroupPhase.INQUEUE))
        for r in range(replicas):
            names = [disk(f"d-{j}-{r}")]
            if (j * replicas + r) % 8 == 0:
                claims.append(volumes.PersistentVolumeClaim("ns", f"scratch-{j}-{r}", storage_class="local",
                                                            request=10 * GIB, access_modes=("ReadWriteOnce",)))
                names.append(f"scratch-{j}-{r}")
            pods.append(Pod("ns", f"j{j}-t-{r}", f"uid-j{j}-{r}", Resources({"cpu": 1000, "memory": GIB, "pods": 1}),
                            TaskStatus.PENDING, group=f"j{j}", relations=affinity.PodRelations(claims=tuple(names))))
    for i in range(nodes // 4):
        groups.append(PodGroup("ns", f"r{i}", f"uid-r{i}", min_member=1, phase=PodGroupPhase.RUNNING))
        pods.append(Pod("ns", f"r{i}-t-0", f"uid-r{i}", Resources({"cpu": 2000, "memory": 2 * GIB, "pods": 1}),
                        TaskStatus.RUNNING, node_name=f"n{rng.randrange(nodes)}", group=f"r{i}",
                        relations=affinity.PodRelations(claims=(disk(f"old-{i}"),))))
    classes = (volumes.StorageClass("gp3", provisioner=DRIVER),
               volumes.StorageClass("local", volumes.WAIT_FOR_FIRST_CONSUMER, provisioner=volumes.NO_PROVISIONER))
    return ClusterSnapshot(nodes=tuple(node_list), pods=tuple(pods), podgroups=tuple(groups),
                           queues=(Queue("default"),), namespaces=("ns",), persistent_volumes=tuple(pvs),
                           persistent_volume_claims=tuple(claims), storage_classes=classes, csi_nodes=tuple(csi))


def without_volumes(snap: ClusterSnapshot) -> ClusterSnapshot:
    return replace(snap, pods=tuple(replace(p, relations=affinity.NO_RELATIONS) for p in snap.pods),
                   persistent_volumes=(), persistent_volume_claims=(), storage_classes=(), csi_nodes=())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.volumes")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    policy = from_conf(default_conf())
    with_volumes = cluster(args.nodes, args.jobs, args.replicas, args.limit, args.seed)
    rows: list[tuple[str, float, float, int]] = []
    for name, snap in (("plain", without_volumes(with_volumes)), ("limits+delayed binding", with_volumes)):
        times: list[float] = []
        cpu: list[float] = []
        binds = 0
        for _ in range(args.runs):
            start, start_cpu = time.perf_counter(), time.process_time()
            result = run_session(snap, policy)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            binds = len(result.decisions.binds)
        rows.append((name, statistics.median(times), statistics.median(cpu), binds))
    print(f"{args.nodes} nodes, {args.jobs * args.replicas} pending pods, attach limit {args.limit}")
    for name, wall, cpu_s, binds in rows:
        print(f"  {name:24s} wall {wall:6.2f} s  cpu {cpu_s:6.2f} s  binds {binds}")


if __name__ == "__main__":
    main()

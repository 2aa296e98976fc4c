"""`python -m benchmarks.pod_relations`: session time with pod affinity and topology spread, beside the
same cluster without them.

    python -m benchmarks.pod_relations [--nodes 1000] [--jobs 200] [--replicas 8] [--runs 3] [--seed 1]

Nodes spread over 10 zones; each job's replicas carry a required anti-affinity against their own app by
hostname and a DoNotSchedule zone spread (maxSkew 1) on their app, a quarter of them also a preferred
pod affinity to another app's zone; a quarter of the nodes already run pods of those apps. The plain run
is the same cluster with every term removed, so the ratio is what counting pods per domain costs
(`vpolicy.engine.pod_relations`, docs/dsl.md "Pods per topology domain"). Volcano's built-in conf.
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
from vpolicy.model import affinity
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import ClusterSnapshot, Node, Pod, PodGroup, PodGroupPhase, Queue, TaskStatus

GIB = 1024 ** 3
ZONE = "topology.kubernetes.io/zone"


def cluster(nodes: int, jobs: int, replicas: int, seed: int) -> ClusterSnapshot:
    rng = random.Random(seed)
    node_list = [Node(f"n{i}", Resources({"cpu": 16000, "memory": 64 * GIB, "pods": 110}),
                      labels={affinity.HOSTNAME_KEY: f"n{i}", ZONE: f"z{i % 10}"}) for i in range(nodes)]
    pods: list[Pod] = []
    groups: list[PodGroup] = []
    for j in range(jobs):
        app = f"app{j % 50}"
        selector = affinity.LabelSelector((("app", app),))
        relations = affinity.PodRelations(
            required_anti_affinity=(affinity.PodAffinityTerm(affinity.HOSTNAME_KEY, selector),),
            spread=(affinity.SpreadConstraint(1, ZONE, selector=selector),),
            preferred_affinity=((affinity.PodAffinityTerm(ZONE, affinity.LabelSelector(
                (("app", f"app{(j + 1) % 50}"),)), weight=50),) if j % 4 == 0 else ()))
        groups.append(PodGroup("ns", f"j{j}", f"uid-j{j}", min_member=replicas, phase=PodGroupPhase.INQUEUE))
        for r in range(replicas):
            pods.append(Pod("ns", f"j{j}-t-{r}", f"uid-j{j}-{r}", Resources({"cpu": 1000, "memory": GIB, "pods": 1}),
                            TaskStatus.PENDING, group=f"j{j}", labels={"app": app}, relations=relations))
    for i in range(nodes // 4):
        app = f"app{rng.randrange(50)}"
        groups.append(PodGroup("ns", f"r{i}", f"uid-r{i}", min_member=1, phase=PodGroupPhase.RUNNING))
        pods.append(Pod("ns", f"r{i}-t-0", f"uid-r{i}", Resources({"cpu": 2000, "memory": 2 * GIB, "pods": 1}),
                        TaskStatus.RUNNING, node_name=f"n{rng.randrange(nodes)}", group=f"r{i}", labels={"app": app}))
    return ClusterSnapshot(nodes=tuple(node_list), pods=tuple(pods), podgroups=tuple(groups),
                           queues=(Queue("default"),), namespaces=("ns",))


def without_relations(snap: ClusterSnapshot) -> ClusterSnapshot:
    return replace(snap, pods=tuple(replace(p, relations=affinity.NO_RELATIONS) for p in snap.pods))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pod_relations")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    policy = from_conf(default_conf())
    with_terms = cluster(args.nodes, args.jobs, args.replicas, args.seed)
    plain = without_relations(with_terms)
    rows: list[tuple[str, float, float, int]] = []
    for name, snap in (("plain", plain), ("affinity+spread", with_terms)):
        times: list[float] = []
        cpu: list[float] = []
        binds = 0
        for _ in range(args.runs):  # alternating would be fairer on a busy machine; CPU time is reported too
            start, start_cpu = time.perf_counter(), time.process_time()
            result = run_session(snap, policy)
            times.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
            binds = len(result.decisions.binds)
        rows.append((name, statistics.median(times), statistics.median(cpu), binds))
    print(f"{args.nodes} nodes, {args.jobs} jobs x {args.replicas} replicas, {args.runs} runs (median)")
    for name, wall, cpu_ms, placed in rows:
        print(f"  {name:16} {wall:9.1f} ms wall {cpu_ms:9.1f} ms cpu  {placed} binds")
    print(f"  cpu ratio {rows[1][2] / rows[0][2]:.2f}")


if __name__ == "__main__":
    main()

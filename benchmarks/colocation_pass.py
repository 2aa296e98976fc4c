"""`python -m benchmarks.colocation_pass`: CPU time of one colocation pass of the node agent.

A node of 110 pods (half of them BE, two containers each) on a fake cgroup tree (v1 cgroupfs and v2
systemd, built by tests/colocation/fakes.py in a temporary folder), every colocation feature on, usage
read through the real /proc-and-cgroup probe: the first pass (every cgroup file written) and the median
of 19 steady passes (nothing changes, so nothing is written). The agent runs a pass every 10 s.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from cluster_adapter.colocation import agent, cgroups, config, probes
from tests.colocation import fakes

FEATURES = ("cpuQosConfig", "memoryQosConfig", "cpuBurstConfig", "cpuThrottlingConfig")


def measure(version: str, driver: str, *, pods: int = 110, passes: int = 20) -> tuple[float, float]:
    root = Path(tempfile.mkdtemp(prefix="vpolicy-colocation-"))
    objects = [fakes.pod(f"p{i}", level="BE" if i % 2 else "LC", cpu=None if i % 2 else "1",
                         memory=None if i % 2 else "1Gi", batch_cpu=500 if i % 2 else None, containers=2)
               for i in range(pods)]
    tree = fakes.make_tree(root / "cgroup", version, driver, objects)
    writer = cgroups.writer_for(tree)
    colo = agent.ColocationAgent(agent.ColocationSettings("n1"), writer,
                                 probes.CgroupProcProbe(writer, fakes.make_proc(root / "proc")))
    node = fakes.node(cpu="64", memory="256Gi", labels={config.OVERSUBSCRIPTION_LABEL: "true"})
    cfg = config.for_node({"globalConfig": {k: {"enable": True} for k in FEATURES}}, node)
    times = []
    for i in range(passes):
        t0 = time.process_time()
        colo.tick(node, objects, cfg, now=float(i))
        times.append((time.process_time() - t0) * 1000)
    return times[0], statistics.median(times[1:])


def main() -> None:
    for version, driver in (("v1", "cgroupfs"), ("v2", "systemd")):
        first, steady = measure(version, driver)
        print(f"cgroup {version} {driver}: first pass {first:.1f} ms CPU, steady pass {steady:.1f} ms CPU (median)")


if __name__ == "__main__":
    main()

"""The colocation agent on a kwok node of the real API server: `vpolicy agent --features colocation` as a
process, reading a fake cgroup tree and /proc whose cpu counters a thread of the test advances at the load
it wants. Quiet, the node lends batch resources; loaded past the high watermark, the agent evicts the BE
pods through the real Eviction API, marks the node evicting and lends less; quiet again, it reopens the
node. The online pods stay throughout."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from cluster_adapter.colocation import agent, config, qos
from tests.colocation import fakes

e2e = pytest.importorskip("tests.e2e.cluster")  # the real control plane's helpers (tests/e2e)

GiB = 1 << 30


class Load:
    """Advances the fake tree's cpu counters at `milli` millicores (all pods) until stopped."""

    def __init__(self, root: Path, milli: int):
        self.root, self.milli, self.stop = root, milli, threading.Event()
        self.total_ns = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.monotonic()
        while not self.stop.wait(0.05):
            now = time.monotonic()
            self.total_ns += int(self.milli * 1e6 * (now - last))
            last = now
            (self.root / "kubepods" / "cpu.stat").write_text(f"usage_usec {self.total_ns // 1000}\n")


def test_the_agent_lends_evicts_be_pods_under_pressure_and_reopens_the_node(
        cluster: e2e.Cluster, components: list[e2e.Component]) -> None:
    ns = cluster.namespace("colo")
    [node] = cluster.kwok_nodes(f"{ns}-colo", 1, cpu="8", memory="16Gi",
                                labels={config.OVERSUBSCRIPTION_LABEL: "true"})
    document = {"globalConfig": {"cpuThrottlingConfig": {"enable": True},
                                 "evictingConfig": {"highUsageCountLimit": 3}}}
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": config.CONFIG_MAP_NAME, "namespace": ns},
                    "data": {config.CONFIG_KEY: json.dumps(document)}})
    online = [fakes.pod("web", level="LC", cpu="1", memory="1Gi", node=node),
              fakes.pod("cache", level="LS", cpu="500m", node=node)]
    offline = [fakes.pod(f"etl-{i}", level="BE", batch_cpu=1000, batch_memory=GiB, node=node) for i in range(2)]
    for p in online + offline:
        p["metadata"]["namespace"] = ns
        for key in ("uid",):
            p["metadata"].pop(key)
        p.pop("status")
        cluster.create(p)
    root = cluster.workdir / f"{ns}-cgroup"
    fakes.make_tree(root, "v2", "cgroupfs", [])
    proc = fakes.make_proc(cluster.workdir / f"{ns}-proc")
    # memory stays at 2 GiB of 16 (12 %): only cpu moves
    (root / "kubepods" / "memory.current").write_text(f"{2 * GiB}\n")
    load = Load(root, 1000)
    load.thread.start()
    components.append(e2e.Component("colocation-agent", [
        "agent", "--node", node, "--kubeconfig", str(cluster.kubeconfig), "--features", "colocation",
        "--period", "1", "--cgroup-root", str(root), "--proc-root", str(proc), "--config-namespace", ns],
        cluster.workdir))
    try:
        def lent() -> int:
            status = (cluster.get(f"/api/v1/nodes/{node}") or {}).get("status") or {}
            return int((status.get("allocatable") or {}).get(qos.BATCH_CPU, "0"))

        def annotation() -> str | None:
            meta = (cluster.get(f"/api/v1/nodes/{node}") or {}).get("metadata") or {}
            return (meta.get("annotations") or {}).get(agent.EVICTING_KEY)

        def names() -> set[str]:
            return {p["metadata"]["name"] for p in cluster.pods(ns) if not p["metadata"].get("deletionTimestamp")}

        e2e.eventually(lambda: lent() > 3500, 60, "about (8000 - 1000) * 60 % of cpu lent")
        quiet = lent()
        load.milli = 7200  # 90 % of allocatable
        e2e.eventually(lambda: annotation() == "true", 60, "the node marked evicting")
        e2e.eventually(lambda: names() == {"web", "cache"}, 60, "the BE pods evicted, the online ones kept")
        assert lent() < quiet
        load.milli = 800
        e2e.eventually(lambda: annotation() == "false", 60, "the node reopened under the low watermark")
        assert names() == {"web", "cache"}
    finally:
        load.stop.set()
        cluster.admin.call("DELETE", f"/api/v1/namespaces/{ns}")

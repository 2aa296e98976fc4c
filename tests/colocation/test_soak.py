"""Soak: 30 minutes of simulated load cycles on one node, compressed (a pass every simulated 10 s).

Online load follows a wave with bursts and noise; a stand-in scheduler places new BE pods whenever the
node lends room and is not marked evicting. Checked over the whole run, from the recorded samples and
not from the agent's own bookkeeping: no online (LC/HLS/LS) pod is ever touched; every BE eviction
happened while usage had been at or above the high watermark for the configured number of consecutive
samples; the evicting annotation only turns on under such pressure and only turns off at or under the
low watermark (no flapping inside the hysteresis band); every BE cpu quota change respects the jitter
and recovery limits.
"""
from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from cluster_adapter.colocation import agent, api, cgroups, config, probes, qos
from tests.colocation import fakes

GiB = 1 << 30
PERIOD_S = 10
DURATION_S = 30 * 60
LIMIT = 3
DOCUMENT = {"globalConfig": {"cpuThrottlingConfig": {"enable": True, "cpuJitterLimitPercent": 5},
                             "evictingConfig": {"highUsageCountLimit": LIMIT}}}


class FakeApi:
    """The five node calls plus ConfigMap and Eviction, on dicts (the emulator test covers the HTTP)."""

    def __init__(self, node: dict[str, Any], pods: list[dict[str, Any]]):
        self.node, self.pods = node, pods
        self.evicted: list[str] = []

    def get_node(self, name: str) -> dict[str, Any]:
        return self.node

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        self.node["metadata"]["annotations"].update(patch["metadata"]["annotations"])

    def patch_node_status(self, name: str, patch: dict[str, Any]) -> None:
        for section, values in patch["status"].items():
            self.node["status"][section].update(values)

    def list_pods(self) -> list[dict[str, Any]]:
        return list(self.pods)

    def list_node_pods(self, node: str) -> list[dict[str, Any]]:
        return [p for p in self.pods if p["spec"].get("nodeName") == node]

    def patch_pod(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        raise AssertionError("the colocation agent never patches pods")

    def get_config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        import json
        return {"data": {config.CONFIG_KEY: json.dumps(DOCUMENT)}}

    def evict_pod(self, namespace: str, name: str) -> None:
        self.evicted.append(name)
        self.pods = [p for p in self.pods if p["metadata"]["name"] != name]


def online_load(t: float, rng: random.Random) -> int:
    """Millicores the online pods use at time t on an 8-cpu node: a 6-minute wave, bursts, noise."""
    wave = 3500 + 2800 * math.sin(2 * math.pi * t / 360)
    burst = 1500 if int(t // 90) % 7 == 3 else 0
    return max(int(wave + burst + rng.gauss(0, 150)), 0)


@pytest.mark.slow
def test_thirty_minutes_of_load_cycles(tmp_path: Path) -> None:
    rng = random.Random(25)
    online = [fakes.pod("web", level="LC", cpu="2", memory="2Gi"), fakes.pod("search", level="HLS", cpu="1"),
              fakes.pod("cache", level="LS", cpu="1"), fakes.pod("plain", cpu="500m")]
    node = fakes.node(labels={config.OVERSUBSCRIPTION_LABEL: "true"})
    fake = FakeApi(node, list(online))
    tree = fakes.make_tree(tmp_path, "v2", "cgroupfs", [])
    probe = probes.StaticProbe(probes.Usage(0, 0, 0, 0))
    colo = agent.ColocationAgent(agent.ColocationSettings("n1"), cgroups.writer_for(tree), probe)
    source = api.ConfigSource()
    quota_file = tree.qos_dir("BestEffort", "cpu") / "cpu.max"
    percents: list[dict[str, int | None]] = []
    annotation_history: list[str | None] = []
    evictions: list[tuple[int, str, str, int]] = []  # (sample index, pod, resource, level)
    quotas: list[int] = []
    made = 0
    for step in range(DURATION_S // PERIOD_S):
        t = step * PERIOD_S
        annotations = node["metadata"]["annotations"]
        lent = int(node["status"]["allocatable"].get(qos.BATCH_CPU, "0"))
        be_pods = [p for p in fake.pods if qos.level_of(p) < 0]
        if annotations.get(agent.EVICTING_KEY) != "true" and lent >= 1000 and len(be_pods) < 6:
            made += 1  # the scheduler places a BE pod into the lent room
            fake.pods.append(fakes.pod(f"be-{made}", level="BE", batch_cpu=1000, batch_memory=GiB,
                                       priority=rng.choice([0, 0, 10])))
        be_pods = [p for p in fake.pods if qos.level_of(p) < 0]
        be_use = {p["metadata"]["uid"]: rng.randint(300, 900) for p in be_pods}
        on = online_load(t, rng)
        probe.usage = probes.Usage(pods_cpu_milli=on + sum(be_use.values()), pods_memory=4 * GiB,
                                   be_cpu_milli=sum(be_use.values()), be_memory=len(be_pods) * GiB // 2,
                                   per_pod={uid: probes.PodUsage(c, GiB // 2) for uid, c in be_use.items()})
        report = api.run_once(colo, fake, source, now=t)
        assert report.errors == [] and report.tick is not None and report.tick.problems == []
        percents.append(report.tick.percents)
        annotation_history.append(node["metadata"]["annotations"].get(agent.EVICTING_KEY))
        for e in report.tick.evictions:
            evictions.append((step, e.pod.name, e.resource, e.pod.level))
        quotas.append(int(quota_file.read_text().split()[0]))

    marks = config.for_node(DOCUMENT, node).watermarks
    flips = sum(1 for a, b in zip(annotation_history, annotation_history[1:]) if a != b)
    print(f"{len(evictions)} evictions, {made} BE pods placed, {flips} annotation changes")
    assert evictions, "the load cycles should have caused evictions"
    waves = DURATION_S // 360
    assert 2 <= flips <= 2 * waves + 2, f"{flips} evicting-annotation changes over {waves} load waves"
    assert made > len(evictions) / 2, "BE pods should have come back between the peaks"
    assert all(name in {p["metadata"]["name"] for p in fake.pods} for name in ("web", "search", "cache", "plain"))
    for step, name, resource, level in evictions:
        assert level == -1, f"{name} is not a BE pod"
        window = percents[step - LIMIT + 1: step + 1]
        assert len(window) == LIMIT and all((p[resource] or 0) >= marks.high(resource) for p in window), \
            f"{name} evicted at {step * PERIOD_S}s without {LIMIT} samples over the watermark: {window}"
    for step in range(1, len(annotation_history)):
        before, now = annotation_history[step - 1], annotation_history[step]
        if before != "true" and now == "true":  # closed only under sustained pressure
            window = percents[step - LIMIT + 1: step + 1]
            assert any(all((p[r] or 0) >= marks.high(r) for p in window) for r in ("cpu", "memory"))
        if before == "true" and now != "true":  # reopened only under the low watermark
            assert all((percents[step][r] or 0) <= marks.low(r) for r in ("cpu", "memory"))
    for before, now in zip(quotas, quotas[1:]):
        if now > before and before > 1000:
            assert now <= before + before * 10 // 100 + 100, "recovery faster than cpuRecoverLimitPercent"

"""One colocation pass (`ColocationAgent.tick`) on fake cgroup trees with a fake usage probe."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cluster_adapter.colocation import agent, cgroups, config, probes, qos
from tests.colocation import fakes

GiB = 1 << 30
LABELS = {config.OVERSUBSCRIPTION_LABEL: "true"}
THROTTLE = {"globalConfig": {"cpuThrottlingConfig": {"enable": True}, "cpuQosConfig": {"enable": True}}}


def usage(cpu: int, memory: int = 4 * GiB, *, be_cpu: int = 0, per_pod: dict[str, int] | None = None) -> probes.Usage:
    return probes.Usage(pods_cpu_milli=cpu, pods_memory=memory, be_cpu_milli=be_cpu, be_memory=0,
                        per_pod={uid: probes.PodUsage(c, 0) for uid, c in (per_pod or {}).items()})


def world(tmp_path: Path, version: str = "v2") -> tuple[agent.ColocationAgent, probes.StaticProbe, list[dict[str, Any]],
                                                         cgroups.CgroupTree]:
    pods = [fakes.pod("web", level="LC", cpu="2", memory="2Gi"), fakes.pod("cache", level="LS", cpu="1"),
            fakes.pod("batch-a", level="BE", batch_cpu=2000, batch_memory=GiB),
            fakes.pod("batch-b", level="BE", batch_cpu=1000, batch_memory=GiB, priority=10)]
    tree = fakes.make_tree(tmp_path, version, "cgroupfs", pods)
    probe = probes.StaticProbe(usage(2000))
    return agent.ColocationAgent(agent.ColocationSettings("n1"), cgroups.writer_for(tree), probe), probe, pods, tree


def cfg_for(node: dict[str, Any], document: dict[str, Any] | None = None) -> config.ColocationConfig:
    return config.for_node(document or {}, node)


def test_an_unlabelled_node_only_gets_its_be_pods_batch_resources_enforced(tmp_path: Path) -> None:
    colo, _, pods, _ = world(tmp_path)
    node = fakes.node()
    tick = colo.tick(node, pods, cfg_for(node, THROTTLE), now=0)
    assert tick.annotations == {} and tick.status == {} and tick.evictions == []
    # batch-a's 2000m of batch-cpu is weight 200; batch-b's 1000m is the default weight 100 already
    assert [(Path(w.path).parent.name, Path(w.path).name, w.new) for w in tick.writes] == [
        ("poduid-batch-a", "cpu.weight", "200")]


def test_idle_resources_are_published_as_batch_resources_and_annotations(tmp_path: Path) -> None:
    colo, probe, pods, _ = world(tmp_path)
    node = fakes.node(labels=LABELS)  # 8 cpu, 16 GiB
    tick = colo.tick(node, pods, cfg_for(node), now=0)
    assert tick.status["allocatable"] == {qos.BATCH_CPU: "3600", qos.BATCH_MEMORY: str(12 * GiB * 60 // 100)}
    assert tick.annotations[agent.OVERSUBSCRIPTION_CPU_KEY] == "3600"
    node["status"]["capacity"].update(tick.status["capacity"])
    probe.usage = usage(6000)  # online load rises: (8000-6000)*60% = 1200, smoothed with the first sample
    tick = colo.tick(node, pods, cfg_for(node), now=10)
    assert tick.status["allocatable"][qos.BATCH_CPU] == str((3600 + 1200 * 2) // 3)


def test_the_besteffort_budget_follows_online_usage(tmp_path: Path) -> None:
    colo, probe, pods, tree = world(tmp_path)
    node = fakes.node(labels=LABELS)
    quota = tree.qos_dir("BestEffort", "cpu") / "cpu.max"
    probe.usage = usage(3000, be_cpu=1000)  # online pods use 2000m; budget 6400 - 2000
    colo.tick(node, pods, cfg_for(node, THROTTLE), now=0)
    assert fakes.read(quota) == "440000 100000"
    probe.usage = usage(7000, be_cpu=1000)  # online 6000m: throttled to 400m at once
    colo.tick(node, pods, cfg_for(node, THROTTLE), now=10)
    assert fakes.read(quota) == "40000 100000"
    probe.usage = usage(1000, be_cpu=1000)  # load gone: recovers by 10 % per pass
    colo.tick(node, pods, cfg_for(node, THROTTLE), now=20)
    assert fakes.read(quota) == "44000 100000"
    colo.tick(node, pods, cfg_for(node), now=30)  # throttling switched off: the limit is lifted
    assert fakes.read(quota) == "max"


def test_cpu_qos_levels_are_written_per_pod(tmp_path: Path) -> None:
    colo, _, pods, tree = world(tmp_path, "v1")
    node = fakes.node(labels=LABELS)
    colo.tick(node, pods, cfg_for(node, THROTTLE), now=0)
    levels = {p["metadata"]["name"]: fakes.read(tree.pod_dir(qos.pod_info(p).qos_class, qos.pod_info(p).uid, "cpu")
                                                / "cpu.qos_level") for p in pods}
    assert levels == {"web": "2", "cache": "1", "batch-a": "-1", "batch-b": "-1"}


def test_pressure_evicts_be_pods_only_after_the_count_and_the_node_reopens_under_the_low_watermark(
        tmp_path: Path) -> None:
    colo, probe, pods, _ = world(tmp_path)
    node = fakes.node(labels=LABELS)
    cfg = cfg_for(node)
    probe.usage = usage(7000, per_pod={"uid-web": 5000, "uid-batch-a": 1500, "uid-batch-b": 500})  # 87 %
    for i in range(5):
        tick = colo.tick(node, pods, cfg, now=i * 10)
        assert tick.evictions == [] and agent.EVICTING_KEY not in tick.annotations
    tick = colo.tick(node, pods, cfg, now=50)  # the 6th sample at or above 80 %
    assert [e.pod.name for e in tick.evictions] == ["batch-a", "batch-b"]  # 7000 -> 5500 -> 5000 > 2400 (30 %)
    assert tick.annotations[agent.EVICTING_KEY] == "true"
    node["metadata"]["annotations"][agent.EVICTING_KEY] = "true"
    survivors = [p for p in pods if p["metadata"]["name"] in ("web", "cache")]
    probe.usage = usage(5000)  # between the watermarks: the node stays closed to BE pods
    tick = colo.tick(node, survivors, cfg, now=60)
    assert tick.evictions == [] and tick.annotations.get(agent.EVICTING_KEY) == "true"
    probe.usage = usage(2000)  # 25 % <= 30 %, memory 25 % <= 30 %
    tick = colo.tick(node, survivors, cfg, now=70)
    assert tick.annotations[agent.EVICTING_KEY] == "false"


def test_turning_oversubscription_off_withdraws_the_resources_and_the_pods_using_them(tmp_path: Path) -> None:
    colo, _, pods, _ = world(tmp_path)
    node = fakes.node(labels=LABELS)
    node["status"]["capacity"].update({qos.BATCH_CPU: "3000", qos.BATCH_MEMORY: "100"})
    tick = colo.tick(node, pods, cfg_for(node, {"globalConfig": {"overSubscriptionConfig": {"enable": False}}}), now=0)
    assert tick.status["capacity"] == {qos.BATCH_CPU: None, qos.BATCH_MEMORY: None}
    assert sorted(e.pod.name for e in tick.evictions) == ["batch-a", "batch-b"]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_be_pods_batch_requests_and_limits_reach_their_cgroup(tmp_path: Path, version: str) -> None:
    be = fakes.pod("be", level="BE", batch_cpu=1500, batch_memory=GiB,
                   limits={qos.BATCH_CPU: "3000", qos.BATCH_MEMORY: str(2 * GiB)})
    tree = fakes.make_tree(tmp_path, version, "systemd", [be])
    colo = agent.ColocationAgent(agent.ColocationSettings("n1"), cgroups.writer_for(tree),
                                 probes.StaticProbe(usage(0)))
    node = fakes.node()
    colo.tick(node, [be], cfg_for(node), now=0)
    cpu_dir, mem_dir = tree.pod_dir("BestEffort", "uid-be", "cpu"), tree.pod_dir("BestEffort", "uid-be", "memory")
    if version == "v1":
        assert (fakes.read(cpu_dir / "cpu.shares"), fakes.read(cpu_dir / "cpu.cfs_quota_us")) == ("1536", "300000")
        assert fakes.read(mem_dir / "memory.limit_in_bytes") == str(2 * GiB)
    else:
        assert (fakes.read(cpu_dir / "cpu.weight"), fakes.read(cpu_dir / "cpu.max")) == ("150", "300000 100000")
        assert fakes.read(mem_dir / "memory.max") == str(2 * GiB)


@pytest.mark.parametrize("state, pinned", [
    pytest.param('{"policyName":"static","defaultCpuSet":"0-7","checksum":1}', True, id="static"),
    pytest.param('{"policyName":"none","defaultCpuSet":"","checksum":1}', False, id="none"),
    pytest.param(None, False, id="no-file"),
])
def test_the_cpu_manager_policy_decides_whether_guaranteed_cpus_are_lent(tmp_path: Path, state: str | None,
                                                                          pinned: bool) -> None:
    if state is not None:
        (tmp_path / "cpu_manager_state").write_text(state)
    assert agent.cpu_manager_static(tmp_path) == pinned


def test_pinned_guaranteed_pods_cpus_are_not_lent(tmp_path: Path) -> None:
    g = fakes.pod("db", level="LC", cpu="2", memory="1Gi", limits={"cpu": "2", "memory": "1Gi"})
    tree = fakes.make_tree(tmp_path, "v2", "cgroupfs", [g])
    colo = agent.ColocationAgent(agent.ColocationSettings("n1", pinned_guaranteed_cpus=True),
                                 cgroups.writer_for(tree), probes.StaticProbe(usage(1000)))
    node = fakes.node(labels=LABELS)
    tick = colo.tick(node, [g], cfg_for(node), now=0)
    assert tick.status["allocatable"][qos.BATCH_CPU] == str((8000 - 2000 - 1000) * 60 // 100)


def test_a_node_outside_colocation_keeps_a_besteffort_limit_it_did_not_get_from_the_agent(tmp_path: Path) -> None:
    colo, _, pods, tree = world(tmp_path)
    quota = tree.qos_dir("BestEffort", "cpu") / "cpu.max"
    quota.write_text("50000 100000\n")  # set by someone else
    node = fakes.node()  # no colocation label
    colo.tick(node, pods, cfg_for(node), now=0)
    assert fakes.read(quota) == "50000 100000"
    labelled = fakes.node(labels={config.COLOCATION_LABEL: "true"})
    colo.tick(labelled, pods, cfg_for(labelled), now=10)  # colocation on, throttling off: no limit
    assert fakes.read(quota) == "max"

"""The colocation agent end to end against the Kubernetes API emulator (tests/adapter/kubeemu): real HTTP
calls for the Node, the pods, the ConfigMap and the Eviction API; a fake cgroup tree; fake probes whose
load the test raises and lowers."""
from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cluster_adapter.colocation import agent, api, cgroups, config, probes, qos
from cluster_adapter.gpu_agent import cli
from tests.colocation import fakes

kubeemu = pytest.importorskip("tests.adapter.kubeemu")
server = pytest.importorskip("tests.adapter.kubeemu.server")

GiB = 1 << 30
CONFIG = {"globalConfig": {"cpuThrottlingConfig": {"enable": True}, "cpuQosConfig": {"enable": True},
                           "evictingConfig": {"highUsageCountLimit": 3}}}


@pytest.fixture
def emu() -> Iterator[Any]:
    thread = kubeemu.EmulatorThread().start()
    yield thread
    thread.stop()


def config_map(document: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": config.CONFIG_MAP_NAME, "namespace": config.DEFAULT_NAMESPACE},
            "data": {config.CONFIG_KEY: json.dumps(document)}}


def names(emu: Any) -> set[str]:
    return {p["metadata"]["name"] for p in emu.call(lambda e: e.list("pods"))}


def test_pressure_throttles_then_evicts_be_pods_and_the_node_reopens(emu: Any, tmp_path: Path) -> None:
    online = [fakes.pod("web", level="LC", cpu="2", memory="2Gi"), fakes.pod("search", level="HLS", cpu="1"),
              fakes.pod("cache", level="LS", cpu="1"), fakes.pod("plain", cpu="500m")]
    offline = [fakes.pod("etl-1", level="BE", batch_cpu=1500, batch_memory=GiB),
               fakes.pod("etl-2", level="BE", batch_cpu=1000, batch_memory=GiB),
               fakes.pod("etl-3", level="BE", batch_cpu=500, batch_memory=GiB, priority=100)]
    node = fakes.node(labels={config.OVERSUBSCRIPTION_LABEL: "true"})  # 8 cpu, 16 GiB
    emu.call(lambda e: [e.put_object(o) for o in [node, config_map(CONFIG), *online, *offline]])
    stored_pods = emu.call(lambda e: e.list("pods"))  # the API server gave them their uids
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in stored_pods}
    tree = fakes.make_tree(tmp_path, "v2", "systemd", stored_pods)
    probe = probes.StaticProbe(fakes_usage(online_cpu=1000, be=[600, 400, 200], uids=uids))
    colo = agent.ColocationAgent(agent.ColocationSettings("n1"), cgroups.writer_for(tree), probe)
    client = api.KubernetesColocationApi(str(server.write_kubeconfig(emu.url, tmp_path / "kubeconfig")))
    source = api.ConfigSource()
    be_quota = tree.qos_dir("BestEffort", "cpu") / "cpu.max"

    def once(now: float) -> api.Report:
        report = api.run_once(colo, client, source, now=now)
        assert report.errors == [] and report.tick is not None and report.tick.problems == []
        return report

    def stored_node() -> dict[str, Any]:
        found: dict[str, Any] = emu.call(lambda e: e.get("nodes", "", "n1"))
        return found

    once(0)  # quiet: 2200m used of 8000m, the rest lent at 60 %
    status = stored_node()["status"]["allocatable"]
    assert status[qos.BATCH_CPU] == str((8000 - 2200) * 60 // 100)
    assert fakes.read(be_quota) == "540000 100000"  # 6400m - 1000m online
    quiet_lent = int(status[qos.BATCH_CPU])

    probe.usage = fakes_usage(online_cpu=5600, be=[600, 400, 200], uids=uids)  # 6800m: 85 %, over the 80 % watermark
    for t in (10, 20):
        once(t)
    assert int(stored_node()["status"]["allocatable"][qos.BATCH_CPU]) < quiet_lent  # less is lent
    assert fakes.read(be_quota) == "80000 100000"  # throttled to 6400 - 5600 = 800m
    assert names(emu) >= {"etl-1", "etl-2", "etl-3"}  # throttled, not yet evicted
    assert agent.EVICTING_KEY not in (stored_node()["metadata"].get("annotations") or {})

    report = once(30)  # the third high sample: evict down to the 30 % low watermark (2400m)
    assert [e.pod.name for e in report.tick.evictions] == ["etl-1", "etl-2", "etl-3"]  # lowest priority, most usage
    assert names(emu) == {"web", "search", "cache", "plain"}
    assert stored_node()["metadata"]["annotations"][agent.EVICTING_KEY] == "true"

    probe.usage = fakes_usage(online_cpu=3000, be=[], uids=uids)  # 37 %: between the watermarks
    once(40)
    assert stored_node()["metadata"]["annotations"][agent.EVICTING_KEY] == "true"
    probe.usage = fakes_usage(online_cpu=1500, be=[], uids=uids)  # 18 %: under 30 %
    once(50)
    assert stored_node()["metadata"]["annotations"][agent.EVICTING_KEY] == "false"
    assert names(emu) == {"web", "search", "cache", "plain"}  # no pod that should stay was lost
    assert fakes.read(tree.pod_dir("Burstable", uids["web"], "cpu") / "cpu.weight") == "1000"  # LC
    assert fakes.read(tree.pod_dir("Burstable", uids["cache"], "cpu") / "cpu.weight") == "500"  # LS


def test_a_configmap_that_does_not_validate_is_reported_and_the_last_good_one_kept(emu: Any, tmp_path: Path) -> None:
    node = fakes.node(labels={config.OVERSUBSCRIPTION_LABEL: "true"})
    bad = {"globalConfig": {"evictingConfig": {"evictingCPULowWatermark": 95}}}
    emu.call(lambda e: [e.put_object(node), e.put_object(config_map(CONFIG))])
    tree = fakes.make_tree(tmp_path, "v1", "cgroupfs", [])
    colo = agent.ColocationAgent(agent.ColocationSettings("n1"), cgroups.writer_for(tree),
                                 probes.StaticProbe(fakes_usage(online_cpu=0, be=[], uids={})))
    client = api.KubernetesColocationApi(str(server.write_kubeconfig(emu.url, tmp_path / "kubeconfig")))
    source = api.ConfigSource()
    api.run_once(colo, client, source, now=0)
    emu.call(lambda e: e.put_object(config_map(bad)))
    report = api.run_once(colo, client, source, now=10)
    assert report.tick is not None and report.tick.problems == [
        "configmap volcano-system/volcano-agent-configuration: evictingConfig: cpu evicting low watermark (95) "
        "is higher than high watermark (80)"]
    quota = fakes.read(tree.qos_dir("BestEffort", "cpu") / "cpu.cfs_quota_us")
    assert quota == str(8000 * 80 // 100 * 100)  # throttling from the last good ConfigMap still applies


def test_vpolicy_agent_once_runs_the_colocation_pass(emu: Any, tmp_path: Path) -> None:
    node = fakes.node(labels={config.OVERSUBSCRIPTION_LABEL: "true"})
    emu.call(lambda e: e.put_object(node))
    fakes.make_tree(tmp_path / "cgroup", "v2", "cgroupfs", [])
    fakes.make_proc(tmp_path / "proc")
    kubeconfig = server.write_kubeconfig(emu.url, tmp_path / "kubeconfig")
    parser = argparse.ArgumentParser(prog="vpolicy")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["agent", "--node", "n1", "--kubeconfig", str(kubeconfig), "--once",
                              "--features", "colocation", "--cgroup-root", str(tmp_path / "cgroup"),
                              "--proc-root", str(tmp_path / "proc"), "--sample-seconds", "0.05"])
    assert args.extension(args) == 0
    stored = emu.call(lambda e: e.get("nodes", "", "n1"))
    assert stored["status"]["allocatable"][qos.BATCH_CPU] == str(8000 * 60 // 100)  # an idle node lends 60 %
    assert stored["metadata"]["annotations"][agent.OVERSUBSCRIPTION_MEMORY_KEY] == str(16 * GiB * 60 // 100)


def fakes_usage(*, online_cpu: int, be: list[int], uids: dict[str, str]) -> probes.Usage:
    per_pod = {uids[f"etl-{i + 1}"]: probes.PodUsage(c, GiB // 2) for i, c in enumerate(be)}
    be_cpu = sum(be)
    return probes.Usage(pods_cpu_milli=online_cpu + be_cpu, pods_memory=4 * GiB, be_cpu_milli=be_cpu,
                        be_memory=len(be) * GiB // 2, per_pod=per_pod)


def test_vpolicy_agent_once_exits_1_with_one_line_per_configmap_problem(emu: Any, tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    bad = '{"globalConfig": {"evictingConfig": {"evictingCPUHighWatermark": "90"}, "cpuQosConfg": {}}}'
    cm = config_map({})
    cm["data"][config.CONFIG_KEY] = bad
    emu.call(lambda e: [e.put_object(fakes.node(labels={config.OVERSUBSCRIPTION_LABEL: "true"})), e.put_object(cm)])
    fakes.make_tree(tmp_path / "cgroup", "v1", "systemd", [])
    fakes.make_proc(tmp_path / "proc")
    parser = argparse.ArgumentParser(prog="vpolicy")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["agent", "--node", "n1", "--once", "--features", "colocation",
                              "--kubeconfig", str(server.write_kubeconfig(emu.url, tmp_path / "kubeconfig")),
                              "--cgroup-root", str(tmp_path / "cgroup"), "--proc-root", str(tmp_path / "proc"),
                              "--sample-seconds", "0"])
    with caplog.at_level("WARNING", logger="vpolicy.agent.colocation"):
        assert args.extension(args) == 1
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        'configmap volcano-system/volcano-agent-configuration: globalConfig.evictingConfig.evictingCPUHighWatermark: '
        'expected an integer, got "90"',
        "configmap volcano-system/volcano-agent-configuration: globalConfig.cpuQosConfg: unknown key "
        "(did you mean 'cpuQosConfig'?)"]


def test_turning_oversubscription_off_withdraws_the_batch_resources_from_the_node(emu: Any, tmp_path: Path) -> None:
    node = fakes.node(labels={config.OVERSUBSCRIPTION_LABEL: "true"})
    emu.call(lambda e: [e.put_object(node), e.put_object(config_map({}))])
    tree = fakes.make_tree(tmp_path, "v2", "cgroupfs", [])
    colo = agent.ColocationAgent(agent.ColocationSettings("n1"), cgroups.writer_for(tree),
                                 probes.StaticProbe(fakes_usage(online_cpu=1000, be=[], uids={})))
    client = api.KubernetesColocationApi(str(server.write_kubeconfig(emu.url, tmp_path / "kubeconfig")))
    source = api.ConfigSource()
    api.run_once(colo, client, source, now=0)
    assert qos.BATCH_CPU in emu.call(lambda e: e.get("nodes", "", "n1"))["status"]["allocatable"]
    emu.call(lambda e: e.put_object(config_map({"globalConfig": {"overSubscriptionConfig": {"enable": False}}})))
    report = api.run_once(colo, client, source, now=10)
    assert report.errors == []
    stored = emu.call(lambda e: e.get("nodes", "", "n1"))
    assert not {qos.BATCH_CPU, qos.BATCH_MEMORY} & set(stored["status"]["allocatable"])
    assert not {qos.BATCH_CPU, qos.BATCH_MEMORY} & set(stored["status"]["capacity"])
    assert stored["status"]["allocatable"]["cpu"] == "8"  # the kubelet's own figures stay
    assert stored["metadata"]["annotations"][agent.OVERSUBSCRIPTION_CPU_KEY] == "0"


def test_a_pass_lists_only_its_own_nodes_pods(emu: Any, tmp_path: Path) -> None:
    emu.call(lambda e: [e.put_object(fakes.node(labels={config.OVERSUBSCRIPTION_LABEL: "true"})),
                        e.put_object(fakes.node("n2")),
                        e.put_object(fakes.pod("here", level="BE", batch_cpu=100)),
                        e.put_object(fakes.pod("there", level="BE", batch_cpu=100, node="n2"))])
    tree = fakes.make_tree(tmp_path, "v2", "cgroupfs", [])
    colo = agent.ColocationAgent(agent.ColocationSettings("n1"), cgroups.writer_for(tree),
                                 probes.StaticProbe(fakes_usage(online_cpu=0, be=[], uids={})))
    client = api.KubernetesColocationApi(str(server.write_kubeconfig(emu.url, tmp_path / "kubeconfig")))
    assert [p["metadata"]["name"] for p in client.list_node_pods("n1")] == ["here"]
    api.run_once(colo, client, api.ConfigSource(), now=0)
    listings = [r for r in emu.call(lambda e: e.records) if r.call.verb == "list" and r.call.plural == "pods"]
    assert len(listings) == 2 and all(r.call.params.get("fieldSelector") == "spec.nodeName=n1" for r in listings)

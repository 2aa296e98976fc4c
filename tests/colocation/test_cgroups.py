"""Pod cgroups as the kubelet lays them out, and the v1/v2 writers, on fake trees in a temporary folder."""
from __future__ import annotations

from pathlib import Path

import pytest

from cluster_adapter.colocation import cgroups, config, handlers, probes, qos
from tests.colocation import fakes

UID = "1a2b-3c4d"
TREES = [pytest.param(v, d, id=f"{v}-{d}") for v in (cgroups.V1, cgroups.V2) for d in (cgroups.CGROUPFS, cgroups.SYSTEMD)]


@pytest.mark.parametrize("version, driver, qos_class, expected", [
    pytest.param("v1", "cgroupfs", "Burstable", "cpu/kubepods/burstable/pod1a2b-3c4d", id="v1-cgroupfs-burstable"),
    pytest.param("v1", "cgroupfs", "Guaranteed", "cpu/kubepods/pod1a2b-3c4d", id="v1-cgroupfs-guaranteed"),
    pytest.param("v2", "cgroupfs", "BestEffort", "kubepods/besteffort/pod1a2b-3c4d", id="v2-cgroupfs-besteffort"),
    pytest.param("v1", "systemd", "Burstable",
                 "cpu/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b_3c4d.slice",
                 id="v1-systemd-burstable"),
    pytest.param("v2", "systemd", "BestEffort",
                 "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1a2b_3c4d.slice",
                 id="v2-systemd-besteffort"),
    pytest.param("v2", "systemd", "Guaranteed", "kubepods.slice/kubepods-pod1a2b_3c4d.slice",
                 id="v2-systemd-guaranteed"),
])
def test_pod_cgroups_are_where_the_kubelet_puts_them(version: str, driver: str, qos_class: str, expected: str) -> None:
    tree = cgroups.CgroupTree(Path("/r"), version, driver)
    assert tree.pod_dir(qos_class, UID, "cpu") == Path("/r") / expected


@pytest.mark.parametrize("version, driver", TREES)
def test_the_version_and_driver_are_detected_from_the_tree(tmp_path: Path, version: str, driver: str) -> None:
    fakes.make_tree(tmp_path, version, driver, [])
    assert cgroups.CgroupTree.detect(tmp_path) == cgroups.CgroupTree(tmp_path, version, driver)


def test_v1_cpu_qos_sets_the_level_in_the_pod_and_its_containers(tmp_path: Path) -> None:
    be = fakes.pod("be", level="BE", batch_cpu=1000)
    tree = fakes.make_tree(tmp_path, "v1", "cgroupfs", [be])
    writer = cgroups.writer_for(tree)
    pod_dir = tree.pod_dir("BestEffort", "uid-be", "cpu")
    writes = writer.cpu_qos(pod_dir, -1)
    assert [w.path for w in writes] == [str(pod_dir / "cpu.qos_level"), str(pod_dir / "container-0/cpu.qos_level")]
    assert fakes.read(pod_dir / "container-0" / "cpu.qos_level") == "-1"
    assert writer.cpu_qos(pod_dir, -1) == []  # nothing changes the second time


def test_v1_without_the_qos_level_file_writes_nothing(tmp_path: Path) -> None:
    lc = fakes.pod("lc", level="LC", cpu="1", memory="1Gi")
    tree = fakes.make_tree(tmp_path, "v1", "cgroupfs", [lc])
    pod_dir = tree.pod_dir("Burstable", "uid-lc", "cpu")
    for d in (pod_dir, pod_dir / "container-0"):
        (d / "cpu.qos_level").unlink()  # a kernel without Volcano's patches
    assert cgroups.writer_for(tree).cpu_qos(pod_dir, 2) == []
    assert not (pod_dir / "cpu.qos_level").exists()


@pytest.mark.parametrize("level, idle, weight", [
    pytest.param(-1, "1", "100", id="BE-idle"), pytest.param(2, "0", "1000", id="LC-weight"),
    pytest.param(1, "0", "500", id="LS-weight"),
])
def test_v2_cpu_qos_uses_cpu_idle_and_weight(tmp_path: Path, level: int, idle: str, weight: str) -> None:
    p = fakes.pod("p", cpu="1")
    tree = fakes.make_tree(tmp_path, "v2", "systemd", [p])
    pod_dir = tree.pod_dir("Burstable", "uid-p", "cpu")
    cgroups.writer_for(tree).cpu_qos(pod_dir, level)
    assert (fakes.read(pod_dir / "cpu.idle"), fakes.read(pod_dir / "cpu.weight")) == (idle, weight)


def test_v2_memory_qos_protects_online_requests_and_caps_offline_pods(tmp_path: Path) -> None:
    lc = fakes.pod("lc", level="LC", cpu="1", memory="2Gi")
    be = fakes.pod("be", level="BE", batch_memory=1 << 30, limits={qos.BATCH_MEMORY: str(1 << 30)})
    tree = fakes.make_tree(tmp_path, "v2", "cgroupfs", [lc, be])
    cfg = config.for_node({"globalConfig": {"memoryQosConfig": {"enable": True}}},
                          fakes.node(labels={config.COLOCATION_LABEL: "true"}))
    writer = cgroups.writer_for(tree)
    for p in (lc, be):
        handlers.apply_pod(writer, qos.pod_info(p), cfg)
    assert fakes.read(tree.pod_dir("Burstable", "uid-lc", "memory") / "memory.min") == str(2 << 30)
    be_dir = tree.pod_dir("BestEffort", "uid-be", "memory")
    assert (fakes.read(be_dir / "memory.high"), fakes.read(be_dir / "memory.max")) == (str(1 << 30), str(1 << 30))


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_cpu_burst_is_bounded_by_each_containers_quota_and_summed_for_the_pod(tmp_path: Path, version: str) -> None:
    ls = fakes.pod("ls", level="LS", cpu="1", limits={"cpu": "2"}, containers=2,
                   annotations={handlers.BURST_ENABLED_KEY: "true", handlers.BURST_TIME_KEY: "150000"})
    tree = fakes.make_tree(tmp_path, version, "cgroupfs", [ls])
    pod_dir = tree.pod_dir("Burstable", "uid-ls", "cpu")
    quota_file, burst_file = ("cpu.cfs_quota_us", "cpu.cfs_burst_us") if version == "v1" else ("cpu.max", "cpu.max.burst")
    quota = {"v1": ["100000", "200000"], "v2": ["100000 100000", "200000 100000"]}[version]
    (pod_dir / "container-0" / quota_file).write_text(quota[0])
    (pod_dir / "container-1" / quota_file).write_text(quota[1])
    (pod_dir / quota_file).write_text("300000" if version == "v1" else "300000 100000")
    cfg = config.for_node({"globalConfig": {"cpuBurstConfig": {"enable": True}}},
                          fakes.node(labels={config.COLOCATION_LABEL: "true"}))
    handlers.apply_pod(cgroups.writer_for(tree), qos.pod_info(ls), cfg)
    assert fakes.read(pod_dir / "container-0" / burst_file) == "100000"  # capped at its own quota
    assert fakes.read(pod_dir / "container-1" / burst_file) == "150000"
    assert fakes.read(pod_dir / burst_file) == "250000"


@pytest.mark.parametrize("version, limited, unlimited", [
    pytest.param("v1", "250000", "-1", id="v1-cfs-quota"), pytest.param("v2", "250000 100000", "max", id="v2-cpu-max"),
])
def test_the_besteffort_quota_is_written_and_lifted(tmp_path: Path, version: str, limited: str, unlimited: str) -> None:
    tree = fakes.make_tree(tmp_path, version, "systemd", [])
    writer = cgroups.writer_for(tree)
    path = tree.qos_dir("BestEffort", "cpu") / ("cpu.cfs_quota_us" if version == "v1" else "cpu.max")
    writer.be_quota(2500)
    assert fakes.read(path) == limited
    writer.be_quota(0)
    assert fakes.read(path).split()[0] == "1000"  # never zero: the kernel's minimum, not "no limit"
    writer.be_quota(None)
    assert fakes.read(path) == unlimited


@pytest.mark.parametrize("version, driver", TREES)
def test_the_probe_reads_rates_from_the_tree_and_the_machine_from_proc(tmp_path: Path, version: str,
                                                                          driver: str) -> None:
    lc, be = fakes.pod("lc", level="LC", cpu="2", memory="1Gi"), fakes.pod("be", level="BE", batch_cpu=1000)
    tree = fakes.make_tree(tmp_path / "cg", version, driver, [lc, be])
    proc = fakes.make_proc(tmp_path / "proc", busy_ticks=0)
    probe = probes.CgroupProcProbe(cgroups.writer_for(tree), proc)
    infos = [qos.pod_info(lc), qos.pod_info(be)]
    first = probe.sample(infos, 100.0)
    assert first.pods_cpu_milli is None and first.node_cpu_milli is None  # a rate needs two samples
    fakes.set_cpu_usage(tree, tree.kube_dir("cpu"), 6_000_000_000)  # 6 cpu-seconds in 2 s: 3000m
    fakes.set_cpu_usage(tree, tree.qos_dir("BestEffort", "cpu"), 2_000_000_000)
    fakes.set_cpu_usage(tree, tree.pod_dir("BestEffort", "uid-be", "cpu"), 2_000_000_000)
    memory_dir = tree.kube_dir("memory")
    fakes.set_memory_usage(tree, memory_dir, 5 << 30)
    fakes.make_proc(proc, busy_ticks=800, mem_total_kb=16 << 20, mem_available_kb=10 << 20)  # 8 s busy in 2 s
    second = probe.sample(infos, 102.0)
    assert (second.pods_cpu_milli, second.be_cpu_milli, second.online_cpu_milli()) == (3000, 1000, 2000)
    assert second.per_pod["uid-be"].cpu_milli == 1000 and second.per_pod["uid-lc"].cpu_milli == 0
    assert second.pods_memory == 5 << 30
    assert (second.node_cpu_milli, second.node_memory) == (4000, 6 << 30)


def test_v1_memory_qos_marks_only_offline_pods(tmp_path: Path) -> None:
    lc = fakes.pod("lc", level="LC", cpu="1", memory="2Gi")
    be = fakes.pod("be", level="BE", batch_memory=1 << 30)
    tree = fakes.make_tree(tmp_path, "v1", "systemd", [lc, be])
    cfg = config.for_node({"globalConfig": {"memoryQosConfig": {"enable": True}}},
                          fakes.node(labels={config.COLOCATION_LABEL: "true"}))
    writer = cgroups.writer_for(tree)
    writes = [w for p in (lc, be) for w in handlers.apply_pod(writer, qos.pod_info(p), cfg)]
    be_dir = tree.pod_dir("BestEffort", "uid-be", "memory")
    assert [w.path for w in writes] == [str(be_dir / "memory.qos_level"), str(be_dir / "container-0/memory.qos_level")]
    assert fakes.read(be_dir / "memory.qos_level") == "-1"
    assert fakes.read(tree.pod_dir("Burstable", "uid-lc", "memory") / "memory.qos_level") == "0"


def test_switched_off_features_write_nothing(tmp_path: Path) -> None:
    ls = fakes.pod("ls", level="LS", cpu="1", annotations={handlers.BURST_ENABLED_KEY: "true"})
    tree = fakes.make_tree(tmp_path, "v2", "cgroupfs", [ls])
    cfg = config.for_node({}, fakes.node(labels={config.COLOCATION_LABEL: "true"}))  # all off by default
    assert handlers.apply_pod(cgroups.writer_for(tree), qos.pod_info(ls), cfg) == []

"""Fixtures for the adapter tests: a fresh ClusterEmulator on 127.0.0.1 per test, and clients for it."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kmock
import kubernetes.client
import pytest

from cluster_adapter.config import ApplySettings, ClientSettings, InformerSettings, SchedulerSettings
from cluster_adapter.cache import ObjectCache
from cluster_adapter.kube.client import PODS, KubeClient, Resource
from cluster_adapter.kube.informers import Informer
from cluster_adapter.scheduler import Scheduler
from tests.adapter.kubeemu import EmulatorThread
from tests.adapter.kubeemu.server import read_objects, write_kubeconfig  # noqa: F401  # reason: read_objects is shared with the adapter tests from here

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
FAST_APPLY = ApplySettings(attempts=3, backoff_initial_s=0.01, backoff_max_s=0.05)
FAST_INFORMERS = InformerSettings(watch_timeout_s=30, backoff_initial_s=0.05, backoff_max_s=0.2, sync_timeout_s=10)
FAST_SCHEDULER = SchedulerSettings(period_s=0.2, apply=FAST_APPLY, informers=FAST_INFORMERS)


def eventually(check: Callable[[], bool], timeout: float = 8.0) -> None:
    """Wait until `check()` holds (informers and the loop run in threads); fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    """Set at the end of the test: stops the informers and electors it was given to."""
    event = threading.Event()
    yield event
    event.set()


def start(client: KubeClient, cache: ObjectCache, stop: threading.Event, resource: Resource = PODS) -> Informer:
    """An informer of `resource` into `cache`, started and synced."""
    informer = Informer(client, resource, cache, FAST_INFORMERS, stop=stop).start()
    assert informer.synced.wait(5)
    return informer


def restart_watches(emu: EmulatorThread) -> threading.Event:
    """The server "restarts": every watch is dropped and new ones are refused (503) until the returned
    event is cleared."""
    blocked = threading.Event()
    blocked.set()
    emu.call(lambda e: e.faults.append(lambda call: kmock.KubernetesError(
        status=503, reason="ServiceUnavailable", message="restarting", details={})
        if blocked.is_set() and call.verb == "watch" else None))
    emu.call(lambda e: e.drop_watches())
    return blocked


@pytest.fixture
def schedulers(client: KubeClient) -> Iterator[list[Scheduler]]:
    """Schedulers a test starts (`started`), stopped when it ends, before its client closes."""
    made: list[Scheduler] = []
    yield made
    for scheduler in made:
        scheduler.stop.set()


def started(client: KubeClient, schedulers: list[Scheduler], settings: SchedulerSettings = FAST_SCHEDULER) -> Scheduler:
    """A scheduler on `client` with its informers synced, stopped with the test."""
    scheduler = Scheduler(client, settings)
    schedulers.append(scheduler)
    scheduler.start_informers()
    assert scheduler.wait_synced(5)
    return scheduler


@pytest.fixture
def emu() -> Iterator[EmulatorThread]:
    server = EmulatorThread(bookmark_interval=0.2).start()
    yield server
    server.stop()


@pytest.fixture
def client(emu: EmulatorThread) -> Iterator[KubeClient]:
    kube = KubeClient(official_api(emu), ClientSettings(request_timeout_s=5, connect_timeout_s=2))
    yield kube
    kube.close()


@pytest.fixture
def kubeconfig(emu: EmulatorThread, tmp_path: Path) -> Path:
    return write_kubeconfig(emu.url, tmp_path / "kubeconfig")


def official_api(emu: EmulatorThread) -> kubernetes.client.ApiClient:
    cfg = kubernetes.client.Configuration()
    cfg.host = emu.url
    cfg.retries = 0
    cfg.connection_pool_maxsize = 32
    return kubernetes.client.ApiClient(cfg)


def load(emu: EmulatorThread, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return emu.call(lambda e: [e.put_object(o) for o in objects])


def node(name: str, *, cpu: str = "8", memory: str = "32Gi", pods: str = "110", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
                       "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def podgroup(name: str, *, ns: str = "default", min_member: int = 1, queue: str = "default",
             phase: str = "Inqueue") -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"minMember": min_member, "queue": queue}, "status": {"phase": phase}}


def pod(name: str, *, ns: str = "default", group: str = "", cpu: str = "1", node_name: str = "",
        phase: str = "Pending", scheduler: str = "volcano", labels: dict[str, str] | None = None,
        priority: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels or {}}
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [
        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def queue(name: str, *, weight: int = 1, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": weight, **spec}, "status": {"state": "Open"}}

"""Fixtures for the controller tests: the adapter's emulator (same fixtures, reused), a controller
manager on a fake clock driven step by step, and builders for vcjobs, CronJobs and Commands."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cluster_adapter.config import ApplySettings, ClientSettings
from cluster_adapter.controllers.clock import FakeClock
from cluster_adapter.timestamps import rfc3339
from cluster_adapter.controllers.manager import ControllerManager
from cluster_adapter.controllers.options import ManagerSettings
from cluster_adapter.kube.client import KubeClient
from tests.adapter.conftest import client, emu, kubeconfig, load, node, queue  # noqa: F401  # reason: fixtures and builders reused
from tests.adapter.kubeemu import EmulatorThread, emulator

FAST_APPLY = ApplySettings(attempts=3, backoff_initial_s=0.01, backoff_max_s=0.05)
Manager = Callable[..., ControllerManager]


# 2026-01-01T00:05:30Z: a fixed place in the `*/20` cycle. Tests count cron runs in "an hour", and
# from hh:00, hh:20 or hh:40 the third run falls on the hour's last minute; starting at the real time
# made those tests fail three minutes in every twenty.
CLOCK_START = 1_767_225_930.0


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The controllers' clock, which the emulator also stamps objects with (creationTimestamp is where
    a cron's schedule starts, so the two must agree)."""
    fake = FakeClock(CLOCK_START)
    monkeypatch.setattr(emulator, "now_rfc3339", lambda: rfc3339(fake.now()))
    return fake


@pytest.fixture
def manager(client: KubeClient, clock: FakeClock) -> Iterator[Manager]:
    """`manager(controllers='*', **settings)`: a ControllerManager on the fake clock (not started)."""
    made: list[ControllerManager] = []

    def make(controllers: str = "*", *, apply: ApplySettings = FAST_APPLY, **overrides: Any) -> ControllerManager:
        settings = ManagerSettings(controllers=controllers, apply=apply, worker_threads=2,
                                   client=ClientSettings(request_timeout_s=5, connect_timeout_s=2), **overrides)
        built = ControllerManager(client, settings, clock=clock)
        made.append(built)
        return built

    yield make
    for built in made:
        built.stop.set()


def settle(manager: ControllerManager, rounds: int = 20) -> None:
    """Relist and process until a round does nothing."""
    for _ in range(rounds):
        if manager.step() == 0:
            return
    raise AssertionError("the controllers did not settle")


def vcjob(name: str, *, ns: str = "default", tasks: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulerName": "volcano", "queue": "default", "tasks": tasks or [task("worker", 2)], **spec}}


def task(name: str, replicas: int, *, cpu: str = "1", min_available: int | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "replicas": replicas, "template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}},
        **extra}
    if min_available is not None:
        out["minAvailable"] = min_available
    return out


def command(action: str, *, kind: str, target: str, ns: str = "default", name: str = "") -> dict[str, Any]:
    api_version = "batch.volcano.sh/v1alpha1" if kind == "Job" else "scheduling.volcano.sh/v1beta1"
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
            "metadata": {"name": name or f"{action.lower()}-{target}", "namespace": ns},
            "action": action, "target": {"apiVersion": api_version, "kind": kind, "name": target}}


def get(emu: EmulatorThread, plural: str, name: str, ns: str = "default") -> dict[str, Any] | None:
    return emu.call(lambda e: e.get(plural, ns if plural not in ("queues", "nodes") else "", name))


def listed(emu: EmulatorThread, plural: str) -> list[dict[str, Any]]:
    return emu.call(lambda e: e.list(plural))


def create(emu: EmulatorThread, *objects: dict[str, Any]) -> list[dict[str, Any]]:
    return load(emu, list(objects))


def set_pod_phase(emu: EmulatorThread, name: str, phase: str, *, ns: str = "default", exit_code: int | None = None,
                  node_name: str | None = None) -> None:
    """What a kubelet would write: the pod's phase (and the container's exit code)."""
    def write(e: Any) -> None:
        pod = e.get("pods", ns, name)
        assert pod is not None, name
        pod["status"]["phase"] = phase
        if exit_code is not None:
            pod["status"]["containerStatuses"] = [{"name": "main", "state": {"terminated": {"exitCode": exit_code}}}]
        if node_name:
            pod["spec"]["nodeName"] = node_name
        e.put_object(pod)
    emu.call(write)


def delete(emu: EmulatorThread, plural: str, name: str, ns: str = "default") -> None:
    from tests.adapter.kubeemu.resources import RESOURCES

    def remove(e: Any) -> None:
        kind = next(k for k in RESOURCES if k.plural == plural)
        current = e.get(plural, ns if kind.namespaced else "", name)
        if current is not None:
            e._remove(kind, current)  # noqa: SLF001  # reason: an eviction/kubelet delete, no API round trip
    emu.call(remove)


def phase_of(emu: EmulatorThread, name: str, ns: str = "default") -> str:
    job = get(emu, "jobs", name, ns) or {}
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def pods_of(emu: EmulatorThread, job: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in listed(emu, "pods")
            if (p["metadata"].get("annotations") or {}).get("volcano.sh/job-name") == job}


def set_podgroup_phase(emu: EmulatorThread, name: str, phase: str, ns: str = "default") -> None:
    """What the scheduler's enqueue writes."""
    def write(e: Any) -> None:
        group = e.get("podgroups", ns, name)
        assert group is not None, name
        group.setdefault("status", {})["phase"] = phase
        e.put_object(group)
    emu.call(write)

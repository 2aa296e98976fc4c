"""End to end with the live scheduler: the controllers and the scheduler's session, alternated against
the emulator, take a vcjob from creation to Completed; an eviction restarts it (retry counted); too
many restarts fail it. The emulator has no kubelet: the tests write pod phases as one would."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cluster_adapter.config import SchedulerSettings
from cluster_adapter.controllers.manager import ControllerManager
from cluster_adapter.kube.client import SCHEDULER_RESOURCES, APINotFound, KubeClient
from cluster_adapter.scheduler import Scheduler, SessionReport
from tests.adapter.conftest import FAST_APPLY, FAST_INFORMERS, ROOT
from tests.adapter.kubeemu import EmulatorThread
from tests.controllers.conftest import (Manager, create, delete, get, listed, node, phase_of, pods_of,
                                        set_pod_phase, settle, task, vcjob)

POLICY_EVICTED_RESTARTS = [{"event": "PodEvicted", "action": "RestartJob"}]


def schedule(client: KubeClient) -> SessionReport:
    """One scheduler session over a fresh list of the API (what `vpolicy scheduler --once` does)."""
    scheduler = Scheduler(client, SchedulerSettings(apply=FAST_APPLY, informers=FAST_INFORMERS))
    for res in SCHEDULER_RESOURCES:
        try:
            items = client.list(res).get("items") or []
        except APINotFound:
            if not res.optional:
                raise
            items = []  # as the informers read a resource this API does not serve (the emulator's quotas)
        for item in items:
            item.setdefault("apiVersion", res.api_version)
            item.setdefault("kind", res.kind)
        scheduler.cache.replace(res.name, items)
    return scheduler.run_once()


def group_phase(emu: EmulatorThread, job: str) -> str:
    groups = [g for g in listed(emu, "podgroups") if g["metadata"]["name"].startswith(f"{job}-")]
    return str((groups[0].get("status") or {}).get("phase")) if groups else ""


def run_to_running(emu: EmulatorThread, client: KubeClient, controllers: ControllerManager, job: str) -> None:
    """Controllers and scheduler alternated until every pod of `job` is bound and marked Running."""
    for _ in range(6):
        settle(controllers)
        schedule(client)
        pods = pods_of(emu, job)
        if pods and all(p["spec"].get("nodeName") for p in pods.values()):
            break
    pods = pods_of(emu, job)
    assert pods and all(p["spec"].get("nodeName") for p in pods.values()), pods
    for name in pods:
        set_pod_phase(emu, name, "Running")
    settle(controllers)


def test_vcjob_runs_through_podgroup_enqueue_bind_to_completed(emu: EmulatorThread, client: KubeClient,
                                                               manager: Manager) -> None:
    create(emu, node("n1", cpu="4"), node("n2", cpu="4"), vcjob("train", tasks=[task("worker", 3, cpu="2")]))
    controllers = manager()

    settle(controllers)
    assert group_phase(emu, "train") == "Pending" and pods_of(emu, "train") == {}  # no pods before enqueue
    schedule(client)
    assert group_phase(emu, "train") == "Inqueue"
    settle(controllers)
    assert sorted(pods_of(emu, "train")) == ["train-worker-0", "train-worker-1", "train-worker-2"]
    report = schedule(client)
    assert sorted(report.bound) == ["default/train-worker-0", "default/train-worker-1", "default/train-worker-2"]
    for name in pods_of(emu, "train"):
        set_pod_phase(emu, name, "Running")
    settle(controllers)
    assert phase_of(emu, "train") == "Running"
    for name in pods_of(emu, "train"):
        set_pod_phase(emu, name, "Succeeded")
    settle(controllers)
    job = get(emu, "jobs", "train")
    assert job is not None and job["status"]["state"]["phase"] == "Completed"
    assert job["status"]["succeeded"] == 3 and job["status"]["taskStatusCount"] == {"worker": {"phase": {"Succeeded": 3}}}
    assert listed(emu, "podgroups") == []  # a finished job's PodGroup is deleted, as Volcano's killJob does


def test_evicted_pod_restarts_the_job_and_counts_a_retry(emu: EmulatorThread, client: KubeClient,
                                                         manager: Manager) -> None:
    create(emu, node("n1", cpu="8"), vcjob("train", tasks=[task("worker", 2)], policies=POLICY_EVICTED_RESTARTS))
    controllers = manager()
    run_to_running(emu, client, controllers, "train")
    assert phase_of(emu, "train") == "Running"

    delete(emu, "pods", "train-worker-1")  # evicted
    settle(controllers)
    job = get(emu, "jobs", "train")
    assert job is not None
    assert job["status"]["retryCount"] == 1
    version = job["status"]["version"]  # bumped by every kill (Running, then each Restarting sync)
    assert version >= 1
    assert job["status"]["state"]["phase"] == "Pending"  # Restarting -> Pending once the pods are gone
    assert [c["status"] for c in job["status"]["conditions"]][-3:] == ["Running", "Restarting", "Pending"]
    assert pods_of(emu, "train") == {}  # RestartJob killed every pod
    run_to_running(emu, client, controllers, "train")
    assert phase_of(emu, "train") == "Running"
    assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in pods_of(emu, "train").values()} == \
        {str(version)}


def test_exceeding_max_retry_fails_the_job(emu: EmulatorThread, client: KubeClient, manager: Manager) -> None:
    create(emu, node("n1", cpu="8"),
           vcjob("flaky", tasks=[task("worker", 2)], policies=POLICY_EVICTED_RESTARTS, maxRetry=2))
    controllers = manager()
    run_to_running(emu, client, controllers, "flaky")
    delete(emu, "pods", "flaky-worker-0")
    settle(controllers)
    assert phase_of(emu, "flaky") == "Pending"
    run_to_running(emu, client, controllers, "flaky")
    delete(emu, "pods", "flaky-worker-0")
    settle(controllers)
    job = get(emu, "jobs", "flaky")
    assert job is not None and job["status"]["state"]["phase"] == "Failed" and job["status"]["retryCount"] == 2


def _vpolicy(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "vpolicy", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)


def test_controllers_once_and_scheduler_once_alternated_bring_a_vcjob_to_running(
        emu: EmulatorThread, kubeconfig: Path) -> None:
    """The README's walk-through: an API holding only a vcjob and nodes."""
    create(emu, node("n1", cpu="4"), node("n2", cpu="4"),
           vcjob("demo", tasks=[task("ps", 1), task("worker", 2, cpu="2")]))
    steps: list[str] = []
    for command in ("controllers", "scheduler", "controllers", "scheduler"):
        done = _vpolicy(command, "--kubeconfig", str(kubeconfig), "--once")
        assert done.returncode == 0, done.stderr[-3000:]
        steps.append(f"{command}: podgroup {group_phase(emu, 'demo') or '-'}, {len(pods_of(emu, 'demo'))} pods, "
                     f"{sum(1 for p in pods_of(emu, 'demo').values() if p['spec'].get('nodeName'))} bound")
    assert steps[:3] == ["controllers: podgroup Pending, 0 pods, 0 bound",
                         "scheduler: podgroup Inqueue, 0 pods, 0 bound",
                         "controllers: podgroup Inqueue, 3 pods, 0 bound"]
    # the session that binds writes the phase it saw at its start (Inqueue); Running follows next session
    assert steps[3] in ("scheduler: podgroup Inqueue, 3 pods, 3 bound", "scheduler: podgroup Running, 3 pods, 3 bound")
    for name in pods_of(emu, "demo"):  # the kubelet's part
        set_pod_phase(emu, name, "Running")
    done = _vpolicy("controllers", "--kubeconfig", str(kubeconfig), "--once")
    assert done.returncode == 0, done.stderr[-3000:]
    assert phase_of(emu, "demo") == "Running"
    assert {q["metadata"]["name"] for q in listed(emu, "queues")} == {"root", "default"}


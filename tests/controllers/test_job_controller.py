"""The vcjob controller against the emulator (PodGroup phases written by hand where the scheduler
would): PodGroup and pods, plugins, per-task counters, policies with exit codes, timeouts on the fake
clock, Commands, and ttlSecondsAfterFinished through the GC controller."""
from __future__ import annotations

import base64
from typing import Any

from cluster_adapter.controllers.clock import FakeClock
from tests.adapter.kubeemu import EmulatorThread
from tests.controllers.conftest import (Manager, command, create, delete, get, listed, phase_of, pods_of,
                                        set_pod_phase, set_podgroup_phase, settle, task, vcjob)


def group_of(emu: EmulatorThread, job: str) -> dict[str, Any]:
    held = get(emu, "jobs", job)
    assert held is not None
    group = get(emu, "podgroups", f"{job}-{held['metadata']['uid']}")
    assert group is not None, [g["metadata"]["name"] for g in listed(emu, "podgroups")]
    return group


def enqueue(emu: EmulatorThread, job: str) -> None:
    set_podgroup_phase(emu, group_of(emu, job)["metadata"]["name"], "Inqueue")


def running(emu: EmulatorThread, manager: Any, job: str) -> None:
    settle(manager)
    enqueue(emu, job)
    settle(manager)
    for name in pods_of(emu, job):
        set_pod_phase(emu, name, "Running")
    settle(manager)


def test_podgroup_mirrors_the_job_and_pods_wait_for_enqueue(emu: EmulatorThread, manager: Manager) -> None:
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100}
    ps = task("ps", 1, cpu="4")
    ps["template"]["spec"]["priorityClassName"] = "high"
    create(emu, high, vcjob("train", tasks=[task("worker", 3, cpu="1", min_available=2), ps], minAvailable=2,
                            priorityClassName="high", queue="default"))
    controllers = manager()
    settle(controllers)
    group = group_of(emu, "train")
    job = get(emu, "jobs", "train")
    assert job is not None
    assert group["spec"] == {"minMember": 2, "minTaskMember": {"worker": 2, "ps": 1}, "queue": "default",
                             "priorityClassName": "high", "minResources": {"cpu": "5", "memory": "2Gi"}}
    assert group["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert group["status"]["phase"] == "Pending"
    assert job["status"]["state"]["phase"] == "Pending" and pods_of(emu, "train") == {}

    enqueue(emu, "train")
    settle(controllers)
    pods = pods_of(emu, "train")
    assert sorted(pods) == ["train-ps-0", "train-worker-0", "train-worker-1", "train-worker-2"]
    annotations = pods["train-worker-1"]["metadata"]["annotations"]
    assert annotations["scheduling.k8s.io/group-name"] == group["metadata"]["name"]
    assert (annotations["volcano.sh/task-spec"], annotations["volcano.sh/job-version"]) == ("worker", "0")
    assert pods["train-worker-1"]["spec"]["schedulerName"] == "volcano"
    assert get(emu, "jobs", "train")["status"]["pending"] == 4  # type: ignore[index]


def test_status_counts_pods_per_task(emu: EmulatorThread, manager: Manager) -> None:
    create(emu, vcjob("mix", tasks=[task("a", 2), task("b", 2)], minAvailable=2))
    controllers = manager()
    running(emu, controllers, "mix")
    set_pod_phase(emu, "mix-a-0", "Succeeded")
    set_pod_phase(emu, "mix-b-1", "Pending")
    settle(controllers)
    status = get(emu, "jobs", "mix")["status"]  # type: ignore[index]
    assert (status["pending"], status["running"], status["succeeded"], status["failed"]) == (1, 2, 1, 0)
    assert status["taskStatusCount"] == {"a": {"phase": {"Running": 1, "Succeeded": 1}},
                                         "b": {"phase": {"Pending": 1, "Running": 1}}}
    assert status["state"]["phase"] == "Running"  # pending 1 <= replicas 4 - minAvailable 2


def test_env_svc_and_ssh_plugins(emu: EmulatorThread, manager: Manager) -> None:
    create(emu, vcjob("mpi", tasks=[task("master", 1), task("worker-x", 2)],
                      plugins={"env": [], "svc": ["--disable-network-policy=false"], "ssh": []}))
    controllers = manager()
    running(emu, controllers, "mpi")
    pod = pods_of(emu, "mpi")["mpi-worker-x-1"]
    container = pod["spec"]["containers"][0]
    env = {e["name"]: e.get("value") or e["valueFrom"]["configMapKeyRef"]["key"] for e in container["env"]}
    assert env["VC_TASK_INDEX"] == env["VK_TASK_INDEX"] == "1"
    assert env["VC_WORKER_X_HOSTS"] == "VC_WORKER_X_HOSTS" and env["VC_MASTER_NUM"] == "VC_MASTER_NUM"
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("mpi-worker-x-1", "mpi")
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/etc/volcano", "/root/.ssh"} <= mounts
    hosts = get(emu, "configmaps", "mpi-svc")["data"]  # type: ignore[index]
    assert hosts["worker_x.host"] == "mpi-worker-x-0.mpi\nmpi-worker-x-1.mpi"
    assert (hosts["VC_WORKER_X_HOSTS"], hosts["VC_WORKER_X_NUM"]) == ("mpi-worker-x-0.mpi,mpi-worker-x-1.mpi", "2")
    service = get(emu, "services", "mpi")
    assert service is not None and service["spec"]["clusterIP"] == "None"
    assert get(emu, "networkpolicies", "mpi") is not None
    secret = get(emu, "secrets", "mpi-ssh")
    assert secret is not None
    keys = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert keys["id_rsa"].startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert keys["authorized_keys"] == keys["id_rsa.pub"] and keys["id_rsa.pub"].startswith("ssh-rsa ")
    assert "Host mpi-worker-x-1\n  HostName mpi-worker-x-1.mpi" in keys["config"]
    assert get(emu, "jobs", "mpi")["status"]["controlledResources"] == {  # type: ignore[index]
        "plugin-env": "env", "plugin-ssh": "ssh", "plugin-svc": "svc"}
    for name in pods_of(emu, "mpi"):
        set_pod_phase(emu, name, "Succeeded")
    settle(controllers)
    assert phase_of(emu, "mpi") == "Completed"
    assert [get(emu, p, n) for p, n in (("services", "mpi"), ("secrets", "mpi-ssh"), ("configmaps", "mpi-svc"))] == \
        [None, None, None]  # removed when the finished job is killed


def test_exit_code_policy_restarts_only_the_task(emu: EmulatorThread, manager: Manager) -> None:
    restart_on_137 = [{"exitCode": 137, "action": "RestartTask"}]
    create(emu, vcjob("tt", tasks=[task("ps", 1), task("worker", 2, policies=restart_on_137)]))
    controllers = manager()
    running(emu, controllers, "tt")
    ps_uid = pods_of(emu, "tt")["tt-ps-0"]["metadata"]["uid"]
    set_pod_phase(emu, "tt-worker-0", "Failed", exit_code=137)
    settle(controllers)
    job = get(emu, "jobs", "tt")
    assert job is not None and job["status"]["retryCount"] == 1
    pods = pods_of(emu, "tt")
    assert pods["tt-ps-0"]["metadata"]["uid"] == ps_uid  # the other task was not touched
    assert {n: p["status"]["phase"] for n, p in pods.items() if n != "tt-ps-0"} == \
        {"tt-worker-0": "Pending", "tt-worker-1": "Pending"}  # recreated; the PodGroup was kept


def test_task_completed_policy_completes_the_job(emu: EmulatorThread, manager: Manager) -> None:
    create(emu, vcjob("tc", tasks=[task("master", 1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]),
                                   task("worker", 2)]))
    controllers = manager()
    running(emu, controllers, "tc")
    set_pod_phase(emu, "tc-master-0", "Succeeded")
    settle(controllers)
    assert phase_of(emu, "tc") == "Completed"
    assert sorted(pods_of(emu, "tc")) == ["tc-master-0"]  # kill soft: the running workers went, the finished stays


def test_pod_pending_timeout_fires_on_the_clock_unless_it_recovers(emu: EmulatorThread, manager: Manager,
                                                                   clock: FakeClock) -> None:
    pending_too_long = [{"event": "PodPending", "action": "RestartJob", "timeout": "5m"}]
    create(emu, vcjob("slow", policies=pending_too_long), vcjob("fine", policies=pending_too_long))
    controllers = manager()
    for name in ("slow", "fine"):
        settle(controllers)
        enqueue(emu, name)
    settle(controllers)
    for name in pods_of(emu, "fine"):
        set_pod_phase(emu, name, "Running")
    clock.advance(200)
    settle(controllers)
    assert (phase_of(emu, "slow"), phase_of(emu, "fine")) == ("Pending", "Running")
    clock.advance(101)
    settle(controllers)
    assert get(emu, "jobs", "slow")["status"]["retryCount"] == 1  # type: ignore[index]
    assert get(emu, "jobs", "fine")["status"]["retryCount"] == 0  # type: ignore[index]


def test_abort_and_resume_commands(emu: EmulatorThread, manager: Manager) -> None:
    create(emu, vcjob("cmd"))
    controllers = manager()
    running(emu, controllers, "cmd")
    set_pod_phase(emu, "cmd-worker-0", "Succeeded")
    create(emu, command("AbortJob", kind="Job", target="cmd"))
    settle(controllers)
    assert phase_of(emu, "cmd") == "Aborted"
    assert listed(emu, "commands") == []  # a command runs once
    assert sorted(pods_of(emu, "cmd")) == ["cmd-worker-0"]  # kill soft keeps the finished pod
    create(emu, command("ResumeJob", kind="Job", target="cmd"))
    settle(controllers)
    job = get(emu, "jobs", "cmd")
    assert job is not None and job["status"]["state"]["phase"] == "Pending" and job["status"]["retryCount"] == 1
    reasons = {e["reason"] for e in listed(emu, "events") if e["involvedObject"]["name"] == "cmd"}
    assert {"CommandIssued", "ExecuteAction"} <= reasons


def test_ttl_seconds_after_finished_deletes_the_job_in_time(emu: EmulatorThread, manager: Manager,
                                                            clock: FakeClock) -> None:
    create(emu, vcjob("ttl", ttlSecondsAfterFinished=60), vcjob("keep"))
    controllers = manager()
    for name in ("ttl", "keep"):
        running(emu, controllers, name)
        for pod in pods_of(emu, name):
            set_pod_phase(emu, pod, "Succeeded")
    settle(controllers)
    assert (phase_of(emu, "ttl"), phase_of(emu, "keep")) == ("Completed", "Completed")
    clock.advance(59)
    settle(controllers)
    assert get(emu, "jobs", "ttl") is not None
    clock.advance(2)
    settle(controllers)
    assert get(emu, "jobs", "ttl") is None and pods_of(emu, "ttl") == {}
    assert get(emu, "jobs", "keep") is not None


def test_disabled_gc_keeps_finished_jobs(emu: EmulatorThread, manager: Manager, clock: FakeClock) -> None:
    create(emu, vcjob("ttl", ttlSecondsAfterFinished=1))
    controllers = manager("*,-gc")
    assert "gc-controller" not in controllers.names
    running(emu, controllers, "ttl")
    for pod in pods_of(emu, "ttl"):
        set_pod_phase(emu, pod, "Succeeded")
    settle(controllers)
    clock.advance(10)
    settle(controllers)
    assert phase_of(emu, "ttl") == "Completed"


def test_a_job_waits_for_its_queue(emu: EmulatorThread, manager: Manager) -> None:
    create(emu, vcjob("lost", queue="nowhere"))
    controllers = manager()
    settle(controllers)
    assert listed(emu, "podgroups") == []
    assert any(e["reason"] == "QueueNotFound" for e in listed(emu, "events"))
    delete(emu, "jobs", "lost")

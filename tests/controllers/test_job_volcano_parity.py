"""vcjob controller details checked against Volcano's source (`pkg/controllers/job`): the TaskFailed
event, the ssh plugin's `config`, the env plugin's variables."""
from __future__ import annotations

import base64
from typing import Any

from tests.adapter.kubeemu import EmulatorThread
from tests.controllers.conftest import Manager, create, get, phase_of, pods_of, set_pod_phase, settle, task, vcjob
from tests.controllers.test_job_controller import running


def set_restarts(emu: EmulatorThread, name: str, restarts: int, ns: str = "default") -> None:
    """What a kubelet writes when a container of a Running pod restarted (restartPolicy OnFailure)."""
    def write(e: Any) -> None:
        pod = e.get("pods", ns, name)
        assert pod is not None, name
        pod["status"]["phase"] = "Running"
        pod["status"]["containerStatuses"] = [{"name": "main", "restartCount": restarts, "state": {"running": {}}}]
        e.put_object(pod)
    emu.call(write)


def test_task_failed_fires_when_container_restarts_exceed_the_task_max_retry(emu: EmulatorThread,
                                                                            manager: Manager) -> None:
    """Volcano's `jobCache.TaskFailed` (pkg/controllers/cache/cache.go): for a Pending/Running pod
    update, TaskFailed holds when the restart counts of the task's Pending/Running pods' containers
    (init containers too), summed, exceed `task.maxRetry` (0 -> 3, -1 -> never); updatePod
    (job_controller_handler.go) then sends a TaskFailedEvent, here matched by a task policy."""
    policies = [{"event": "TaskFailed", "action": "TerminateJob"}]
    create(emu, vcjob("tf", tasks=[task("worker", 2, maxRetry=2, policies=policies)]))
    controllers = manager()
    running(emu, controllers, "tf")
    set_restarts(emu, "tf-worker-0", 2)  # 2 restarts: not more than maxRetry 2
    settle(controllers)
    assert phase_of(emu, "tf") == "Running"
    set_restarts(emu, "tf-worker-1", 1)  # 3 in all > 2
    settle(controllers)
    assert phase_of(emu, "tf") in ("Terminating", "Terminated")


def test_task_failed_is_not_a_count_of_failed_pods(emu: EmulatorThread, manager: Manager) -> None:
    """Volcano's TaskFailed looks at container restarts only (cache.go `TaskFailed`), not at how many
    pods of the task have failed: a failed pod (PodFailed, no policy -> SyncJob) followed by an
    update of a Running pod without restarts is no TaskFailed."""
    policies = [{"event": "TaskFailed", "action": "AbortJob"}]
    create(emu, vcjob("nf", tasks=[task("worker", 2, min_available=2, policies=policies)], minAvailable=2))
    controllers = manager()
    running(emu, controllers, "nf")
    set_pod_phase(emu, "nf-worker-0", "Failed", exit_code=1)
    settle(controllers)
    set_restarts(emu, "nf-worker-1", 0)
    settle(controllers)
    assert phase_of(emu, "nf") == "Running"


def test_ssh_config_honours_template_hostname_and_subdomain(emu: EmulatorThread, manager: Manager) -> None:
    """Volcano's ssh plugin `generateSSHConfig` (plugins/ssh/ssh.go) names hosts like GenerateHosts:
    a template `hostname` gives one `Host <hostname>` entry for the whole task (the loop breaks),
    a template `subdomain` replaces the job name in `HostName`."""
    head = task("head", 2)
    head["template"]["spec"].update({"hostname": "boss", "subdomain": "grp"})
    worker = task("worker", 2)
    worker["template"]["spec"]["subdomain"] = "grp"
    create(emu, vcjob("sc", tasks=[head, worker], plugins={"ssh": []}))
    controllers = manager()
    settle(controllers)
    secret = get(emu, "secrets", "sc-ssh")
    assert secret is not None
    config = base64.b64decode(secret["data"]["config"]).decode()
    hosts = [line.split()[1] for line in config.splitlines() if line.startswith("Host ")]
    assert hosts == ["boss", "sc-worker-0", "sc-worker-1"]
    assert "Host boss\n  HostName boss.grp\n" in config
    assert "Host sc-worker-1\n  HostName sc-worker-1.grp\n" in config


def test_env_plugin_appends_vk_then_vc_task_index(emu: EmulatorThread, manager: Manager) -> None:
    """Volcano's env plugin `OnPodCreate` (plugins/env/env.go) appends `VK_TASK_INDEX` and then
    `VC_TASK_INDEX` to every container and init container."""
    worker = task("worker", 2)
    worker["template"]["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    create(emu, vcjob("ev", tasks=[worker], plugins={"env": []}))
    controllers = manager()
    running(emu, controllers, "ev")
    spec = pods_of(emu, "ev")["ev-worker-1"]["spec"]
    for container in spec["containers"] + spec["initContainers"]:
        assert container["env"] == [{"name": "VK_TASK_INDEX", "value": "1"}, {"name": "VC_TASK_INDEX", "value": "1"}]


def test_ssh_plugin_alone_mounts_keys_by_subpath_and_sets_no_hostname(emu: EmulatorThread, manager: Manager) -> None:
    """Volcano's ssh plugin `OnPodCreate` only calls `mountRsaKey` (plugins/ssh/ssh.go): a Secret
    volume whose items lie at `.ssh/<key>`, mounted at `--ssh-key-file-path` with `subPath: .ssh`;
    it sets no `hostname`/`subdomain` (that is the svc plugin's `OnPodCreate`)."""
    create(emu, vcjob("sh", tasks=[task("worker", 1)], plugins={"ssh": []}))
    controllers = manager()
    running(emu, controllers, "sh")
    spec = pods_of(emu, "sh")["sh-worker-0"]["spec"]
    assert "hostname" not in spec and "subdomain" not in spec
    volume = next(v for v in spec["volumes"] if v["name"] == "sh-ssh")
    assert volume["secret"]["items"] == [{"key": k, "path": f".ssh/{k}"}
                                         for k in ("id_rsa", "id_rsa.pub", "authorized_keys", "config")]
    assert {"name": "sh-ssh", "mountPath": "/root/.ssh", "subPath": ".ssh"} in spec["containers"][0]["volumeMounts"]

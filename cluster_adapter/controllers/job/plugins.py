"""Job plugins (`spec.plugins: {name: [args]}`): env, svc and ssh, as Volcano's job controller has them.

- **env**: every container (and init container) gets `VK_TASK_INDEX` and `VC_TASK_INDEX` (in that
  order, as Volcano appends them) = the pod's index in its task.
- **svc**: a headless Service named after the job (selector job-name/job-namespace, one placeholder
  port), a ConfigMap `<job>-svc` with per task `<task>.host` (one `<pod>.<job>` per line),
  `VC_<TASK>_HOSTS` (comma-joined) and `VC_<TASK>_NUM`, mounted at `/etc/volcano` and exported as env
  vars from that ConfigMap; pods get `hostname` = pod name and `subdomain` = job name; and a
  NetworkPolicy letting only the job's own pods in. Args: `--publish-not-ready-addresses`,
  `--disable-network-policy` (also manager-wide flags).
- **ssh**: a Secret `<job>-ssh` with an RSA key pair (`id_rsa`, `id_rsa.pub`, `authorized_keys`) and an
  ssh `config` naming every pod (template hostname/subdomain honoured as in the hosts ConfigMap),
  mounted at `/root/.ssh` (`--ssh-key-file-path`; subPath `.ssh`) mode 0600; the
  manager's `--ssh-private-key` file is used instead of a new key per job. Args:
  `--ssh-key-file-path=DIR`, `--ssh-port=N`. As in Volcano, ssh alone sets no pod hostname/subdomain
  (svc does).

Objects a plugin makes are owned by the job and recorded in `status.controlledResources`
(`plugin-<name>: <name>`), removed again when the job is killed (`on_job_delete`), as Volcano does.
Other plugin names (mpi, pytorch, tensorflow, ray, hcclrank) are not implemented here: the
controller reports them with a Warning event and goes on without them.
"""
from __future__ import annotations

import base64
import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cluster_adapter.controllers import names
from cluster_adapter.controllers.api import CONFIGMAPS, NETWORK_POLICIES, SECRETS, SERVICES, Api
from cluster_adapter.controllers.job import build
from cluster_adapter.controllers.options import ManagerSettings
from cluster_adapter.kube.client import APIConflict, APINotFound

log = logging.getLogger(__name__)

HOSTS_MOUNT_PATH = "/etc/volcano"
SSH_DEFAULT_PORT = 22
SSH_RELATIVE_PATH = ".ssh"  # where the keys lie inside the ssh Secret volume (Volcano's SSHRelativePath)
RSA_BITS = 2048


class Plugin(Protocol):
    name: str

    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any], task: dict[str, Any], index: int) -> None: ...

    def on_job_add(self, job: dict[str, Any]) -> None: ...

    def on_job_update(self, job: dict[str, Any]) -> None: ...

    def on_job_delete(self, job: dict[str, Any]) -> None: ...


@dataclass
class Context:
    api: Api
    settings: ManagerSettings
    hosts_written: dict[str, str] = field(default_factory=dict)  # job uid -> hash of the hosts ConfigMap data


def plugins_for(job: dict[str, Any], context: Context) -> tuple[list[Plugin], list[str]]:
    """The job's plugins, and the names of those not implemented."""
    out: list[Plugin] = []
    unknown: list[str] = []
    for name, args in sorted(((job.get("spec") or {}).get("plugins") or {}).items()):
        arguments = [str(a) for a in args or []]
        if name == "env":
            out.append(EnvPlugin())
        elif name == "svc":
            out.append(SvcPlugin(context, arguments))
        elif name == "ssh":
            out.append(SshPlugin(context, arguments))
        else:
            unknown.append(name)
    return out, unknown


def _flag(args: list[str], name: str, default: str | None = None) -> str | None:
    for arg in args:
        if arg == f"--{name}":
            return "true"
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    return default


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod.setdefault("spec", {})
    return [c for key in ("containers", "initContainers") for c in spec.get(key) or [] if isinstance(c, dict)]


def _controlled(job: dict[str, Any]) -> dict[str, str]:
    status = job.setdefault("status", {})
    if not isinstance(status.get("controlledResources"), dict):
        status["controlledResources"] = {}
    controlled: dict[str, str] = status["controlledResources"]
    return controlled


def _owned(job: dict[str, Any], kind_obj: dict[str, Any]) -> dict[str, Any]:
    meta = kind_obj.setdefault("metadata", {})
    meta["namespace"] = job["metadata"].get("namespace", "")
    meta["ownerReferences"] = [names.owner_reference(job, api_version=names.JOB_API_VERSION, kind=names.JOB_KIND)]
    return kind_obj


def _create(api: Api, res: Any, obj: dict[str, Any]) -> None:
    try:
        api.create(res, obj)
    except APIConflict:
        pass  # already there (made by an earlier sync)


def _delete(api: Api, res: Any, namespace: str, name: str) -> None:
    try:
        api.delete(res, namespace, name)
    except APINotFound:
        pass


def _set_hostname(pod: dict[str, Any], job: dict[str, Any]) -> None:
    spec = pod.setdefault("spec", {})
    spec.setdefault("hostname", pod["metadata"]["name"])
    spec.setdefault("subdomain", job["metadata"]["name"])


def hosts(job: dict[str, Any]) -> dict[str, str]:
    """The hosts ConfigMap data (GenerateHosts)."""
    out: dict[str, str] = {}
    for task in build.tasks(job):
        template_spec = (task.get("template") or {}).get("spec") or {}
        subdomain = template_spec.get("subdomain") or job["metadata"]["name"]
        count = int(task.get("replicas") or 0)
        if template_spec.get("hostname"):
            entries = [f"{template_spec['hostname']}.{subdomain}"] if count else []
        else:
            entries = [f"{build.pod_name(job, task['name'], i)}.{subdomain}" for i in range(count)]
        key = str(task["name"]).replace("-", "_")
        out[f"{key}.host"] = "\n".join(entries)
        out[f"VC_{key.upper()}_HOSTS"] = ",".join(entries)
        out[f"VC_{key.upper()}_NUM"] = str(len(entries))
    return out


class EnvPlugin:
    name = "env"

    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any], task: dict[str, Any], index: int) -> None:
        for container in _containers(pod):
            container.setdefault("env", []).extend([{"name": "VK_TASK_INDEX", "value": str(index)},
                                                    {"name": "VC_TASK_INDEX", "value": str(index)}])

    def on_job_add(self, job: dict[str, Any]) -> None:
        _controlled(job)["plugin-env"] = "env"

    def on_job_update(self, job: dict[str, Any]) -> None:
        return

    def on_job_delete(self, job: dict[str, Any]) -> None:
        _controlled(job).pop("plugin-env", None)


class SvcPlugin:
    name = "svc"

    def __init__(self, context: Context, args: list[str]) -> None:
        self.context = context
        settings = context.settings
        self.publish_not_ready = _flag(args, "publish-not-ready-addresses",
                                       "true" if settings.publish_not_ready_addresses else "false") == "true"
        self.disable_network_policy = _flag(args, "disable-network-policy",
                                            "true" if settings.disable_network_policy else "false") == "true"

    @staticmethod
    def configmap_name(job: dict[str, Any]) -> str:
        return f"{job['metadata']['name']}-svc"

    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any], task: dict[str, Any], index: int) -> None:
        _set_hostname(pod, job)
        cm = self.configmap_name(job)
        env = []
        for each in build.tasks(job):
            key = str(each["name"]).replace("-", "_").upper()
            for var in (f"VC_{key}_HOSTS", f"VC_{key}_NUM"):
                env.append({"name": var, "valueFrom": {"configMapKeyRef": {"name": cm, "key": var}}})
        for container in _containers(pod):
            container.setdefault("env", []).extend(env)
            container.setdefault("volumeMounts", []).append({"name": cm, "mountPath": HOSTS_MOUNT_PATH})
        pod["spec"].setdefault("volumes", []).append({"name": cm, "configMap": {"name": cm}})

    def on_job_add(self, job: dict[str, Any]) -> None:
        if _controlled(job).get("plugin-svc") == "svc":
            return
        api, meta = self.context.api, job["metadata"]
        self._write_hosts(job)
        selector = {names.JOB_NAME_KEY: meta["name"], names.JOB_NAMESPACE_KEY: meta.get("namespace", "")}
        _create(api, SERVICES, _owned(job, {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": meta["name"]},
            "spec": {"clusterIP": "None", "selector": selector, "publishNotReadyAddresses": self.publish_not_ready,
                     "ports": [{"name": "placeholder-volcano", "port": 1, "protocol": "TCP", "targetPort": 1}]}}))
        if not self.disable_network_policy:
            _create(api, NETWORK_POLICIES, _owned(job, {
                "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": meta["name"]},
                "spec": {"podSelector": {"matchLabels": selector},
                         "ingress": [{"from": [{"podSelector": {"matchLabels": selector}}]}],
                         "policyTypes": ["Ingress"]}}))
        _controlled(job)["plugin-svc"] = "svc"

    def on_job_update(self, job: dict[str, Any]) -> None:
        self._write_hosts(job)

    def on_job_delete(self, job: dict[str, Any]) -> None:
        if _controlled(job).get("plugin-svc") != "svc":
            return
        api, meta = self.context.api, job["metadata"]
        namespace = meta.get("namespace", "")
        _delete(api, CONFIGMAPS, namespace, self.configmap_name(job))
        _delete(api, SERVICES, namespace, meta["name"])
        if not self.disable_network_policy:
            _delete(api, NETWORK_POLICIES, namespace, meta["name"])
        self.context.hosts_written.pop(str(meta.get("uid")), None)
        _controlled(job).pop("plugin-svc", None)

    def _write_hosts(self, job: dict[str, Any]) -> None:
        """Create or update the hosts ConfigMap; skipped when this manager already wrote the same data."""
        data = hosts(job)
        digest = hashlib.sha256(repr(sorted(data.items())).encode()).hexdigest()
        uid = str(job["metadata"].get("uid"))
        if self.context.hosts_written.get(uid) == digest:
            return
        api, namespace, name = self.context.api, job["metadata"].get("namespace", ""), self.configmap_name(job)
        body = _owned(job, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
        try:
            api.create(CONFIGMAPS, body)
        except APIConflict:
            current = api.get(CONFIGMAPS, namespace, name)
            if current.get("data") != data:
                api.patch(CONFIGMAPS, namespace, name, [{"op": "replace", "path": "/data", "value": data}],
                          content_type="application/json-patch+json")
        self.context.hosts_written[uid] = digest


class SshPlugin:
    name = "ssh"

    def __init__(self, context: Context, args: list[str]) -> None:
        self.context = context
        self.mount_path = _flag(args, "ssh-key-file-path", context.settings.ssh_key_file_path) or "/root/.ssh"
        self.port = int(_flag(args, "ssh-port", str(SSH_DEFAULT_PORT)) or SSH_DEFAULT_PORT)

    @staticmethod
    def secret_name(job: dict[str, Any]) -> str:
        return f"{job['metadata']['name']}-ssh"

    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any], task: dict[str, Any], index: int) -> None:
        """mountRsaKey: the Secret's keys under `.ssh/` in the volume, mounted with subPath `.ssh`
        (the pod's hostname/subdomain are the svc plugin's business, not this one's)."""
        secret = self.secret_name(job)
        pod.setdefault("spec", {}).setdefault("volumes", []).append({"name": secret, "secret": {
            "secretName": secret, "defaultMode": 0o600,
            "items": [{"key": k, "path": f"{SSH_RELATIVE_PATH}/{k}"}
                      for k in ("id_rsa", "id_rsa.pub", "authorized_keys", "config")]}})
        for container in _containers(pod):
            container.setdefault("volumeMounts", []).append(
                {"name": secret, "mountPath": self.mount_path, "subPath": SSH_RELATIVE_PATH})

    def on_job_add(self, job: dict[str, Any]) -> None:
        if _controlled(job).get("plugin-ssh") == "ssh":
            return
        private, public = self._key_pair()
        data = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public, "config": self._config(job)}
        _create(self.context.api, SECRETS, _owned(job, {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": self.secret_name(job)}, "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}))
        _controlled(job)["plugin-ssh"] = "ssh"

    def on_job_update(self, job: dict[str, Any]) -> None:
        return

    def on_job_delete(self, job: dict[str, Any]) -> None:
        if _controlled(job).get("plugin-ssh") != "ssh":
            return
        _delete(self.context.api, SECRETS, job["metadata"].get("namespace", ""), self.secret_name(job))
        _controlled(job).pop("plugin-ssh", None)

    def _config(self, job: dict[str, Any]) -> str:
        """The ssh `config` (generateSSHConfig): one Host per pod, named as in the hosts ConfigMap —
        a task whose template sets `hostname` gives one entry `<hostname>.<subdomain>`, and a
        template `subdomain` replaces the job name."""
        lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null", ""]
        for task in build.tasks(job):
            template_spec = (task.get("template") or {}).get("spec") or {}
            subdomain = template_spec.get("subdomain") or job["metadata"]["name"]
            for index in range(int(task.get("replicas") or 0)):
                host = template_spec.get("hostname") or build.pod_name(job, task["name"], index)
                lines += [f"Host {host}", f"  HostName {host}.{subdomain}", f"  Port {self.port}", ""]
                if template_spec.get("hostname"):
                    break
        return "\n".join(lines)

    def _key_pair(self) -> tuple[str, str]:
        # cryptography is imported here only: the manager starts without it when no job uses ssh.
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        path = self.context.settings.ssh_private_key
        if path:
            key: Any = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
        else:
            key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
        private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                    serialization.NoEncryption()).decode()
        public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                               serialization.PublicFormat.OpenSSH).decode() + "\n"
        return private, public

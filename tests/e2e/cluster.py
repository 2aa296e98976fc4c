"""The e2e tests' view of the real control plane (scripts/control-plane): admin calls, deploy/'s RBAC,
ServiceAccount kubeconfigs, kwok nodes, and vpolicy's components run as processes the way a user runs
them (`vpolicy scheduler|controllers|webhook|agent ...`), each under its own ServiceAccount."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
CONTROL_PLANE = ROOT / "scripts" / "control-plane"
DEPLOY = ROOT / "deploy"
sys.path.insert(0, str(ROOT / "scripts"))
from controlplane.api import Admin  # noqa: E402  # reason: scripts/ is not a package of the project

KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
MERGE = "application/merge-patch+json"


def control_plane(run_dir: Path, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    """scripts/control-plane on the cluster whose files are in `run_dir` (the session's own)."""
    env = {**os.environ, "VPOLICY_PYTHON": sys.executable, "VPOLICY_CONTROLPLANE_RUN": str(run_dir)}
    return subprocess.run([str(CONTROL_PLANE), *args], capture_output=True, text=True, timeout=timeout, env=env)


def eventually(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll `check()` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout:.0f} s")
        time.sleep(0.2)


def load_yaml(text: str) -> list[dict[str, Any]]:
    return [d for d in YAML(typ="safe", pure=True).load_all(text) if d]


@dataclass
class Cluster:
    kubeconfig: Path
    env: dict[str, str]
    workdir: Path
    admin: Admin = field(init=False)
    made_nodes: list[str] = field(default_factory=list)  # by the running test: retired at its end
    made_namespaces: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.admin = Admin(self.env["VPOLICY_CP_SERVER"], Path(self.env["VPOLICY_CP_CA"]).parent)

    def control_plane(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return control_plane(self.workdir / "control-plane", *args, timeout=timeout)

    # -- plain calls ---------------------------------------------------------------------------
    def call(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
             ok: tuple[int, ...] = (200, 201)) -> Any:
        for attempt in range(20):  # 429 and 503 are tried again, as kubectl and client-go do
            code, answer = self.admin.call(method, path, body, content_type=content_type, timeout=30)
            if code not in (429, 503):
                break
            time.sleep(0.5)
        if code not in ok:
            raise AssertionError(f"{method} {path}: HTTP {code}: {answer}")
        return answer

    def get(self, path: str) -> Any:
        code, answer = self.admin.call("GET", path, timeout=30)
        return answer if code == 200 else None

    def items(self, path: str) -> list[dict[str, Any]]:
        return list(self.call("GET", path).get("items") or [])

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return dict(self.call("POST", collection(obj), obj))

    def apply(self, obj: dict[str, Any]) -> None:
        self.admin.apply(collection(obj), obj)

    def apply_file(self, path: Path) -> None:
        for obj in load_yaml(path.read_text()):
            self.apply(obj)

    # -- fixtures of a test --------------------------------------------------------------------
    def namespace(self, prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self.made_namespaces.append(name)
        eventually(lambda: self.get(f"/api/v1/namespaces/{name}/serviceaccounts/default"), 60,
                   f"the default ServiceAccount of {name}")
        return name

    def kwok_nodes(self, prefix: str, count: int, *, cpu: str = "8", memory: str = "32Gi", pods: str = "110",
                   labels: dict[str, str] | None = None, extra: dict[str, str] | None = None) -> list[str]:
        names = [f"{prefix}-{i}" for i in range(count)]
        self.made_nodes += names
        for name in names:
            capacity = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
            self.create({"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": name, "annotations": dict(KWOK_ANNOTATION),
                "labels": {"kubernetes.io/hostname": name, "type": "kwok", **(labels or {})}},
                "status": {"capacity": capacity, "allocatable": capacity}})
        for name in names:  # kwok marks them Ready
            eventually(lambda n=name: _ready(self.get(f"/api/v1/nodes/{n}")), 60, f"node {name} Ready")
        return names

    def retire(self) -> None:
        """End of a test: its nodes take no more pods (cordoned and tainted, so the next test's pods go to
        its own nodes) and its namespaces are deleted (the namespace controller removes what is in them)."""
        for name in self.made_nodes:
            self.admin.call("PATCH", f"/api/v1/nodes/{name}", {"spec": {
                "unschedulable": True, "taints": [{"key": "vpolicy.e2e/retired", "effect": "NoSchedule"}]}},
                content_type=MERGE)
        for name in self.made_namespaces:
            self.admin.call("DELETE", f"/api/v1/namespaces/{name}")
        self.made_nodes.clear()
        self.made_namespaces.clear()

    def service_account_kubeconfig(self, name: str, namespace: str = "volcano-system") -> Path:
        answer = self.call("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                           {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                            "spec": {"expirationSeconds": 86400}})
        config = {"apiVersion": "v1", "kind": "Config", "current-context": name,
                  "clusters": [{"name": "cp", "cluster": {"server": self.env["VPOLICY_CP_SERVER"],
                                                          "certificate-authority": self.env["VPOLICY_CP_CA"]}}],
                  "users": [{"name": name, "user": {"token": answer["status"]["token"]}}],
                  "contexts": [{"name": name, "context": {"cluster": "cp", "user": name}}]}
        path = self.workdir / f"{name}.kubeconfig"
        path.write_text(json.dumps(config))
        return path

    def pods(self, namespace: str) -> list[dict[str, Any]]:
        return self.items(f"/api/v1/namespaces/{namespace}/pods")

    def events(self, namespace: str) -> list[dict[str, Any]]:
        return self.items(f"/api/v1/namespaces/{namespace}/events")


def _ready(node: Any) -> bool:
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def collection(obj: dict[str, Any]) -> str:
    """The REST collection path of `obj` (the kinds the tests create)."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    namespace = (obj.get("metadata") or {}).get("namespace")
    plural = PLURALS[kind]
    prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    return f"{prefix}/namespaces/{namespace}/{plural}" if namespace else f"{prefix}/{plural}"


PLURALS = {"Namespace": "namespaces", "Node": "nodes", "Pod": "pods", "ServiceAccount": "serviceaccounts",
           "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "Role": "roles",
           "RoleBinding": "rolebindings", "Queue": "queues", "PodGroup": "podgroups", "Job": "jobs",
           "CronJob": "cronjobs", "PriorityClass": "priorityclasses", "PodDisruptionBudget": "poddisruptionbudgets",
           "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
           "MutatingWebhookConfiguration": "mutatingwebhookconfigurations", "ConfigMap": "configmaps",
           "Command": "commands", "Lease": "leases", "Secret": "secrets", "Service": "services"}


def _die_with_parent() -> None:
    """In the child: SIGTERM when the test process dies (killed, or a closed pipe), so no component
    outlives a test run that could not tear down (Linux's PR_SET_PDEATHSIG; elsewhere nothing)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Component:
    """One of vpolicy's commands run as a process, its output in a log file."""

    def __init__(self, name: str, args: list[str], workdir: Path) -> None:
        self.name = name
        self.log = workdir / f"{name}.log"
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.out = open(self.log, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "vpolicy", *args], stdout=self.out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT, env=env,
                                     preexec_fn=_die_with_parent)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        return int(self.proc.returncode)

    def output(self) -> str:
        if not self.out.closed:
            self.out.flush()
        return self.log.read_text(errors="replace")


def shipped_conf(workdir: Path) -> Path:
    """deploy/configmap.yaml's volcano-scheduler.conf as a file (what the Deployment mounts)."""
    [configmap] = load_yaml((DEPLOY / "configmap.yaml").read_text())
    path = workdir / "volcano-scheduler.conf"
    path.write_text(configmap["data"]["volcano-scheduler.conf"])
    return path


def scheduler(cluster: Cluster, name: str = "scheduler", *extra: str, conf: Path | None = None) -> Component:
    kubeconfig = cluster.service_account_kubeconfig("vpolicy-scheduler")
    return Component(name, ["scheduler", "--kubeconfig", str(kubeconfig), "--conf",
                            str(conf or shipped_conf(cluster.workdir)), "--period", "0.3s", *extra], cluster.workdir)


def controllers(cluster: Cluster, name: str = "controllers", *extra: str) -> Component:
    """`vpolicy controllers`, started and past its first work: the queue controller made `default` (the
    job webhook refuses jobs of a queue that does not exist, as Volcano's does)."""
    kubeconfig = cluster.service_account_kubeconfig("vpolicy-controllers")
    proc = Component(name, ["controllers", "--kubeconfig", str(kubeconfig), *extra], cluster.workdir)
    eventually(lambda: cluster.get("/apis/scheduling.volcano.sh/v1beta1/queues/default"), 60, "the default queue")
    return proc


def scheduled_events(cluster: Cluster, namespace: str) -> dict[str, int]:
    """How many `Scheduled` Events each pod got (one per bind)."""
    counts: dict[str, int] = {}
    for event in cluster.events(namespace):
        if event.get("reason") == "Scheduled" and event["involvedObject"].get("kind") == "Pod":
            name = event["involvedObject"]["name"]
            counts[name] = counts.get(name, 0) + int(event.get("count") or 1)
    return counts


def audit(cluster: Cluster, namespace: str | None = None) -> list[dict[str, Any]]:
    """The API server's audit events (what vpolicy's ServiceAccounts called, and every deletion)."""
    path = Path(cluster.env["VPOLICY_CP_AUDIT_LOG"])
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e for e in events if namespace is None or e.get("objectRef", {}).get("namespace") == namespace]


def calls(events: list[dict[str, Any]], user: str, verb: str, resource: str, subresource: str | None = None,
          code: int | None = None) -> dict[str, int]:
    """How many times `user` (a ServiceAccount of volcano-system) made this call, per object name."""
    counts: dict[str, int] = {}
    for e in events:
        ref = e.get("objectRef", {})
        if (e["user"]["username"] == f"system:serviceaccount:volcano-system:{user}" and e["verb"] == verb
                and ref.get("resource") == resource and ref.get("subresource") == subresource
                and (code is None or e.get("responseStatus", {}).get("code") == code)):
            counts[ref.get("name", "")] = counts.get(ref.get("name", ""), 0) + 1
    return counts


def forbidden(cluster: Cluster, *, after: str = "") -> list[str]:
    """Every call of vpolicy's ServiceAccounts that RBAC refused (403), as `user verb resource`; only
    those answered after the RFC 3339 time `after`, if given (a restarted API server refuses everything
    for a moment, until its RBAC cache is filled)."""
    return sorted({f"{e['user']['username'].rsplit(':', 1)[-1]} {e['verb']} {e['objectRef'].get('resource')}"
                   f"{'/' + e['objectRef']['subresource'] if e['objectRef'].get('subresource') else ''}"
                   for e in audit(cluster) if e.get("responseStatus", {}).get("code") == 403
                   and e["user"]["username"].startswith("system:serviceaccount:volcano-system:")
                   and 'is forbidden: User "' in e["responseStatus"].get("message", "")  # RBAC's answer, not
                   and e.get("stageTimestamp", "") > after})  # a namespace being deleted refusing new content

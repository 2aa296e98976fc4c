"""The four processes: their command lines, starting them detached, readiness, and stopping them.

Each runs in its own session (so a Ctrl-C in the shell that ran `up` does not reach it) with its
output in run/logs/<name>.log and its pid in run/pids/<name>.pid. A pid counts as running only while
/proc/<pid>/exe is still that binary, so a stale pid file after a reboot never matches a stranger.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from controlplane.layout import Ports, Run

SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.1/16"
KWOK_NODE_SELECTOR = "kwok.x-k8s.io/node=fake"  # the annotation that hands a Node to kwok
# The audit log records (metadata only) every request of the ServiceAccounts in volcano-system, where
# deploy/ puts vpolicy's components: what each one called, and whether RBAC let it (tests/e2e,
# benchmarks.live count them); and every deletion, whoever made it (the garbage collector's too).
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts:volcano-system"]
- level: Metadata
  verbs: [delete, deletecollection]
- level: None
"""


def command(name: str, bin_dir: Path, run: Run, ports: Ports) -> list[str]:
    c = run.certs
    exe = str(bin_dir / name)
    if name == "etcd":
        peer = f"http://127.0.0.1:{ports.etcd_peer}"
        client = f"http://127.0.0.1:{ports.etcd}"
        return [exe, "--name=vpolicy", f"--data-dir={run.etcd_data}", f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}", f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}", f"--initial-cluster=vpolicy={peer}",
                "--unsafe-no-fsync=true",  # a test cluster: durability across a power cut is not needed
                "--quota-backend-bytes=8589934592", "--log-level=warn"]
    if name == "kube-apiserver":
        return [exe, f"--etcd-servers=http://127.0.0.1:{ports.etcd}", "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1", f"--secure-port={ports.apiserver}",
                "--endpoint-reconciler-type=none",  # no endpoints for `kubernetes`: loopback is not allowed
                f"--cert-dir={run.root / 'apiserver-certs'}",
                f"--tls-cert-file={c / 'kube-apiserver.crt'}", f"--tls-private-key-file={c / 'kube-apiserver.key'}",
                f"--client-ca-file={c / 'ca.crt'}", "--authorization-mode=Node,RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={c / 'sa.pub'}", f"--service-account-signing-key-file={c / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}", "--allow-privileged=true",
                "--max-requests-inflight=1000", "--max-mutating-requests-inflight=500", "--profiling=false",
                f"--audit-policy-file={run.root / 'audit-policy.yaml'}", f"--audit-log-path={run.audit_log}",
                "--audit-log-maxsize=500", "--audit-log-maxbackup=1", "--v=1"]
    if name == "kube-controller-manager":
        kc = str(run.kubeconfig("kube-controller-manager"))
        return [exe, f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
                "--bind-address=127.0.0.1", f"--secure-port={ports.controller_manager}",
                f"--cert-dir={run.root / 'kcm-certs'}", f"--root-ca-file={c / 'ca.crt'}",
                f"--service-account-private-key-file={c / 'sa.key'}", "--use-service-account-credentials=true",
                f"--cluster-signing-cert-file={c / 'ca.crt'}", f"--cluster-signing-key-file={c / 'ca.key'}",
                "--leader-elect=false", "--kube-api-qps=200", "--kube-api-burst=400", "--profiling=false", "--v=1"]
    if name == "kwok":
        return [exe, f"--kubeconfig={run.kubeconfig('kwok')}", "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_SELECTOR}", f"--cidr={POD_CIDR}",
                "--node-ip=127.0.0.1", "--node-lease-duration-seconds=40",
                f"--server-address=127.0.0.1:{ports.kwok}"]
    raise KeyError(name)


def pid_of(name: str, run: Run, bin_dir: Path | None = None) -> int | None:
    """The pid of the running component, or None."""
    try:
        pid = int(run.pid_file(name).read_text().strip())
        exe = os.readlink(f"/proc/{pid}/exe")
    except (OSError, ValueError):
        return None
    if Path(exe.removesuffix(" (deleted)")).name != name:
        return None
    if bin_dir is not None and Path(exe).parent != bin_dir:
        return None
    return pid


def start(name: str, bin_dir: Path, run: Run, ports: Ports) -> int:
    log = open(run.log_file(name), "ab")
    log.write(f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%S')} start\n".encode())
    log.flush()
    proc = subprocess.Popen(command(name, bin_dir, run, ports), stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True, cwd=run.root)
    log.close()
    run.pid_file(name).write_text(f"{proc.pid}\n")
    return proc.pid


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def stop(name: str, run: Run, *, grace: float = 10.0) -> bool:
    """SIGTERM, then SIGKILL after `grace` seconds; True if it was running."""
    pid = pid_of(name, run)
    run.pid_file(name).unlink(missing_ok=True)
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + grace
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while alive(pid):
            time.sleep(0.05)
    _reap(pid)
    return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def log_tail(name: str, run: Run, lines: int = 30) -> str:
    try:
        return "\n".join(run.log_file(name).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""

"""Where the control plane keeps its binaries, certificates, data, logs and process ids.

Everything is under one cache directory (default ~/.cache/vpolicy/controlplane, or
$VPOLICY_CONTROLPLANE_DIR): `bin/<hash>/` per build of the Go module, `run/` for the running cluster
(or $VPOLICY_CONTROLPLANE_RUN).
"""
from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent
GO_MODULE = Path(__file__).resolve().parent / "go"
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kwok")


def cache_root() -> Path:
    env = os.environ.get("VPOLICY_CONTROLPLANE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "vpolicy" / "controlplane"


def vpolicy_cache() -> Path:
    """~/.cache/vpolicy: the Go module and build caches live beside the control plane's own."""
    return Path.home() / ".cache" / "vpolicy"


@dataclass(frozen=True)
class Run:
    """The running cluster's files."""
    root: Path

    @property
    def certs(self) -> Path:
        return self.root / "certs"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd-data"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def pids(self) -> Path:
        return self.root / "pids"

    @property
    def audit_log(self) -> Path:
        return self.logs / "audit.log"

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.root / "admin.kubeconfig"

    def kubeconfig(self, user: str) -> Path:
        return self.root / f"{user}.kubeconfig"

    def pid_file(self, component: str) -> Path:
        return self.pids / f"{component}.pid"

    def log_file(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    def make(self) -> None:
        for d in (self.root, self.certs, self.logs, self.pids, self.etcd_data):
            d.mkdir(parents=True, exist_ok=True)
        self.etcd_data.chmod(0o700)


def run_dir() -> Run:
    """$VPOLICY_CONTROLPLANE_RUN, or run/ in the cache: a test session that names its own runs its own
    cluster (same binaries), so concurrent sessions never stop or wipe each other's."""
    env = os.environ.get("VPOLICY_CONTROLPLANE_RUN")
    return Run(Path(env).expanduser() if env else cache_root() / "run")


@dataclass(frozen=True)
class Ports:
    """The loopback ports of one start of the cluster (chosen free, then kept while it runs)."""
    etcd: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    kwok: int

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1) + "\n")

    @staticmethod
    def load(path: Path) -> Ports | None:
        try:
            return Ports(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    @staticmethod
    def free() -> Ports:
        socks = []
        try:
            for _ in range(5):
                s = socket.socket()
                s.bind(("127.0.0.1", 0))
                socks.append(s)
            numbers = [s.getsockname()[1] for s in socks]
        finally:
            for s in socks:
                s.close()
        return Ports(*numbers)

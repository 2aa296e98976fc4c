"""The subcommands of scripts/control-plane.

    up [--fresh]        build if needed, start what is not running, install CRDs; last line: the admin
                        kubeconfig path. Idempotent: with everything up it only prints that path.
                        --fresh starts from an empty etcd.
    down [--purge]      stop everything (nothing is left running); --purge also deletes data and certs
    env [--json]        shell exports (KUBECONFIG, the CA, the server, the bin and log directories)
    restart NAME [--compact]  stop and start one component on the same ports (etcd, kube-apiserver, ...);
                        --compact compacts etcd while it is down (every watch resumed from before: 410)
    compact             compact etcd to its current revision (watches from before it get 410 Gone)
    build               only build (or find) the binaries; prints their directory

Exit codes: 0 done, 1 a component failed to start or the build failed (the log's tail is printed).
"""
from __future__ import annotations

import argparse
import base64
import fcntl
import json
import shutil
import sys
import urllib.request
from pathlib import Path
from typing import Any

from controlplane import build, certs, components
from controlplane.api import Admin
from controlplane.layout import COMPONENTS, SCRIPTS, Ports, Run, run_dir

REPO = SCRIPTS.parent
OUR_CRDS = REPO / "deploy" / "crds.yaml"
ONLY_OURS = {"cronjobs.batch.volcano.sh", "hypernodes.topology.volcano.sh"}  # not in Volcano 1.10's chart: deploy/'s
USERS = ("admin", "kube-controller-manager", "kwok")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="control-plane", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up")
    up.add_argument("--fresh", action="store_true", help="start from an empty etcd")
    down = sub.add_parser("down")
    down.add_argument("--purge", action="store_true", help="also delete etcd's data, certificates, logs")
    env = sub.add_parser("env")
    env.add_argument("--json", action="store_true")
    restart = sub.add_parser("restart")
    restart.add_argument("name", choices=COMPONENTS)
    restart.add_argument("--compact", action="store_true",
                         help="compact etcd while it is stopped: every watch resumed from before gets 410")
    sub.add_parser("compact")
    sub.add_parser("build")
    args = parser.parse_args(argv)
    run = run_dir()
    try:
        if args.command == "build":
            print(build.ensure_built())
        elif args.command == "up":
            print(bring_up(run, fresh=args.fresh))
        elif args.command == "down":
            bring_down(run, purge=args.purge)
        elif args.command == "env":
            print_env(run, as_json=args.json)
        elif args.command == "restart":
            restart_one(run, args.name, compact_while_down=args.compact)
        elif args.command == "compact":
            print(compact(run))
    except (build.BuildError, StartError) as exc:
        print(f"error[control-plane.{args.command}]: {exc}", file=sys.stderr)
        return 1
    return 0


class StartError(Exception):
    """A component did not become ready; the message carries its log's tail."""


def bring_up(run: Run, *, fresh: bool = False) -> Path:
    bin_dir = build.ensure_built()
    run.make()
    with _locked(run):
        certs.ensure_all(run.certs)
        ports = Ports.load(run.state_file)
        pids = {name: components.pid_of(name, run, bin_dir) for name in COMPONENTS}
        if ports is not None and not fresh and all(pids.values()):
            _wait_ready(run, ports)
            return run.admin_kubeconfig
        for name in reversed(COMPONENTS):
            components.stop(name, run)
        if fresh:
            shutil.rmtree(run.etcd_data, ignore_errors=True)
            run.audit_log.unlink(missing_ok=True)
            run.make()
        ports = Ports.free()
        ports.save(run.state_file)
        for user in USERS:
            _write_kubeconfig(run, user, ports)
        (run.root / "audit-policy.yaml").write_text(components.AUDIT_POLICY)
        for name in COMPONENTS:
            components.start(name, bin_dir, run, ports)
            _wait_started(run, ports, name)
        _wait_ready(run, ports)
        _install_crds(run, ports)
    return run.admin_kubeconfig


def bring_down(run: Run, *, purge: bool = False) -> None:
    if run.root.exists():
        with _locked(run):
            for name in reversed(COMPONENTS):
                if components.stop(name, run):
                    print(f"stopped {name}", file=sys.stderr)
    if purge:
        shutil.rmtree(run.root, ignore_errors=True)


def restart_one(run: Run, name: str, *, compact_while_down: bool = False) -> None:
    bin_dir = build.ensure_built()
    ports = Ports.load(run.state_file)
    if ports is None:
        raise StartError("the control plane was never started: run `up` first")
    with _locked(run):
        components.stop(name, run)
        if compact_while_down:
            compact(run)
        components.start(name, bin_dir, run, ports)
        _wait_started(run, ports, name)
        _wait_ready(run, ports)


def compact(run: Run) -> int:
    """Write a marker key outside the API server's prefix, then compact etcd to that write's revision:
    every revision a client can hold is gone, so every watch resumed from before gets 410 (without the
    write, a client that saw the last revision could resume). Returns the revision."""
    ports = Ports.load(run.state_file)
    if ports is None:
        raise StartError("the control plane was never started: run `up` first")
    marker = {"key": base64.b64encode(b"/vpolicy-control-plane/compacted").decode(), "value": ""}
    revision = int(_etcd(ports, "/v3/kv/put", marker)["header"]["revision"])
    _etcd(ports, "/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision


def print_env(run: Run, *, as_json: bool) -> None:
    ports = Ports.load(run.state_file)
    values = {
        "KUBECONFIG": str(run.admin_kubeconfig),
        "VPOLICY_CP_SERVER": f"https://127.0.0.1:{ports.apiserver}" if ports else "",
        "VPOLICY_CP_CA": str(run.certs / "ca.crt"),
        "VPOLICY_CP_CA_KEY": str(run.certs / "ca.key"),
        "VPOLICY_CP_ETCD": f"http://127.0.0.1:{ports.etcd}" if ports else "",
        "VPOLICY_CP_LOGS": str(run.logs),
        "VPOLICY_CP_AUDIT_LOG": str(run.audit_log),
        "VPOLICY_CP_BIN": str(build.bin_dir()),
    }
    if as_json:
        print(json.dumps(values, indent=1))
    else:
        for key, value in values.items():
            print(f"export {key}={value}")


def _locked(run: Run) -> Any:
    class Lock:
        def __enter__(self) -> None:
            self.file = open(run.root / "up.lock", "w")
            fcntl.flock(self.file, fcntl.LOCK_EX)

        def __exit__(self, *exc: object) -> None:
            self.file.close()
    return Lock()


def _write_kubeconfig(run: Run, user: str, ports: Ports) -> None:
    c = run.certs
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "vpolicy",
        "clusters": [{"name": "vpolicy", "cluster": {"server": f"https://127.0.0.1:{ports.apiserver}",
                                                     "certificate-authority": str(c / "ca.crt")}}],
        "users": [{"name": user, "user": {"client-certificate": str(c / f"{user}.crt"),
                                          "client-key": str(c / f"{user}.key")}}],
        "contexts": [{"name": "vpolicy", "context": {"cluster": "vpolicy", "user": user}}],
    }
    path = run.admin_kubeconfig if user == "admin" else run.kubeconfig(user)
    path.write_text(json.dumps(config, indent=1) + "\n")  # JSON is YAML: every client reads it


def _admin(run: Run, ports: Ports) -> Admin:
    return Admin(f"https://127.0.0.1:{ports.apiserver}", run.certs)


def _etcd(ports: Ports, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{ports.etcd}{path}", data=json.dumps(body).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        result: dict[str, Any] = json.loads(answer.read())
    return result


def _wait_started(run: Run, ports: Ports, name: str) -> None:
    def check() -> bool:
        if components.pid_of(name, run) is None:
            raise StartError(f"{name} exited; the end of {run.log_file(name)}:\n"
                             f"{components.log_tail(name, run)}")
        if name == "etcd":
            return bool(_etcd(ports, "/v3/maintenance/status", {}).get("header"))
        if name == "kube-apiserver":
            return _admin(run, ports).call("GET", "/readyz", timeout=2)[0] == 200
        return True
    try:
        Admin.wait(_admin(run, ports), name, check, timeout=120)
    except TimeoutError as exc:
        raise StartError(f"{exc}; the end of {run.log_file(name)}:\n{components.log_tail(name, run)}") from exc


def _wait_ready(run: Run, ports: Ports) -> None:
    """The API server answers and the controller manager made the default ServiceAccount, without which
    the API server refuses every pod in the namespace."""
    admin = _admin(run, ports)
    admin.wait("kube-apiserver /readyz", lambda: admin.call("GET", "/readyz", timeout=2)[0] == 200, 120)
    admin.wait("the default ServiceAccount", lambda: admin.call(
        "GET", "/api/v1/namespaces/default/serviceaccounts/default")[0] == 200, 120)


def _install_crds(run: Run, ports: Ports) -> None:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe")
    docs: list[dict[str, Any]] = []
    for path in sorted(build.volcano_crds().glob("*.yaml")):
        docs += [d for d in yaml.load_all(path.read_text()) if d]
    docs += [d for d in yaml.load_all(OUR_CRDS.read_text()) if d and d["metadata"]["name"] in ONLY_OURS]
    admin = _admin(run, ports)
    collection = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for crd in docs:
        admin.apply(collection, crd)
    for crd in docs:
        name = crd["metadata"]["name"]

        def established(name: str = name) -> bool:
            code, obj = admin.call("GET", f"{collection}/{name}")
            conditions = (obj or {}).get("status", {}).get("conditions") or [] if code == 200 else []
            return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
        admin.wait(f"CRD {name}", established, 60)

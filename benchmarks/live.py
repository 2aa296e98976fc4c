"""`python -m benchmarks.live`: `vpolicy scheduler` against a real API server at scale.

    python -m benchmarks.live [--nodes 1000] [--pods 10000] [--gang 10] [--period 1s] [--timeout 900]
        [--json] [--keep]

Starts the real control plane (`scripts/control-plane up --fresh`: kube-apiserver, etcd,
kube-controller-manager, kwok), registers `--nodes` kwok nodes (32 cpu, 128 Gi, 110 pods each), runs
`vpolicy scheduler` as deploy/ runs it (its own ServiceAccount and RBAC, the shipped conf), then
creates `--pods` pods in gangs of `--gang` (a PodGroup with minMember = gang size each, 1 cpu / 1 Gi
per pod) as fast as 32 client threads can, all at once. It measures, per pod, the time from its create
call's answer to the watch event that shows it bound (p50, p99, max), the time until the last bind,
and the scheduler's API requests per bound pod, counted in the API server's audit log (every request
of the ServiceAccount, watches and lists included, by verb).

This module only measures; it asserts nothing. `--keep` leaves the control plane running.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import ssl
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONTROL_PLANE = ROOT / "scripts" / "control-plane"
SCHEDULER_USER = "system:serviceaccount:volcano-system:vpolicy-scheduler"
NAMESPACE = "bench"


class Api:
    """Keep-alive HTTPS connections to the API server as its admin, one per thread."""

    def __init__(self, env: dict[str, str]) -> None:
        certs = Path(env["VPOLICY_CP_CA"]).parent
        self.host, port = env["VPOLICY_CP_SERVER"].removeprefix("https://").split(":")
        self.port = int(port)
        self.context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        self.context.load_cert_chain(str(certs / "admin.crt"), str(certs / "admin.key"))
        self.local = threading.local()

    def connection(self) -> http.client.HTTPSConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=60)
            self.local.conn = conn
        return conn

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        for attempt in range(5):
            conn = self.connection()
            try:
                conn.request(method, path, body=None if body is None else json.dumps(body),
                             headers={"Content-Type": "application/json", "Accept": "application/json"})
                answer = conn.getresponse()
                raw = answer.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self.local.conn = None
                time.sleep(0.2 * (attempt + 1))
                continue
            if answer.status == 429:
                time.sleep(float(answer.getheader("Retry-After") or 1))
                continue
            return answer.status, json.loads(raw) if raw else None
        raise RuntimeError(f"{method} {path}: no answer")

    def must(self, method: str, path: str, body: Any = None) -> Any:
        code, answer = self.call(method, path, body)
        if code not in (200, 201, 409):
            raise RuntimeError(f"{method} {path}: HTTP {code}: {answer}")
        return answer


class BindWatch(threading.Thread):
    """Watches the namespace's pods and notes the monotonic time each is first seen with a node."""

    def __init__(self, api: Api, resource_version: str) -> None:
        super().__init__(daemon=True)
        self.api, self.resource_version = api, resource_version
        self.bound: dict[str, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            conn = http.client.HTTPSConnection(self.api.host, self.api.port, context=self.api.context, timeout=120)
            try:
                conn.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?watch=1&allowWatchBookmarks=true"
                                    f"&resourceVersion={self.resource_version}&timeoutSeconds=600")
                answer = conn.getresponse()
                while not self.stop.is_set():
                    line = answer.readline()
                    if not line:
                        break
                    event = json.loads(line)
                    obj = event["object"]
                    if event["type"] == "ERROR":
                        raise RuntimeError(f"watch error: {obj}")
                    self.resource_version = obj["metadata"]["resourceVersion"]
                    name = obj["metadata"].get("name")
                    if event["type"] in ("ADDED", "MODIFIED") and obj.get("spec", {}).get("nodeName"):
                        self.bound.setdefault(name, time.monotonic())
            except (OSError, http.client.HTTPException):
                time.sleep(0.2)
            finally:
                conn.close()


def control_plane(*args: str) -> str:
    env = {**os.environ, "VPOLICY_PYTHON": sys.executable}
    proc = subprocess.run([str(CONTROL_PLANE), *args], capture_output=True, text=True, env=env, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"scripts/control-plane {' '.join(args)} failed:\n{proc.stderr[-4000:]}")
    return proc.stdout


def apply_manifests(api: Api) -> None:
    from ruamel.yaml import YAML

    plural = {"Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
              "ClusterRoleBinding": "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings"}
    for name in ("namespace.yaml", "rbac.yaml"):
        for obj in YAML(typ="safe").load_all((ROOT / "deploy" / name).read_text()):
            group = obj["apiVersion"]
            base = f"/api/{group}" if "/" not in group else f"/apis/{group}"
            ns = obj["metadata"].get("namespace")
            api.must("POST", f"{base}/namespaces/{ns}/{plural[obj['kind']]}" if ns else f"{base}/{plural[obj['kind']]}",
                     obj)


def scheduler_kubeconfig(api: Api, env: dict[str, str], directory: Path) -> Path:
    token = api.must("POST", "/api/v1/namespaces/volcano-system/serviceaccounts/vpolicy-scheduler/token",
                     {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                      "spec": {"expirationSeconds": 86400}})["status"]["token"]
    path = directory / "scheduler.kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "s",
        "clusters": [{"name": "c", "cluster": {"server": env["VPOLICY_CP_SERVER"],
                                               "certificate-authority": env["VPOLICY_CP_CA"]}}],
        "users": [{"name": "s", "user": {"token": token}}],
        "contexts": [{"name": "s", "context": {"cluster": "c", "user": "s"}}]}))
    return path


def make_nodes(api: Api, count: int, pool: ThreadPoolExecutor) -> float:
    started = time.monotonic()
    capacity = {"cpu": "32", "memory": "128Gi", "pods": "110"}

    def one(i: int) -> None:
        api.must("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": f"kwok-{i:04d}", "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {"kubernetes.io/hostname": f"kwok-{i:04d}", "type": "kwok"}},
            "status": {"capacity": capacity, "allocatable": capacity}})
    list(pool.map(one, range(count)))
    while True:
        nodes = api.must("GET", "/api/v1/nodes")["items"]
        ready = sum(any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or [])
                    for n in nodes)
        if ready >= count:
            return time.monotonic() - started
        time.sleep(1)


def audit_requests(path: Path, offset: int) -> Counter[str]:
    verbs: Counter[str] = Counter()
    with open(path, "rb") as log:
        log.seek(offset)
        for line in log:
            event = json.loads(line)
            if event.get("user", {}).get("username") == SCHEDULER_USER and event.get("stage") == "ResponseComplete":
                resource = event.get("objectRef", {}).get("resource", "")
                sub = event.get("objectRef", {}).get("subresource")
                verbs[f"{event['verb']} {resource}{'/' + sub if sub else ''}"] += 1
    return verbs


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.live", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--gang", type=int, default=10)
    p.add_argument("--period", default="1s")
    p.add_argument("--timeout", type=float, default=900, help="seconds to wait for every pod to be bound")
    p.add_argument("--settle", type=float, default=10, help="seconds the scheduler runs on after the last bind")
    p.add_argument("--json", action="store_true")
    p.add_argument("--keep", action="store_true", help="leave the control plane running")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the scheduler and the cluster on the way out

    control_plane("up", "--fresh")
    env = json.loads(control_plane("env", "--json"))
    api = Api(env)
    workdir = Path(env["VPOLICY_CP_LOGS"])
    pool = ThreadPoolExecutor(32)
    scheduler = None
    try:
        apply_manifests(api)
        api.must("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": NAMESPACE}})
        api.must("POST", "/apis/scheduling.volcano.sh/v1beta1/queues", {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
            "spec": {"weight": 1, "reclaimable": True}})
        while api.call("GET", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default")[0] != 200:
            time.sleep(0.2)
        nodes_s = make_nodes(api, args.nodes, pool)
        conf = workdir / "bench-volcano-scheduler.conf"
        from ruamel.yaml import YAML
        [configmap] = YAML(typ="safe").load_all((ROOT / "deploy" / "configmap.yaml").read_text())
        conf.write_text(configmap["data"]["volcano-scheduler.conf"])
        audit = Path(env["VPOLICY_CP_AUDIT_LOG"])
        offset = audit.stat().st_size if audit.exists() else 0
        log = open(workdir / "bench-scheduler.log", "wb")
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "vpolicy", "scheduler", "--kubeconfig",
             str(scheduler_kubeconfig(api, env, workdir)), "--conf", str(conf), "--period", args.period],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        rv = api.must("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?limit=1")["metadata"]["resourceVersion"]
        watch = BindWatch(api, rv)
        watch.start()
        created: dict[str, float] = {}
        lock = threading.Lock()
        gangs = (args.pods + args.gang - 1) // args.gang

        def gang(g: int) -> None:
            name = f"g{g:04d}"
            size = min(args.gang, args.pods - g * args.gang)
            api.must("POST", f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{NAMESPACE}/podgroups", {
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"minMember": size, "queue": "default"}})
            for i in range(size):
                pod = f"{name}-{i}"
                api.must("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", {
                    "apiVersion": "v1", "kind": "Pod", "metadata": {
                        "name": pod, "namespace": NAMESPACE, "annotations": {"scheduling.k8s.io/group-name": name}},
                    "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "image": "busybox",
                             "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}})
                with lock:
                    created[pod] = time.monotonic()

        started = time.monotonic()
        list(pool.map(gang, range(gangs)))
        create_s = time.monotonic() - started
        deadline = time.monotonic() + args.timeout
        while len(watch.bound) < args.pods and time.monotonic() < deadline and scheduler.poll() is None:
            time.sleep(0.5)
        all_bound_s = (max(watch.bound.values()) - started) if watch.bound else float("nan")
        time.sleep(args.settle)  # the writes that follow the binds (Events, PodGroup status) count too
        watch.stop.set()
        latencies = [watch.bound[p] - t for p, t in created.items() if p in watch.bound]
        result = {
            "nodes": args.nodes, "pods": args.pods, "gangs": gangs, "period": args.period,
            "nodes_ready_s": round(nodes_s, 1), "create_s": round(create_s, 1), "bound": len(latencies),
            "p50_s": round(statistics.median(latencies), 2) if latencies else None,
            "p99_s": round(percentile(latencies, 0.99), 2) if latencies else None,
            "max_s": round(max(latencies), 2) if latencies else None,
            "all_bound_s": round(all_bound_s, 1),
        }
    finally:
        if scheduler is not None:
            scheduler.terminate()  # its watches end: the audit log records them (read below)
            try:
                scheduler.wait(30)
            except subprocess.TimeoutExpired:
                scheduler.kill()
        pool.shutdown()
        if not args.keep:
            control_plane("down")
    time.sleep(1)  # the API server writes a watch's audit event when the watch ends
    requests = audit_requests(audit, offset)
    total = sum(requests.values())
    result.update(scheduler_requests=total, requests_per_bound_pod=round(total / max(1, result["bound"]), 2),
                  requests_by_verb=dict(requests.most_common()))
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print("| nodes | pods | gangs | create (s) | bound | p50 (s) | p99 (s) | max (s) | last bind (s) | "
              "requests / bound pod |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        r = result
        print(f"| {r['nodes']} | {r['pods']} | {r['gangs']} | {r['create_s']} | {r['bound']} | {r['p50_s']} | "
              f"{r['p99_s']} | {r['max_s']} | {r['all_bound_s']} | {r['requests_per_bound_pod']} |")
        print("scheduler requests by verb: " + ", ".join(f"{k} {v}" for k, v in r["requests_by_verb"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Realistic cluster dumps, and `vpolicy dry-run` on them timed end to end as a user runs it.

`python -m benchmarks.dumps --size S|M|L --format yaml|json` writes (once; cached under
`~/.cache/vpolicy/dumps`) the `steady` benchmark cluster of `benchmarks.generate` as the `kind: List` that
`kubectl get nodes,pods,podgroups,queues,priorityclasses,namespaces -A -o yaml|json` prints, with the field
noise real objects carry and the scheduler never reads: managedFields, the last-applied annotation, owner
references, default tolerations, projected service-account volumes, env, probes, container statuses and
conditions on pods; addresses, conditions, node info and a long image list on nodes. It then runs
`vpolicy dry-run --cluster DUMP --conf CONF --output json` as a child process (the way a user pays for
start-up too), several times, and prints the wall time, the child's peak RSS and the breakdown the child
reports through `VPOLICY_TIMINGS` (start-up, read, build snapshot, compile, session, report).

The seeded object noise is deterministic: the same size and seed give the same bytes. The dump writer for
YAML is a small block-style emitter here (kubectl's layout: two-space indent, `- ` items at the parent's
column, strings quoted only when YAML would read them as something else).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks import generate as gen
from vpolicy.load import manifest

CACHE = Path(os.environ.get("VPOLICY_CACHE", Path.home() / ".cache" / "vpolicy")) / "dumps"
FORMATS = ("yaml", "json")
VERSION = 3  # bump when the noise changes, so cached dumps are rewritten
_CONF = Path(__file__).resolve().parent.parent / "examples"
_IMAGES = ("registry.k8s.io/kube-proxy", "docker.io/library/python", "nvcr.io/nvidia/pytorch",
           "ghcr.io/example/trainer", "quay.io/prometheus/node-exporter", "docker.io/calico/node",
           "registry.k8s.io/pause", "nvcr.io/nvidia/k8s-device-plugin", "docker.io/library/busybox")


# --- the noise -----------------------------------------------------------------------------------
def _uid(rng: random.Random) -> str:
    return "%08x-%04x-%04x-%04x-%012x" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16),
                                          rng.getrandbits(16), rng.getrandbits(48))


def _digest(rng: random.Random) -> str:
    return "sha256:" + "%064x" % rng.getrandbits(256)


def _fields_v1(obj: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """managedFields' `fieldsV1`: the object's own field set, as the API server records it."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if isinstance(value, Mapping) and depth < 1:
            out[f"f:{key}"] = {".": {}, **_fields_v1(value, depth + 1)}
        elif isinstance(value, list) and value and isinstance(value[0], Mapping) and depth < 1:
            out[f"f:{key}"] = {f'k:{{"name":"{item.get("name", i)}"}}': {".": {}, **_fields_v1(item, depth + 1)}
                               for i, item in enumerate(value)}
        else:
            out[f"f:{key}"] = {}
    return out


def _managed(obj: Mapping[str, Any], manager: str, when: str, rng: random.Random) -> list[dict[str, Any]]:
    spec = {k: v for k, v in obj.items() if k in ("metadata", "spec")}
    entries = [{"apiVersion": obj["apiVersion"], "fieldsType": "FieldsV1", "fieldsV1": _fields_v1(spec),
                "manager": manager, "operation": "Update", "time": when}]
    if "status" in obj and obj["kind"] == "Node":
        entries.append({"apiVersion": obj["apiVersion"], "fieldsType": "FieldsV1",
                        "fieldsV1": _fields_v1({"status": obj["status"]}), "manager": rng.choice(
                            ("kubelet", "vc-scheduler", "vc-controller-manager")), "operation": "Update",
                        "subresource": "status", "time": when})
    return entries


def _noisy_pod(pod: dict[str, Any], rng: random.Random, serial: int) -> dict[str, Any]:
    meta, spec, status = pod["metadata"], pod["spec"], pod["status"]
    when = meta.get("creationTimestamp", "2024-05-01T08:00:00Z")
    group = meta.get("annotations", {}).get("scheduling.k8s.io/group-name", "")
    meta["generateName"] = f"{group or meta['name']}-"
    meta["resourceVersion"] = str(100_000 + serial)
    meta.setdefault("uid", _uid(rng))
    meta.setdefault("labels", {}).update({"app.kubernetes.io/managed-by": "volcano", "volcano.sh/job-name": group
                                          or meta["name"], "pod-template-hash": "%010x" % rng.getrandbits(40)})
    if group:
        meta["ownerReferences"] = [{"apiVersion": "batch.volcano.sh/v1alpha1", "blockOwnerDeletion": True,
                                    "controller": True, "kind": "Job", "name": group, "uid": _uid(rng)}]
    per_job = random.Random(group or meta["name"])  # a job's pods run one image, as a controller makes them
    image = f"{per_job.choice(_IMAGES)}:v1.{per_job.randrange(30)}.{per_job.randrange(10)}"
    container = spec["containers"][0]
    container.update({
        "image": image, "imagePullPolicy": "IfNotPresent", "command": ["python", "-m", "trainer"],
        "args": ["--epochs", str(rng.randrange(1, 100)), "--data", f"s3://bucket/{meta['name']}"],
        "env": [{"name": f"ENV_{i}", "value": f"value-{rng.getrandbits(24):06x}"} for i in range(2)]
        + [{"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}],
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                          "name": "kube-api-access-%05x" % serial, "readOnly": True},
                         {"mountPath": "/data", "name": "data"}]})
    spec.update({
        "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        "restartPolicy": "OnFailure", "securityContext": {}, "serviceAccount": "default",
        "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
        "volumes": [{"name": "kube-api-access-%05x" % serial, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
            {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                        "path": "namespace"}]}}]}},
            {"emptyDir": {}, "name": "data"}]})
    spec.setdefault("tolerations", []).extend([
        {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
         "tolerationSeconds": 300},
        {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
         "tolerationSeconds": 300}])
    running = status["phase"] == "Running"
    status.update({"qosClass": "Burstable", "conditions": [
        {"lastProbeTime": None, "lastTransitionTime": when, "status": "True" if running else "False", "type": t}
        for t in ("Initialized", "Ready", "PodScheduled")]})
    if running:
        status.update({
            "hostIP": f"10.0.{serial % 250}.{serial % 200 + 1}", "podIP": f"172.16.{serial % 250}.{serial % 199 + 2}",
            "podIPs": [{"ip": f"172.16.{serial % 250}.{serial % 199 + 2}"}], "startTime": when,
            "containerStatuses": [{"containerID": "containerd://%064x" % rng.getrandbits(256), "image": image,
                                   "imageID": f"{image.split(':')[0]}@{_digest(rng)}", "lastState": {},
                                   "name": container["name"], "ready": True, "restartCount": 0, "started": True,
                                   "state": {"running": {"startedAt": when}}}]})
    else:
        status["conditions"][-1].update({"reason": "Unschedulable",
                                         "message": "0/1000 nodes are available: pod group is not ready"})
    applied = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": meta["name"], "namespace": meta.get(
        "namespace", "default")}, "spec": {"containers": [{"name": container["name"], "image": image}]}}
    meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = \
        json.dumps(applied, separators=(",", ":")) + "\n"
    meta["managedFields"] = _managed(pod, "kubectl-client-side-apply", when, rng)
    return pod


def _noisy_node(node: dict[str, Any], rng: random.Random, serial: int) -> dict[str, Any]:
    meta, status = node["metadata"], node["status"]
    when = "2024-04-01T08:00:00Z"
    meta.update({"creationTimestamp": when, "resourceVersion": str(10_000 + serial), "uid": _uid(rng)})
    meta.setdefault("labels", {}).update({
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux", "node-role.kubernetes.io/worker": ""})
    meta.setdefault("annotations", {}).update({
        "node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": f"i-{rng.getrandbits(64):016x}"})})
    node.setdefault("spec", {}).update({"podCIDR": f"172.16.{serial % 256}.0/24",
                                        "providerID": f"aws:///us-east-1a/i-{rng.getrandbits(64):016x}"})
    status["conditions"] = [
        {"lastHeartbeatTime": when, "lastTransitionTime": when, "message": f"kubelet has no {what}",
         "reason": f"KubeletHas{reason}", "status": "False", "type": kind}
        for kind, what, reason in (("MemoryPressure", "memory pressure", "SufficientMemory"),
                                   ("DiskPressure", "disk pressure", "NoDiskPressure"),
                                   ("PIDPressure", "pid pressure", "SufficientPID"))] + [
        {"lastHeartbeatTime": when, "lastTransitionTime": when, "message": "kubelet is posting ready status",
         "reason": "KubeletReady", "status": "True", "type": "Ready"}]
    status.update({
        "addresses": [{"address": f"10.0.{serial % 250}.{serial % 200 + 1}", "type": "InternalIP"},
                      {"address": meta["name"], "type": "Hostname"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"architecture": "amd64", "bootID": _uid(rng), "containerRuntimeVersion": "containerd://1.7.13",
                     "kernelVersion": "6.1.0-18-amd64", "kubeProxyVersion": "v1.30.2", "kubeletVersion": "v1.30.2",
                     "machineID": "%032x" % rng.getrandbits(128), "operatingSystem": "linux",
                     "osImage": "Debian GNU/Linux 12 (bookworm)", "systemUUID": _uid(rng)},
        "images": [{"names": [f"{image}@{_digest(rng)}", f"{image}:v1.{i}.{rng.randrange(10)}"],
                    "sizeBytes": rng.randrange(10**6, 10**10)}
                   for i, image in enumerate(rng.choice(_IMAGES) for _ in range(30))]})
    node["metadata"]["managedFields"] = _managed(node, "kubelet", when, rng)
    return node


def realistic_objects(generated: gen.Generated, *, seed: int = 1) -> Iterator[dict[str, Any]]:
    """The generated cluster as API objects, each with the noise above (pods and nodes), in dump order."""
    rng = random.Random(f"dumps:{seed}:{generated.size.name}")
    for serial, obj in enumerate(manifest.to_objects(generated.snapshot)):
        if obj["kind"] == "Pod":
            yield _noisy_pod(obj, rng, serial)
        elif obj["kind"] == "Node":
            yield _noisy_node(obj, rng, serial)
        else:
            obj["metadata"].setdefault("resourceVersion", str(serial))
            yield obj


# --- writing -------------------------------------------------------------------------------------
_PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./-]*$")
_NOT_PLAIN = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"})


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _NOT_PLAIN:
        return text
    return json.dumps(text)  # a JSON string is a valid double-quoted YAML scalar


def _emit(value: Any, indent: int, out: list[str]) -> None:
    """Block YAML for a mapping or list at `indent` (the caller wrote the key or dash before it)."""
    pad = " " * indent
    if isinstance(value, Mapping):
        first = True
        for key, item in value.items():
            lead = "" if first and out and out[-1].endswith("- ") else pad
            first = False
            _emit_entry(f"{lead}{_scalar(key)}:", item, indent, out)
        return
    for item in value:
        out.append(f"{pad}- ")
        if isinstance(item, Mapping) and item:
            _emit(item, indent + 2, out)
        elif isinstance(item, list) and item:
            out[-1] = f"{pad}-\n"
            _emit(item, indent + 2, out)
        else:
            out[-1] = f"{pad}- {_flow_empty(item)}\n"


def _emit_entry(head: str, item: Any, indent: int, out: list[str]) -> None:
    if isinstance(item, Mapping) and item:
        out.append(head + "\n")
        _emit(item, indent + 2, out)
    elif isinstance(item, list) and item:
        out.append(head + "\n")
        _emit(item, indent, out)  # kubectl writes a list's dashes at its key's column
    else:
        out.append(f"{head} {_flow_empty(item)}\n")


def _flow_empty(item: Any) -> str:
    if isinstance(item, Mapping):
        return "{}"
    if isinstance(item, list):
        return "[]"
    return _scalar(item)


def to_yaml(document: Mapping[str, Any]) -> str:
    out: list[str] = []
    _emit(document, 0, out)
    return "".join(out)


def dump_path(size: str, fmt: str, *, seed: int = 1, gz: bool = False, fault: bool = False) -> Path:
    """The cached dump of `size` in `fmt`, written first if missing. With `fault`, one pod nine tenths of
    the way in asks for `cpu: 2x` (a bad quantity): the loader must find it and say where it is."""
    path = CACHE / f"steady-{size}-seed{seed}-v{VERSION}{'-fault' if fault else ''}.{fmt}{'.gz' if gz else ''}"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    generated = gen.generate(gen.SIZES[size], "steady", seed=seed)
    objects = realistic_objects(generated, seed=seed)
    if fault:
        objects = _with_fault(list(objects))
    with tempfile.NamedTemporaryFile("wb", dir=CACHE, delete=False) as tmp:
        raw = gzip.open(tmp, "wb", compresslevel=3) if gz else tmp
        with raw as out:
            _write_list(objects, fmt, out)
    os.replace(tmp.name, path)
    return path


def _with_fault(objects: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    pods = [o for o in objects if o["kind"] == "Pod"]
    pods[len(pods) * 9 // 10]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2x"
    return iter(objects)


def _write_list(objects: Iterator[dict[str, Any]], fmt: str, out: Any) -> None:
    """The List as kubectl prints it, written object by object (an L dump does not fit in memory twice)."""
    if fmt == "json":
        out.write(b'{\n    "apiVersion": "v1",\n    "items": [\n')
        first = True
        for obj in objects:
            body = json.dumps(obj, indent=4).replace("\n", "\n        ")
            out.write((("" if first else ",\n") + "        " + body).encode())
            first = False
        out.write(b'\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
        return
    out.write(b"apiVersion: v1\nitems:\n")
    for obj in objects:
        out.write(to_yaml({"items": [obj]})[len("items:\n"):].encode())
    out.write(b'kind: List\nmetadata:\n  resourceVersion: ""\n')


# --- timing --------------------------------------------------------------------------------------
def conf_path() -> Path:
    return _CONF / "volcano-scheduler.conf"


def run_once(dump: Path, *, extra: Sequence[str] = (), expect_error: bool = False) -> dict[str, Any]:
    """One `vpolicy dry-run` as a child: wall seconds, peak RSS (MiB), the child's own phase timings."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as timings, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        env = {**os.environ, "VPOLICY_TIMINGS": timings.name}
        # Start-up as a user pays it: an installed package's modules are compiled once (pip does it at
        # install; Python writes `__pycache__` on the first run), not on every start as they are where
        # PYTHONDONTWRITEBYTECODE is set (0.2 s of the 0.5). The bytecode goes to a cache of its own.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(CACHE.parent / "pycache")
        command = [sys.executable, "-m", "vpolicy", "dry-run", "--cluster", str(dump), "--conf", str(conf_path()),
                   "--output", "json", *extra]
        start = time.perf_counter()
        env["VPOLICY_SPAWNED_AT"] = repr(time.time())
        child = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        child.returncode = code
        err.seek(0)
        errors = err.read().decode()
        if code != (1 if expect_error else 0):
            raise RuntimeError(f"dry-run exited {code}: {errors[-2000:]}")
        out.seek(0)
        decisions = out.read()
        phases = json.loads(Path(timings.name).read_text() or "{}")
    cpu = usage.ru_utime + usage.ru_stime
    out_doc: dict[str, Any] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                               "peak_rss_mib": round(usage.ru_maxrss / 1024), "phases": phases,
                               "decisions_sha256": _decisions_hash(decisions)}
    if expect_error:
        out_doc["error"] = errors.strip().splitlines()[0] if errors.strip() else ""
    return out_doc


def _decisions_hash(output: bytes) -> str:
    """The decision document's hash without its `stats` (session timings differ run to run)."""
    try:
        document = json.loads(output)
    except ValueError:
        return ""
    document.pop("stats", None)
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:16]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dumps", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(gen.SIZES), default="S")
    parser.add_argument("--format", choices=FORMATS, default="json")
    parser.add_argument("--gz", action="store_true", help="gzip-compress the dump (reads `.gz`)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write-only", action="store_true", help="write the dump and print its path")
    parser.add_argument("--fault", action="store_true",
                        help="also time the same dump with one malformed pod deep inside (the error's report)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    dump = dump_path(args.size, args.format, seed=args.seed, gz=args.gz)
    made = time.perf_counter() - start
    size_mb = dump.stat().st_size / 1e6
    print(f"dump: {dump} ({size_mb:.1f} MB{'; written in %.0f s' % made if made > 1 else ''})", flush=True)
    if args.write_only:
        return 0
    faulty = dump_path(args.size, args.format, seed=args.seed, gz=args.gz, fault=True) if args.fault else None
    runs, faults = [], []
    for _ in range(args.runs):  # alternating, so both see the same machine
        runs.append(run_once(dump))
        if faulty is not None:
            faults.append(run_once(faulty, expect_error=True))
    best = min(runs, key=lambda r: r["wall_s"])
    result: dict[str, Any] = {"size": args.size, "format": args.format + (".gz" if args.gz else ""),
                              "file_mb": round(size_mb, 1), "walls_s": [r["wall_s"] for r in runs],
                              "cpus_s": [r["cpu_s"] for r in runs], "best": best}
    if faults:
        worst = max(faults, key=lambda r: r["wall_s"])
        clean_load = [r["phases"].get("startup", 0) + r["phases"].get("read", 0)
                      + r["phases"].get("build snapshot", 0) for r in runs]
        result["fault"] = {"walls_s": [r["wall_s"] for r in faults], "cpus_s": [r["cpu_s"] for r in faults],
                           "error": worst.get("error", ""),
                           "vs_clean_load_wall": round(min(r["wall_s"] for r in faults) / min(clean_load), 2)}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

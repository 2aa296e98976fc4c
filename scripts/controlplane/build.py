"""Build the control plane's four binaries once per version of the Go module, and find them after.

The binaries go to `bin/<hash>/`, where the hash covers the module's files and the Go version, so a
changed pin builds anew and an unchanged one is found in a millisecond. `go build` uses the module and
build caches under ~/.cache/vpolicy (the first build fetches about 400 modules from the module proxy
and compiles for 15-30 minutes on 2 cores; later ones reuse the build cache). Volcano's module is
fetched into the same module cache for its CRDs (`volcano_crds`), never copied into the repository.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from controlplane.layout import COMPONENTS, GO_MODULE, cache_root, vpolicy_cache

PACKAGES = {  # binary name -> Go package path, as built from the module in go/
    "etcd": "./cmd/etcd",
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kwok": "sigs.k8s.io/kwok/cmd/kwok",
}
VOLCANO = "volcano.sh/volcano@v1.10.0"  # the release whose Helm chart CRDs are installed
VOLCANO_CRDS = "installer/helm/chart/volcano/crd/bases"


class BuildError(Exception):
    """Go is missing or the build failed; the message says where the log is."""


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GOMODCACHE=str(vpolicy_cache() / "gomod"), GOCACHE=str(vpolicy_cache() / "gobuild"),
               GOFLAGS="-mod=readonly -buildvcs=false", GOTOOLCHAIN="local", CGO_ENABLED="0")
    return env


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError("the `go` command is not on PATH: install Go >= 1.24 to build the control plane")
    return go


def build_key() -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in GO_MODULE.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(GO_MODULE)).encode() + b"\0" + path.read_bytes())
    version = subprocess.run([_go(), "env", "GOVERSION"], capture_output=True, text=True, check=True,
                             env=go_env()).stdout.strip()
    digest.update(version.encode())
    return digest.hexdigest()[:16]


def bin_dir() -> Path:
    return cache_root() / "bin" / build_key()


def built() -> Path | None:
    """The directory with all four binaries, or None if this version is not built yet."""
    d = bin_dir()
    return d if all((d / name).is_file() for name in COMPONENTS) else None


def ensure_built(*, quiet: bool = False) -> Path:
    """Build (at most one process at a time builds; others wait for it) and return the bin directory."""
    found = built()
    if found is not None:
        return found
    lock_path = cache_root() / "build.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = built()
        if found is not None:
            return found
        return _build(quiet=quiet)


def _build(*, quiet: bool) -> Path:
    target = bin_dir()
    staging = target.with_name(target.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    log = vpolicy_cache() / "logs" / "controlplane-build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if not quiet:
        print(f"building the control plane (first time: 15-30 min on 2 cores); log: {log}", file=sys.stderr)
    cmd = [_go(), "build", "-trimpath", "-ldflags=-s -w", "-o", str(staging) + "/", *PACKAGES.values()]
    with open(log, "a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.run(cmd, cwd=GO_MODULE, env=go_env(), stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise BuildError(f"go build failed (exit {proc.returncode}); see {log}")
    missing = [name for name in COMPONENTS if not (staging / name).is_file()]
    if missing:
        raise BuildError(f"go build made no {', '.join(missing)}; see {log}")
    staging.rename(target)
    seconds = time.monotonic() - started
    (target / "build.json").write_text(json.dumps({"seconds": round(seconds, 1)}) + "\n")
    if not quiet:
        print(f"built in {seconds:.0f} s: {target}", file=sys.stderr)
    return target


def volcano_crds() -> Path:
    """The directory of Volcano's own CRDs (its Helm chart's, from its module in the module cache)."""
    proc = subprocess.run([_go(), "mod", "download", "-json", VOLCANO], capture_output=True, text=True,
                          cwd=vpolicy_cache(), env={**go_env(), "GOFLAGS": ""})
    if proc.returncode != 0:
        raise BuildError(f"go mod download {VOLCANO} failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    directory = Path(json.loads(proc.stdout)["Dir"]) / VOLCANO_CRDS
    if not directory.is_dir():
        raise BuildError(f"{VOLCANO} has no {VOLCANO_CRDS}")
    return directory

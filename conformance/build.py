"""Build the Go oracle once per source version and cache the binary under ~/.cache/vpolicy/oracle/.

The cache key is a hash of every file of `conformance/oracle/` (go.mod, go.sum, *.go) and the Go
version, so an edit rebuilds and an unchanged tree costs one hash. Go's own caches live beside it
(`~/.cache/vpolicy/gomod`, `~/.cache/vpolicy/go-build`) unless the caller set GOMODCACHE / GOCACHE.
`python -m conformance.build` (or `scripts/build-oracle`) prints the binary's path; exit 1 when Go is
missing or the build fails, with Go's own message.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "oracle"
CACHE = Path(os.environ.get("VPOLICY_CACHE", Path.home() / ".cache" / "vpolicy"))


class OracleBuildError(RuntimeError):
    """Go is absent or `go build` failed; the message says which, with Go's output."""


def source_hash(go_version: str) -> str:
    digest = hashlib.sha256(go_version.encode())
    for path in sorted(SOURCE.iterdir()):
        if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOMODCACHE", str(CACHE / "gomod"))
    env.setdefault("GOCACHE", str(CACHE / "go-build"))
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -modcacherw").strip()
    return env


def oracle_path(*, log: bool = False) -> Path:
    """The built oracle for the current sources, building it first when the cache has none."""
    go = shutil.which("go")
    if go is None:
        raise OracleBuildError("Go is not installed (no `go` on PATH): the conformance oracle is a Go program "
                               "(conformance/oracle); install Go >= 1.22 and retry")
    env = go_env()
    version = subprocess.run([go, "version"], capture_output=True, text=True, env=env, check=False).stdout.strip()
    target = CACHE / "oracle" / source_hash(version) / "oracle"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"oracle.{os.getpid()}.partial")
    start = time.monotonic()
    if log:
        print(f"building the Volcano oracle into {target} (first build: several minutes)", file=sys.stderr)
    done = subprocess.run([go, "build", "-trimpath", "-o", str(partial), "."], cwd=SOURCE, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise OracleBuildError(f"go build of conformance/oracle failed:\n{done.stderr.strip()}")
    partial.replace(target)
    if log:
        print(f"built in {time.monotonic() - start:.0f} s", file=sys.stderr)
    return target


def main() -> int:
    try:
        print(oracle_path(log=True))
    except OracleBuildError as exc:
        print(f"build-oracle: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

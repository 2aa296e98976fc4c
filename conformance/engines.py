"""The two engines behind one call each: Volcano through the oracle process, vpolicy in process.

`Oracle` keeps one `oracle --batch` process for a whole run (Volcano's start-up then costs once) and
asks it one JSON line per session. `run_vpolicy` is `vpolicy dry-run` on the same objects, written to a
temporary file as the `kind: List` the oracle reads.
"""
from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from vpolicy.errors import PolicyError
from vpolicy.harness.dryrun import dry_run

Document = dict[str, Any]


class EngineError(RuntimeError):
    """An engine refused a case or died; the message says which and why."""


class VolcanoPanic(EngineError):
    """Volcano's own code panicked on the case (one of its asserts): no decision to compare with."""


class Oracle:
    def __init__(self, binary: Path) -> None:
        self._binary = binary
        self._proc = self._start()
        self._count = 0

    def _start(self) -> subprocess.Popen[str]:
        return subprocess.Popen([str(self._binary), "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def run(self, cluster_json: str, conf: str, *, ties: str = "random") -> Document:
        """Volcano's session on the case. `ties="first"`: equally scored nodes go to the one first in the
        dump, as vpolicy's do, instead of Volcano's random draw (conformance/oracle/ties.go): one of the
        outcomes Volcano can produce."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._count += 1
        line = json.dumps({"id": str(self._count), "cluster": cluster_json, "conf": conf, "ties": ties})
        try:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
            answer = self._proc.stdout.readline()
        except BrokenPipeError:
            answer = ""
        if not answer:
            self._proc.kill()
            self._stop(self._proc)
            self._proc = self._start()  # the next case gets a fresh process
            raise EngineError("the Volcano oracle died on this case (a fatal error outside a recoverable panic)")
        result = json.loads(answer)
        if result.get("error", "").startswith("volcano panicked:"):
            raise VolcanoPanic(result["error"])
        if result.get("error"):
            raise EngineError(f"Volcano refused the case: {result['error']}")
        doc: Document = result["document"]
        return doc

    def close(self) -> None:
        self._stop(self._proc)

    @staticmethod
    def _stop(proc: subprocess.Popen[str]) -> None:
        try:
            if proc.stdin:
                proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_vpolicy(cluster_json: str, conf: str) -> Document:
    with tempfile.TemporaryDirectory(prefix="vpolicy-conformance-") as tmp:
        cluster = Path(tmp) / "cluster.json"
        cluster.write_text(cluster_json)
        conf_path = Path(tmp) / "volcano-scheduler.conf"
        conf_path.write_text(conf)
        try:
            result = dry_run([str(cluster)], conf=str(conf_path))
        except PolicyError as exc:
            raise EngineError(f"vpolicy refused the case: {exc}") from exc
        except Exception as exc:  # a crash is a finding about this case, not the end of the run
            raise EngineError(f"vpolicy crashed: {type(exc).__name__}: {exc}") from exc
        return result.document()

"""A scheduler extender both engines ask in the `extender` family: its answers depend only on the names
in each request, so Volcano's session and vpolicy's hear the same ones.

Verbs (the path's last part): `predicate` fails some (task, node) pairs, resolvably or not;
`predicateFlaky` also answers some pairs with HTTP 500 (a failed call, which `extender.ignorable`
decides); `predicateUnresolvable` fails the same pairs, every one UnschedulableAndUnresolvable (the
family's preempting confs: v1.10.0's preempt pipelines a preemptor onto a node a resolvable failure
refuses, main does not, the listed version gap `preempt-v1.10-pipelines-without-predicate`, whose
knock-on placements of the preemptor's gang and of the jobs after it no recogniser can tell apart); `jobEnqueueable` permits, abstains on or rejects a job by its name, `queueOverused` calls
a queue overused and `jobReady` a job ready by theirs; `prioritize` scores every node 0-49; `prioritizeFlaky` fails the call for some tasks (the
family uses it only with `ignorable`: a failed prioritize call without it leaves Volcano's
PrioritizeNodes with no scores and allocate dereferences a nil node, util/scheduler_helper.go:99-102
and actions/allocate/allocate.go:280 at v1.10.0); `onSessionOpen` and `onSessionClose` answer nothing.

A case's conf names the server as `EXTENDER_URL`; `resolve` starts one server per process, on a free
port of 127.0.0.1, and puts its address there.
"""
from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from conformance.generate import EXTENDER_URL, Case


def _draw(*names: str) -> int:
    """A number 0-999 fixed by the names (the same in every process)."""
    return int(hashlib.sha256("|".join(names).encode()).hexdigest()[:8], 16) % 1000


def answer(verb: str, body: Any) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON answer to one request."""
    if verb in ("onSessionOpen", "onSessionClose"):
        return 200, {}
    task = str((body.get("task") or {}).get("Name", ""))
    if verb in ("predicate", "predicateFlaky", "predicateUnresolvable"):
        node = str((body.get("node") or {}).get("Name", ""))
        d = _draw("predicate", task, node)
        if verb == "predicateFlaky" and d < 100:
            return 500, {}
        if d >= 850:
            code = 3 if d >= 930 or verb == "predicateUnresolvable" else 2
            return 200, {"status": "refused by the extender", "code": code}
        return 200, {"status": "", "code": 0}
    if verb in ("prioritize", "prioritizeFlaky"):
        if verb == "prioritizeFlaky" and _draw("prioritize-fails", task) < 250:
            return 500, {}
        nodes = [str(n.get("Name", "")) for n in body.get("nodes") or ()]
        return 200, {"nodeScore": {n: float(_draw("prioritize", task, n) % 50) for n in nodes}, "errorMessage": ""}
    if verb == "jobEnqueueable":
        d = _draw("enqueue", str((body.get("job") or {}).get("Name", "")))
        return 200, {"status": 1 if d < 500 else 0 if d < 800 else -1}
    if verb == "queueOverused":
        return 200, {"overused": _draw("overused", str((body.get("queue") or {}).get("Name", ""))) < 300}
    if verb == "jobReady":
        return 200, {"status": _draw("ready", str((body.get("job") or {}).get("Name", ""))) < 800}
    return 404, {}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"null") or {}
        except ValueError:
            body = {}
        status, reply = answer(self.path.rstrip("/").rsplit("/", 1)[-1], body if isinstance(body, dict) else {})
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        pass


_server: ThreadingHTTPServer | None = None
_lock = threading.Lock()


def url() -> str:
    """The address of this process's server, started on first use."""
    global _server
    with _lock:
        if _server is None:
            _server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
            _server.daemon_threads = True
            threading.Thread(target=_server.serve_forever, name="conformance-extender", daemon=True).start()
        return f"http://127.0.0.1:{_server.server_address[1]}"


def resolve(c: Case) -> Case:
    """`c` with its conf naming this process's server, when it names one."""
    if EXTENDER_URL not in c.conf:
        return c
    return Case(c.family, c.seed, c.index, c.objects, c.conf.replace(EXTENDER_URL, url()))

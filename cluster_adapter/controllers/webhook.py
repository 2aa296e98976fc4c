"""The admission webhook server: AdmissionReview (admission.k8s.io/v1) over HTTPS around the pure
rules of `vpolicy.admission`, at Volcano's paths:

    POST /jobs/mutate  /jobs/validate  /queues/mutate  /queues/validate  /podgroups/mutate
         /podgroups/validate  /pods/mutate                    GET /healthz

A mutating answer carries a JSONPatch replacing the sections that defaulting changed; a validating
answer is allowed, or denied with every violation in one message (code 400, or 403 for deletes).
Validation that needs the cluster (queues, PodGroup counts, namespace annotations) asks a `Lookup`,
`ClusterLookup` reading through the adapter's client for each review (no cache: admission must see
the queue that was just closed); without one those checks are skipped. The server is the standard
library's threading HTTP server with TLS from `ssl`; certificates are files the operator provides
(cert-manager, or `kubectl create secret tls`).
"""
from __future__ import annotations

import base64
import json
import logging
import ssl
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from cluster_adapter.controllers.api import NAMESPACES, PODGROUPS, QUEUES
from cluster_adapter.config import ApplySettings
from cluster_adapter.kube import retry
from cluster_adapter.kube.client import APIError, KubeClient, Resource
from vpolicy.admission import common, hypernodes, jobs, podgroups, pods, queues

log = logging.getLogger(__name__)
MAX_BODY = 8 * 1024 * 1024  # bytes; the API server sends at most a few MiB per review


class Lookup(Protocol):
    def queues(self) -> dict[str, dict[str, Any]]: ...

    def podgroup_counts(self) -> dict[str, int]: ...

    def namespace_annotations(self, namespace: str) -> dict[str, str]: ...


# A read the API server answers 429 or 5xx (a restarted server answers 429 "storage is (re)initializing"
# for a few seconds, tests/e2e found) is tried again for about 3 s, well within the 10 s the API server
# gives a webhook, before the review is refused.
_READ_RETRY = ApplySettings(attempts=6, backoff_initial_s=0.1, backoff_max_s=1.0)


class ClusterLookup:
    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def _list(self, res: Resource) -> list[Any]:
        return list(retry.attempt(lambda: self.client.list(res), settings=_READ_RETRY).get("items") or [])

    def queues(self) -> dict[str, dict[str, Any]]:
        items = self._list(QUEUES)
        return {str(q["metadata"]["name"]): q for q in items if isinstance(q, dict)}

    def podgroup_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for group in self._list(PODGROUPS):
            queue = str((group.get("spec") or {}).get("queue") or "default")
            counts[queue] = counts.get(queue, 0) + 1
        return counts

    def namespace_annotations(self, namespace: str) -> dict[str, str]:
        try:
            return dict((self.client.get_object(NAMESPACES, "", namespace).get("metadata") or {}).get(
                "annotations") or {})
        except APIError:
            return {}


Handler = Callable[[dict[str, Any], "Lookup | None", str], dict[str, Any]]


def review(path: str, body: Mapping[str, Any], lookup: Lookup | None, *, scheduler_name: str = "volcano") -> dict[str, Any]:
    """The AdmissionReview answer for one request at `path`."""
    request = body.get("request") or {}
    handler = ROUTES.get(path)
    if handler is None:
        raise KeyError(path)
    try:
        response = handler(request, lookup, scheduler_name)
    except APIError as exc:
        log.warning("%s: cluster lookup failed: %s", path, exc)
        response = _deny(f"admission could not read the cluster: {exc}", code=500)
    response["uid"] = request.get("uid", "")
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def serve(address: str, port: int, *, cert: str, key: str, lookup: Lookup | None,
          scheduler_name: str = "volcano") -> ThreadingHTTPServer:
    """A TLS server bound and ready; the caller runs `serve_forever()` (and `shutdown()`)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)

    class _Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802  # reason: http.server's naming
            if self.path == "/healthz":
                self._send(200, b"ok", "text/plain")
            else:
                self._send(404, b"not found", "text/plain")

        def do_POST(self) -> None:  # noqa: N802  # reason: http.server's naming
            path = self.path.split("?", 1)[0]
            if path not in ROUTES:
                self._send(404, b"no such webhook", "text/plain")
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    raise ValueError("request too large")
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("not an AdmissionReview")
            except ValueError as exc:
                self._send(400, f"bad AdmissionReview: {exc}".encode(), "text/plain")
                return
            answer = review(path, body, lookup, scheduler_name=scheduler_name)
            self._send(200, json.dumps(answer).encode(), "application/json")

        def _send(self, code: int, data: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  # reason: the base class's name
            log.debug("webhook: " + format, *args)

    server = ThreadingHTTPServer((address, port), _Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    return server


# handlers ---------------------------------------------------------------------------------------------
def _jobs_mutate(request: dict[str, Any], lookup: Lookup | None, scheduler_name: str) -> dict[str, Any]:
    obj = request.get("object") or {}
    return _patched(obj, jobs.default_job(obj, scheduler_name=scheduler_name))


def _jobs_validate(request: dict[str, Any], lookup: Lookup | None, scheduler_name: str) -> dict[str, Any]:
    if request.get("operation") == "DELETE":
        return _allow()
    old = request.get("oldObject") if request.get("operation") == "UPDATE" else None
    queue_map = lookup.queues() if lookup is not None and old is None else None
    return _verdict(jobs.validate_job(request.get("object") or {}, queues=queue_map, old=old))


def _queues_mutate(request: dict[str, Any], lookup: Lookup | None, scheduler_name: str) -> dict[str, Any]:
    obj = request.get("object") or {}
    return _patched(obj, queues.default_queue(obj))


def _queues_validate(request: dict[str, Any], lookup: Lookup | None, scheduler_name: str) -> dict[str, Any]:
    queue_map = lookup.queues() if lookup is not None else None
    counts = lookup.podgroup_counts() if lookup is not None else None
    if request.get("operation") == "DELETE":
        name = str(request.get("name") or ((request.get("oldObject") or {}).get("metadata") or {}).get("name") or "")
        return _verdict(queues.validate_queue_delete(name, queues=queue_map or {}, podgroups=counts), code=403)
    old = request.get("oldObject") if request.get("operation") == "UPDATE" else None
    return _verdict(queues.validate_queue(request.get("object") or {}, queues=queue_map, podgroups=counts, old=old))


def _podgroups_mutate(request: dict[str, Any], lookup: Lookup | None, scheduler_name: str) -> dict[str, Any]:
    obj = request.get("object") or {}
    namespace = str(request.get("namespace") or (obj.get("metadata") or {}).get("namespace") or "")
    annotations = lookup.namespace_annotations(namespace) if lookup is not None and namespace else {}
    return _patched(obj, podgroups.default_podgroup(obj, namespace_annotations=annotations))


def _podgroups_validate(request: dict[str, Any], lookup: Lookup | None, scheduler_name: str) -> dict[str, Any]:
    if request.get("operation") == "DELETE":
        return _allow()
    queue_map = lookup.queues() if lookup is not None else None
    return _verdict(podgroups.validate_podgroup(request.get("object") or {}, queues=queue_map))


def _hypernodes_validate(request: dict[str, Any], lookup: Lookup | None, scheduler_name: str) -> dict[str, Any]:
    if request.get("operation") == "DELETE":
        return _allow()
    return _verdict(hypernodes.validate_hypernode(request.get("object") or {}))


def _pods_mutate(request: dict[str, Any], lookup: Lookup | None, scheduler_name: str) -> dict[str, Any]:
    obj = request.get("object") or {}
    return _patched(obj, pods.default_pod(obj))


ROUTES: dict[str, Handler] = {
    "/jobs/mutate": _jobs_mutate, "/jobs/validate": _jobs_validate,
    "/queues/mutate": _queues_mutate, "/queues/validate": _queues_validate,
    "/podgroups/mutate": _podgroups_mutate, "/podgroups/validate": _podgroups_validate,
    "/pods/mutate": _pods_mutate, "/hypernodes/validate": _hypernodes_validate,
}


def json_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Top-level sections that differ, each added or replaced whole."""
    ops: list[dict[str, Any]] = []
    for key in sorted(set(after)):
        if before.get(key) != after.get(key):
            ops.append({"op": "replace" if key in before else "add", "path": f"/{key}", "value": after[key]})
    return ops


def _patched(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    response = _allow()
    ops = json_patch(before, after)
    if ops:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
    return response


def _verdict(violations: list[common.Violation], *, code: int = 400) -> dict[str, Any]:
    return _allow() if not violations else _deny(common.message(violations), code=code)


def _allow() -> dict[str, Any]:
    return {"allowed": True}


def _deny(message: str, *, code: int) -> dict[str, Any]:
    return {"allowed": False, "status": {"code": code, "message": message,
                                         "reason": "Forbidden" if code == 403 else "BadRequest"}}

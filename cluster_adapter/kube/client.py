"""The one door to the Kubernetes API: a connection, JSON-level calls, and our own error hierarchy.

Every call goes through the official `kubernetes` client's `ApiClient` (kubeconfig or in-cluster
configuration, bearer tokens and their refresh, TLS, urllib3) by URL path, and answers are decoded
here as plain JSON. That avoids the 37.x model layer where it is wrong (a successful `pods/binding`
raises a pydantic `ValidationError` unless `_preload_content=False`; `CustomObjectsApi` maps only 201
on create), costs nothing per watch event, and saves seconds of start-up. Client exceptions never leave this module: `translate` turns each into
an `APIError` subclass chained from the original, so callers decide on *kinds* of failure
(conflict, not found, throttled, transient) without importing the client (cf. kopf's `errors.py`).

What it does not do: retry (see `retrying`), cache, or decide anything. Writes pass one token
bucket (`--kube-api-qps/--kube-api-burst`, as Volcano has), because the Python client has none.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import kubernetes.client
import kubernetes.config
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from cluster_adapter.config import ClientSettings

_T = TypeVar("_T")
CONNECTIONS = 32  # urllib3 pool size: 7 watches + 16 bind workers + status, events, lease
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"


# Errors -------------------------------------------------------------------------------------------
class APIError(Exception):
    """A failed API call. `status` is the HTTP code (None when no answer came back)."""

    transient = False

    def __init__(self, message: str, *, status: int | None = None, reason: str = "", verb: str = "",
                 retry_after: float | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.verb = verb
        self.retry_after = retry_after
        self.details = details or {}

    @property
    def code_label(self) -> str:
        return str(self.status) if self.status is not None else "none"


class APIBadRequest(APIError):
    """400/422: the request itself is wrong; retrying the same request cannot help."""


class APIUnauthorized(APIError):
    """401/403: credentials or RBAC."""


class APINotFound(APIError):
    """404: the object (or the resource type) is not there."""


class APIConflict(APIError):
    """409: stale resourceVersion, already exists, already bound, or a failed precondition."""


class APIExpired(APIError):
    """410: the resourceVersion is older than the server's history: list again."""


class APITooManyRequests(APIError):
    """429: throttled by the server, or an eviction a PodDisruptionBudget forbids now."""

    transient = True


class APIServerError(APIError):
    """5xx: the server failed; the same request may succeed later."""

    transient = True


class APIUnavailable(APIError):
    """No answer: connection refused or reset, timeout."""

    transient = True


_BY_STATUS: dict[int, type[APIError]] = {400: APIBadRequest, 401: APIUnauthorized, 403: APIUnauthorized,
                                         404: APINotFound, 409: APIConflict, 410: APIExpired,
                                         422: APIBadRequest, 429: APITooManyRequests}


def translate(exc: BaseException, verb: str = "") -> APIError:
    """Our error for a client, urllib3 or socket failure (the original is chained by the caller)."""
    if isinstance(exc, APIError):
        return exc
    if isinstance(exc, ApiException):
        status = int(exc.status) if exc.status else None
        body: dict[str, Any] = {}
        try:
            body = json.loads(exc.body) if exc.body else {}
        except (TypeError, ValueError):
            body = {}
        message = str(body.get("message") or exc.reason or "API error")
        retry_after: float | None = None
        headers = exc.headers or {}
        raw = headers.get("Retry-After") if hasattr(headers, "get") else None
        if raw:
            try:
                retry_after = float(raw)
            except ValueError:
                retry_after = None
        cls = _BY_STATUS.get(status or 0) or (APIServerError if (status or 0) >= 500 else APIError)
        return cls(f"{verb}: {status} {body.get('reason') or exc.reason}: {message}", status=status,
                   reason=str(body.get("reason") or exc.reason or ""), verb=verb, retry_after=retry_after,
                   details=body.get("details") if isinstance(body.get("details"), dict) else None)
    if isinstance(exc, (urllib3.exceptions.HTTPError, OSError, TimeoutError)):
        return APIUnavailable(f"{verb}: no answer from the API server: {exc}", verb=verb)
    raise exc


def call(verb: str, fn: Callable[[], _T]) -> _T:
    """Run one client call; any client failure comes out as an APIError chained from it."""
    try:
        return fn()
    except (ApiException, urllib3.exceptions.HTTPError, OSError, TimeoutError) as exc:
        raise translate(exc, verb) from exc


# Resources the scheduler reads -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Resource:
    name: str  # the informer's name: nodes, pods, ...
    api_version: str
    kind: str
    plural: str
    namespaced: bool
    optional: bool = False  # a CRD that may not be installed: a 404 means "none", not a failure

    @property
    def group(self) -> str:
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""

    @property
    def version(self) -> str:
        return self.api_version.rsplit("/", 1)[-1]

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The URL path of the collection (all namespaces when `namespace` is None) or of one object."""
        base = f"/apis/{self.api_version}" if self.group else f"/api/{self.version}"
        parts = [base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name:
            parts.append(quote(name, safe=""))
        if subresource:
            parts.append(subresource)
        return "/".join(parts)


NODES = Resource("nodes", "v1", "Node", "nodes", False)
PODS = Resource("pods", "v1", "Pod", "pods", True)
NAMESPACES = Resource("namespaces", "v1", "Namespace", "namespaces", False)
PRIORITY_CLASSES = Resource("priorityclasses", "scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False)
QUEUES = Resource("queues", "scheduling.volcano.sh/v1beta1", "Queue", "queues", False)
PODGROUPS = Resource("podgroups", "scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups", True)
VCJOBS = Resource("jobs", "batch.volcano.sh/v1alpha1", "Job", "jobs", True, optional=True)
HYPERNODES = Resource("hypernodes", "topology.volcano.sh/v1alpha1", "HyperNode", "hypernodes", False, optional=True)
# what the pdb and resourcequota plugins read; optional, so an API without them (an emulator) reads none
PDBS = Resource("poddisruptionbudgets", "policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True,
                optional=True)
RESOURCE_QUOTAS = Resource("resourcequotas", "v1", "ResourceQuota", "resourcequotas", True, optional=True)
# what numa-aware reads (written per node by Volcano's resource-exporter); optional like the above
NUMATOPOLOGIES = Resource("numatopologies", "nodeinfo.volcano.sh/v1alpha1", "Numatopology", "numatopologies", False,
                          optional=True)
# what predicates' VolumeZone, VolumeBinding and NodeVolumeLimits read; optional like the above (an API
# emulator may serve none of them: no volumes, no attach limits)
PERSISTENT_VOLUMES = Resource("persistentvolumes", "v1", "PersistentVolume", "persistentvolumes", False, optional=True)
PERSISTENT_VOLUME_CLAIMS = Resource("persistentvolumeclaims", "v1", "PersistentVolumeClaim", "persistentvolumeclaims",
                                    True, optional=True)
STORAGE_CLASSES = Resource("storageclasses", "storage.k8s.io/v1", "StorageClass", "storageclasses", False,
                           optional=True)
CSI_NODES = Resource("csinodes", "storage.k8s.io/v1", "CSINode", "csinodes", False, optional=True)
SCHEDULER_RESOURCES = (NODES, PODS, NAMESPACES, PRIORITY_CLASSES, QUEUES, PODGROUPS, VCJOBS, HYPERNODES, PDBS,
                       RESOURCE_QUOTAS, NUMATOPOLOGIES, PERSISTENT_VOLUMES, PERSISTENT_VOLUME_CLAIMS, STORAGE_CLASSES,
                       CSI_NODES)
EVENTS = Resource("events", "v1", "Event", "events", True)
LEASES = Resource("leases", "coordination.k8s.io/v1", "Lease", "leases", True)


# Rate limit -----------------------------------------------------------------------------------------
class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._qps, self._burst, self._clock = qps, burst, clock
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def take(self) -> None:
        if self._qps <= 0:
            return
        while True:
            with self._lock:
                now = self._clock()
                self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
                self._last = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                wait = (1 - self._tokens) / self._qps
            time.sleep(wait)


# The client ------------------------------------------------------------------------------------------
def connect(kubeconfig: str | None, settings: ClientSettings) -> "KubeClient":
    """A client from a kubeconfig file, or from the pod's service account when none is given."""
    cfg = kubernetes.client.Configuration()
    try:
        if kubeconfig:
            kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]  # reason: untyped in the client
                config_file=kubeconfig, client_configuration=cfg, context=settings.context or None)
        else:
            kubernetes.config.load_incluster_config(  # type: ignore[no-untyped-call]  # reason: as above
                client_configuration=cfg)
    except (kubernetes.config.ConfigException, OSError, ValueError) as exc:
        raise APIUnauthorized(f"cannot load the cluster configuration: {exc}") from exc
    cfg.retries = 0  # we retry ourselves, with backoff and budgets
    # One connection per informer watch, per bind worker, plus the elector and status writes.
    cfg.connection_pool_maxsize = max(cfg.connection_pool_maxsize or 0, CONNECTIONS)
    return KubeClient(kubernetes.client.ApiClient(cfg), settings)


class KubeClient:
    """JSON in, JSON out; one method per API call the scheduler makes.

    Calls go through the official client's `ApiClient` (configuration, authentication, TLS, the REST
    layer) by path, not through the generated `CoreV1Api`/`CustomObjectsApi` classes: importing those
    costs seconds of pydantic set-up per process start, and their models are not used anyway.
    """

    def __init__(self, api: kubernetes.client.ApiClient, settings: ClientSettings) -> None:
        self.api = api
        self.settings = settings
        self._bucket = TokenBucket(settings.qps, settings.burst)

    def close(self) -> None:
        self.api.close()  # type: ignore[no-untyped-call]  # reason: untyped in the client

    # reads ----------------------------------------------------------------------------------------
    def list(self, res: Resource) -> dict[str, Any]:
        return self._json("GET", res.path(), verb=f"list {res.name}")

    def watch(self, res: Resource, resource_version: str, timeout_s: int) -> Iterator[dict[str, Any]]:
        """The events of one watch request, decoded; ends when the server ends the stream."""
        verb = f"watch {res.name}"
        query = {"watch": "true", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": str(timeout_s)}
        response = self._send("GET", res.path(), verb=verb, query=query,
                              timeout=(self.settings.connect_timeout_s, timeout_s + 10))
        try:
            for line in _lines(response, verb):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except ValueError as exc:
                        raise APIServerError(f"{verb}: undecodable event: {line[:200]!r}") from exc
        finally:
            response.release_conn()

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json("GET", PODS.path(namespace, name), verb="get pod")

    def get_podgroup(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json("GET", PODGROUPS.path(namespace, name), verb="get podgroup")

    def get_lease(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json("GET", LEASES.path(namespace, name), verb="get lease")

    # writes ---------------------------------------------------------------------------------------
    def bind(self, namespace: str, name: str, *, uid: str, node: str, annotations: dict[str, str]) -> None:
        metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid}
        if annotations:
            metadata["annotations"] = dict(annotations)
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": metadata,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        self._write("POST", PODS.path(namespace, name, "binding"), body, verb="bind pod")

    def evict(self, namespace: str, name: str, *, uid: str) -> None:
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace},
                "deleteOptions": {"preconditions": {"uid": uid}}}
        self._write("POST", PODS.path(namespace, name, "eviction"), body, verb="evict pod")

    def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self._write("PATCH", PODS.path(namespace, name, "status"), patch, verb="patch pod status",
                           content_type=STRATEGIC_PATCH)

    def patch_podgroup(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        """PodGroup has no status subresource: status goes through the main endpoint."""
        return self._write("PATCH", PODGROUPS.path(namespace, name), patch, verb="patch podgroup",
                           content_type=MERGE_PATCH)

    def patch_queue_status(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self._write("PATCH", QUEUES.path(name=name, subresource="status"), patch,
                           verb="patch queue status", content_type=MERGE_PATCH)

    def create_event(self, namespace: str, event: dict[str, Any]) -> None:
        self._write("POST", EVENTS.path(namespace), event, verb="create event")

    def create_lease(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]:
        return self._write("POST", LEASES.path(namespace), lease, verb="create lease")

    def replace_lease(self, namespace: str, name: str, lease: dict[str, Any]) -> dict[str, Any]:
        return self._write("PUT", LEASES.path(namespace, name), lease, verb="replace lease")

    # any resource, by its Resource (the controllers' calls) ---------------------------------------
    def list_objects(self, res: Resource, *, namespace: str | None = None,
                     label_selector: str | None = None) -> dict[str, Any]:
        query = {"labelSelector": label_selector} if label_selector else {}
        return _json(self._send("GET", res.path(namespace), verb=f"list {res.name}", query=query,
                                timeout=self.settings.request_timeout_s))

    def get_object(self, res: Resource, namespace: str, name: str) -> dict[str, Any]:
        return self._json("GET", res.path(namespace, name), verb=f"get {res.kind.lower()}")

    def create_object(self, res: Resource, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._write("POST", res.path(namespace), body, verb=f"create {res.kind.lower()}")

    def replace_object(self, res: Resource, namespace: str, name: str, body: dict[str, Any], *,
                       subresource: str | None = None) -> dict[str, Any]:
        return self._write("PUT", res.path(namespace, name, subresource), body,
                           verb=f"replace {res.kind.lower()}{'/' + subresource if subresource else ''}")

    def patch_object(self, res: Resource, namespace: str, name: str, patch: Any, *,
                     subresource: str | None = None, content_type: str = MERGE_PATCH) -> dict[str, Any]:
        return self._write("PATCH", res.path(namespace, name, subresource), patch, content_type=content_type,
                           verb=f"patch {res.kind.lower()}{'/' + subresource if subresource else ''}")

    def delete_object(self, res: Resource, namespace: str, name: str, *, uid: str | None = None,
                      propagation: str | None = None) -> dict[str, Any]:
        """DELETE with an optional uid precondition and propagationPolicy (Background/Foreground/Orphan)."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        if propagation:
            body["propagationPolicy"] = propagation
        return self._write("DELETE", res.path(namespace, name), body, verb=f"delete {res.kind.lower()}")

    # helpers --------------------------------------------------------------------------------------
    def _write(self, method: str, path: str, body: Any, *, verb: str,
               content_type: str = "application/json") -> dict[str, Any]:
        self._bucket.take()
        return self._json(method, path, verb=verb, body=body, content_type=content_type)

    def _json(self, method: str, path: str, *, verb: str, body: Any = None,
              content_type: str = "application/json") -> dict[str, Any]:
        response = self._send(method, path, verb=verb, body=body, content_type=content_type,
                              timeout=self.settings.request_timeout_s)
        return _json(response)

    def _send(self, method: str, path: str, *, verb: str, query: dict[str, str] | None = None, body: Any = None,
              content_type: str = "application/json", timeout: Any = None) -> Any:
        """One request; the raw urllib3 response of a 2xx answer (the caller reads it), else an APIError."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        serialized = self.api.param_serialize(method=method, resource_path=path, query_params=dict(query or {}),
                                              header_params=headers, body=body, auth_settings=["BearerToken"])
        rest = call(verb, lambda: self.api.call_api(*serialized, _request_timeout=timeout))
        response = rest.response
        if 200 <= response.status <= 299:
            return response
        try:
            data = response.data
        except (urllib3.exceptions.HTTPError, OSError):
            data = b""
        finally:
            response.release_conn()
        failure = ApiException(status=response.status, reason=response.reason,
                               body=data.decode("utf-8", errors="replace") if data else None)
        failure.headers = response.headers  # Retry-After
        raise translate(failure, verb) from None


def _json(response: Any) -> dict[str, Any]:
    """Read a `_preload_content=False` answer whole, give its connection back, decode it."""
    try:
        data = response.data if hasattr(response, "data") else response
    finally:
        if hasattr(response, "release_conn"):
            response.release_conn()
    if not data:
        return {}
    decoded = json.loads(data)
    return decoded if isinstance(decoded, dict) else {}


def _lines(response: Any, verb: str) -> Iterator[str]:
    buffer = bytearray()
    try:
        for chunk in response.stream(amt=None, decode_content=False):
            buffer.extend(chunk if isinstance(chunk, (bytes, bytearray)) else str(chunk).encode())
            while (cut := buffer.find(b"\n")) != -1:
                yield buffer[:cut].decode("utf-8", errors="replace")
                del buffer[:cut + 1]
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise APIUnavailable(f"{verb}: the stream broke: {exc}", verb=verb) from exc
    if buffer.strip():
        yield buffer.decode("utf-8", errors="replace")

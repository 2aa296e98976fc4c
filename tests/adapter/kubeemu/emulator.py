"""`ClusterEmulator`: kmock 0.8's `KubernetesEmulator` with the API-server behaviour a scheduler needs.

Requests for declared resources are served here, bypassing the stock state machine (which stores
bodies verbatim, ignores resourceVersion, selectors and subresources): `_handle` runs the fault
hooks first, then one synchronous mutation or read. Everything runs on the emulator's event loop,
and no mutation awaits, so each is atomic without locks. Discovery (`/api`, `/apis/...`,
`/version`), error rendering and the HTTP server stay kmock's.

Every change gets the next global resourceVersion and becomes an event in a bounded per-resource
history; a watch replays history after its resourceVersion (or the current objects as ADDED when it
has none) and then streams live events. A resourceVersion older than the history answers an ERROR
event with code 410 (Expired), as the watch cache does after compaction (`compact()`). Selector
watches see an object that leaves or enters the selection as DELETED / ADDED.

Not emulated: pagination, resourceVersionMatch, sendInitialEvents, server-side apply, `$patch`
directives, admission beyond pod defaults, graceful deletion (pods vanish at once), garbage
collection, authn/authz, TLS, HTTP/2, protobuf.
"""
from __future__ import annotations

import asyncio
import collections
import copy
import datetime
import json
import re
import secrets
import string
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import aiohttp.web
import attrs
import kmock
from kmock._internal import rendering  # reason: the parsed Request type; kmock is pinned to 0.8.*

from tests.adapter.kubeemu import patching, selectors
from tests.adapter.kubeemu.resources import BY_KEY, RESOURCES, Kind

_NAMESPACE_URL = re.compile(r"^/api/v1/namespaces(?:/([^/]+))?(?:/(status))?/?$")
HISTORY_LIMIT = 1000  # events kept per resource for watch resumption (the watch cache keeps ~100 per type)
BOOKMARK_INTERVAL_S = 1.0  # the real server sends one about every minute; tests want them sooner

Fault = kmock.KubernetesError | float | None  # an error to answer, or seconds to delay, or nothing
FaultHook = Callable[["Call"], Fault]


@dataclass(frozen=True, slots=True)
class Call:
    """One API request as a fault hook or an assertion sees it."""

    verb: str  # list watch get create update patch delete bind evict
    kind: Kind
    namespace: str | None
    name: str | None
    subresource: str | None
    body: Any
    params: dict[str, str] = field(default_factory=dict)

    @property
    def plural(self) -> str:
        return self.kind.plural


@dataclass(frozen=True, slots=True)
class Record:
    """One answered request: what was asked and the HTTP status given."""

    call: Call
    status: int


@dataclass(frozen=True, slots=True)
class Event:
    rv: int
    type: str
    obj: dict[str, Any]
    prev: dict[str, Any] | None


@dataclass(eq=False, slots=True)
class _Watcher:
    namespace: str | None
    select: selectors.Selector
    queue: asyncio.Queue[dict[str, Any] | None]


def error(status: int, reason: str, message: str, **details: Any) -> kmock.KubernetesError:
    return kmock.KubernetesError(status=status, reason=reason, message=message, details=details or {})


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _success(code: int = 201) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


@attrs.define(kw_only=True)
class ClusterEmulator(kmock.KubernetesEmulator):
    history_limit: int = HISTORY_LIMIT
    bookmark_interval: float = BOOKMARK_INTERVAL_S
    faults: list[FaultHook] = attrs.field(factory=list)
    records: list[Record] = attrs.field(factory=list, init=False)
    rv: int = attrs.field(default=1, init=False)
    _store: dict[str, dict[tuple[str, str], dict[str, Any]]] = attrs.field(factory=dict, init=False)
    _history: dict[str, collections.deque[Event]] = attrs.field(factory=dict, init=False)
    _floor: dict[str, int] = attrs.field(factory=dict, init=False)
    _watchers: dict[str, set[_Watcher]] = attrs.field(factory=dict, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        # The official client asks for these with a trailing slash.
        self.fallback["get /version/"] << self._serve_server_version
        self.fallback["get /apis/"] << self._serve_apis
        for kind in RESOURCES:
            self.resources[kind.key] = kmock.ResourceInfo(
                kind=kind.kind, namespaced=kind.namespaced, subresources=set(kind.subresources),
                verbs={"get", "list", "watch", "create", "update", "patch", "delete"})
            self._store[kind.key] = {}
            self._history[kind.key] = collections.deque()
            self._floor[kind.key] = 0
            self._watchers[kind.key] = set()

    # Direct access for tests (call these on the emulator's loop: EmulatorThread.call) ----------------
    # `get`/`list` shadow kmock's HTTP client shortcuts (`emu.get(url)`), which these tests never use:
    # the emulator is reached through the official client, and read directly through these.
    def get(self, plural_key: str, namespace: str, name: str) -> dict[str, Any] | None:  # type: ignore[override]
        obj = self._store[self._key(plural_key)].get((namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    def list(self, plural_key: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for _, o in sorted(self._store[self._key(plural_key)].items())]

    def put_object(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace an object as a controller would have left it, status included."""
        kind = self._kind_of(obj)
        meta = obj.get("metadata") or {}
        ns = (meta.get("namespace") or "default") if kind.namespaced else ""
        old = self._store[kind.key].get((ns, meta.get("name", "")))
        if old is None:
            return self._create(kind, ns, obj, keep_status=True)
        new = copy.deepcopy(obj)
        new.setdefault("metadata", {})["resourceVersion"] = old["metadata"]["resourceVersion"]
        return self._replace(kind, old, new, subresource=None, whole=True)

    def compact(self) -> None:
        """Forget all history: every watch resumed from an earlier resourceVersion gets 410."""
        for key in self._history:
            self._history[key].clear()
            self._floor[key] = self.rv

    def drop_watches(self, *, expire: bool = False) -> int:
        """End every open watch stream (`expire`: with an ERROR 410 first, as after compaction)."""
        count = 0
        for watchers in self._watchers.values():
            for watcher in list(watchers):
                if expire:
                    watcher.queue.put_nowait(self._expired_event(0))
                watcher.queue.put_nowait(None)
                count += 1
        return count

    def watch_count(self, plural_key: str | None = None) -> int:
        keys = [self._key(plural_key)] if plural_key else list(self._watchers)
        return sum(len(self._watchers[k]) for k in keys)

    def count(self, verb: str, plural: str | None = None, *, status: int | None = None,
              name: str | None = None) -> int:
        return sum(1 for r in self.records if r.call.verb == verb and (plural is None or r.call.plural == plural)
                   and (status is None or r.status == status) and (name is None or r.call.name == name))

    # Request entry ---------------------------------------------------------------------------------
    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        """kmock 0.8 misparses the Namespace URLs (`/api/v1/namespaces[/NAME[/status]]`: it reads the
        `namespaces` segment as the namespace prefix, and the collection URL raises). Those are parsed
        here; every other request takes kmock's path."""
        match = _NAMESPACE_URL.match(raw_request.path)
        if match is None:
            return await super().__call__(raw_request)
        body = await raw_request.read()
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        request = rendering.Request(
            id=len(self._requests), raw_request=raw_request, url=raw_request.url, method=raw_request.method,
            params=dict(raw_request.query), headers=dict(raw_request.headers), cookies=dict(raw_request.cookies),
            data=data, body=body, text=body.decode("utf-8", errors="replace"),
            resource=kmock.resource("", "v1", "namespaces"), namespace=None, name=match.group(1),
            subresource=match.group(2))
        self._requests.append(request)
        try:
            return await self._handle(request)
        except kmock.KubernetesError as exc:
            return await self._render_error(exc)

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        res = request.resource
        if res is None or not res.plural:
            return await super()._handle(request)  # discovery: kmock's scaffold
        kind = BY_KEY.get(f"{res.group}/{res.version}/{res.plural}")
        if kind is None:
            return await self._render_error(error(404, "NotFound", f"the server could not find the requested "
                                                                   f"resource ({res.group}/{res.version}/{res.plural})"))
        call = Call(self._verb(request), kind, request.namespace, request.name, request.subresource,
                    request.data, dict(request.params))
        try:
            for hook in list(self.faults):
                fault = hook(call)
                if isinstance(fault, (int, float)) and not isinstance(fault, bool):
                    await asyncio.sleep(fault)
                elif isinstance(fault, kmock.KubernetesError):
                    raise fault
            if call.verb == "watch":
                self.records.append(Record(call, 200))
                return await self._watch(request, call)
            status, payload = self._dispatch(call, request)
        except kmock.KubernetesError as exc:
            self.records.append(Record(call, exc.status))
            return await self._render_error(exc)
        self.records.append(Record(call, status))
        return aiohttp.web.json_response(payload, status=status)

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        """kmock's Status body, plus `Retry-After` when the details ask for one (as the real server does
        for 429 and some 5xx: `details.retryAfterSeconds`)."""
        response = await super()._render_error(exc)
        details = exc.details if isinstance(exc, kmock.KubernetesError) and isinstance(exc.details, dict) else {}
        if "retryAfterSeconds" in details:
            response.headers["Retry-After"] = str(details["retryAfterSeconds"])
        return response

    @staticmethod
    def _verb(request: rendering.Request) -> str:
        method = str(request.method.value if hasattr(request.method, "value") else request.method).upper()
        sub = request.subresource
        if method == "GET":
            if request.params.get("watch") in ("true", "1"):
                return "watch"
            return "get" if request.name else "list"
        if method == "POST":
            if request.name and sub == "binding":
                return "bind"
            if request.name and sub == "eviction":
                return "evict"
            return "create" if not request.name else "unsupported"
        return {"PUT": "update", "PATCH": "patch", "DELETE": "delete" if request.name else "deletecollection"}.get(
            method, "unsupported")

    def _dispatch(self, call: Call, request: rendering.Request) -> tuple[int, Any]:
        kind, ns = call.kind, call.namespace
        if kind.namespaced and call.verb not in ("list", "watch") and not ns:
            raise error(404, "NotFound", f"{kind.plural} is namespaced: the URL needs /namespaces/<ns>/")
        if not kind.namespaced and ns:
            raise error(404, "NotFound", f"{kind.plural} is cluster-scoped")
        sub = call.subresource
        if sub is not None and (sub not in kind.subresources or
                                (sub == "status" and call.verb not in ("get", "update", "patch")) or
                                (sub in ("binding", "eviction") and call.verb not in ("bind", "evict"))):
            raise error(404, "NotFound", f"the server could not find the requested resource "
                                         f"({kind.plural}/{sub})")
        if call.verb == "list":
            return 200, self._list(call)
        if call.verb == "create":
            return 201, self._create(kind, ns or "", self._body(call), keep_status=False)
        if call.verb in ("unsupported", "deletecollection"):
            raise error(405, "MethodNotAllowed", f"the server does not allow this method on {kind.plural}")
        current = self._current(kind, ns or "", call.name or "")
        if call.verb == "get":
            return 200, current
        if call.verb == "update":
            return 200, self._replace(kind, current, self._body(call), subresource=sub, whole=False)
        if call.verb == "patch":
            content_type = request.headers.get("Content-Type", patching.MERGE)
            try:
                patched = patching.apply(current, call.body, content_type)
            except patching.PatchError as exc:
                code = 415 if "unsupported patch type" in str(exc) else 422
                raise error(code, "UnsupportedMediaType" if code == 415 else "Invalid", str(exc)) from exc
            sent_rv = ((call.body or {}).get("metadata") or {}).get("resourceVersion") \
                if isinstance(call.body, dict) else None
            if sent_rv is None:
                patched.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
            return 200, self._replace(kind, current, patched, subresource=sub, whole=False)
        if call.verb == "delete":
            return 200, self._delete(kind, current, call.body)
        if call.verb == "bind":
            return 201, self._bind(kind, current, self._body(call))
        if call.verb == "evict":
            return 201, self._evict(kind, current, call.body if isinstance(call.body, dict) else {})
        raise error(405, "MethodNotAllowed", call.verb)

    # Mutations -------------------------------------------------------------------------------------
    def _create(self, kind: Kind, ns: str, body: dict[str, Any], *, keep_status: bool) -> dict[str, Any]:
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if kind.namespaced:
            if meta.get("namespace") not in (None, "", ns):
                raise error(400, "BadRequest", "the namespace of the provided object does not match the "
                                               "namespace sent on the request")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise error(422, "Invalid", f"{kind.kind} is invalid: metadata.name: Required value")
            alphabet = string.ascii_lowercase + string.digits
            meta["name"] = meta["generateName"] + "".join(secrets.choice(alphabet) for _ in range(5))
        key = (ns, meta["name"])
        if key in self._store[kind.key]:
            raise error(409, "AlreadyExists", f'{kind.plural} "{meta["name"]}" already exists',
                        name=meta["name"], kind=kind.plural)
        obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        meta["generation"] = 1
        meta.pop("deletionTimestamp", None)
        if kind.has_status and not keep_status:
            if kind.plural == "pods":
                obj["status"] = {"phase": "Pending"}
            elif kind.plural == "namespaces":
                obj["status"] = {"phase": "Active"}
            elif kind.plural != "nodes":  # the kubelet, not the creator, writes node status
                obj["status"] = {}
        if kind.plural == "pods":
            obj.setdefault("spec", {}).setdefault("schedulerName", "default-scheduler")
        self._commit(kind, "ADDED", obj, None)
        return obj

    def _replace(self, kind: Kind, current: dict[str, Any], body: dict[str, Any], *, subresource: str | None,
                 whole: bool) -> dict[str, Any]:
        sent = (body.get("metadata") or {}).get("resourceVersion")
        if sent not in (None, "") and str(sent) != current["metadata"]["resourceVersion"]:
            raise error(409, "Conflict", f'Operation cannot be fulfilled on {kind.plural} '
                                         f'"{current["metadata"]["name"]}": the object has been modified; '
                                         "please apply your changes to the latest version and try again")
        new = copy.deepcopy(body)
        if not whole and kind.has_status:
            if subresource == "status":  # only status changes through /status
                new = {**copy.deepcopy(current), "status": new.get("status", {})}
            else:  # the main endpoint ignores status when a status subresource exists
                new["status"] = copy.deepcopy(current.get("status", {}))
                if "status" not in current:
                    new.pop("status")
        meta = new.setdefault("metadata", {})
        for keep in ("uid", "creationTimestamp", "namespace", "name", "generation"):
            if keep in current["metadata"]:
                meta[keep] = current["metadata"][keep]
        if current["metadata"].get("deletionTimestamp"):
            meta["deletionTimestamp"] = current["metadata"]["deletionTimestamp"]
        new["apiVersion"], new["kind"] = kind.api_version, kind.kind
        if new.get("spec") != current.get("spec"):
            meta["generation"] = int(current["metadata"].get("generation", 1)) + 1
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        if not whole:  # put_object (whole) stores what a test says a controller left, unchecked
            _validate(kind, new, current)
        if new == current:
            return copy.deepcopy(current)  # a no-op write does not bump the resourceVersion
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return self._remove(kind, new)
        self._commit(kind, "MODIFIED", new, current)
        return new

    def _delete(self, kind: Kind, current: dict[str, Any], options: Any) -> dict[str, Any]:
        pre = (options or {}).get("preconditions") or {} if isinstance(options, dict) else {}
        meta = current["metadata"]
        if pre.get("uid") and pre["uid"] != meta["uid"]:
            raise error(409, "Conflict", f"Precondition failed: UID in precondition: {pre['uid']}, "
                                         f"UID in object meta: {meta['uid']}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise error(409, "Conflict", "Precondition failed: resourceVersion mismatch")
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return copy.deepcopy(current)
            new = copy.deepcopy(current)
            new["metadata"]["deletionTimestamp"] = now_rfc3339()
            self._commit(kind, "MODIFIED", new, current)
            return new
        return self._remove(kind, current)

    def _remove(self, kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        gone = copy.deepcopy(obj)
        self._commit(kind, "DELETED", gone, obj)
        return gone

    def _bind(self, kind: Kind, pod: dict[str, Any], binding: dict[str, Any]) -> dict[str, Any]:
        meta, target = binding.get("metadata") or {}, binding.get("target") or {}
        name = pod["metadata"]["name"]
        if not target.get("name"):
            raise error(422, "Invalid", "Binding is invalid: target.name: Required value")
        if meta.get("uid") and meta["uid"] != pod["metadata"]["uid"]:
            raise error(409, "Conflict", f"Operation cannot be fulfilled on pods/binding \"{name}\": "
                                         "Precondition failed: UID mismatch")
        if pod["metadata"].get("deletionTimestamp"):
            raise error(409, "Conflict", f"pod {name} is being deleted, cannot be assigned to a host")
        bound = (pod.get("spec") or {}).get("nodeName")
        if bound:
            raise error(409, "Conflict", f"pod {name} is already assigned to node \"{bound}\"")
        new = copy.deepcopy(pod)
        new.setdefault("spec", {})["nodeName"] = target["name"]
        if meta.get("annotations"):
            new["metadata"].setdefault("annotations", {}).update(meta["annotations"])
        conditions = [c for c in new.setdefault("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now_rfc3339()})
        new["status"]["conditions"] = conditions
        self._commit(kind, "MODIFIED", new, pod)
        return _success()

    def _evict(self, kind: Kind, pod: dict[str, Any], eviction: dict[str, Any]) -> dict[str, Any]:
        options = eviction.get("deleteOptions") or {}
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != pod["metadata"]["uid"]:
            raise error(409, "Conflict", "Precondition failed: UID mismatch")
        ns = pod["metadata"]["namespace"]
        phase = (pod.get("status") or {}).get("phase", "Pending")
        ignore_pdb = phase in ("Pending", "Succeeded", "Failed") or bool(pod["metadata"].get("deletionTimestamp"))
        if not ignore_pdb:
            pdbs = BY_KEY["policy/v1/poddisruptionbudgets"]
            matching = [p for (pns, _), p in self._store[pdbs.key].items()
                        if pns == ns and _selects((p.get("spec") or {}).get("selector"), pod)]
            if len(matching) > 1:
                raise error(500, "InternalError", "This pod has more than one PodDisruptionBudget, "
                                                  "which the eviction subresource does not support.")
            if matching:
                pdb = matching[0]
                allowed = int((pdb.get("status") or {}).get("disruptionsAllowed", 0))
                if allowed < 1:
                    raise error(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's "
                                                        "disruption budget.",
                                causes=[{"reason": "DisruptionBudget", "message":
                                         f"The disruption budget {pdb['metadata']['name']} needs more healthy pods"}])
                updated = copy.deepcopy(pdb)
                updated.setdefault("status", {})["disruptionsAllowed"] = allowed - 1
                self._commit(pdbs, "MODIFIED", updated, pdb)
        self._delete(kind, pod, {})
        return _success()

    def _commit(self, kind: Kind, type_: str, obj: dict[str, Any], prev: dict[str, Any] | None) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if type_ == "DELETED":
            self._store[kind.key].pop(key, None)
        else:
            self._store[kind.key][key] = obj
        event = Event(self.rv, type_, obj, prev)
        history = self._history[kind.key]
        history.append(event)
        while len(history) > self.history_limit:
            self._floor[kind.key] = history.popleft().rv
        for watcher in list(self._watchers[kind.key]):
            out = self._translate(event, watcher)
            if out is not None:
                watcher.queue.put_nowait(out)

    # Reads -----------------------------------------------------------------------------------------
    def _list(self, call: Call) -> dict[str, Any]:
        select = self._selector(call)
        items = [o for (ns, _), o in sorted(self._store[call.kind.key].items())
                 if (call.namespace is None or ns == call.namespace) and select(o)]
        return {"apiVersion": call.kind.api_version, "kind": f"{call.kind.kind}List",
                "metadata": {"resourceVersion": str(self.rv)}, "items": items}

    async def _watch(self, request: rendering.Request, call: Call) -> aiohttp.web.StreamResponse:
        kind = call.kind
        select = self._selector(call)
        since = call.params.get("resourceVersion") or "0"
        timeout = float(call.params.get("timeoutSeconds") or 0) or None
        bookmarks = call.params.get("allowWatchBookmarks") in ("true", "1")
        watcher = _Watcher(call.namespace, select, asyncio.Queue())
        backlog: list[dict[str, Any] | None]
        if since == "0":
            backlog = [{"type": "ADDED", "object": o} for (ns, _), o in sorted(self._store[kind.key].items())
                       if (call.namespace is None or ns == call.namespace) and select(o)]
        elif not since.isdigit():
            raise error(400, "BadRequest", f"invalid resource version {since!r}")
        elif int(since) < self._floor[kind.key]:
            backlog = [self._expired_event(int(since)), None]
        else:
            backlog = [e for e in (self._translate(ev, watcher) for ev in self._history[kind.key]
                                   if ev.rv > int(since)) if e is not None]
        self._watchers[kind.key].add(watcher)  # no await since the backlog was taken: nothing is missed
        raw = request._raw_request  # noqa: SLF001  # reason: kmock keeps the aiohttp request here
        assert raw is not None
        response = aiohttp.web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout else None
        try:
            await response.prepare(raw)
            for item in backlog:
                if item is None:
                    return response
                await response.write(_line(item))
            while True:
                wait = self.bookmark_interval if bookmarks else 1.0
                if deadline is not None:
                    wait = min(wait, deadline - loop.time())
                    if wait <= 0:
                        break
                try:
                    item = await asyncio.wait_for(watcher.queue.get(), timeout=wait)
                except asyncio.TimeoutError:
                    if raw.transport is None or raw.transport.is_closing():
                        break
                    if bookmarks and (deadline is None or deadline > loop.time()):
                        await response.write(_line(self._bookmark(kind)))
                    continue
                if item is None:
                    break
                await response.write(_line(item))
        except (ConnectionError, RuntimeError):
            pass  # the client went away
        finally:
            self._watchers[kind.key].discard(watcher)
        try:
            await response.write_eof()
        except (ConnectionError, RuntimeError):
            pass
        return response

    def _translate(self, event: Event, watcher: _Watcher) -> dict[str, Any] | None:
        """The event as a watcher with this namespace and selector sees it (the watch cache's rule)."""
        if watcher.namespace is not None and event.obj["metadata"].get("namespace") != watcher.namespace:
            return None
        now = watcher.select(event.obj)
        before = watcher.select(event.prev) if event.prev is not None else False
        if event.type == "ADDED":
            type_ = "ADDED" if now else None
        elif event.type == "DELETED":
            type_ = "DELETED" if now or before else None
        elif now:
            type_ = "MODIFIED" if before else "ADDED"
        else:
            type_ = "DELETED" if before else None
        return {"type": type_, "object": event.obj} if type_ else None

    def _bookmark(self, kind: Kind) -> dict[str, Any]:
        return {"type": "BOOKMARK", "object": {"apiVersion": kind.api_version, "kind": kind.kind,
                                               "metadata": {"resourceVersion": str(self.rv)}}}

    def _expired_event(self, since: int) -> dict[str, Any]:
        return {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                            "status": "Failure", "reason": "Expired", "code": 410,
                                            "message": f"too old resource version: {since} ({self.rv})"}}

    # Helpers ---------------------------------------------------------------------------------------
    def _selector(self, call: Call) -> selectors.Selector:
        try:
            return selectors.both(selectors.parse_labels(call.params.get("labelSelector")),
                                  selectors.parse_fields(call.params.get("fieldSelector"), call.kind))
        except selectors.SelectorError as exc:
            raise error(400, "BadRequest", str(exc)) from exc

    def _current(self, kind: Kind, ns: str, name: str) -> dict[str, Any]:
        obj = self._store[kind.key].get((ns, name))
        if obj is None:
            raise error(404, "NotFound", f'{kind.plural} "{name}" not found', name=name, kind=kind.plural)
        return obj

    @staticmethod
    def _body(call: Call) -> dict[str, Any]:
        if not isinstance(call.body, dict):
            raise error(400, "BadRequest", "the request body must be a JSON object")
        return call.body

    @staticmethod
    def _key(plural_key: str) -> str:
        """'v1/pods', 'pods', 'scheduling.volcano.sh/v1beta1/queues' or 'queues' -> the resource key."""
        if plural_key in BY_KEY:
            return plural_key
        if plural_key.startswith("v1/") and f"/{plural_key}" in BY_KEY:
            return f"/{plural_key}"
        matches = [k.key for k in RESOURCES if k.plural == plural_key]
        if not matches:
            raise KeyError(plural_key)
        return matches[0]  # core first for 'events'

    @staticmethod
    def _kind_of(obj: dict[str, Any]) -> Kind:
        for kind in RESOURCES:
            if kind.api_version == obj.get("apiVersion") and kind.kind == obj.get("kind"):
                return kind
        raise KeyError(f"{obj.get('apiVersion')} {obj.get('kind')} is not served")


def _validate(kind: Kind, obj: dict[str, Any], current: dict[str, Any]) -> None:
    """What the CRDs' schemas require on a write, as a real API server with Volcano's CRDs answers it
    (found by tests/e2e): Volcano's Queue requires `status.allocated` once there is a status. Like the
    server's validation ratcheting, a status the write leaves unchanged is not judged again."""
    status = obj.get("status")
    if kind.kind == "Queue" and status and status != current.get("status") and "allocated" not in status:
        raise error(422, "Invalid", f'Queue.scheduling.volcano.sh "{obj["metadata"]["name"]}" is invalid: '
                                    "status.allocated: Required value")


def _line(item: dict[str, Any]) -> bytes:
    return json.dumps(item, separators=(",", ":")).encode() + b"\n"


def _selects(selector: dict[str, Any] | None, pod: dict[str, Any]) -> bool:
    """A LabelSelector (matchLabels + matchExpressions) against a pod; an empty selector selects all."""
    if not selector:
        return False  # policy/v1: a null selector selects nothing
    labels = (pod.get("metadata") or {}).get("labels") or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def load_objects(emulator: ClusterEmulator, objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Store objects as a cluster would hold them (statuses included); returns the stored versions."""
    return [emulator.put_object(o) for o in objects]

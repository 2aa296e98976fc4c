"""Kubernetes objects already in memory (plain JSON-like dicts, as the API serves them) -> `ClusterSnapshot`.

This is the live adapter's way into the file loader: the objects are wrapped so that the very readers
of `vpolicy.load.kinds` and the assembly of `vpolicy.load.cluster` (ordering, duplicates, vcjob
derivation, the `root`/`default` queues) run on them unchanged. `vpolicy dry-run` on a dump of a
cluster and the live scheduler on that cluster therefore see the same snapshot, field for field.

What differs from files is only *where* a mistake is reported: an object read from memory has no
line and column, so every span points at the object as a whole, `api:<Kind>/<namespace>/<name>`
(line 1, column 1). No source text is registered for those names (a scheduler runs for months; it
must not keep every object it ever saw).

`strict=True` behaves like `load_cluster`: any error raises `PolicyError` with all of them. With
`strict=False` (the live scheduler) an object with errors is dropped, its diagnostics are turned
into warnings, and the rest of the cluster is still scheduled: one malformed custom resource must
not stop every other job.

`SnapshotReader` is the same function for a caller that reads the same cluster again and again (the
scheduler, once a period): when the only changes since its last build are Pods, Nodes, Queues and
PodGroups — the common case — it reads just the changed objects, with the same readers, and keeps
everything else. Otherwise it runs the full assembly, but with one memo of reader results kept across
reads (`fields.memoized`): an object whose dict is the one read last time (informers replace an object's
dict when it changes) is not read again. `read` is handed every object and walks them all to find what
changed; a caller that knows what changed (the informers' cache) hands over just those with `patch`, at a
cost proportional to the change. `tests/adapter/test_convert.py` checks both agree with
`snapshot_from_objects` on random change sequences.

Objects are read as the plain dicts they are (no copy into round-trip nodes): the readers take dicts.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from vpolicy.errors import PolicyError
from vpolicy.load import cluster, kinds
from vpolicy.load.fields import Problems, View
from vpolicy.load.yaml_spans import YamlFile
from vpolicy.model.snapshot import ClusterSnapshot, Pod
from vpolicy.source import SourceFile, Span

ORIGIN_PREFIX = "api:"
# Dropping a bad object can, in principle, expose another error (a duplicate it hid); a few rounds
# settle every real input, and the bound keeps a pathological one from looping.
_MAX_ROUNDS = 5


class ObjectFile(YamlFile):
    """A `YamlFile` stand-in for one in-memory object: every span is the object itself."""

    __slots__ = ()

    def _whole(self) -> Span:
        return Span(self.source.name, 1, 1)

    def node_span(self, node: Any) -> Span:
        return self._whole()

    def key_span(self, mapping: Any, key: Any) -> Span:
        return self._whole()

    def value_span(self, mapping: Any, key: Any) -> Span:
        return self._whole()

    def item_span(self, seq: Any, index: int) -> Span:
        return self._whole()

    def document_span(self, index: int) -> Span:
        return self._whole()

    def value_text(self, mapping: Any, key: Any) -> str:
        value = mapping.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return repr(value)  # the shortest text that reads back as this float
        return str(value)


def object_label(obj: Mapping[str, Any]) -> str:
    """`api:<Kind>/<namespace>/<name>` (or `api:<Kind>/<name>` when cluster-scoped)."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) or isinstance(meta, Mapping) else {}  # (dict first: the common, fast test)
    kind, namespace, name = obj.get("kind") or "Object", meta.get("namespace"), meta.get("name") or "?"
    if namespace:
        return f"{ORIGIN_PREFIX}{kind}/{namespace}/{name}"
    return f"{ORIGIN_PREFIX}{kind}/{name}"


def snapshot_from_objects(objects: Iterable[Mapping[str, Any]], *, strict: bool = True,
                          memo: dict[Any, Any] | None = None) -> ClusterSnapshot:
    """Build the snapshot `load_cluster` would build from a dump holding exactly these objects.

    Each object must carry `apiVersion` and `kind` (list responses omit them on items: the caller
    adds them). `kind: List` objects are unpacked as in files. `memo` (kept by the caller across calls)
    lets unchanged objects skip their reader.
    """
    items = [(object_label(obj), obj if type(obj) is dict else to_node(obj)) for obj in objects]
    dropped: set[str] = set()
    extra_warnings: list[str] = []
    for _ in range(_MAX_ROUNDS):
        problems = Problems() if memo is None else Problems(memo=memo)
        collected = cluster._Objects()  # noqa: SLF001  # reason: same package; one assembly for files and objects
        for label, node in items:
            if label in dropped:
                continue
            if not isinstance(node, dict):
                continue
            view = View(ObjectFile(source=SourceFile(name=label, text=""), documents=(node,)), problems, node,
                        kind="object")
            cluster._collect(view, collected)  # noqa: SLF001  # reason: as above
        cluster._warn_ignored(collected, problems)  # noqa: SLF001  # reason: as above
        built = cluster._build(collected, problems)  # noqa: SLF001  # reason: as above
        if not problems.diagnostics:
            if extra_warnings:
                return _with_warnings(built, extra_warnings)
            return built
        if strict:
            raise PolicyError(problems.diagnostics)
        bad = {d.span.file for d in problems.diagnostics if d.span is not None}
        bad -= dropped
        for diag in problems.diagnostics:
            extra_warnings.append(f"skipping {diag.span.file if diag.span else 'an object'}: "
                                  f"error[{diag.code}]: {diag.message}")
        if not bad:
            break
        dropped |= bad
    raise PolicyError(problems.diagnostics)


class SnapshotReader:
    """`snapshot_from_objects(objects, strict=False)`, re-reading only the Pods that changed since the last call."""

    def __init__(self) -> None:
        self._last: ClusterSnapshot | None = None
        self._others: list[tuple[str, str]] = []  # (label, resourceVersion) of every non-pod object, in order
        self._pods: dict[str, tuple[str, Pod]] = {}  # label -> (resourceVersion, the pod read from it)
        self._memo: dict[Any, Any] = {}  # reader results by object (fields.memoized), across reads
        # id(object) -> (object, label, resourceVersion, is a pod), for the objects of the last read
        self._labels: dict[int, tuple[Mapping[str, Any], str, str, bool]] = {}
        self.full_builds = 0
        self.pods_read = 0
        self.patched = 0  # Nodes, Queues and PodGroups read again on their own and put in place
        self.patch_calls = 0  # snapshots made by `patch`, from the changed objects alone
        # where each pod, Node, Queue and PodGroup is in the last snapshot (and each non-pod object in
        # `_others`), worked out when first needed after a read; None until then
        self._at: _Positions | None = None

    def patch(self, changed: Sequence[Mapping[str, Any]]) -> ClusterSnapshot | None:
        """The last snapshot with `changed` — new versions of Pods, Nodes, Queues and PodGroups it already
        holds (watch MODIFIED events), each with its resourceVersion — read again and put in their places,
        without a walk over the rest; None when only `read` over every object is exact (an object of another
        kind or one it does not hold, an object that reports anything, a last snapshot with warnings or
        derived pods, a cluster holding kinds whose changes reach other objects: see `_PATCHABLE`)."""
        last = self._last
        if last is None or last.warnings or last.deferred_pods:
            return None
        at = self._at = self._at or _Positions.of(last, self._others)
        if not at.patchable:
            return None
        class_values = {pc.name: pc.value for pc in last.priority_classes}
        pods: dict[int, tuple[str, str, Pod]] = {}
        others: list[Mapping[str, Any]] = []
        for obj in changed:
            label, rv = object_label(obj), _rv(obj)
            if not rv:
                return None
            if obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1":
                index = at.pods.get(label)
                if index is None or label not in self._pods:
                    return None
                pod = _read_pod(label, obj, class_values)
                if pod is None or pod.key != last.pods[index].key:
                    return None
                pods[index] = (label, rv, pod)
            elif label in at.others:
                others.append(obj)
            else:
                return None
        patched = self._patched(last, others) if others else last
        if patched is None:
            return None
        for obj in others:
            self._others[at.others[object_label(obj)]] = (object_label(obj), _rv(obj))
        if pods:
            pod_list = list(last.pods)
            for index, (label, rv, pod) in pods.items():
                pod_list[index] = pod
                self._pods[label] = (rv, pod)
            patched = replace(patched, pods=tuple(pod_list))
            self.pods_read += len(pods)
        self._last = patched
        self.patch_calls += 1
        return patched

    def read(self, objects: Iterable[Mapping[str, Any]]) -> ClusterSnapshot:
        items = list(objects)
        pods: list[tuple[str, str, Mapping[str, Any]]] = []  # (label, resourceVersion, object)
        others: list[tuple[str, str]] = []
        other_objects: list[Mapping[str, Any]] = []
        known, seen = self._labels, {}
        for obj in items:  # at M this loop is most of a patched snapshot's cost: labels are made once per dict
            held = known.get(id(obj))
            if held is None or held[0] is not obj:
                held = (obj, object_label(obj), _rv(obj), obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1")
            seen[id(obj)] = held
            if held[3]:
                pods.append((held[1], held[2], obj))
            else:
                others.append((held[1], held[2]))
                other_objects.append(obj)
        self._labels = seen
        fast = self._fast(pods, others, other_objects)
        self._at = None  # positions in the snapshot read before (if `_fast` used them)
        if fast is not None:
            self._last = fast
            self._others = others
            return fast
        built = snapshot_from_objects(items, strict=False, memo=self._memo)
        self._prune(items)
        self.full_builds += 1
        self._remember(built, [obj for _, _, obj in pods], others)
        return built

    def _fast(self, pods: list[tuple[str, str, Mapping[str, Any]]], others: list[tuple[str, str]],
              other_objects: list[Mapping[str, Any]]) -> ClusterSnapshot | None:
        """The last snapshot with the changed pods and the changed Nodes, Queues and PodGroups read again and
        put in their places; None when that could differ from a full build (see `_PATCHABLE`)."""
        last = self._last
        if last is None or last.warnings or last.deferred_pods or len(others) != len(self._others):
            return None
        changed: list[Mapping[str, Any]] = []
        for (label, rv), (old_label, old_rv), obj in zip(others, self._others, other_objects):
            kind = label[len(ORIGIN_PREFIX):].split("/", 1)[0]
            if label != old_label or not rv or kind not in _PRESENT_OK:
                return None
            if rv != old_rv:
                if kind not in _PATCHABLE:
                    return None
                changed.append(obj)
        patched = self._patched(last, changed) if changed else last
        if patched is None:
            return None
        class_values = {pc.name: pc.value for pc in last.priority_classes}
        out: list[Pod] = []
        seen: dict[str, tuple[str, Pod]] = {}
        held_pods = self._pods
        for label, rv, obj in pods:
            held = held_pods.get(label)
            if rv and held is not None and held[0] == rv:
                pod = held[1]
            else:
                pod_or_none = _read_pod(label, obj, class_values)
                if pod_or_none is None or not rv:
                    return None  # an error, a warning, or no way to tell versions apart: build it all
                pod = pod_or_none
                self.pods_read += 1
            if label in seen:
                return None  # a duplicate: the full build reports it
            seen[label] = (rv, pod)
            out.append(pod)
        self._pods = seen
        return replace(patched, pods=tuple(out))

    def _patched(self, last: ClusterSnapshot, changed: list[Mapping[str, Any]]) -> ClusterSnapshot | None:
        nodes, queues, groups = list(last.nodes), list(last.queues), list(last.podgroups)
        positions = self._at = self._at or _Positions.of(last, self._others)
        for obj in changed:
            label = object_label(obj)
            node = obj if type(obj) is dict else to_node(obj)
            problems = Problems()
            file = ObjectFile(source=SourceFile(name=label, text=""), documents=(node,))
            view = View(file, problems, node, kind=str(obj.get("kind")), anchor=file.key_span(node, "kind"))
            kind = obj.get("kind")
            if kind == "Node":
                read_node = kinds.read_node(view)
                at = positions.nodes.get(read_node.name) if read_node else None
                if read_node is None or at is None:
                    return None
                nodes[at] = read_node
            elif kind == "Queue":
                queue = kinds.read_queue(view)
                at = positions.queues.get(queue.name) if queue else None
                if queue is None or at is None:
                    return None
                queues[at] = queue
            else:
                read_group = kinds.read_podgroup(view)
                group = read_group[0] if read_group else None
                at = positions.groups.get(group.key) if group else None
                if group is None or at is None:
                    return None
                groups[at] = group
            if problems.diagnostics or problems.warnings:
                return None
        self.patched += len(changed)
        return replace(last, nodes=tuple(nodes), queues=tuple(queues), podgroups=tuple(groups))

    def _prune(self, items: list[Mapping[str, Any]]) -> None:
        """Forget what was read from objects no longer in the cluster (or replaced by a newer dict)."""
        alive = {id(obj) for obj in items}
        stale = [key for key, held in self._memo.items()
                 if isinstance(held, tuple) and len(held) == 2 and id(held[0]) not in alive and _object_key(key)]
        for key in stale:
            del self._memo[key]

    def _remember(self, built: ClusterSnapshot, pods: list[Mapping[str, Any]], others: list[tuple[str, str]]) -> None:
        self._last, self._others = built, others
        by_key = {p.key: p for p in built.pods}
        self._pods = {}
        for obj in pods:
            raw = obj.get("metadata")
            meta: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
            if key in by_key and _rv(obj):
                self._pods[object_label(obj)] = (_rv(obj), by_key[key])


@dataclass(frozen=True, slots=True)
class _Positions:
    """Indexes into one snapshot (and the reader's `_others`): what `patch` looks changed objects up in."""

    pods: dict[str, int]  # object label -> index in snapshot.pods
    others: dict[str, int]  # object label -> index in the reader's `_others`, for the kinds in _PATCHABLE
    nodes: dict[str, int]
    queues: dict[str, int]
    groups: dict[str, int]  # podgroup key
    patchable: bool  # every object is of a kind in _PRESENT_OK, with a resourceVersion

    @staticmethod
    def of(snap: ClusterSnapshot, others: list[tuple[str, str]]) -> _Positions:
        kinds_ok = all(rv and label[len(ORIGIN_PREFIX):].split("/", 1)[0] in _PRESENT_OK for label, rv in others)
        patchable = [(label, i) for i, (label, _) in enumerate(others)
                     if label[len(ORIGIN_PREFIX):].split("/", 1)[0] in _PATCHABLE]
        pods = {_pod_label(p): i for i, p in enumerate(snap.pods)}
        return _Positions(
            pods=pods, others=dict(patchable), nodes={n.name: i for i, n in enumerate(snap.nodes)},
            queues={q.name: i for i, q in enumerate(snap.queues)},
            groups={g.key: i for i, g in enumerate(snap.podgroups)},
            patchable=kinds_ok and len(pods) == len(snap.pods))


def _pod_label(pod: Pod) -> str:
    """The label `object_label` gives the pod's object (a pod read without a namespace is `default`'s, whose
    object's label has none: such a pod is not found, and `patch` falls back to `read`)."""
    return f"{ORIGIN_PREFIX}Pod/{pod.namespace}/{pod.name}"


# A change of one of these kinds changes only its own entry of the snapshot (its reader reads nothing else,
# and the assembly derives nothing from it); the shortcut is taken only when every object in the cluster is
# of a kind in _PRESENT_OK (a vcjob derives pods from PodGroups, HyperNodes are checked against Nodes,
# volumes and budgets are read together with other kinds: any of them means a full build).
_PATCHABLE = frozenset({"Node", "Queue", "PodGroup"})
_PRESENT_OK = frozenset({*_PATCHABLE, "Namespace", "PriorityClass", "ConfigMap"})


def _rv(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    if isinstance(meta, dict) or isinstance(meta, Mapping):
        return str(meta.get("resourceVersion") or "")
    return ""


def _read_pod(label: str, obj: Mapping[str, Any], class_values: Mapping[str, int]) -> Pod | None:
    """One pod through the loader's reader, exactly as `cluster._collect`/`_build` read it; None when
    reading it reported anything (the caller then builds everything, which reports it properly)."""
    node = obj if type(obj) is dict else to_node(obj)
    if not isinstance(node, dict):
        return None
    problems = Problems()
    file = ObjectFile(source=SourceFile(name=label, text=""), documents=(node,))
    view = View(file, problems, node, kind="Pod", anchor=file.key_span(node, "kind"))
    pod = kinds.read_pod(view, class_values=class_values)
    if problems.diagnostics or problems.warnings:
        return None
    return pod


def _object_key(key: Any) -> bool:
    """Whether a memo entry is keyed by a whole object (a reader's result), not by a part of one."""
    return isinstance(key, tuple) and len(key) == 3 and isinstance(key[1], int)


def to_node(value: Any) -> Any:
    """Plain JSON-like data as the round-trip node types the loader's readers expect."""
    if isinstance(value, Mapping):
        out = CommentedMap()
        for key, item in value.items():
            out[key] = to_node(item)
        return out
    if isinstance(value, (list, tuple)):
        return CommentedSeq([to_node(item) for item in value])
    return value


def _with_warnings(snap: ClusterSnapshot, warnings: list[str]) -> ClusterSnapshot:
    return replace(snap, warnings=(*warnings, *snap.warnings))

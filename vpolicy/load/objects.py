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
scheduler, once a period): when the only changes since its last build are Pods — the common case —
it reads just the changed pods, with the same reader, and keeps everything else. It falls back to the
full build whenever that shortcut could differ from it (vcjobs present, warnings, errors, anything
but pods changed, objects without resourceVersions); `tests/adapter/test_convert.py` checks the two
agree on random change sequences.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
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

    def node_span(self, node: CommentedMap | CommentedSeq) -> Span:
        return self._whole()

    def key_span(self, mapping: CommentedMap, key: Any) -> Span:
        return self._whole()

    def value_span(self, mapping: CommentedMap, key: Any) -> Span:
        return self._whole()

    def item_span(self, seq: CommentedSeq, index: int) -> Span:
        return self._whole()

    def document_span(self, index: int) -> Span:
        return self._whole()

    def value_text(self, mapping: CommentedMap, key: Any) -> str:
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
    meta = meta if isinstance(meta, Mapping) else {}
    parts = [str(obj.get("kind") or "Object"), str(meta.get("namespace") or ""), str(meta.get("name") or "?")]
    return ORIGIN_PREFIX + "/".join(p for p in parts if p)


def snapshot_from_objects(objects: Iterable[Mapping[str, Any]], *, strict: bool = True) -> ClusterSnapshot:
    """Build the snapshot `load_cluster` would build from a dump holding exactly these objects.

    Each object must carry `apiVersion` and `kind` (list responses omit them on items: the caller
    adds them). `kind: List` objects are unpacked as in files.
    """
    items = [(object_label(obj), to_node(obj)) for obj in objects]
    dropped: set[str] = set()
    extra_warnings: list[str] = []
    for _ in range(_MAX_ROUNDS):
        problems = Problems()
        collected = cluster._Objects()  # noqa: SLF001  # reason: same package; one assembly for files and objects
        for label, node in items:
            if label in dropped:
                continue
            if not isinstance(node, CommentedMap):
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
        self.full_builds = 0
        self.pods_read = 0

    def read(self, objects: Iterable[Mapping[str, Any]]) -> ClusterSnapshot:
        items = list(objects)
        pods = [o for o in items if _is_pod(o)]
        others = [(object_label(o), _rv(o)) for o in items if not _is_pod(o)]
        fast = self._fast(pods, others)
        if fast is not None:
            self._last = fast
            return fast
        built = snapshot_from_objects(items, strict=False)
        self.full_builds += 1
        self._remember(built, pods, others)
        return built

    def _fast(self, pods: list[Mapping[str, Any]], others: list[tuple[str, str]]) -> ClusterSnapshot | None:
        last = self._last
        if (last is None or last.warnings or last.deferred_pods or others != self._others
                or any(not rv or label.startswith(f"{ORIGIN_PREFIX}Job/") for label, rv in others)):
            return None
        class_values = {pc.name: pc.value for pc in last.priority_classes}
        out: list[Pod] = []
        seen: dict[str, tuple[str, Pod]] = {}
        for obj in pods:
            label, rv = object_label(obj), _rv(obj)
            held = self._pods.get(label)
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
        return replace(last, pods=tuple(out))

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


def _is_pod(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Pod" and str(obj.get("apiVersion", "")) == "v1"


def _rv(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


def _read_pod(label: str, obj: Mapping[str, Any], class_values: Mapping[str, int]) -> Pod | None:
    """One pod through the loader's reader, exactly as `cluster._collect`/`_build` read it; None when
    reading it reported anything (the caller then builds everything, which reports it properly)."""
    node = to_node(obj)
    if not isinstance(node, CommentedMap):
        return None
    problems = Problems()
    file = ObjectFile(source=SourceFile(name=label, text=""), documents=(node,))
    view = View(file, problems, node, kind="Pod", anchor=file.key_span(node, "kind"))
    pod = kinds.read_pod(view, class_values=class_values)
    if problems.diagnostics or problems.warnings:
        return None
    return pod


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

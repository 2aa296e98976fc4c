"""Cluster dumps (YAML/JSON files or folders) -> one immutable `ClusterSnapshot`.

`load_cluster` accepts files and folders (a folder contributes every `*.yaml`, `*.yml` and `*.json`
directly inside it, sorted by name), multi-document YAML, JSON, and `kind: List` / `*List` objects
exactly as `kubectl get nodes,pods,podgroups,queues,priorityclasses -A -o yaml` prints them. Kinds
used: Node, Pod, Namespace, ConfigMap (its `volcano-scheduler.conf` key), PriorityClass, Queue and
PodGroup (`scheduling.volcano.sh`), and Job (`batch.volcano.sh`, a vcjob). Any other kind, or a known
kind of another API group (a `batch/v1` Job), is skipped with one line in `snapshot.warnings`.

Every mistake in the input (unreadable file, YAML syntax, missing or mistyped field, bad quantity,
duplicate object) is collected with its `file:line:col`, and all are raised together as one
`PolicyError`; a snapshot is only returned for input without errors. Objects keep the order they
were read in; the queues `root` and `default`, which Volcano's scheduler cache creates, are appended
when the dump lacks them.

What each kind means is in `vpolicy.load.kinds`; what a vcjob implies (its PodGroup, and its pods
only once that PodGroup has left Pending) is in `vpolicy.load.vcjob`; positions come from
`vpolicy.load.yaml_spans`. The conf text is handed on unparsed (with the offsets a conf parser needs
to point into the dump); parsing it is the conf loader's job.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from vpolicy import collector, phases
from vpolicy.errors import Diagnostic, PolicyError
from vpolicy.load import budgets, dumpfile, kinds, numa, topology, vcjob, volumes
from vpolicy.load.fields import Problems, View
from vpolicy.model import snapshot
from vpolicy.source import Span

SUFFIXES = (".yaml", ".yml", ".json")
DUPLICATE_OBJECT = "load.duplicate-object"
NO_INPUT = "load.no-input"
UNREADABLE = "load.unreadable-file"
# (API group, kind) -> the bucket the object is read into; "" is the core group.
_KNOWN: dict[tuple[str, str], str] = {
    ("", "Node"): "nodes", ("", "Pod"): "pods", ("", "Namespace"): "namespaces", ("", "ConfigMap"): "configmaps",
    ("scheduling.k8s.io", "PriorityClass"): "priority_classes",
    ("scheduling.volcano.sh", "Queue"): "queues", ("scheduling.volcano.sh", "PodGroup"): "podgroups",
    ("batch.volcano.sh", "Job"): "jobs", ("topology.volcano.sh", "HyperNode"): "hypernodes",
    ("policy", "PodDisruptionBudget"): "pdbs", ("", "ResourceQuota"): "resource_quotas",
    ("", "PersistentVolume"): "persistent_volumes", ("", "PersistentVolumeClaim"): "persistent_volume_claims",
    ("storage.k8s.io", "StorageClass"): "storage_classes", ("storage.k8s.io", "CSINode"): "csi_nodes",
    ("nodeinfo.volcano.sh", "Numatopology"): "numatopologies",
}
_KINDS = frozenset(kind for _, kind in _KNOWN)
_T = TypeVar("_T")


@dataclass(slots=True)
class _Objects:
    """Objects of each used kind, in the order they were read."""

    nodes: list[View] = field(default_factory=list)
    pods: list[View] = field(default_factory=list)
    namespaces: list[View] = field(default_factory=list)
    configmaps: list[View] = field(default_factory=list)
    priority_classes: list[View] = field(default_factory=list)
    queues: list[View] = field(default_factory=list)
    podgroups: list[View] = field(default_factory=list)
    jobs: list[View] = field(default_factory=list)
    ignored: dict[tuple[str, str], tuple[Span, int]] = field(default_factory=dict)  # (kind, detail): first, count
    hypernodes: list[View] = field(default_factory=list)
    pdbs: list[View] = field(default_factory=list)
    resource_quotas: list[View] = field(default_factory=list)
    persistent_volumes: list[View] = field(default_factory=list)
    persistent_volume_claims: list[View] = field(default_factory=list)
    storage_classes: list[View] = field(default_factory=list)
    numatopologies: list[View] = field(default_factory=list)
    csi_nodes: list[View] = field(default_factory=list)


def load_cluster(paths: Sequence[str | Path] | str | Path, *, fast: bool | None = None) -> snapshot.ClusterSnapshot:
    """Read cluster dumps into a snapshot; raise PolicyError with every problem found in them.

    `fast` forces the reading path of `vpolicy.load.dumpfile` (None: the fast one for big inputs)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]  # one path, not a sequence of characters
    problems = Problems()
    objects = _Objects()
    with collector.paused():  # everything read stays alive (vpolicy.collector)
        for path in _expand(paths, problems):
            for view in dumpfile.read_objects(path, problems, wanted=_wanted, fast=fast):
                _collect(view, objects)
        _warn_ignored(objects, problems)
        phases.mark("read")
        cluster = _build(objects, problems)
        # The readers' memo holds every object's decoded tree (`fields.memoized` keeps the node beside its
        # result), and the snapshot's spans reach it through the dump: let the trees go now.
        problems.memo.clear()
    phases.mark("build snapshot")
    if problems.diagnostics:
        raise PolicyError(problems.diagnostics)
    return cluster


def _expand(paths: Sequence[str | Path], problems: Problems) -> list[Path | str]:
    if not paths:
        problems.diagnostics.append(Diagnostic(NO_INPUT, "no cluster files given",
                                               help="pass one or more YAML/JSON files or folders"))
    files: list[Path | str] = []
    for raw in paths:
        if str(raw) == dumpfile.STDIN:
            files.append(dumpfile.STDIN)
            continue
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and _dump_suffix(p))
            if (path / "nodes.json").is_file():  # `kubectl cluster-info dump --output-directory D`: its
                # namespaces' objects are in D/<namespace>/pods.json, services.json, ...
                found += sorted(p for sub in sorted(path.iterdir()) if sub.is_dir()
                                for p in sub.iterdir() if p.is_file() and _dump_suffix(p))
            if not found:
                problems.error(NO_INPUT, f"folder {raw} holds no *.yaml, *.yml or *.json file", Span(str(raw), 1, 1),
                               "point at the folder that holds the dump, or at the files themselves")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            problems.error(UNREADABLE, f"no such file or folder: {raw}", Span(str(raw), 1, 1),
                           "check the path; folders are read for *.yaml, *.yml and *.json files")
    return files


def _dump_suffix(path: Path) -> bool:
    name = path.name.lower()
    return any(name.endswith(suffix) or name.endswith(suffix + ".gz") for suffix in SUFFIXES)


def _wanted(group: str, kind: str) -> bool:
    return (group, kind) in _KNOWN


def _warn_ignored(objects: _Objects, problems: Problems) -> None:
    """One warning per ignored kind, at its first object, with how many there were."""
    for (kind, detail), (where, count) in objects.ignored.items():
        many = f"{count} objects, " if count > 1 else ""
        problems.warn(where, f"ignoring kind {kind}{detail} ({many}not used for scheduling)")


def _collect(obj: View, objects: _Objects) -> None:
    """File one object under its kind; unpack Lists; warn about kinds the scheduler does not use."""
    kind = obj.text("kind", required=True)
    if kind and (kind == "List" or kind.endswith("List")) and "items" in obj.node:
        for item in obj.mappings("items"):
            _collect(View(item.file, item.problems, item.node, kind="object"), objects)
        return
    api_version = obj.text("apiVersion", required=True)
    if not kind or not api_version:
        return
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    bucket = _KNOWN.get((group, kind))
    if bucket is None:
        detail = f" of {api_version}" if kind in _KINDS else ""
        first, count = objects.ignored.get((kind, detail), (obj.key_span("kind"), 0))
        objects.ignored[(kind, detail)] = (first, count + 1)
        return
    # A missing field is reported at the object's `kind`, a span made only then (objects are blamed rarely).
    getattr(objects, bucket).append(View(obj.file, obj.problems, obj.node, kind=kind, anchor_in=(obj.node, "kind")))


def _build(objects: _Objects, problems: Problems) -> snapshot.ClusterSnapshot:
    seen: dict[str, Span] = {}
    classes = _unique(problems, seen, "PriorityClass",
                      [(pc, pc.name, _origin(v)) for v in objects.priority_classes
                       if (pc := kinds.read_priority_class(v)) is not None])
    class_values = {pc.name: pc.value for pc in classes}
    nodes = _unique(problems, seen, "Node", [(n, n.name, _origin(v)) for v in objects.nodes
                                             if (n := kinds.read_node(v)) is not None])
    pods = _unique(problems, seen, "Pod", [(p, p.key, p.origin if isinstance(p.origin, Span) else _origin(v))
                                           for v in objects.pods
                                           if (p := kinds.read_pod(v, class_values=class_values)) is not None])
    read_groups = [g for v in objects.podgroups if (g := kinds.read_podgroup(v)) is not None]
    groups = _unique(problems, seen, "PodGroup", [(g, g[0].key, g[1].origin) for g in read_groups])
    queues = _unique(problems, seen, "Queue", [(q, q.name, _origin(v)) for v in objects.queues
                                               if (q := kinds.read_queue(v)) is not None])
    namespace_metas = _unique(problems, seen, "Namespace", [(m, m.name, m.origin) for v in objects.namespaces
                                                            if (m := kinds.read_meta(v, namespaced=False)) is not None])
    namespaces = [m.name for m in namespace_metas]
    jobs = _unique(problems, seen, "Job", [(j, f"{j.meta.namespace}/{j.meta.name}", j.meta.origin)
                                           for v in objects.jobs if (j := vcjob.read_job(v)) is not None])
    hypernodes = _unique(problems, seen, "HyperNode", [(h, h.name, _origin(v)) for v in objects.hypernodes
                                                       if (h := topology.read_hypernode(v)) is not None])
    topology.check_topology(hypernodes, nodes, problems)
    pdbs = _unique(problems, seen, "PodDisruptionBudget", [(b, b.key, _origin(v)) for v in objects.pdbs
                                                           if (b := budgets.read_pdb(v)) is not None])
    quotas = _unique(problems, seen, "ResourceQuota", [(rq, rq.key, _origin(v)) for v in objects.resource_quotas
                                                       if (rq := budgets.read_resource_quota(v)) is not None])
    pvs = _unique(problems, seen, "PersistentVolume", [(v, v.name, _origin(o)) for o in objects.persistent_volumes
                                                        if (v := volumes.read_persistent_volume(o)) is not None])
    pvcs = _unique(problems, seen, "PersistentVolumeClaim",
                   [(c, c.key, _origin(o)) for o in objects.persistent_volume_claims
                    if (c := volumes.read_persistent_volume_claim(o)) is not None])
    classes_ = _unique(problems, seen, "StorageClass", [(s, s.name, _origin(o)) for o in objects.storage_classes
                                                        if (s := volumes.read_storage_class(o)) is not None])
    csi_nodes = _unique(problems, seen, "CSINode", [(cn, cn.name, _origin(o)) for o in objects.csi_nodes
                                                    if (cn := volumes.read_csi_node(o)) is not None])
    volumes.check_volumes(pvcs, pvs, classes_, csi_nodes, {n.name for n in nodes}, problems)
    numatopologies = _unique(problems, seen, "Numatopology", [(t, t.name, _origin(v)) for v in objects.numatopologies
                                                              if (t := numa.read_numatopology(v)) is not None])
    conf = _find_conf(objects.configmaps, problems)
    derived = vcjob.derive(jobs, podgroups=groups, pods=pods, class_values=class_values)
    return snapshot.ClusterSnapshot(
        nodes=tuple(nodes), pods=(*pods, *derived.pods),
        podgroups=(*(g for g, _ in groups), *derived.podgroups),
        queues=_with_default_queues(queues), priority_classes=tuple(classes), namespaces=tuple(namespaces),
        namespace_labels={m.name: m.labels for m in namespace_metas},
        persistent_volumes=tuple(pvs), persistent_volume_claims=tuple(pvcs), storage_classes=tuple(classes_),
        csi_nodes=tuple(csi_nodes),
        conf_text=conf.text if conf else None, conf_origin=conf.origin if conf else None,
        conf_line_offset=conf.line_offset if conf else None, conf_col_offset=conf.col_offset if conf else 0,
        warnings=problems.warnings, deferred_pods=derived.deferred_pods, hypernodes=tuple(hypernodes),
        pdbs=tuple(pdbs), resource_quotas=tuple(quotas), numatopologies=tuple(numatopologies))


def _unique(problems: Problems, seen: dict[str, Span], kind: str, read: list[tuple[_T, str, Span]]) -> list[_T]:
    """The objects read, less any whose kind and key repeat an earlier one (each repeat is an error)."""
    out: list[_T] = []
    for item, key, origin in read:
        first = seen.get(f"{kind}/{key}")
        if first is not None:
            problems.error(DUPLICATE_OBJECT, f"{kind} {key} is defined twice", origin,
                           "delete one of the two, or give them different names", related=((first, "first here"),))
            continue
        seen[f"{kind}/{key}"] = origin
        out.append(item)
    return out


def _origin(view: View) -> Span:
    meta = view.node.get("metadata")
    if isinstance(meta, dict) and meta.get("name") is not None:
        return view.file.value_span(meta, "name")
    return view.span()


def _find_conf(configmaps: list[View], problems: Problems) -> kinds.Conf | None:
    found: kinds.Conf | None = None
    for view in configmaps:
        meta = kinds.read_meta(view, namespaced=True)
        conf = kinds.read_conf(view)
        label = f"ConfigMap {meta.namespace}/{meta.name}" if meta else "ConfigMap"
        if conf is None:
            problems.warn(view.span(), f"ignoring {label} (it has no {kinds.CONF_KEY} key)")
        elif found is not None:
            problems.warn(conf.origin, f"ignoring the {kinds.CONF_KEY} of {label}: the one at {found.origin} "
                                       "comes first")
        else:
            found = conf
    return found


def _with_default_queues(queues: list[snapshot.Queue]) -> tuple[snapshot.Queue, ...]:
    names = {q.name for q in queues}
    extra = []
    if snapshot.ROOT_QUEUE not in names:
        extra.append(snapshot.Queue(name=snapshot.ROOT_QUEUE, weight=1, reclaimable=False,
                                    origin="queue/root (created by Volcano's scheduler)"))
    if snapshot.DEFAULT_QUEUE not in names:
        extra.append(snapshot.Queue(name=snapshot.DEFAULT_QUEUE, weight=1, reclaimable=True,
                                    origin="queue/default (created by Volcano's scheduler)"))
    return (*queues, *extra)

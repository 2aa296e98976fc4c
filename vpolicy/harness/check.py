"""`vpolicy check FILE...`: every mistake in policy files, confs, cluster manifests and scenario files,
each with its code, `file:line:col`, the source line with a caret and a help line, sorted by location.

What it checks, by the kind of each file (told by its content; see `file_kind`):
- a policy or rule module (`.vpol`): syntax and the checker's `check.*` diagnostics (warnings too), then,
  for a `policy`, that its `use`d modules resolve and compile with its settings;
- a `volcano-scheduler.conf` (or the ConfigMap holding it): the conf loader's `conf.*` diagnostics, that
  every plugin's rule module compiles with its arguments, and `check.flag-without-rule` (an `enable*`
  flag on a plugin whose rule module has no rule for that callback, so the flag changes nothing);
- cluster manifests: the loader's `load.*` diagnostics and warnings, the cross-object checks Volcano's
  admission webhooks make and a hand-written dump skips (`check_cluster`), and a conf found in a ConfigMap;
- a scenario file (first document `kind: Scenario`): its header, cluster and policy, as `vpolicy test` reads them.

All cluster manifests of one run are checked together as one cluster, as `dry-run --cluster A --cluster B`
loads them, so a PodGroup may name a Queue defined in another file. Folders are searched recursively.
This module returns diagnostics and renders them; it never changes a file and never runs a session.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence, TextIO

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from vpolicy.errors import Diagnostic, PolicyError, did_you_mean, sorted_diagnostics
from vpolicy.lang import ast
from vpolicy.lang.builtins import CALLBACKS
from vpolicy.load import yaml_spans
from vpolicy.model import conf as conf_model
from vpolicy.model import snapshot as snap
from vpolicy.model.resources import Resources, milli_scaled
from vpolicy.source import Span

FileKind = Literal["policy", "conf", "scenario", "cluster"]
SUFFIXES = (".vpol", ".conf", ".yaml", ".yml", ".json")
FLAG_WITHOUT_RULE = "check.flag-without-rule"
BOUNDS_ORDER = "check.queue-bounds-order"
CHILDREN_OVER_PARENT = "check.children-over-parent"
CAPABILITY_OVER_PARENT = "check.capability-over-parent"
MISSING_PARENT = "check.missing-parent-queue"
QUEUE_CYCLE = "check.queue-cycle"
MISSING_QUEUE = "check.missing-queue"
NON_LEAF_QUEUE = "check.job-in-non-leaf-queue"
MISSING_PODGROUP = "check.missing-podgroup"
NO_FILES = "check.no-files"
LOAD_WARNING = "load.warning"
# Flag -> the callbacks it switches (several flags may switch none of vpolicy's callbacks).
_FLAG_CALLBACKS: dict[str, tuple[str, ...]] = {
    flag: tuple(name for name, cb in CALLBACKS.items() if cb.flag == flag) for flag in conf_model.FLAGS}
_DOCUMENT_SEPARATOR = re.compile(r"^---[^\n]*$", re.MULTILINE)
_TOP_KEY = re.compile(r"""^["']?([A-Za-z_][\w.-]*)["']?[ \t]*:(?:[ \t]+([^#\n]*))?""", re.MULTILINE)
_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


@dataclass(slots=True)
class CheckRun:
    files: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "error")

    @property
    def warnings(self) -> int:
        return len(self.diagnostics) - self.errors


# the command --------------------------------------------------------------------------------------------
def run_check(files: Sequence[str], *, output: str, out: TextIO, err: TextIO) -> int:
    """Check `files` and report: text on `err` (diagnostics, then a summary) or one JSON object on `out`."""
    run = check_paths(files)
    if output == "json":
        json.dump(to_json(run), out, indent=2)
        out.write("\n")
    else:
        for d in run.diagnostics:
            print(d.render(), file=err)
        print(f"{len(run.files)} file(s) checked: {run.errors} error(s), {run.warnings} warning(s)", file=err)
    return 1 if run.errors else 0


def to_json(run: CheckRun) -> dict[str, object]:
    """`{"files", "errors", "warnings", "diagnostics": [...]}`; each diagnostic as `Diagnostic.to_json`
    plus `end_line`/`end_col` and `related` notes, for editors."""
    diags = []
    for d in run.diagnostics:
        doc = d.to_json()
        if d.span is not None and d.span.end_line is not None:
            doc.update(end_line=d.span.end_line, end_col=d.span.end_col)
        if d.related:
            doc["related"] = [{"file": s.file, "line": s.line, "col": s.col, "message": note} for s, note in d.related]
        diags.append(doc)
    return {"files": run.files, "errors": run.errors, "warnings": run.warnings, "diagnostics": diags}


def check_paths(paths: Sequence[str]) -> CheckRun:
    """Every diagnostic of every file under `paths`, sorted by location."""
    run = CheckRun()
    cluster_files: list[str] = []
    for path in _expand(paths, run):
        run.files.append(path)
        kind = file_kind(path)
        if kind == "cluster":
            cluster_files.append(path)
        else:
            run.diagnostics.extend(check_file(path, kind=kind))
    if cluster_files:
        run.diagnostics.extend(check_cluster_files(cluster_files))
    run.diagnostics = sorted_diagnostics(dict.fromkeys(run.diagnostics))  # one diagnostic once
    return run


def check_file(path: str, *, kind: FileKind | None = None) -> list[Diagnostic]:
    """The diagnostics of one file on its own (a cluster manifest as a cluster by itself)."""
    kind = kind or file_kind(path)
    if kind == "policy":
        return _check_policy(path)
    if kind == "conf":
        return _check_conf(path)
    if kind == "scenario":
        return _check_scenario(path)
    return check_cluster_files([path])


def file_kind(path: str) -> FileKind:
    """`.vpol`: policy; `.conf`: conf. YAML/JSON: a scenario if its first document is `kind: Scenario`; a
    conf if a document without `kind` has `actions` or `tiers`, or every object is a ConfigMap and one holds
    `volcano-scheduler.conf`; otherwise cluster manifests. Only top-level keys are read (a full YAML parse
    of every file would double the time `check` takes), so unreadable or odd input goes to the cluster
    loader, which reports it."""
    if path.endswith(".vpol"):
        return "policy"
    if path.endswith(".conf"):
        return "conf"
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return "cluster"
    docs = [_top_level(doc) for doc in _DOCUMENT_SEPARATOR.split(text)]
    docs = [d for d in docs if d]
    if docs and docs[0].get("kind") == "Scenario":
        return "scenario"
    if any("kind" not in d and ("actions" in d or "tiers" in d) for d in docs):
        return "conf"
    if docs and all(d.get("kind") == "ConfigMap" for d in docs) and "volcano-scheduler.conf" in text:
        return "conf"
    return "cluster"


def _top_level(document: str) -> dict[str, str]:
    """The keys written at column 0 of one YAML document (or one JSON object), with their scalar values."""
    stripped = document.strip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except ValueError:
            return {}
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
    keys: dict[str, str] = {}
    for match in _TOP_KEY.finditer(document):
        keys.setdefault(match.group(1), (match.group(2) or "").strip().strip("'\""))
    return keys


def _expand(paths: Sequence[str], run: CheckRun) -> list[str]:
    files: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(str(p) for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
            if not found:
                run.diagnostics.append(Diagnostic(NO_FILES, f"no files to check under {raw}", Span(raw, 1, 1),
                                                  help=f"check looks for {', '.join(SUFFIXES)} files"))
            files.extend(found)
        else:
            files.append(raw)  # a missing file is reported by the loader of its kind
    return list(dict.fromkeys(files))


# policies, confs, scenarios -----------------------------------------------------------------------------
def _check_policy(path: str) -> list[Diagnostic]:
    from vpolicy.harness import policy as policies
    from vpolicy.lang import check, parse

    try:
        module = parse.parse_file(path)
    except PolicyError as exc:
        return list(exc.diagnostics)
    diags = list(check.check_module(module))
    if module.kind != "policy" or any(d.severity == "error" for d in diags):
        return diags
    try:
        policies.from_policy_file(path)
    except PolicyError as exc:
        return diags + list(exc.diagnostics)
    base = Path(path).resolve().parent
    for decl in module.decls:
        for use in decl.uses if isinstance(decl, ast.Tier) else ():
            # Private on purpose: the very resolution the policy loader uses.
            target = policies._resolve_use(base, use.path)  # noqa: SLF001
            if target is None:
                continue
            callbacks = _callbacks_of(target)
            for index, (key, _value) in enumerate(use.settings):
                if key in _FLAG_CALLBACKS:
                    diags.extend(_flag_without_rule(key, _module_name(target), target, callbacks,
                                                    use.key_span(index), use.span))
    return diags


def _check_conf(path: str) -> list[Diagnostic]:
    from vpolicy.load import conf as conf_loader

    try:
        loaded = conf_loader.load_conf(path)
    except PolicyError as exc:
        return list(exc.diagnostics)
    return [*loaded.warning_diagnostics, *check_conf(loaded)]


def check_conf(conf: conf_model.SchedulerConf) -> list[Diagnostic]:
    """What a loaded conf still gets wrong: rule modules that do not compile with its arguments, and
    enable flags that switch no rule of their plugin."""
    from vpolicy.harness import policy as policies

    diags: list[Diagnostic] = []
    try:
        policies.from_conf(conf)
    except PolicyError as exc:
        diags.extend(exc.diagnostics)
    root = policies.policy_root() / "volcano"
    for option in conf.plugins():
        target = root / f"{option.name}.vpol"
        if not target.is_file():
            continue
        callbacks = _callbacks_of(target)
        for flag, span in option.flag_spans.items():
            if flag in _FLAG_CALLBACKS:
                diags.extend(_flag_without_rule(flag, option.name, target, callbacks, _key_span(span, flag),
                                                option.span))
    return diags


def _check_scenario(path: str) -> list[Diagnostic]:
    from vpolicy.harness import scenario

    try:
        loaded = scenario.load_scenario(path)
    except PolicyError as exc:
        return list(exc.diagnostics)
    return [_warning(w) for w in loaded.warnings]


def _callbacks_of(module_path: Path) -> frozenset[str]:
    from vpolicy.harness import policy as policies

    try:
        module = policies._module(str(module_path))  # noqa: SLF001  # reason: the loader's parse cache
    except PolicyError:
        return frozenset(CALLBACKS)  # a broken module is reported on its own; do not pile up warnings
    return frozenset(d.callback for d in module.decls if isinstance(d, ast.Rule))


def _module_name(module_path: Path) -> str:
    from vpolicy.harness import policy as policies

    return policies._module(str(module_path)).name  # noqa: SLF001  # reason: the loader's parse cache


def _flag_without_rule(flag: str, plugin: str, module_path: Path, callbacks: frozenset[str], span: Span | None,
                       plugin_span: Span | None) -> list[Diagnostic]:
    switched = _FLAG_CALLBACKS[flag]
    if any(cb in callbacks for cb in switched):
        return []
    related = ((plugin_span, f"plugin '{plugin}' is here"),) if plugin_span is not None and span != plugin_span else ()
    if not switched:
        return [Diagnostic(FLAG_WITHOUT_RULE, f"'{flag}' switches a callback vpolicy does not implement; "
                                              f"it has no effect on plugin '{plugin}'", span,
                           help="remove the flag (Volcano accepts it on any plugin)", severity="warning",
                           related=related)]
    names = " or ".join(switched)
    return [Diagnostic(FLAG_WITHOUT_RULE, f"plugin '{plugin}' has no {names} rule, so '{flag}' has no effect",
                       span, help=f"remove the flag, or add a `{switched[0]}` rule to {_short(module_path)}",
                       severity="warning", related=related)]


def _key_span(value_span: Span, key: str) -> Span:
    """The span of `key` on the line of its value (`enableJobOrder: false`), else the value's."""
    try:
        line = Path(value_span.file).read_text(encoding="utf-8-sig").splitlines()[value_span.line - 1]
    except (OSError, UnicodeDecodeError, IndexError):
        return value_span
    col = line.rfind(key, 0, value_span.col - 1)
    if col < 0:
        return value_span
    return Span(value_span.file, value_span.line, col + 1, value_span.line, col + len(key))


def _warning(line: str) -> Diagnostic:
    """A loader warning line (`file:line:col: message`) as a located warning diagnostic."""
    parts = line.split(":", 3)
    if len(parts) == 4 and parts[1].isdigit() and parts[2].isdigit():
        return Diagnostic(LOAD_WARNING, parts[3].strip(), Span(parts[0], int(parts[1]), int(parts[2])),
                          severity="warning")
    return Diagnostic(LOAD_WARNING, line, severity="warning")


def _short(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


# cluster manifests --------------------------------------------------------------------------------------
def check_cluster_files(paths: Sequence[str]) -> list[Diagnostic]:
    """Load the files as one cluster; then its warnings, the cross-object checks and its embedded conf."""
    from vpolicy.load import cluster

    try:
        snapshot = cluster.load_cluster(list(paths))
    except PolicyError as exc:
        return list(exc.diagnostics)
    diags = [_warning(w) for w in snapshot.warnings]
    fields = _Fields.read(paths)
    diags.extend(check_cluster(snapshot, fields))
    diags.extend(check_admission(fields))
    if snapshot.conf_text is not None:
        diags.extend(_check_embedded_conf(snapshot))
    return diags


def _check_embedded_conf(snapshot: snap.ClusterSnapshot) -> list[Diagnostic]:
    from vpolicy.load import conf as conf_loader

    origin = snapshot.conf_origin
    block = snapshot.conf_line_offset is not None
    try:
        conf = conf_loader.parse_conf_text(
            snapshot.conf_text or "", file=origin.file if origin else "<configmap>",
            line_offset=snapshot.conf_line_offset or 0, col_offset=snapshot.conf_col_offset,
            origin=None if block else origin)
    except PolicyError as exc:
        return list(exc.diagnostics)
    return [*conf.warning_diagnostics, *check_conf(conf)]


@dataclass(slots=True)
class _Fields:
    """Where the fields of each object are written, found from the span of its `metadata.name`."""

    objects: dict[tuple[str, int, int], tuple[yaml_spans.YamlFile, CommentedMap]] = field(default_factory=dict)

    @classmethod
    def read(cls, paths: Sequence[str]) -> "_Fields":
        out = cls()
        for path in _cluster_files(paths):
            try:
                loaded = yaml_spans.read_yaml(path)
            except PolicyError:
                continue
            for document in loaded.documents:
                for obj in _objects(document):
                    meta = obj.get("metadata")
                    if isinstance(meta, CommentedMap) and meta.get("name") is not None:
                        span = loaded.value_span(meta, "name")
                        out.objects[(span.file, span.line, span.col)] = (loaded, obj)
        return out

    def span(self, origin: object, *path: str) -> Span | None:
        """The span of the value at `path` in the object read at `origin`; the object's name when the
        path is not written; None for objects not read from these files (the `root`/`default` queues)."""
        if not isinstance(origin, Span):
            return None
        entry = self.objects.get((origin.file, origin.line, origin.col))
        if entry is None:
            return origin
        loaded, node = entry
        for i, key in enumerate(path):
            if not isinstance(node, CommentedMap) or key not in node:
                return origin
            if i == len(path) - 1:
                return loaded.value_span(node, key)
            node = node[key]
        return origin


# Admission findings `check_cluster` already reports (with its own codes and notes).
_REPORTED_BY_CHECK_CLUSTER = frozenset({"admission.job-queue-not-found", "admission.job-queue-not-leaf"})


def check_admission(fields: _Fields) -> list[Diagnostic]:
    """Volcano's admission webhooks (validation after defaulting, `vpolicy.admission`) on each Job and
    PodGroup of the manifests: what the API server would have refused. Queue rules and cross-object
    rules are `check_cluster`'s; only jobs are checked against the queues here."""
    from vpolicy.admission import hypernodes, jobs, podgroups, queues

    objects = list(fields.objects.values())
    known: dict[str, Any] = {"root": {"metadata": {"name": "root"}}, "default": {"metadata": {"name": "default"}}}
    for _loaded, obj in objects:
        if obj.get("kind") == "Queue":
            known[str((obj.get("metadata") or {}).get("name"))] = queues.default_queue(obj)
    diags: list[Diagnostic] = []
    for loaded, obj in objects:
        kind, api = obj.get("kind"), str(obj.get("apiVersion", ""))
        if kind == "Job" and api.startswith("batch.volcano.sh/"):
            found = [v for v in jobs.validate_job(jobs.default_job(obj), queues=known)
                     if v.code not in _REPORTED_BY_CHECK_CLUSTER]
        elif kind == "PodGroup" and api.startswith("scheduling.volcano.sh/"):
            found = podgroups.validate_podgroup(podgroups.default_podgroup(obj))
        elif kind == "HyperNode" and api.startswith("topology.volcano.sh/"):
            found = hypernodes.validate_hypernode(obj)
        else:  # queues: check_cluster already applies the queue webhook's rules, with notes
            continue
            continue
        diags.extend(_located(found, loaded, obj))
    return diags


def _located(violations: Iterable[Any], loaded: yaml_spans.YamlFile, obj: CommentedMap) -> list[Diagnostic]:
    from vpolicy.admission import common

    def span_of(path: str) -> Span | None:
        node: Any = obj
        span = loaded.value_span(obj.get("metadata"), "name") if isinstance(obj.get("metadata"), CommentedMap) else None
        for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
            if part.startswith("[") and isinstance(node, CommentedSeq):
                index = int(part[1:-1])
                if index >= len(node):
                    break
                span, node = loaded.item_span(node, index), node[index]
            elif isinstance(node, CommentedMap) and part in node:
                span, node = loaded.value_span(node, part), node[part]
            else:
                break
        return span

    return [Diagnostic(d.code, d.message, d.span, help="the API server's Volcano webhook would refuse this object")
            for d in common.diagnostics(violations, span_of)]


def _cluster_files(paths: Sequence[str]) -> Iterator[Path]:
    from vpolicy.load import cluster

    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in cluster.SUFFIXES)
        else:
            yield path


def _objects(document: object) -> Iterator[CommentedMap]:
    if not isinstance(document, CommentedMap):
        return
    items = document.get("items")
    if isinstance(items, CommentedSeq) and str(document.get("kind", "")).endswith("List"):
        for item in items:
            yield from _objects(item)
    else:
        yield document


def check_cluster(snapshot: snap.ClusterSnapshot, fields: "_Fields | None" = None) -> list[Diagnostic]:
    """The checks Volcano's queue, podgroup and job webhooks make, on a snapshot that skipped them."""
    fields = fields or _Fields()
    queues = {q.name: q for q in snapshot.queues}
    children: dict[str, list[snap.Queue]] = {}
    for q in snapshot.queues:
        parent = _parent(q)
        if parent in queues:
            children.setdefault(parent, []).append(q)
    diags: list[Diagnostic] = []
    for q in snapshot.queues:
        diags.extend(_bounds_order(q, fields))
        if q.parent and q.parent not in queues:
            diags.append(Diagnostic(MISSING_PARENT, f"queue '{q.name}' names parent '{q.parent}', which does not exist",
                                    fields.span(q.origin, "spec", "parent"),
                                    help=did_you_mean(q.parent, queues) or "create the parent queue first, or "
                                    "leave out spec.parent to hang the queue under root"))
    diags.extend(_cycles(snapshot.queues, queues, fields))
    for parent, kids in children.items():
        diags.extend(_children_over_parent(queues[parent], kids, fields))
    for q in snapshot.queues:
        diags.extend(_capability_over_ancestors(q, queues, fields))
    for pg in snapshot.podgroups:
        diags.extend(_podgroup_queue(pg, queues, children, fields))
    groups = {pg.key for pg in snapshot.podgroups}
    for pod in snapshot.pods:
        if pod.group and f"{pod.namespace}/{pod.group}" not in groups:
            names = [g.split("/", 1)[1] for g in groups if g.startswith(f"{pod.namespace}/")]
            diags.append(Diagnostic(
                MISSING_PODGROUP, f"pod {pod.key} belongs to podgroup '{pod.group}', which does not exist in "
                                  f"namespace '{pod.namespace}'; Volcano never schedules it",
                fields.span(pod.origin, "metadata", "annotations", snap.GROUP_NAME_ANNOTATION),
                help=did_you_mean(pod.group, names) or "create the PodGroup, or fix the pod's "
                                                       f"{snap.GROUP_NAME_ANNOTATION} annotation"))
    return diags


def _parent(q: snap.Queue) -> str:
    """The queue's parent as Volcano's queue controller sets it: `root` for a queue that names none."""
    if q.name == snap.ROOT_QUEUE:
        return ""
    return q.parent or snap.ROOT_QUEUE


_FIELD_PATHS: dict[str, tuple[str, ...]] = {
    "guarantee": ("spec", "guarantee", "resource"), "deserved": ("spec", "deserved"),
    "capability": ("spec", "capability")}


def _bound(q: snap.Queue, name: str) -> Resources | None:
    if name == "guarantee":
        return q.guarantee if q.guarantee else None
    return q.deserved if name == "deserved" else q.capability


def _bounds_order(q: snap.Queue, fields: _Fields) -> list[Diagnostic]:
    """guarantee <= deserved <= capability on every resource both sides name (Volcano's queue webhook)."""
    diags = []
    seen: set[tuple[str, str]] = set()
    for low, high in (("guarantee", "deserved"), ("deserved", "capability"), ("guarantee", "capability")):
        lower, upper = _bound(q, low), _bound(q, high)
        if lower is None or upper is None:
            continue
        for r in sorted(lower):
            if r in upper and lower[r] > upper[r] and (low, r) not in seen:
                seen.add((low, r))
                diags.append(Diagnostic(
                    BOUNDS_ORDER, f"queue '{q.name}': {low} {r} {_amount(r, lower[r])} is above {high} {r} "
                                  f"{_amount(r, upper[r])}",
                    fields.span(q.origin, *_FIELD_PATHS[low], r),
                    help=f"Volcano requires guarantee <= deserved <= capability for each resource; lower the "
                         f"{low} or raise the {high}",
                    related=_note(fields.span(q.origin, *_FIELD_PATHS[high], r), f"{high} {r} is set here")))
    return diags


def _children_over_parent(parent: snap.Queue, kids: list[snap.Queue], fields: _Fields) -> list[Diagnostic]:
    """The children's guarantees (and deserved) add up to no more than the parent's, per resource."""
    diags = []
    for name in ("guarantee", "deserved"):
        own = _bound(parent, name)
        if own is None:
            continue
        for r in sorted(own):
            shares = [(k, (_bound(k, name) or Resources()).get(r, 0)) for k in kids]
            total = sum(v for _, v in shares)
            if total <= own[r]:
                continue
            notes = tuple((s, f"queue '{k.name}': {name} {r} {_amount(r, v)}") for k, v in shares
                          if v and (s := fields.span(k.origin, *_FIELD_PATHS[name], r)) is not None)
            diags.append(Diagnostic(
                CHILDREN_OVER_PARENT, f"queue '{parent.name}': its children's {name} {r} add up to "
                                      f"{_amount(r, total)}, above its own {_amount(r, own[r])}",
                fields.span(parent.origin, *_FIELD_PATHS[name], r),
                help=f"Volcano requires the children's {name} to fit in the parent's; lower a child's "
                     f"or raise the parent's", related=notes))
    return diags


def _capability_over_ancestors(q: snap.Queue, queues: Mapping[str, snap.Queue], fields: _Fields) -> list[Diagnostic]:
    """A child's capability is no more than the nearest ancestor's that limits the same resource."""
    if not q.capability:
        return []
    diags = []
    for r in sorted(q.capability):
        for ancestor in _ancestors(q, queues):
            if ancestor.capability is None or r not in ancestor.capability:
                continue
            if q.capability[r] > ancestor.capability[r]:
                diags.append(Diagnostic(
                    CAPABILITY_OVER_PARENT, f"queue '{q.name}': capability {r} {_amount(r, q.capability[r])} is "
                                            f"above capability {r} {_amount(r, ancestor.capability[r])} of its "
                                            f"ancestor '{ancestor.name}'",
                    fields.span(q.origin, "spec", "capability", r),
                    help="a queue can never use more than its ancestors allow; lower this capability",
                    related=_note(fields.span(ancestor.origin, "spec", "capability", r),
                                  f"queue '{ancestor.name}': capability {r}")))
            break
    return diags


def _ancestors(q: snap.Queue, queues: Mapping[str, snap.Queue]) -> Iterator[snap.Queue]:
    seen = {q.name}
    parent = queues.get(_parent(q))
    while parent is not None and parent.name not in seen:
        yield parent
        seen.add(parent.name)
        parent = queues.get(_parent(parent))


def _cycles(ordered: Iterable[snap.Queue], queues: Mapping[str, snap.Queue], fields: _Fields) -> list[Diagnostic]:
    diags = []
    reported: set[str] = set()
    for q in ordered:
        path = [q.name]
        parent = queues.get(_written_parent(q))
        while parent is not None and parent.name not in path:
            path.append(parent.name)
            parent = queues.get(_written_parent(parent))
        if parent is None or parent.name != q.name or q.name in reported:
            continue
        reported.update(path)
        loop = " -> ".join([*path, q.name])
        diags.append(Diagnostic(QUEUE_CYCLE, f"queue '{q.name}' is its own ancestor: {loop}",
                                fields.span(q.origin, "spec", "parent"),
                                help="root is the top of the queue tree: remove its spec.parent"
                                if snap.ROOT_QUEUE in path else
                                "a queue's parents must lead to root; change one spec.parent in the loop"))
    return diags


def _written_parent(q: snap.Queue) -> str:
    """The parent as the queue's spec writes it (`root` when it names none). Unlike `_parent`, root's own
    `spec.parent` counts: Volcano's root has no parent, so one written there can only close a loop."""
    if q.name == snap.ROOT_QUEUE:
        return q.parent
    return _parent(q)


def _podgroup_queue(pg: snap.PodGroup, queues: Mapping[str, snap.Queue], children: Mapping[str, list[snap.Queue]],
                    fields: _Fields) -> list[Diagnostic]:
    where = fields.span(pg.origin, "spec", "queue")
    if pg.queue not in queues:
        return [Diagnostic(MISSING_QUEUE, f"podgroup {pg.key} names queue '{pg.queue}', which does not exist; "
                                          "Volcano never schedules it", where,
                           help=did_you_mean(pg.queue, queues) or "create the queue, or leave out spec.queue "
                                                                  "to use 'default'")]
    kids = children.get(pg.queue)
    if not kids:
        return []
    names = ", ".join(k.name for k in kids)
    return [Diagnostic(NON_LEAF_QUEUE, f"podgroup {pg.key} is in queue '{pg.queue}', which has child queues "
                                       f"({names}); jobs may only be submitted to leaf queues", where,
                       help=f"submit it to one of {names}",
                       related=_note(fields.span(queues[pg.queue].origin), f"queue '{pg.queue}'"))]


def _note(span: Span | None, text: str) -> tuple[tuple[Span, str], ...]:
    return ((span, text),) if span is not None else ()


def _amount(resource: str, value: int) -> str:
    """A model value in Kubernetes quantity form: `2`, `500m`, `4Gi`."""
    if milli_scaled(resource):
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    for suffix, factor in _BINARY:
        if value >= factor and value % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)

"""Scenario files: one YAML file holding a header document (`kind: Scenario`) and then the cluster.

`read_header(path)` checks the first document strictly against the format of docs/scenarios.md: every
unknown key is an error with its `file:line:col` and a "did you mean", every value has one type, and
every pod, node and podgroup named in `expect` is checked against the cluster once it is loaded.
`load_scenario(path)` adds the cluster (the remaining documents, read by `vpolicy.load.cluster`, so
cluster diagnostics point into the scenario file too) and the compiled policy: the inline `conf`
(parsed with positions inside the scenario file), `conf_file` or `policy` (paths relative to the
scenario), else a ConfigMap conf among the cluster documents, else Volcano's built-in default conf.

All mistakes are raised together as one `PolicyError` with `scenario.*` codes (conf, policy and cluster
mistakes keep their own codes). This module runs nothing and compares nothing: `vpolicy.harness.testing`
runs a loaded scenario and diffs its decisions against `Scenario.expect`.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import LiteralScalarString

from vpolicy.engine.session import CompiledPolicy
from vpolicy.errors import Diagnostic, PolicyError, did_you_mean
from vpolicy.harness import policy as policies
from vpolicy.load import conf as conf_loader
from vpolicy.load import yaml_spans
from vpolicy.load.cluster import load_cluster
from vpolicy.load.fields import rfc3339_seconds
from vpolicy.model.snapshot import ClusterSnapshot, PodGroupPhase
from vpolicy.source import Span

API_VERSION = "vpolicy/v1"
KIND = "Scenario"
UNKNOWN_KEY = "scenario.unknown-key"
WRONG_TYPE = "scenario.wrong-type"
MISSING_KEY = "scenario.missing-key"
BAD_VALUE = "scenario.bad-value"
CONFLICTING_KEYS = "scenario.conflicting-keys"
UNKNOWN_OBJECT = "scenario.unknown-object"
MISSING_FILE = "scenario.missing-file"
MISPLACED_HEADER = "scenario.misplaced-header"

# The expectations, in docs/scenarios.md order, each with an example of its value (for help lines).
EXPECT_EXAMPLES = {
    "binds": "{namespace/pod: node}", "binds_include": "{namespace/pod: node}", "binds_exclude": "[namespace/pod]",
    "bound": "[namespace/pod]", "bind_count": "3",
    "pipelined": "{namespace/pod: node}", "pipelined_include": "{namespace/pod: node}",
    "nominated": "{namespace/pod: node}",
    "evictions": "[namespace/pod]", "evictions_include": "[namespace/pod]",
    "podgroups": "{namespace/podgroup: Inqueue}", "unschedulable": "[namespace/pod]",
    "unschedulable_reasons": '{namespace/pod: "Insufficient cpu"}',
}
EXPECT_KEYS = tuple(EXPECT_EXAMPLES)
# Expectations whose value is a mapping (the others list pods).
MAP_EXPECTATIONS = tuple(k for k, v in EXPECT_EXAMPLES.items() if v.startswith("{"))
# Expectations whose value is a count (Volcano's ExpectBindsNum).
COUNT_EXPECTATIONS = tuple(k for k, v in EXPECT_EXAMPLES.items() if v.isdigit())
LIST_EXPECTATIONS = tuple(k for k in EXPECT_KEYS if k not in MAP_EXPECTATIONS and k not in COUNT_EXPECTATIONS)
POLICY_KEYS = ("conf", "conf_file", "policy")
HEADER_KEYS = ("apiVersion", "kind", "name", "description", *POLICY_KEYS, "now", "timezone", "last_runs", "expect",
               "xfail")
# What the values of each map expectation name (keys always name pods, except for podgroups).
_NODE_VALUED = frozenset({"binds", "binds_include", "pipelined", "pipelined_include", "nominated"})
_PHASES = tuple(p.value for p in PodGroupPhase)
# The loader's warning for the header document, which is ours, not a cluster object.
_HEADER_WARNING = f"ignoring kind {KIND} "

PolicyKind = Literal["conf", "conf_file", "policy", "default"]


@dataclass(frozen=True, slots=True)
class Expect:
    """What the session must decide; None = not checked. Keys are `ns/name`; see docs/scenarios.md."""

    binds: Mapping[str, str] | None = None
    binds_include: Mapping[str, str] | None = None
    binds_exclude: tuple[str, ...] | None = None
    bound: tuple[str, ...] | None = None
    bind_count: int | None = None  # exactly this many pods bound, whichever (Volcano's ExpectBindsNum)
    pipelined: Mapping[str, str] | None = None
    pipelined_include: Mapping[str, str] | None = None
    nominated: Mapping[str, str] | None = None
    evictions: tuple[str, ...] | None = None
    evictions_include: tuple[str, ...] | None = None
    podgroups: Mapping[str, str] | None = None
    unschedulable: tuple[str, ...] | None = None
    unschedulable_reasons: Mapping[str, str] | None = None
    # Where each expectation is written, so a failure can point at it.
    spans: Mapping[str, Span] = field(default_factory=dict, compare=False)

    def items(self) -> list[tuple[str, Mapping[str, str] | tuple[str, ...] | int]]:
        """The expectations that are set, in the format's order."""
        out: list[tuple[str, Mapping[str, str] | tuple[str, ...] | int]] = []
        for key in EXPECT_KEYS:
            value = getattr(self, key)
            if value is not None:
                out.append((key, value))
        return out


@dataclass(frozen=True, slots=True)
class PolicyChoice:
    """Which policy the header asks for: inline conf text, a conf file, a native policy file, or the default."""

    kind: PolicyKind
    text: str = ""  # the inline conf
    path: str = ""  # conf_file / policy, resolved against the scenario's folder
    span: Span | None = None  # where the header names it
    line_offset: int = 0  # inline conf: its line L is scenario line L + line_offset
    col_offset: int = 0


@dataclass(frozen=True, slots=True)
class Header:
    name: str
    file: str
    expect: Expect
    policy: PolicyChoice
    description: str = ""
    xfail: str | None = None  # the known engine bug that makes this scenario fail (docs/scenarios.md)
    span: Span | None = field(default=None, compare=False)  # where `name` is written
    now: float | None = None  # the session clock (`now: 2024-05-01T12:00:00Z`); None: the runner's
    # the zone the clock is read in (`timezone: Asia/Shanghai`, an IANA name); None: UTC
    timezone: tzinfo | None = field(default=None, compare=False)
    # `last_runs: {tdm.closed_zone_victims: 2024-05-01T11:59:30Z}`: when `every` rules last ran in the
    # scheduler before this session (rule id -> epoch seconds); none listed: never
    last_runs: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Scenario:
    header: Header
    cluster: ClusterSnapshot
    policy: CompiledPolicy
    warnings: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.header.name

    @property
    def file(self) -> str:
        return self.header.file

    @property
    def expect(self) -> Expect:
        return self.header.expect

    @property
    def xfail(self) -> str | None:
        return self.header.xfail

    @property
    def now(self) -> float | None:
        return self.header.now

    @property
    def timezone(self) -> tzinfo | None:
        return self.header.timezone

    @property
    def last_runs(self) -> Mapping[str, float]:
        return self.header.last_runs


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario file: header, cluster and policy. Bad input raises PolicyError."""
    header = read_header(path)
    snapshot = load_cluster([path])
    check_references(header, snapshot)
    warnings = tuple(w for w in snapshot.warnings if _HEADER_WARNING not in w)
    snapshot = dataclasses.replace(snapshot, warnings=warnings)
    return Scenario(header, snapshot, resolve_policy(header, snapshot), warnings)


def read_header(path: str | Path) -> Header:
    """The header document of a scenario file, checked strictly; the cluster documents are not read."""
    loaded = yaml_spans.read_yaml(path, stage="scenario")
    reader = _HeaderReader(loaded)
    header = reader.read()
    if reader.diagnostics or header is None:
        raise PolicyError(reader.diagnostics)
    return header


def resolve_policy(header: Header, snapshot: ClusterSnapshot) -> CompiledPolicy:
    """The compiled policy the header chooses (conf / conf_file / policy), else the cluster's or the default."""
    choice = header.policy
    if choice.kind == "conf":
        parsed = conf_loader.parse_conf_text(choice.text, file=header.file, line_offset=choice.line_offset,
                                             col_offset=choice.col_offset,
                                             origin=choice.span if choice.line_offset == 0 else None)
        return policies.from_conf(parsed)
    if choice.kind == "conf_file":
        return policies.resolve(snapshot, conf=choice.path)
    if choice.kind == "policy":
        return policies.resolve(snapshot, policy=choice.path)
    return policies.resolve(snapshot)


def check_references(header: Header, snapshot: ClusterSnapshot) -> None:
    """Every pod, node and podgroup an expectation names must be in the cluster (typos fail loudly)."""
    pods = {p.key for p in (*snapshot.pods, *snapshot.deferred_pods)}
    nodes = {n.name for n in snapshot.nodes}
    groups = {g.key for g in snapshot.podgroups}
    diags: list[Diagnostic] = []
    expect = header.expect
    where = expect.spans
    for key, value in expect.items():
        if isinstance(value, int):
            continue  # a count names nothing
        span = where.get(key)
        keys_are, known = ("podgroup", groups) if key == "podgroups" else ("pod", pods)
        for name in value:
            if name not in known:
                diags.append(Diagnostic(UNKNOWN_OBJECT, f"expect.{key}: no {keys_are} {name} in the cluster",
                                        where.get(f"{key}/{name}", span),
                                        help=did_you_mean(name, known) or f"add the {keys_are} to the cluster "
                                                                          "documents of this file"))
        if key in _NODE_VALUED and isinstance(value, Mapping):
            for pod, node in value.items():
                if node not in nodes:
                    diags.append(Diagnostic(UNKNOWN_OBJECT, f"expect.{key}: no node {node} in the cluster",
                                            where.get(f"{key}/{pod}=", span),
                                            help=did_you_mean(node, nodes) or "add the node to the cluster "
                                                                              "documents of this file"))
    if diags:
        raise PolicyError(diags)


class _HeaderReader:
    """One pass over the header document, collecting every mistake."""

    def __init__(self, loaded: yaml_spans.YamlFile):
        self.file = loaded
        self.name = loaded.name
        self.diagnostics: list[Diagnostic] = []

    def read(self) -> Header | None:
        docs = self.file.documents
        doc = docs[0] if docs else None
        if not isinstance(doc, CommentedMap) or doc.get("kind") != KIND:
            span = self.file.document_span(0) if docs else Span(self.name, 1, 1)
            self._error(MISPLACED_HEADER, "the first document of a scenario must be its header (kind: Scenario)",
                        span, "start the file with apiVersion: vpolicy/v1, kind: Scenario, name and expect, "
                              "then `---` and the cluster objects")
            return None
        for index, later in enumerate(docs[1:], start=1):
            if isinstance(later, CommentedMap) and later.get("kind") == KIND:
                self._error(MISPLACED_HEADER, "a scenario file has one header, in its first document",
                            self.file.key_span(later, "kind"), "put each scenario in its own file")
        for key in doc:
            if key not in HEADER_KEYS:
                self._unknown(doc, key, HEADER_KEYS, "")
        self._fixed(doc, "apiVersion", API_VERSION)
        name = self._text(doc, "name", required=True)
        if name is not None and (not name.strip() or "\n" in name.strip()):
            self._error(BAD_VALUE, "name must be one non-empty line", self.file.value_span(doc, "name"),
                        "say in one line what Volcano does; put details in description")
        description = self._text(doc, "description") or ""
        xfail = self._text(doc, "xfail")
        if xfail is not None and not xfail.strip():
            self._error(BAD_VALUE, "xfail must say why the scenario is known to fail", self.file.value_span(doc, "xfail"),
                        'write e.g. xfail: "engine bug: ..."')
        now = self._now(doc)
        zone = self._timezone(doc)
        last_runs = self._last_runs(doc)
        policy = self._policy(doc)
        expect = self._expect(doc)
        if self.diagnostics or name is None or expect is None:
            return None
        return Header(name=name.strip(), file=self.name, expect=expect, policy=policy, description=description,
                      xfail=xfail.strip() if xfail else None, span=self.file.value_span(doc, "name"), now=now,
                      timezone=zone, last_runs=last_runs)

    # header parts ---------------------------------------------------------------------------------
    def _now(self, doc: CommentedMap) -> float | None:
        """`now`: the session clock as an RFC 3339 time (time windows, waiting times, cooldowns)."""
        if "now" not in doc:
            return None
        seconds = rfc3339_seconds(doc["now"])
        if seconds is None:
            self._error(BAD_VALUE, f"now must be an RFC 3339 time, not {doc['now']!r}", self.file.value_span(doc, "now"),
                        "write e.g. now: 2024-05-01T12:00:00Z")
        return seconds

    def _timezone(self, doc: CommentedMap) -> tzinfo | None:
        """`timezone`: the IANA zone the session clock is read in (tdm's daily windows)."""
        if "timezone" not in doc:
            return None
        try:
            return ZoneInfo(str(doc["timezone"]))
        except (ValueError, ZoneInfoNotFoundError):
            self._error(BAD_VALUE, f"timezone must be an IANA time zone name, not {doc['timezone']!r}",
                        self.file.value_span(doc, "timezone"), "write e.g. timezone: Asia/Shanghai")
            return None

    def _last_runs(self, doc: CommentedMap) -> dict[str, float]:
        """`last_runs`: rule id (`plugin.rule`) -> the RFC 3339 time its `every` period last started."""
        runs: dict[str, float] = {}
        given = doc.get("last_runs")
        if given is None:
            return runs
        if not isinstance(given, CommentedMap):
            self._error(BAD_VALUE, "last_runs must map rule ids to RFC 3339 times",
                        self.file.value_span(doc, "last_runs"), "write e.g. last_runs: {tdm.closed_zone_victims: "
                                                                 "2024-05-01T11:59:30Z}")
            return runs
        for key, value in given.items():
            seconds = rfc3339_seconds(value)
            if seconds is None:
                self._error(BAD_VALUE, f"last_runs[{key}] must be an RFC 3339 time, not {value!r}",
                            self.file.value_span(given, key), "write e.g. 2024-05-01T11:59:30Z")
                continue
            runs[str(key)] = seconds
        return runs

    def _fixed(self, doc: CommentedMap, key: str, wanted: str) -> None:
        value = self._text(doc, key, required=True)
        if value is not None and value != wanted:
            self._error(BAD_VALUE, f"{key} must be {wanted}, got {value}", self.file.value_span(doc, key),
                        f"write {key}: {wanted}")

    def _policy(self, doc: CommentedMap) -> PolicyChoice:
        given = [k for k in POLICY_KEYS if k in doc]
        for extra in given[1:]:
            self._error(CONFLICTING_KEYS, f"{extra} conflicts with {given[0]}: a scenario runs one policy",
                        self.file.key_span(doc, extra), f"keep one of {', '.join(given)}")
        if not given:
            return PolicyChoice("default")
        key = given[0]
        value = self._text(doc, key)
        if value is None:
            return PolicyChoice("default")
        span = self.file.value_span(doc, key)
        if key == "conf":
            return self._inline_conf(doc, value, span)
        path = Path(self.name).parent / value
        if not path.is_file():
            self._error(MISSING_FILE, f"{key}: no such file: {value} (looked for {path})", span,
                        "paths are relative to the folder of the scenario file")
        return PolicyChoice(key, path=str(path), span=span)  # type: ignore[arg-type]  # reason: key is conf_file|policy

    def _inline_conf(self, doc: CommentedMap, text: str, span: Span) -> PolicyChoice:
        offsets = None
        if isinstance(doc.get("conf"), LiteralScalarString):
            key_col = self.file.key_span(doc, "conf").col
            offsets = conf_loader.literal_block_offsets(self.file.source.text, line=span.line, col=span.col,
                                                        key_col=key_col)
        if offsets is None:  # a quoted or folded string: its lines cannot be mapped, point at the value
            return PolicyChoice("conf", text=text, span=span)
        return PolicyChoice("conf", text=text, span=span, line_offset=offsets[0], col_offset=offsets[1])

    def _expect(self, doc: CommentedMap) -> Expect | None:
        if "expect" not in doc:
            self._error(MISSING_KEY, "missing expect", self.file.node_span(doc),
                        f"add expect: with at least one of {', '.join(EXPECT_KEYS)}")
            return None
        block = doc["expect"]
        if not isinstance(block, CommentedMap):
            self._wrong_type(doc, "expect", "a mapping", block)
            return None
        if not block:
            self._error(MISSING_KEY, "expect lists no expectation", self.file.key_span(doc, "expect"),
                        f"add at least one of {', '.join(EXPECT_KEYS)}")
            return None
        values: dict[str, object] = {}
        spans: dict[str, Span] = {}
        for key in block:
            if key not in EXPECT_KEYS:
                self._unknown(block, key, EXPECT_KEYS, "expect.")
                continue
            spans[key] = self.file.key_span(block, key)
            if key in MAP_EXPECTATIONS:
                values[key] = self._string_map(block, key, spans)
            elif key in COUNT_EXPECTATIONS:
                values[key] = self._count(block, key)
            else:
                values[key] = self._string_list(block, key, spans)
        return Expect(**values, spans=spans)  # type: ignore[arg-type]  # reason: keys are Expect's fields

    # typed values ---------------------------------------------------------------------------------
    def _text(self, mapping: CommentedMap, key: str, *, required: bool = False) -> str | None:
        if key not in mapping:
            if required:
                self._error(MISSING_KEY, f"missing {key}", self.file.node_span(mapping), _HELP.get(key, f"add {key}:"))
            return None
        value = mapping[key]
        if not isinstance(value, str):
            self._wrong_type(mapping, key, "a string", value)
            return None
        return str(value)

    def _string_map(self, block: CommentedMap, key: str, spans: dict[str, Span]) -> dict[str, str] | None:
        value = block[key]
        if not isinstance(value, CommentedMap):
            self._wrong_type(block, key, "a mapping", value, path="expect.",
                             help=f"write {key}: {EXPECT_EXAMPLES[key]}, or {{}} for none")
            return None
        out: dict[str, str] = {}
        for item_key, item in value.items():
            where = self.file.key_span(value, item_key)
            if not isinstance(item_key, str):
                self._error(WRONG_TYPE, f"expect.{key}: keys must be strings, got {_describe(item_key)}", where,
                            "write namespace/name")
                continue
            if not isinstance(item, str):
                self._wrong_type(value, item_key, "a string", item, path=f"expect.{key}.")
                continue
            self._check_key(key, item_key, where)
            self._check_value(key, item_key, item, self.file.value_span(value, item_key))
            spans[f"{key}/{item_key}"] = where
            spans[f"{key}/{item_key}="] = self.file.value_span(value, item_key)
            out[item_key] = item
        return out

    def _count(self, block: CommentedMap, key: str) -> int | None:
        value = block[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self._wrong_type(block, key, "a count (0 or more)", value, path="expect.",
                             help=f"write {key}: {EXPECT_EXAMPLES[key]}")
            return None
        return int(value)

    def _string_list(self, block: CommentedMap, key: str, spans: dict[str, Span]) -> tuple[str, ...] | None:
        value = block[key]
        if not isinstance(value, CommentedSeq):
            self._wrong_type(block, key, "a list", value, path="expect.",
                             help=f"write {key}: {EXPECT_EXAMPLES[key]}, or [] for none")
            return None
        out: list[str] = []
        for index, item in enumerate(value):
            where = self.file.item_span(value, index)
            if not isinstance(item, str):
                self._error(WRONG_TYPE, f"expect.{key}[{index}] must be a string, got {_describe(item)}", where,
                            "write namespace/name")
                continue
            self._check_key(key, item, where)
            spans[f"{key}/{item}"] = where
            out.append(str(item))
        return tuple(out)

    def _check_key(self, key: str, name: str, where: Span) -> None:
        parts = name.split("/")
        if len(parts) != 2 or not all(parts):
            what = "podgroup" if key == "podgroups" else "pod"
            self._error(BAD_VALUE, f"expect.{key}: {what} '{name}' must be written namespace/name", where,
                        f"e.g. default/{parts[-1] or 'name'}")

    def _check_value(self, key: str, name: str, value: str, where: Span) -> None:
        if key == "podgroups" and value not in _PHASES:
            self._error(BAD_VALUE, f"expect.podgroups.{name}: unknown phase '{value}'", where,
                        did_you_mean(value, _PHASES) or f"phases are {', '.join(_PHASES)}")
        if key == "unschedulable_reasons" and not value:
            self._error(BAD_VALUE, f"expect.unschedulable_reasons.{name}: empty reason", where,
                        "give text the reason must contain")

    # diagnostics ----------------------------------------------------------------------------------
    def _unknown(self, mapping: CommentedMap, key: object, known: tuple[str, ...], path: str) -> None:
        hint = did_you_mean(str(key), known) or f"known keys: {', '.join(known)}"
        self._error(UNKNOWN_KEY, f"unknown key '{path}{key}'", self.file.key_span(mapping, key), hint)

    def _wrong_type(self, mapping: CommentedMap, key: str, wanted: str, value: object, *, path: str = "",
                    help: str | None = None) -> None:
        if help is None and wanted == "a string":
            help = "quote the value: YAML reads unquoted numbers, booleans and null as other types"
        self._error(WRONG_TYPE, f"{path}{key} must be {wanted}, got {_describe(value)}",
                    self.file.value_span(mapping, key), help or _HELP.get(key))

    def _error(self, code: str, message: str, span: Span, help: str | None) -> None:
        self.diagnostics.append(Diagnostic(code=code, message=message, span=span, help=help))


_HELP = {
    "apiVersion": f"add apiVersion: {API_VERSION}",
    "name": "add name: <one line saying what Volcano does>",
    "expect": "write expect: and the expectations indented below it",
}


def _describe(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, CommentedMap):
        return "a mapping"
    if isinstance(value, CommentedSeq):
        return "a list"
    return f"'{value}'"

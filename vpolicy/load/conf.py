"""Read a Volcano `volcano-scheduler.conf` (or the ConfigMap holding it) into a `model.conf.SchedulerConf`.

The conf is YAML: `actions` (a comma-separated string, or a list), `tiers` of `plugins` with Volcano's
`enable*` flags and free-form `arguments`, `configurations` of per-action arguments, and `metrics`
(accepted and ignored). It is read with ruamel's round-trip loader in YAML 1.1 mode, as Volcano's
`gopkg.in/yaml.v2` reads it (`yes`/`no`/`on`/`off` are booleans), so every key and value keeps its
line and column (a float without a dot, `1e1`, is a float as yaml.v2 reads it, without ruamel's YAML 1.1
warning about it). Unlike Volcano, which silently ignores unknown keys, every mistake becomes a
Diagnostic with an exact `file:line:col` and a help line; all of them are collected and raised together
as one `PolicyError`. Known Volcano plugins that vpolicy has no rule module for are dropped with a
warning (`SchedulerConf.warnings`).

This module does not decide what a flag or an argument means (the compiler does, per rule module), and
it does not read cluster dumps: the cluster loader finds a conf inside a dump's ConfigMap and calls
`parse_conf_text` with the offsets of the embedded text (`literal_block_offsets` computes them), so
positions point into the dump file. It does not use the shared `load.yaml_spans` helper on purpose; the
few position helpers it needs are private here.
"""
from __future__ import annotations

import dataclasses
import math
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard, TypeVar

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MantissaNoDotYAML1_1Warning, MarkedYAMLError, YAMLError
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.scalarstring import LiteralScalarString, ScalarString

from vpolicy import errors, source
from vpolicy.load import textfile
from vpolicy.model import conf as model

# The ConfigMap data key Volcano's Helm chart and `vc-scheduler --scheduler-conf` use.
CONF_KEY = "volcano-scheduler.conf"
# Pseudo file name of the built-in conf, so its spans and snippets still render.
DEFAULT_SOURCE = "<volcano-default>"
HELM_DEFAULT_SOURCE = "<volcano-helm-default>"

# Volcano's built-in conf (`DefaultSchedulerConf`, pkg/scheduler/util.go), used when no file is given.
_DEFAULT_CONF_TEXT = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

# Volcano's Helm chart conf (installer/helm/chart/volcano/config/volcano-scheduler.conf).
_HELM_DEFAULT_CONF_TEXT = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""

_TOP_KEYS = ("actions", "tiers", "configurations", "metrics")
_TIER_KEYS = ("plugins",)
_CONFIGURATION_KEYS = ("name", "arguments")
_BOOLEAN_KEYS = frozenset({model.HIERARCHY_KEY, *model.FLAGS})
_DUPLICATE_KEY = re.compile(r'found duplicate key "(?P<key>.*?)"')
_LITERAL_HEADER = re.compile(r"\|(?:(?P<a>[1-9])[+-]?|[+-](?P<b>[1-9])?)?\s*(?:#.*)?$")
_T = TypeVar("_T")
_PLAIN_TOKEN = re.compile(r"[^\s,\[\]{}#'\"|>][^\s,\[\]{}#]*")


def load_conf(path: str | Path) -> model.SchedulerConf:
    """Read a conf file: a plain conf, or YAML whose document is a ConfigMap holding `volcano-scheduler.conf`."""
    name = str(path)
    try:
        text = textfile.read_text(path)
    except textfile.UnreadableFile as exc:
        raise errors.PolicyError([exc.diagnostic("conf.unreadable", what="the scheduler conf",
                                                 help="give the path of a readable UTF-8 YAML file")]) from exc
    source.remember(source.SourceFile(name, text))
    reader = _Reader(file=name, lines=text.splitlines())
    docs = reader.load_all(text)
    configmaps = [d for d in docs or () if isinstance(d, CommentedMap) and d.get("kind") == "ConfigMap"]
    if not configmaps:
        return reader.finish(reader.single(docs))
    embedded = reader.embedded(configmaps, text)
    return reader.finish(embedded[0].single(embedded[0].load_all(embedded[1])) if embedded else None)


def parse_conf_text(text: str, *, file: str, line_offset: int = 0, col_offset: int = 0,
                    origin: source.Span | None = None) -> model.SchedulerConf:
    """Parse conf text; line L, column C of `text` is reported as `file` line L+line_offset, column C+col_offset.

    With no offsets `text` is remembered as the whole of `file` so snippets render; with offsets the
    caller has read `file` (e.g. a cluster dump whose ConfigMap embeds the conf) and remembers it.
    `origin`, for an embedded conf whose lines cannot be mapped (a quoted or folded string, not a `|`
    block), is where every diagnostic then points.
    """
    if line_offset == 0 and col_offset == 0 and origin is None:
        source.remember(source.SourceFile(file, text))
    reader = _Reader(file, text.splitlines(), line_offset, col_offset, origin)
    return reader.finish(reader.single(reader.load_all(text)))


def literal_block_offsets(file_text: str, *, line: int, col: int, key_col: int) -> tuple[int, int] | None:
    """`(line_offset, col_offset)` for `parse_conf_text` of a literal block scalar (`key: |`) in `file_text`.

    `line`/`col` are the 1-based position of the `|` indicator, `key_col` the 1-based column of its key.
    None when the value there is not a literal block, whose lines cannot be mapped one to one.
    """
    lines = file_text.splitlines()
    if not 0 < line <= len(lines):
        return None
    header = _LITERAL_HEADER.match(lines[line - 1][col - 1:])
    if header is None:
        return None
    digit = header.group("a") or header.group("b")
    if digit is not None:
        return line, key_col - 1 + int(digit)
    for body in lines[line:]:
        if body.strip():
            return line, len(body) - len(body.lstrip(" "))
    return line, key_col + 1


def default_conf() -> model.SchedulerConf:
    """Volcano's built-in conf: `enqueue, allocate, backfill`; priority, gang, conformance | overcommit,
    drf, predicates, proportion, nodeorder; every flag on."""
    return parse_conf_text(_DEFAULT_CONF_TEXT, file=DEFAULT_SOURCE)


def default_conf_text() -> str:
    """The text of Volcano's built-in conf (what `default_conf` parses)."""
    return _DEFAULT_CONF_TEXT


def helm_default_conf_text() -> str:
    """The conf Volcano's Helm chart installs: the built-in one plus binpack, with gang's and drf's
    Preemptable callbacks off."""
    return _HELM_DEFAULT_CONF_TEXT


@dataclass(slots=True)
class _Reader:
    """One pass over one conf text: builds the model and collects diagnostics with mapped positions.

    Positions from ruamel are 0-based and relative to the text being parsed; `span` adds the offsets of
    an embedded conf, or returns `fixed` for every position when the embedding cannot be mapped.
    """

    file: str
    lines: list[str]
    line_offset: int = 0
    col_offset: int = 0
    fixed: source.Span | None = None
    problems: list[errors.Diagnostic] = field(default_factory=list)
    warnings: list[errors.Diagnostic] = field(default_factory=list)

    # -- results -----------------------------------------------------------------------------------

    def finish(self, conf: model.SchedulerConf | None) -> model.SchedulerConf:
        if self.problems or conf is None:
            raise errors.PolicyError([*self.problems, *self.warnings])
        warnings = tuple(errors.sorted_diagnostics(self.warnings))
        return dataclasses.replace(conf, warnings=tuple(w.one_line() for w in warnings),
                                   warning_diagnostics=warnings)

    def error(self, code: str, message: str, span: source.Span, help: str,
              related: tuple[tuple[source.Span, str], ...] = ()) -> None:
        self.problems.append(errors.Diagnostic(code, message, span, help, "error", related))

    def warn(self, code: str, message: str, span: source.Span, help: str) -> None:
        self.warnings.append(errors.Diagnostic(code, message, span, help, "warning"))

    # -- positions ---------------------------------------------------------------------------------

    def span(self, line0: int, col0: int, width: int = 1) -> source.Span:
        if self.fixed is not None:
            return self.fixed
        line, col = line0 + 1 + self.line_offset, col0 + 1 + self.col_offset
        return source.Span(self.file, line, col, line, col + max(width, 1) - 1)

    def node_span(self, node: object) -> source.Span:
        if isinstance(node, (CommentedMap, CommentedSeq)) and node.lc.line is not None:
            return self.span(node.lc.line, node.lc.col)
        return self.span(0, 0)

    def key_span(self, mapping: CommentedMap, key: object) -> source.Span:
        pos = _position(mapping, key, 0)
        if pos is None:
            return self.node_span(mapping)
        return self.span(*pos, self._width(*pos, key))

    def value_span(self, mapping: CommentedMap, key: object) -> source.Span:
        value = mapping[key]
        pos = _position(mapping, key, 2)
        if value is None or pos is None:
            return self.key_span(mapping, key)
        return self.span(*pos, self._width(*pos, value))

    def item_span(self, seq: CommentedSeq, index: int) -> source.Span:
        data = seq.lc.data
        if not data or index not in data:
            return self.node_span(seq)
        line0, col0 = data[index][0], data[index][1]
        return self.span(line0, col0, self._width(line0, col0, seq[index]))

    def _width(self, line0: int, col0: int, value: object) -> int:
        rest = self.lines[line0][col0:] if 0 <= line0 < len(self.lines) else ""
        start = self.content_col(line0, col0, value) if isinstance(value, str) else None
        if start is not None and isinstance(value, str):
            return len(value) + 2 * (start - col0)  # with the quotes, when quoted
        token = _PLAIN_TOKEN.match(rest)
        return len(token.group()) if token and not isinstance(value, (CommentedMap, CommentedSeq)) else 1

    def written(self, mapping: CommentedMap, key: object) -> str:
        """The value of `key` as the text writes it (`1e400`, `'nan'`), or as Python shows it when the
        position is unknown."""
        pos = _position(mapping, key, 2)
        if pos is None or not 0 <= pos[0] < len(self.lines):
            return str(mapping[key])
        return self.lines[pos[0]][pos[1]:pos[1] + self._width(*pos, mapping[key])]

    def content_col(self, line0: int, col0: int, value: str) -> int | None:
        """The column of `value`'s first character when the scalar is written on one line as is."""
        rest = self.lines[line0][col0:] if 0 <= line0 < len(self.lines) else ""
        if rest[:1] in ("'", '"') and rest[1:].startswith(value) and rest[1 + len(value):2 + len(value)] == rest[0]:
            return col0 + 1
        return col0 if rest.startswith(value) and rest[:1] not in ("'", '"', "|", ">") else None

    # -- YAML --------------------------------------------------------------------------------------

    def load_all(self, text: str) -> list[object] | None:
        try:
            with warnings.catch_warnings():
                # ruamel warns (13 lines on stderr) about YAML 1.1 floats without a dot (`1e1`); yaml.v2
                # reads them as floats without a word, and ruamel still returns the float, so say nothing
                warnings.simplefilter("ignore", MantissaNoDotYAML1_1Warning)
                return list(_yaml().load_all(text))
        except DuplicateKeyError as exc:
            match = _DUPLICATE_KEY.search(exc.problem or "")
            key = match.group("key") if match else "?"
            self.error("conf.duplicate-key", f"duplicate key '{key}'", self._mark_span(exc),
                       "a key may appear once in a mapping; remove or merge the repeated one")
        except MarkedYAMLError as exc:
            self.error("conf.yaml-syntax", f"invalid YAML: {exc.problem}", self._mark_span(exc), self._yaml_help(exc))
        except YAMLError as exc:
            self.error("conf.yaml-syntax", f"invalid YAML: {exc}", self.span(0, 0),
                       "check that the file is YAML text")
        return None

    def _yaml_help(self, exc: MarkedYAMLError) -> str:
        if "\\t" in (exc.problem or ""):
            return "YAML indents with spaces, not tabs"
        if not exc.context or exc.context_mark is None:
            return "check the indentation and the quoting around this position"
        inside = re.sub(r"^while (parsing|scanning) (an? )?", "", exc.context)
        where = self.span(exc.context_mark.line, exc.context_mark.column)
        return f"check the indentation and the quoting: this is inside the {inside} at line {where.line}"

    def _mark_span(self, exc: MarkedYAMLError) -> source.Span:
        mark = exc.problem_mark
        return self.span(mark.line, mark.column) if mark is not None else self.span(0, 0)

    # -- ConfigMap ---------------------------------------------------------------------------------

    def embedded(self, configmaps: list[CommentedMap], text: str) -> tuple[_Reader, str] | None:
        """The conf held by the first ConfigMap that has one, and a reader positioned inside this file.

        The reader shares this one's diagnostics; a conf that is not a literal block (`|`) cannot be
        mapped line by line, so its diagnostics all point at the start of the value.
        """
        for cm in configmaps:
            data = cm.get("data")
            if isinstance(data, CommentedMap) and CONF_KEY in data:
                break
        else:
            cm = configmaps[0]
            data = cm.get("data")
            keys = ", ".join(f"'{k}'" for k in data) if isinstance(data, CommentedMap) else ""
            where = self.key_span(cm, "data") if "data" in cm else self.value_span(cm, "kind")
            self.error("conf.missing-key", f"the ConfigMap has no data key '{CONF_KEY}'", where,
                       f"put the conf under data.{CONF_KEY}" + (f" (found {keys})" if keys else ""))
            return None
        value = data[CONF_KEY]
        if not isinstance(value, str):
            self.error("conf.wrong-type", f"'{CONF_KEY}' must be the conf as a string, not {_describe(value)}",
                       self.value_span(data, CONF_KEY), f"write the conf as a literal block: '{CONF_KEY}: |'")
            return None
        body = str(value)
        offsets = None
        if isinstance(value, LiteralScalarString):
            line0, col0 = data.lc.value(CONF_KEY)
            offsets = literal_block_offsets(text, line=line0 + 1, col=col0 + 1,
                                            key_col=data.lc.key(CONF_KEY)[1] + 1)
        line_offset, col_offset = offsets or (0, 0)
        fixed = None if offsets else self.value_span(data, CONF_KEY)
        return _Reader(self.file, body.splitlines(), line_offset, col_offset, fixed, self.problems, self.warnings), body

    # -- the conf ----------------------------------------------------------------------------------

    def single(self, docs: list[object] | None) -> model.SchedulerConf | None:
        if docs is None:
            return None
        if len(docs) > 1:
            self.error("conf.wrong-type", "a scheduler conf is one YAML document, this text has several",
                       self.node_span(docs[1]), "remove the '---' separators, or wrap the conf in a ConfigMap")
        return self.build(docs[0] if docs else None)

    def build(self, root: object) -> model.SchedulerConf | None:
        if root is None:
            self.error("conf.missing-key", "the scheduler conf is empty: 'actions' is missing", self.span(0, 0),
                       'start from Volcano\'s default: actions: "enqueue, allocate, backfill"')
            return None
        if not self._typed(root, CommentedMap, "the scheduler conf must be a mapping", self.node_span(root),
                           "write the conf as 'actions: ...' and 'tiers: ...' keys"):
            return None
        self._unknown_keys(root, _TOP_KEYS, "the scheduler conf")
        actions, action_spans = self._actions(root)
        tiers = self._tiers(root)
        action_confs = self._configurations(root)
        self._check_hierarchy(tiers)
        configurations: dict[str, dict[str, object]] = {}
        for action_conf in action_confs:
            configurations.setdefault(action_conf.name, dict(action_conf.arguments))
        return model.SchedulerConf(
            actions=tuple(actions), tiers=tuple(tiers), configurations=configurations, source=self.file,
            metrics=self._metrics(root), action_spans=tuple(action_spans), action_confs=tuple(action_confs))

    def _metrics(self, root: CommentedMap) -> dict[str, str]:
        """`metrics: {type: prometheus, address: http://..., interval: 30s}`: Volcano reads it as a
        map[string]string, so every value is kept as its text."""
        value = root.get("metrics")
        if value is None:
            return {}
        if not self._typed(value, CommentedMap, "'metrics' must be a mapping", self.value_span(root, "metrics"),
                           "write e.g. metrics: {type: prometheus, address: http://prometheus:9090, interval: 30s}"):
            return {}
        return {str(k): "" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in value.items() if not isinstance(v, (CommentedMap, CommentedSeq))}

    def _typed(self, value: object, kind: type[_T], what: str, span: source.Span, help: str) -> TypeGuard[_T]:
        """True if `value` is a `kind`; otherwise a `conf.wrong-type` error "<what>, not <value>"."""
        if isinstance(value, kind):
            return True
        self.error("conf.wrong-type", f"{what}, not {_describe(value)}", span, help)
        return False

    def _unknown_keys(self, mapping: CommentedMap, allowed: tuple[str, ...], where: str) -> None:
        for key in mapping:
            if key not in allowed:
                self.error("conf.unknown-key", f"unknown key '{key}' in {where}", self.key_span(mapping, key),
                           errors.did_you_mean(str(key), allowed) or f"expected one of: {', '.join(allowed)}")

    def _actions(self, root: CommentedMap) -> tuple[list[str], list[source.Span]]:
        if "actions" not in root:
            self.error("conf.missing-key", "the scheduler conf has no 'actions'", self.node_span(root),
                       'add the actions to run, e.g. actions: "enqueue, allocate, backfill"')
            return [], []
        value = root["actions"]
        if value is None or (isinstance(value, str) and not value.strip()) or (isinstance(value, CommentedSeq)
                                                                              and not value):
            self.error("conf.missing-key", "'actions' is empty", self.value_span(root, "actions"),
                       'list the actions to run, e.g. actions: "enqueue, allocate, backfill"')
            return [], []
        if isinstance(value, str):
            named = self._split_actions(root, str(value))
        elif isinstance(value, CommentedSeq):
            named = []
            for i, item in enumerate(value):
                if self._typed(item, str, "an action name must be a string", self.item_span(value, i),
                               f"known actions: {', '.join(model.KNOWN_ACTIONS)}"):
                    named.append((str(item).strip(), self.item_span(value, i)))
        else:
            self.error("conf.wrong-type", f"'actions' must be a comma-separated string, not {_describe(value)}",
                       self.value_span(root, "actions"), 'write e.g. actions: "enqueue, allocate, backfill"')
            return [], []
        actions, spans = [], []
        for name, span in named:
            if not name:
                self.error("conf.unknown-action", "empty action name in 'actions'", span,
                           "remove the extra comma")
            elif name not in model.KNOWN_ACTIONS:
                self.error("conf.unknown-action", f"unknown action '{name}'", span,
                           _suggest(name, model.KNOWN_ACTIONS, "known actions"))
            else:
                if name in model.PARTIAL_ACTIONS:
                    self.warn("conf.partial-action", f"action '{name}' is only partly implemented by vpolicy: "
                              f"{model.PARTIAL_ACTIONS[name]}", span,
                              "decisions may differ from Volcano's where the missing part acts")
                actions.append(name)
                spans.append(span)
        return actions, spans

    def _split_actions(self, root: CommentedMap, value: str) -> list[tuple[str, source.Span]]:
        """Volcano's `strings.Split(actions, ",")` + TrimSpace, each name with its own column."""
        whole = self.value_span(root, "actions")
        pos = _position(root, "actions", 2)
        start = self.content_col(*pos, value) if pos is not None else None
        named, offset = [], 0
        pieces = value.split(",")
        for index, piece in enumerate(pieces):
            name = piece.strip()
            if start is None or pos is None:
                span = whole
            elif name:
                span = self.span(pos[0], start + offset + piece.index(name), len(name))
            else:  # point at the comma before an empty name, or after it for a leading one
                comma = offset - 1 if index > 0 else offset + len(piece)
                span = self.span(pos[0], start + comma)
            named.append((name, span))
            offset += len(piece) + 1
        return named

    def _tiers(self, root: CommentedMap) -> list[model.Tier]:
        value = root.get("tiers")
        if value is None:
            return []
        if not self._typed(value, CommentedSeq, "'tiers' must be a list of tiers", self.value_span(root, "tiers"),
                           "write each tier as '- plugins: [...]'"):
            return []
        tiers = []
        for i, tier in enumerate(value):
            if not self._typed(tier, CommentedMap, "a tier must be a mapping with 'plugins'",
                               self.item_span(value, i), "write each tier as '- plugins: [...]'"):
                continue
            self._unknown_keys(tier, _TIER_KEYS, "a tier")
            plugins = tier.get("plugins")
            if plugins is not None and not self._typed(plugins, CommentedSeq, "'plugins' must be a list",
                                                       self.value_span(tier, "plugins"),
                                                       "write each plugin as '- name: <plugin>'"):
                plugins = None
            options = [self._plugin(plugins, j) for j in range(len(plugins or ()))]
            tiers.append(model.Tier(tuple(o for o in options if o is not None)))
        return tiers

    def _plugin(self, seq: CommentedSeq, index: int) -> model.PluginOption | None:
        entry = seq[index]
        hint = f"write '- name: {entry}'" if isinstance(entry, str) else "write '- name: <plugin>'"
        if not self._typed(entry, CommentedMap, "a plugin entry must be a mapping with 'name'",
                           self.item_span(seq, index), hint):
            return None
        name = self._plugin_name(entry)
        flags: dict[str, bool] = {}
        flag_spans: dict[str, source.Span] = {}
        arguments: dict[str, object] = {}
        argument_spans: dict[str, source.Span] = {}
        for key in entry:
            if key == "name":
                continue
            if key == "arguments":
                arguments, argument_spans = self._arguments(entry, f"plugin '{name or '?'}'")
            elif key in _BOOLEAN_KEYS:
                flag = self._boolean(entry, key)
                if flag is not None:
                    flags[key], flag_spans[key] = flag, self.value_span(entry, key)
            else:
                self.error("conf.unknown-flag", f"unknown option '{key}' for plugin '{name or '?'}'",
                           self.key_span(entry, key), errors.did_you_mean(str(key), model.PLUGIN_OPTION_KEYS)
                           or "plugin options are name, arguments, enableHierarchy and Volcano's enable* flags")
        if name is None:
            return None
        span = self.value_span(entry, "name")
        if name not in model.IMPLEMENTED_PLUGINS:
            self.warn("conf.unsupported-plugin", f"plugin '{name}' is not implemented by vpolicy; it is ignored",
                      span, f"vpolicy implements {', '.join(model.IMPLEMENTED_PLUGINS)}")
            return None
        if name in model.PARTIAL_PLUGINS:
            self.warn("conf.partial-plugin", f"plugin '{name}' is only partly implemented by vpolicy: "
                      f"{model.PARTIAL_PLUGINS[name]}", span,
                      "the plugin loads; decisions may differ from Volcano's where the part named here would act "
                      "(docs/plugins.md)")
        hierarchy = flags.pop(model.HIERARCHY_KEY, False)
        return model.PluginOption(name, model.all_flags(flags), arguments, span, argument_spans,
                                  hierarchy=hierarchy, flag_spans=flag_spans)

    def _plugin_name(self, entry: CommentedMap) -> str | None:
        if "name" not in entry:
            self.error("conf.missing-key", "a plugin entry has no 'name'", self.node_span(entry),
                       "add 'name: <plugin>', e.g. 'name: gang'")
            return None
        name = entry["name"]
        if not self._typed(name, str, "a plugin name must be a string", self.value_span(entry, "name"),
                           f"known plugins: {', '.join(model.KNOWN_PLUGINS)}"):
            return None
        if name not in model.KNOWN_PLUGINS:
            self.error("conf.unknown-plugin", f"unknown plugin '{name}'", self.value_span(entry, "name"),
                       _suggest(str(name), model.KNOWN_PLUGINS, "known plugins"))
            return None
        return str(name)

    def _boolean(self, mapping: CommentedMap, key: str) -> bool | None:
        value = mapping[key]
        if isinstance(value, (bool, ScalarBoolean)):
            return bool(value)
        quoted = isinstance(value, ScalarString) and str(value).lower() in ("true", "false")
        self.error("conf.wrong-type", f"'{key}' must be true or false, not {_describe(value)}",
                   self.value_span(mapping, key),
                   "remove the quotes: write true or false" if quoted else "write true or false")
        return None

    def _arguments(self, mapping: CommentedMap, owner: str) -> tuple[dict[str, object], dict[str, source.Span]]:
        value = mapping["arguments"]
        if value is None:
            return {}, {}
        if not self._typed(value, CommentedMap, f"the arguments of {owner} must be a mapping",
                           self.value_span(mapping, "arguments"), "write arguments as 'key: value' lines"):
            return {}, {}
        arguments = {str(k): _plain(v) for k, v in value.items()}
        spans = {str(k): self.value_span(value, k) for k in value}
        for key in value:
            if finite_number(value[key]) is False:
                self.error("conf.wrong-type", f"argument '{key}' of {owner} must be a finite number, not "
                           f"{self.written(value, key)}", spans[str(key)], "write a number such as 1.5")
        return arguments, spans

    def _configurations(self, root: CommentedMap) -> list[model.ActionConf]:
        value = root.get("configurations")
        if value is None:
            return []
        if not self._typed(value, CommentedSeq, "'configurations' must be a list",
                           self.value_span(root, "configurations"), "write each entry as '- name: <action>'"):
            return []
        confs: list[model.ActionConf] = []
        for i, entry in enumerate(value):
            if not self._typed(entry, CommentedMap, "a configuration must be a mapping", self.item_span(value, i),
                               "write each entry as '- name: <action>' with 'arguments'"):
                continue
            self._unknown_keys(entry, _CONFIGURATION_KEYS, "a configuration")
            name = entry.get("name")
            if name is None:
                self.error("conf.missing-key", "a configuration has no 'name'", self.node_span(entry),
                           "add 'name: <action>', e.g. 'name: preempt'")
                continue
            span = self.value_span(entry, "name")
            arguments, argument_spans = self._arguments(entry, f"action '{name}'") if "arguments" in entry else ({}, {})
            if not isinstance(name, str) or name not in model.KNOWN_ACTIONS:
                self.error("conf.unknown-action", f"unknown action '{name}' in configurations", span,
                           _suggest(str(name), model.KNOWN_ACTIONS, "known actions"))
                continue
            if any(c.name == name for c in confs):
                self.warn("conf.duplicate-configuration", f"action '{name}' is configured twice; the first wins",
                          span, "merge the arguments into the first entry")
                continue
            confs.append(model.ActionConf(str(name), arguments, span, argument_spans))
        return confs

    def _check_hierarchy(self, tiers: list[model.Tier]) -> None:
        options = [o for tier in tiers for o in tier.plugins]
        proportion = [o for o in options if o.name == "proportion"]
        for drf in (o for o in options if o.name == "drf" and o.hierarchy):
            where = drf.flag_spans.get(model.HIERARCHY_KEY) or drf.span or self.span(0, 0)
            if proportion:
                related = tuple((o.span, "proportion is configured here") for o in proportion if o.span)
                self.error("conf.drf-hierarchy-with-proportion",
                           "drf with enableHierarchy: true cannot be combined with proportion", where,
                           "remove proportion (hierarchical drf shares queues itself) or set enableHierarchy: false",
                           related)
            else:
                # Volcano's hierarchical drf orders queues by weighted shares down the
                # `volcano.sh/hierarchy` tree and reclaims by them: vpolicy's drf has no such rules, so
                # the decisions would differ without a word
                self.warn("conf.unsupported-hierarchy",
                          "drf's enableHierarchy (hierarchical DRF) is not implemented by vpolicy; drf runs "
                          "without it, so queue order and reclaim can differ from Volcano's", where,
                          "for a queue tree use capacity with enableHierarchy: true and queues' spec.parent, or set "
                          "enableHierarchy: false here")


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True  # to tell a quoted "true" (a string, as in Volcano) from true
    yaml.version = (1, 1)  # Volcano reads the conf with gopkg.in/yaml.v2: yes/no/on/off are booleans
    return yaml


def _position(mapping: CommentedMap, key: object, index: int) -> tuple[int, int] | None:
    data = mapping.lc.data
    if not data or key not in data:  # keys merged in with `<<:` have no position of their own
        return None
    return data[key][index], data[key][index + 1]


def _plain(value: object) -> object:
    """ruamel's round-trip types as plain Python values (dict, list, str, int, float, bool, None)."""
    if isinstance(value, CommentedMap):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, CommentedSeq):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, ScalarBoolean)):
        return bool(value)
    if value is None:
        return None
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def finite_number(value: object) -> bool | None:
    """Whether an argument reads as a finite number, as rule modules read number arguments (`float()`,
    which turns `nan`, `inf`, `1e400`, plain or quoted, and integers beyond ~1.8e308 into values no
    resource arithmetic can use; Volcano's own `strconv.ParseFloat` accepts them too); None when it is
    no number at all (text, a bool, a list or a mapping), which the rule module's own check reports."""
    if isinstance(value, (bool, ScalarBoolean)) or not isinstance(value, (str, int, float)):
        return None
    try:
        return math.isfinite(float(value.strip() if isinstance(value, str) else value))
    except ValueError:
        return None
    except OverflowError:  # an integer too large for a float
        return False


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, (bool, ScalarBoolean)):
        return f"the boolean {str(bool(value)).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string '{value}'"
    if isinstance(value, CommentedSeq):
        return "a list"
    if isinstance(value, CommentedMap):
        return "a mapping"
    return type(value).__name__


def _suggest(word: str, candidates: Iterable[str], label: str) -> str:
    candidates = tuple(candidates)
    return errors.did_you_mean(word, candidates) or f"{label}: {', '.join(candidates)}"

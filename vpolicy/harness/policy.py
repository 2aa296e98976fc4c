"""Resolving what the user gave (`--policy FILE`, `--conf FILE`, a conf inside the dump, or nothing)
into a compiled policy: actions plus tiers of compiled rule modules.

A Volcano conf maps each plugin name to the rule module `policies/volcano/<name>.vpol`, its enable
flags to the module's callbacks and its `arguments` to the module's parameters. A native policy file
(`policy NAME`) says the same in the DSL with `actions` and `tier { use "..." {...} }`. Modules are
parsed and checked once per process and compiled per distinct settings.

The user's mistakes in what a conf or a `use` gives a module are reported where the user wrote them: an
argument of the wrong type at its value (with a note at the module's `param`), and, in a `use`, a key
that is neither a Volcano flag nor an argument of the module at the key, and a `use` of a policy (not a
rule module) at the `use`. A conf's unknown arguments are left alone, as Volcano leaves them.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping

from vpolicy.compile.lower import CompiledModule, compile_module
from vpolicy.engine.runtime import PluginInstance
from vpolicy.engine.optimize import MODES as ENGINE_MODES
from vpolicy.engine.session import OPTIMIZE_BUDGET_S, CompiledPolicy
from vpolicy.errors import Diagnostic, PolicyError, did_you_mean
from vpolicy import source
from vpolicy.lang import ast, load_module, parse
from vpolicy.lang import fmt as lang_fmt
from vpolicy.load import conf as conf_loader
from vpolicy.model import conf as conf_model
from vpolicy.model import durations
from vpolicy.model.snapshot import ClusterSnapshot

KNOWN_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle", "gangpreempt", "gangreclaim")
BAD_ARGUMENT = "compile.bad-argument"  # the compiler's own code for it, so both read the same
# Built-ins that read inside a nested mapping argument by a path of keys (`argument_at([...], d)`).
_NESTED_READERS = frozenset({"argument_at", "argument_text_at", "argument_keys"})
# Parameter types an argument is read as (`compile.lower`); a list or a mapping is none of them.
_SCALAR_KINDS = frozenset({"bool", "int", "number", "string"})


def policy_root() -> Path:
    """The shipped `policies/` folder: beside the package in a checkout, or under the install prefix."""
    here = Path(__file__).resolve().parent.parent.parent / "policies"
    if here.is_dir():
        try:  # rule locations read better (and match the docs) relative to where the user stands
            return here.relative_to(Path.cwd())
        except ValueError:
            return here
    return Path(sys.prefix) / "share" / "vpolicy" / "policies"


_parsed: dict[tuple[str, int, int], ast.Module] = {}


def _module(path: str) -> ast.Module:
    """Parse and check a module once per process, keyed by its real path and its file's state, so two
    files with the same relative name, or a file edited between runs, never share an entry."""
    real = Path(path).resolve()
    try:
        stat = real.stat()
        key = (str(real), stat.st_mtime_ns, stat.st_size)
    except OSError:
        return load_module(path)  # the loader reports the missing file as a diagnostic
    if key not in _parsed:
        _parsed[key] = load_module(path)
    return _parsed[key]


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


_compiled: dict[tuple[str, int, Any], CompiledModule] = {}


def compiled_module(path: Path, settings: Mapping[str, Any]) -> CompiledModule:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, _freeze(settings))
    if key not in _compiled:
        _compiled[key] = compile_module(_module(str(path)), settings)
    return _compiled[key]


def from_conf(conf: conf_model.SchedulerConf) -> CompiledPolicy:
    root = policy_root() / "volcano"
    diags: list[Diagnostic] = []
    tiers = []
    for tier in conf.tiers:
        plugins = []
        for option in tier.plugins:
            path = root / f"{option.name}.vpol"
            if not path.is_file():
                diags.append(Diagnostic("conf.unsupported-plugin", f"plugin '{option.name}' has no rule module",
                                        option.span, help=f"expected {path}", severity="warning"))
                continue
            settings = {**option.arguments, conf_model.HIERARCHY_KEY: option.hierarchy,
                        **({conf_model.METRICS_KEY: conf.metrics} if conf.metrics else {})}
            module = _compiled_with(path, settings, option.argument_spans, diags)
            if module is not None:
                plugins.append(PluginInstance(option.name, module, dict(option.flags)))
        tiers.append(tuple(plugins))
    actions = tuple(a for a in conf.actions if a in KNOWN_ACTIONS)
    for name in conf.actions:
        if name not in KNOWN_ACTIONS:
            diags.append(Diagnostic("conf.unsupported-action", f"action '{name}' is not implemented and is skipped",
                                    severity="warning"))
    mode = _conf_mode(conf, diags)
    budget = _conf_budget(conf, diags)
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        raise PolicyError(errors)
    warnings = (*conf.warnings, *(d.one_line() for d in diags))
    return CompiledPolicy(actions, tuple(tiers), source=conf.source, mode=mode, optimize_budget_s=budget,
                          action_arguments=dict(conf.configurations), metrics=dict(conf.metrics),
                          warnings=warnings)


def _conf_mode(conf: conf_model.SchedulerConf, diags: list[Diagnostic]) -> str:
    """The engine mode a conf asks for: `configurations: [{name: allocate, arguments: {mode: optimize}}]`
    (any action's entry may say it; Volcano ignores the unknown argument). Default `volcano`."""
    mode = "volcano"
    for entry, value, span in _action_arguments(conf, "mode"):
        if value not in ENGINE_MODES:
            diags.append(Diagnostic("conf.wrong-type", f"argument 'mode' of action '{entry.name}' must be "
                                    f"one of {', '.join(ENGINE_MODES)}, not {value!r}", span,
                                    help=did_you_mean(str(value), ENGINE_MODES)))
            continue
        if value == "optimize":
            mode = "optimize"
    return mode


UNLIMITED = "unlimited"


def _conf_budget(conf: conf_model.SchedulerConf, diags: list[Diagnostic]) -> float | None:
    """How long optimize mode may work on a session beyond Volcano's own runs of the evicting actions
    before it keeps Volcano's decisions (`optimize.never_worse`):
    `arguments: {mode: optimize, optimizeBudget: 800ms}` beside the mode (default Volcano's schedule
    period, 1 s). The last entry that says it wins."""
    budget: float | None = OPTIMIZE_BUDGET_S
    for entry, value, span in _action_arguments(conf, "optimizeBudget"):
        try:
            budget = parse_budget(value)
        except ValueError as exc:
            diags.append(Diagnostic("conf.wrong-type", f"argument 'optimizeBudget' of action '{entry.name}': {exc}",
                                    span, help="write optimizeBudget: 1s (a bare number is seconds)"))
    return budget


def _action_arguments(conf: conf_model.SchedulerConf,
                      name: str) -> Iterator[tuple[conf_model.ActionConf, object, source.Span | None]]:
    """Each `configurations` entry that sets argument `name`: the entry, the value, where it is written."""
    for entry in conf.action_confs:
        value = entry.arguments.get(name)
        if value is not None:
            yield entry, value, entry.argument_spans.get(name, entry.span)


def parse_budget(value: object) -> float | None:
    """`800ms`, `1s`, `1m30s` (`model.durations`, above zero), or `unlimited` (None); ValueError otherwise."""
    if not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0:
        return float(value)
    text = str(value).strip()
    if text == UNLIMITED:
        return None
    total = durations.seconds(text)
    if isinstance(value, bool) or total is None or total <= 0:
        raise ValueError(f"expected a duration above zero such as 800ms, 1s or 2m, or '{UNLIMITED}', not {value!r}")
    return total


def from_policy_file(path: str | Path) -> CompiledPolicy:
    module = _module(str(path))
    if module.kind != "policy":
        raise PolicyError.single("policy.not-a-policy", f"{path} is a rule module ('plugin {module.name}'), "
                                 "not a policy", module.span, help="pass a file that starts with 'policy NAME'")
    base = Path(path).resolve().parent
    actions: tuple[str, ...] = ("enqueue", "allocate", "backfill")
    tiers = []
    diags: list[Diagnostic] = []
    for decl in module.decls:
        if isinstance(decl, ast.Actions):
            for name in decl.names:
                if name not in KNOWN_ACTIONS:
                    diags.append(Diagnostic("policy.unknown-action", f"unknown action '{name}'", decl.span,
                                            help=did_you_mean(name, KNOWN_ACTIONS)))
            actions = decl.names
        elif isinstance(decl, ast.Tier):
            used = (_used_plugin(use, base, diags) for use in decl.uses)
            tiers.append(tuple(plugin for plugin in used if plugin is not None))
    if diags:
        raise PolicyError(diags)
    return CompiledPolicy(tuple(actions), tuple(tiers), source=str(path))


def _used_plugin(use: ast.Use, base: Path, diags: list[Diagnostic]) -> PluginInstance | None:
    """One `use` of a policy's tier: its rule module compiled with the use's settings; None, with what
    is wrong added to `diags`, when it cannot be."""
    target = _resolve_use(base, use.path)
    if target is None:
        diags.append(Diagnostic("policy.missing-module", f"cannot find rule module '{use.path}'", use.span,
                                help="paths are relative to the policy file or to policies/"))
        return None
    try:
        module = _module(str(target))
    except PolicyError as exc:
        if not all(d.code == parse.UNREADABLE for d in exc.diagnostics):
            raise
        diags.extend(dataclasses.replace(d, related=((use.span, "used here"),)) for d in exc.diagnostics)
        return None
    if module.kind != "plugin":
        diags.append(Diagnostic("policy.use-of-policy", f"'{use.path}' is a policy ('policy {module.name}'), "
                                "not a rule module", use.span,
                                help="'use' takes rule modules (files that start with 'plugin NAME'); "
                                     "write the other policy's 'use' lines here instead"))
        return None
    flags = conf_model.all_flags()
    arguments: dict[str, Any] = {}
    spans: dict[str, source.Span] = {}
    for index, (key, value) in enumerate(use.settings):
        literal = _literal(value)
        if key in flags or key == conf_model.HIERARCHY_KEY:
            if not isinstance(literal, bool):
                diags.append(Diagnostic("policy.wrong-type", f"flag '{key}' must be true or false", value.span))
            elif key in flags:
                flags[key] = literal
            else:  # not a callback switch: the modules that have a hierarchy read it as a parameter
                arguments[key], spans[key] = literal, value.span
        elif _takes_argument(module, key):
            arguments[key], spans[key] = literal, value.span
        else:
            diags.append(_unknown_setting(module, key, use.key_span(index)))
    compiled = _compiled_with(target, arguments, spans, diags)
    return None if compiled is None else PluginInstance(module.name, compiled, flags)


def _unknown_setting(module: ast.Module, key: str, span: source.Span) -> Diagnostic:
    """A `use` key that is neither a Volcano flag nor an argument of the module, as a conf reports a
    plugin option it does not know (`conf.unknown-flag`); an `enable...` key is taken for a flag."""
    if key.startswith("enable"):
        return Diagnostic("policy.unknown-flag", f"unknown option '{key}' for plugin '{module.name}'", span,
                          help=did_you_mean(key, conf_model.PLUGIN_OPTION_KEYS - {"name", "arguments"})
                          or "flags are enableHierarchy and Volcano's enable* flags")
    names = sorted(_argument_names(module))
    listed = f"its arguments are {', '.join(names)}" if names else "it takes no arguments"
    return Diagnostic("policy.unknown-argument", f"plugin '{module.name}' has no argument '{key}'", span,
                      help=did_you_mean(key, names) or listed)


def _compiled_with(path: Path, settings: Mapping[str, Any], spans: Mapping[str, source.Span],
                   diags: list[Diagnostic]) -> CompiledModule | None:
    """The module at `path` compiled with the arguments a conf or a `use` gives it (`spans`: where each is
    written); None, with every argument of the wrong type added to `diags` at its value, when one is."""
    module = _module(str(path))
    problems = _argument_problems(module, settings, spans)
    if not problems:
        try:
            return compiled_module(path, settings)
        except PolicyError as exc:
            problems = [_at_argument(d, module, settings, spans) for d in exc.diagnostics]
    diags.extend(problems)
    return None


def _argument_problems(module: ast.Module, settings: Mapping[str, Any],
                       spans: Mapping[str, source.Span]) -> list[Diagnostic]:
    """Arguments of the wrong shape the compiler would take as they are: a list, a mapping or an
    expression for a parameter, a value that is no finite number for a number parameter or for a key
    the module reads with `argument(KEY, default)`. (The compiler reports what it cannot read as its
    parameter's type: `_at_argument` moves those into the user's file.)"""
    params = _params_by_key(module)
    nested, nested_prefixes = _nested_keys(module)
    problems = []
    for key, raw in settings.items():
        if key not in params and any(key.startswith(p) for p in nested_prefixes):
            continue  # read as text inside the module (`argument_text_at`)
        if key in nested and key not in params:
            if raw is not None and not isinstance(raw, (Mapping, list)) and key not in _text_keys(module):
                problems.append(Diagnostic(BAD_ARGUMENT, f"argument '{key}' of plugin '{module.name}' must be a "
                                           f"mapping or a list, got {_shown(raw)}", spans.get(key),
                                           help=f"write '{key}' as nested 'key: value' lines"))
            continue
        decl = params.get(key)
        kind = decl.type.name if decl is not None else "number"
        if raw is None or (decl is None and not _takes_argument(module, key)) or kind not in _SCALAR_KINDS:
            continue
        if not isinstance(raw, (str, int, float, bool)):
            wrong = f"must be {kind}, got {_shown(raw)}"
        elif decl is None and conf_loader.finite_number(raw) is None:  # a bool is no number either
            wrong = f"must be number, got {_shown(raw)}"
        elif kind in ("int", "number") and conf_loader.finite_number(raw) is False:
            wrong = f"must be a finite number, got {_shown(raw)}"
        else:
            continue
        problems.append(_bad_argument(module, key, wrong, spans.get(key), decl))
    return problems


def _at_argument(diag: Diagnostic, module: ast.Module, settings: Mapping[str, Any],
                 spans: Mapping[str, source.Span]) -> Diagnostic:
    """A compiler diagnostic about an argument, moved from the module's `param` (where the compiler
    points) to the value in the user's file, with a note back at the `param`."""
    decl = next((d for d in module.decls if isinstance(d, ast.Param) and d.span == diag.span), None)
    if diag.code != BAD_ARGUMENT or decl is None:
        return diag
    key = decl.conf_key if decl.conf_key and decl.conf_key in settings else decl.name
    at = spans.get(key)
    if at is None:
        return diag
    return dataclasses.replace(diag, span=at, related=(*diag.related, _declared_here(module, decl)))


def _bad_argument(module: ast.Module, key: str, wrong: str, span: source.Span | None,
                  decl: ast.Param | None) -> Diagnostic:
    """`compile.bad-argument` at the value, with a note at the `param` (or the `argument(...)` call) it sets."""
    kind = decl.type.name if decl is not None else "number"
    reader = _reader_of(module, key) if decl is None else None
    related = ((_declared_here(module, decl),) if decl is not None
               else ((reader, f"plugin '{module.name}' reads it here, as a number"),) if reader is not None else ())
    return Diagnostic(BAD_ARGUMENT, f"argument '{key}' of plugin '{module.name}' {wrong}", span,
                      help=f"give '{key}' a {kind} value", related=related)


def _declared_here(module: ast.Module, decl: ast.Param) -> tuple[source.Span, str]:
    return decl.span, f"parameter '{decl.name}' of plugin '{module.name}' ({decl.type.name}) is declared here"


def _params_by_key(module: ast.Module) -> dict[str, ast.Param]:
    """A module's parameters by the keys that set them: the conf key (`from "..."`) and the name."""
    params: dict[str, ast.Param] = {}
    for decl in module.decls:
        if isinstance(decl, ast.Param):
            params.setdefault(decl.name, decl)
            if decl.conf_key:
                params[decl.conf_key] = decl
    return params


def _argument_names(module: ast.Module) -> set[str]:
    """Every argument key a module takes, as a user would write it (`binpack.resources.<name>` for a key
    it builds from a prefix)."""
    exact, prefixes = _read_arguments(module)
    conf_keys = {d.conf_key or d.name for d in module.decls if isinstance(d, ast.Param)}
    return conf_keys | set(exact) | {f"{prefix}<name>" for prefix in prefixes}


def _takes_argument(module: ast.Module, key: str) -> bool:
    exact, prefixes = _read_arguments(module)
    return key in _params_by_key(module) or key in exact or any(key.startswith(p) for p in prefixes)


def _read_arguments(module: ast.Module) -> tuple[dict[str, source.Span], dict[str, source.Span]]:
    """The keys the module reads with the built-in `argument(KEY, default)` (not a helper of that name),
    each with the call that reads it: literal keys, and the literal prefixes of keys built as
    `"prefix." + name` (binpack's per-resource weights, `binpack.resources.nvidia.com/gpu`)."""
    if any(isinstance(d, ast.LetDecl) and d.name == "argument" and d.params is not None for d in module.decls):
        return {}, {}
    exact: dict[str, source.Span] = {}
    prefixes: dict[str, source.Span] = {}
    for root in ast.declared_expressions(module):
        for node in ast.walk(root):
            if not (isinstance(node, ast.Call) and node.args and (
                    node.func == "argument" or (node.func in _NESTED_READERS and isinstance(node.args[0], ast.ListLit)
                                                and node.args[0].items))):
                continue
            # a nested reader's top key is the first of its path
            key = node.args[0].items[0] if isinstance(node.args[0], ast.ListLit) else node.args[0]
            if isinstance(key, ast.Literal) and isinstance(key.value, str):
                exact.setdefault(key.value, node.span)
            elif (isinstance(key, ast.Binary) and key.op == "+" and isinstance(key.left, ast.Literal)
                  and isinstance(key.left.value, str)):
                prefixes.setdefault(key.left.value, node.span)
    return exact, prefixes


def _nested_keys(module: ast.Module) -> tuple[set[str], set[str]]:
    """The top keys (exact, and literal prefixes of keys built as `"prefix" + name`) of the arguments a
    module reads with a path (`argument_at(["resources", ...])`, `argument_text_at(["tdm.zone." + z])`):
    mappings or texts, not numbers."""
    exact: set[str] = set()
    prefixes: set[str] = set()
    for root in ast.declared_expressions(module):
        for node in ast.walk(root):
            if not (isinstance(node, ast.Call) and node.func in _NESTED_READERS and node.args
                    and isinstance(node.args[0], ast.ListLit) and node.args[0].items):
                continue
            key = node.args[0].items[0]
            if isinstance(key, ast.Literal) and isinstance(key.value, str):
                exact.add(key.value)
            elif (isinstance(key, ast.Binary) and key.op == "+" and isinstance(key.left, ast.Literal)
                  and isinstance(key.left.value, str)):
                prefixes.add(key.left.value)
    return exact, prefixes


def _text_keys(module: ast.Module) -> set[str]:
    """Top keys read as a text by `argument_text_at([KEY])`, a path of one key: not a mapping."""
    keys = set()
    for root in ast.declared_expressions(module):
        for node in ast.walk(root):
            if (isinstance(node, ast.Call) and node.func == "argument_text_at" and node.args
                    and isinstance(node.args[0], ast.ListLit) and len(node.args[0].items) == 1
                    and isinstance(node.args[0].items[0], ast.Literal)):
                keys.add(str(node.args[0].items[0].value))
    return keys


def _reader_of(module: ast.Module, key: str) -> source.Span | None:
    """The `argument(...)` call that reads `key`, if one does."""
    exact, prefixes = _read_arguments(module)
    return exact.get(key) or next((span for prefix, span in prefixes.items() if key.startswith(prefix)), None)


def _shown(raw: object) -> str:
    """An argument's value as the user wrote it: an expression of a `use` in the DSL, else Python's repr."""
    if isinstance(raw, ast.Expr):
        return lang_fmt.format_expr(raw)
    return repr(raw)


def _resolve_use(base: Path, spec: str) -> Path | None:
    for candidate in (base / spec, policy_root() / spec):
        if candidate.is_file():
            return candidate
    return None


def _literal(value: Any) -> Any:
    if isinstance(value, ast.Literal):
        return value.value
    if isinstance(value, ast.Unary) and value.op == "-" and isinstance(value.operand, ast.Literal):
        return -value.operand.value  # type: ignore[operator]  # reason: numeric literal
    return value


def resolve(snapshot: ClusterSnapshot | None, *, policy: str | None = None, conf: str | None = None) -> CompiledPolicy:
    """--policy wins, then --conf, then a conf found in the dump's ConfigMap, then Volcano's default."""
    if policy:
        return from_policy_file(policy)
    if conf:
        return from_conf(conf_loader.load_conf(conf))
    if snapshot is not None and snapshot.conf_text is not None:
        origin = snapshot.conf_origin
        block = snapshot.conf_line_offset is not None
        parsed = conf_loader.parse_conf_text(
            snapshot.conf_text, file=origin.file if origin else "<configmap>",
            line_offset=snapshot.conf_line_offset or 0, col_offset=snapshot.conf_col_offset,
            origin=None if block else origin)
        return from_conf(parsed)
    return from_conf(conf_loader.default_conf())

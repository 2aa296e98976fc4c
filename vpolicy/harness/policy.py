"""Resolving what the user gave (`--policy FILE`, `--conf FILE`, a conf inside the dump, or nothing)
into a compiled policy: actions plus tiers of compiled rule modules.

A Volcano conf maps each plugin name to the rule module `policies/volcano/<name>.vpol`, its enable
flags to the module's callbacks and its `arguments` to the module's parameters. A native policy file
(`policy NAME`) says the same in the DSL with `actions` and `tier { use "..." {...} }`. Modules are
parsed and checked once per process and compiled per distinct settings.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator, Mapping

from vpolicy.compile.lower import CompiledModule, compile_module
from vpolicy.engine.runtime import PluginInstance
from vpolicy.engine.optimize import MODES as ENGINE_MODES
from vpolicy.engine.session import OPTIMIZE_BUDGET_S, CompiledPolicy
from vpolicy.errors import Diagnostic, PolicyError, did_you_mean
from vpolicy import source
from vpolicy.lang import ast, load_module
from vpolicy.load import conf as conf_loader
from vpolicy.model import conf as conf_model
from vpolicy.model import durations
from vpolicy.model.snapshot import ClusterSnapshot

KNOWN_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim")


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
            settings = {**option.arguments, conf_model.HIERARCHY_KEY: option.hierarchy}
            module = compiled_module(path, settings)
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
    """How long optimize mode may work on a session before it keeps Volcano's decisions:
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
            plugins = []
            for use in decl.uses:
                target = _resolve_use(base, use.path)
                if target is None:
                    diags.append(Diagnostic("policy.missing-module", f"cannot find rule module '{use.path}'",
                                            use.span, help="paths are relative to the policy file or to policies/"))
                    continue
                flags = conf_model.all_flags()
                arguments: dict[str, Any] = {}
                for key, value in use.settings:
                    literal = _literal(value)
                    if key in flags:
                        if not isinstance(literal, bool):
                            diags.append(Diagnostic("policy.wrong-type", f"flag '{key}' must be true or false",
                                                    value.span))
                            continue
                        flags[key] = literal
                    else:
                        arguments[key] = literal
                name = _module(str(target)).name
                plugins.append(PluginInstance(name, compiled_module(target, arguments), flags))
            tiers.append(tuple(plugins))
    if diags:
        raise PolicyError(diags)
    return CompiledPolicy(tuple(actions), tuple(tiers), source=str(path))


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

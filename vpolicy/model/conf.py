"""A Volcano `volcano-scheduler.conf` as plain, immutable data: actions, tiers of plugins, action arguments.

This is what the engine and the compiler read to know which actions run, in which order, which plugin
rule modules are active in which tier, which of their callbacks are switched on, and with which
arguments. It mirrors Volcano's `conf.SchedulerConfiguration` after `ApplyPluginConfDefaults`: every
enable flag is resolved, an unset flag being True (as when Volcano loads a file; Volcano's Go unit tests
skip that step, we never do). `enableHierarchy` is not defaulted by Volcano, so it is kept apart as
`hierarchy`, False unless set.

This module does no parsing and no validation: `vpolicy.load.conf` reads the YAML, checks names and
types and builds these objects; the compiler decides what a flag or an argument means. Spans never
take part in equality, so a conf read from a file equals the same conf written differently.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from vpolicy.errors import Diagnostic
from vpolicy.source import Span

# Every per-callback switch of Volcano's PluginOption, with Volcano's own inconsistent `enable`/`enabled`
# spellings (pkg/scheduler/conf/scheduler_conf.go). The order is Volcano's field order.
FLAGS: tuple[str, ...] = (
    "enableJobOrder",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "enabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
    "enabledHyperNodeOrder",
    "enabledSubJobReady",
    "enabledSubJobPipelined",
    "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)

# Not a callback switch: hierarchical sharing for drf/capacity, and not defaulted to true by Volcano.
HIERARCHY_KEY = "enableHierarchy"

# Every key a plugin entry may carry; anything else is a typo (Volcano's YAML decoder would ignore it).
PLUGIN_OPTION_KEYS: frozenset[str] = frozenset({"name", "arguments", HIERARCHY_KEY, *FLAGS})

# Volcano's registered actions (pkg/scheduler/actions/factory.go), in no particular order.
KNOWN_ACTIONS: tuple[str, ...] = (
    "enqueue",
    "allocate",
    "backfill",
    "preempt",
    "reclaim",
    "shuffle",
    "gangpreempt",
    "gangreclaim",
)

# Volcano's registered plugin builders (pkg/scheduler/plugins/factory.go); note `numa-aware`, not the
# package name `numaaware`.
KNOWN_PLUGINS: tuple[str, ...] = (
    "priority",
    "gang",
    "conformance",
    "overcommit",
    "drf",
    "predicates",
    "proportion",
    "nodeorder",
    "binpack",
    "capacity",
    "deviceshare",
    "resource-strategy-fit",
    "tdm",
    "sla",
    "task-topology",
    "numa-aware",
    "cdp",
    "rescheduling",
    "usage",
    "pdb",
    "nodegroup",
    "network-topology-aware",
    "extender",
    "resourcequota",
)

# The plugins vpolicy ships a rule module for; a conf naming another known plugin loads with a warning.
IMPLEMENTED_PLUGINS: tuple[str, ...] = (
    "priority",
    "gang",
    "conformance",
    "overcommit",
    "drf",
    "predicates",
    "proportion",
    "nodeorder",
    "binpack",
    "capacity",
    "deviceshare",
    "sla",
    "pdb",
    "cdp",
    "nodegroup",
    "resourcequota",
    "resource-strategy-fit",
    "usage",
    "tdm",
    "task-topology",
    "numa-aware",
    "rescheduling",
    "extender",
    "network-topology-aware",
)

# Plugins whose rule module loads and runs but leaves part of Volcano's behaviour out: a conf naming
# one loads with a `conf.partial-plugin` warning that says what is missing, so nobody mistakes the
# decisions for Volcano's where that part would have acted.
PARTIAL_PLUGINS: Mapping[str, str] = {}  # none today: what differs on purpose is in docs/plugins.md

# The key under which a plugin module's arguments also carry the conf's `metrics` section (read by the
# `metrics_setting` built-in, as Volcano's plugins read ssn.GetMetricsConf()); never a Volcano argument.
METRICS_KEY = "$metrics"

# Actions vpolicy runs only in part, with what they leave out (`conf.partial-action` warnings).
PARTIAL_ACTIONS: Mapping[str, str] = {}


@dataclass(frozen=True, slots=True)
class PluginOption:
    """One plugin entry of a tier, flags resolved.

    `flags` holds every name of `FLAGS`; `hierarchy` is `enableHierarchy` (False unless set). `span` points at the plugin's name; `argument_spans` at each
    argument's value (at its key when the value is empty); `flag_spans` at the value of each flag the
    file set explicitly, so its keys are the flags written in the file.
    """

    name: str
    flags: Mapping[str, bool]
    arguments: Mapping[str, object] = field(default_factory=dict)
    span: Span | None = field(default=None, compare=False)
    argument_spans: Mapping[str, Span] = field(default_factory=dict, compare=False)
    hierarchy: bool = False
    flag_spans: Mapping[str, Span] = field(default_factory=dict, compare=False)

    def enabled(self, flag: str) -> bool:
        """Whether the callback switched by `flag` (one of `FLAGS`) is on for this plugin."""
        try:
            return self.flags[flag]
        except KeyError:
            raise KeyError(f"{flag!r} is not a Volcano plugin flag") from None


def all_flags(overrides: Mapping[str, bool] | None = None) -> dict[str, bool]:
    """Every flag True (Volcano's file default), then `overrides` applied."""
    flags = dict.fromkeys(FLAGS, True)
    for name, value in (overrides or {}).items():
        if name not in flags:
            raise KeyError(f"{name!r} is not a Volcano plugin flag")
        flags[name] = value
    return flags


@dataclass(frozen=True, slots=True)
class Tier:
    """Plugins visited together: victims are intersected and votes counted within one tier."""

    plugins: tuple[PluginOption, ...]


@dataclass(frozen=True, slots=True)
class ActionConf:
    """One `configurations` entry: arguments for an action (`span` points at its name,
    `argument_spans` at each argument's value)."""

    name: str
    arguments: Mapping[str, object]
    span: Span | None = field(default=None, compare=False)
    argument_spans: Mapping[str, Span] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class SchedulerConf:
    """A whole conf: actions in run order, tiers in visit order, per-action arguments.

    `configurations` maps an action name to its arguments (the first entry wins, as in Volcano);
    `action_confs` keeps the entries with their spans. `source` names where the conf came from (a path,
    or `<volcano-default>`). `warnings` are the `one_line()` forms of `warning_diagnostics`.
    """

    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    configurations: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    source: str = ""
    warnings: tuple[str, ...] = ()
    # the top-level `metrics` section (Volcano's metrics source: type, address, interval, ...), as text
    metrics: Mapping[str, str] = field(default_factory=dict)
    action_spans: tuple[Span, ...] = field(default=(), compare=False)
    action_confs: tuple[ActionConf, ...] = field(default=(), compare=False)
    warning_diagnostics: tuple[Diagnostic, ...] = field(default=(), compare=False)

    def plugin(self, name: str) -> PluginOption | None:
        """The first entry for plugin `name` across all tiers, or None if it is not configured."""
        for tier in self.tiers:
            for option in tier.plugins:
                if option.name == name:
                    return option
        return None

    def plugins(self) -> tuple[PluginOption, ...]:
        """Every plugin entry, tier by tier, in file order."""
        return tuple(option for tier in self.tiers for option in tier.plugins)

    def action_arguments(self, name: str) -> Mapping[str, object]:
        """The `configurations` arguments of action `name`; empty when it has none."""
        return self.configurations.get(name, {})

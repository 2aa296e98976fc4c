"""The `volcano-agent-configuration` ConfigMap: its schema, defaults, per-node overrides and validation.

The ConfigMap (namespace of the agent, `volcano-system` by default) holds one key, `colocation-config`,
a JSON document as Volcano's agent reads it:

    {"globalConfig": {SECTIONS}, "nodesConfig": [{"selector": LabelSelector, SECTIONS}, ...]}

SECTIONS are `cpuQosConfig`, `cpuBurstConfig`, `memoryQosConfig`, `networkQosConfig`,
`overSubscriptionConfig`, `evictingConfig` and `cpuThrottlingConfig` (fields in `DEFAULTS`). A node's
configuration is the defaults, overridden field by field by `globalConfig`, then by the *last*
`nodesConfig` entry whose selector matches the node's labels (Volcano's `MergerCfg`). The node labels
`volcano.sh/colocation` and `volcano.sh/oversubscription` switch the features on for the node;
oversubscription implies colocation.

Validation is Volcano's (watermarks positive, low <= high, oversubscription types cpu/memory, network
percentages 1..1000) plus what Go's decoder would refuse (a string where a number belongs); keys
Volcano does not know are reported with a suggestion instead of being silently ignored. Sections
Volcano has and this agent does not build (`networkQosConfig` needs eBPF, `memoryQosV2Config`,
`blkioQosConfig`, `timeBasedQoSPolicies`, `nodeMonitor`) are accepted and validated where Volcano
validates them, and reported as not built when enabled. A problem is one line naming the field path.
"""
from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CONFIG_MAP_NAME = "volcano-agent-configuration"
CONFIG_KEY = "colocation-config"
DEFAULT_NAMESPACE = "volcano-system"

COLOCATION_LABEL = "volcano.sh/colocation"
OVERSUBSCRIPTION_LABEL = "volcano.sh/oversubscription"

# Volcano's DefaultColocationConfig (pkg/agent/config/utils): colocation fine-grained features are off
# until a kernel that supports them is known; oversubscription is on where the node label allows it.
DEFAULTS: dict[str, dict[str, Any]] = {
    "cpuQosConfig": {"enable": False},
    "cpuBurstConfig": {"enable": False},
    "memoryQosConfig": {"enable": False},
    "memoryQosV2Config": {"enable": False},
    "blkioQosConfig": {"enable": False},
    "networkQosConfig": {"enable": False, "onlineBandwidthWatermarkPercent": 80, "offlineLowBandwidthPercent": 10,
                         "offlineHighBandwidthPercent": 40, "qosCheckInterval": 10000000},
    "overSubscriptionConfig": {"enable": True, "overSubscriptionTypes": "cpu,memory"},
    "evictingConfig": {"evictingCPUHighWatermark": 80, "evictingMemoryHighWatermark": 60,
                       "evictingCPULowWatermark": 30, "evictingMemoryLowWatermark": 30,
                       "monitorInterval": 10, "highUsageCountLimit": 6},
    # cpuThrottling's numbers are Volcano's SetCPUThrottlingConfig fallbacks (threshold 80 %, jitter 1 %,
    # recover 10 % per interval)
    "cpuThrottlingConfig": {"enable": False, "cpuThrottlingThreshold": 80, "cpuJitterLimitPercent": 1,
                            "cpuRecoverLimitPercent": 10},
    "nodeMonitor": {"utilizationIntervalSeconds": None, "detectIntervalSeconds": None, "highUsageCountLimit": None},
}
# Fields whose JSON type is a string; every other non-`enable` field is an integer.
_STRING_FIELDS = frozenset({"overSubscriptionTypes"})
# Sections Volcano reads that this agent validates but does not act on, and why.
NOT_BUILT = {
    "networkQosConfig": "network QoS needs eBPF programs (tc + cgroup) on the node; not built",
    "memoryQosV2Config": "memory QoS v2 is driven by the ColocationConfiguration CRD; not built",
    "blkioQosConfig": "blkio QoS is not built",
}
_OTHER_KEYS = frozenset({"nodeLabelConfig", "timeBasedQoSPolicies"})  # read and ignored, as Volcano's json:"-"
_SECTION_KEYS = frozenset(DEFAULTS) | _OTHER_KEYS

# Per-node watermark annotations (override evictingConfig for one node), and their deprecated names.
WATERMARK_ANNOTATIONS = {
    ("cpu", "high"): "volcano.sh/evicting-cpu-high-watermark",
    ("memory", "high"): "volcano.sh/evicting-memory-high-watermark",
    ("cpu", "low"): "volcano.sh/evicting-cpu-low-watermark",
    ("memory", "low"): "volcano.sh/evicting-memory-low-watermark",
}


@dataclass(frozen=True, slots=True)
class Watermarks:
    """Percent of the node's allocatable cpu/memory: evict above `high`, reopen the node at or below `low`."""
    cpu_high: int
    memory_high: int
    cpu_low: int
    memory_low: int

    def high(self, resource: str) -> int:
        return self.cpu_high if resource == "cpu" else self.memory_high

    def low(self, resource: str) -> int:
        return self.cpu_low if resource == "cpu" else self.memory_low


@dataclass(frozen=True, slots=True)
class ColocationConfig:
    """One node's effective configuration (defaults, global, node overrides and node labels merged)."""
    colocation: bool  # node label volcano.sh/colocation (or oversubscription) is true
    oversubscription_node: bool  # node label volcano.sh/oversubscription is true
    cpu_qos: bool
    cpu_burst: bool
    memory_qos: bool
    oversubscription: bool  # overSubscriptionConfig.enable
    oversubscription_types: tuple[str, ...]
    watermarks: Watermarks
    monitor_interval_s: int
    high_usage_count_limit: int
    cpu_throttling: bool
    cpu_throttling_threshold: int
    cpu_jitter_limit_percent: int
    cpu_recover_limit_percent: int
    not_built: tuple[str, ...] = ()  # enabled sections this agent does not act on, with why

    def enabled(self, feature: str) -> bool:
        """Volcano's feature gate: colocation features need the node label, oversubscription its own."""
        on_node = self.colocation or self.oversubscription_node
        return {
            "cpu-qos": on_node and self.cpu_qos,
            "cpu-burst": on_node and self.cpu_burst,
            "memory-qos": on_node and self.memory_qos,
            "cpu-throttling": on_node and self.cpu_throttling,
            "oversubscription": self.oversubscription_node and self.oversubscription,
            # eviction follows the extend policy: nodes that lend resources are the ones kept safe
            "eviction": self.oversubscription_node,
        }[feature]


class ConfigError(Exception):
    """The ConfigMap cannot be used; `problems` has one line per mistake, each naming its field."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def parse_document(text: str) -> dict[str, Any]:
    """The `colocation-config` JSON text as a dict; ConfigError when it is not JSON or has unknown keys."""
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError([f"{CONFIG_KEY}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}"]) from exc
    if not isinstance(data, dict):
        raise ConfigError([f"{CONFIG_KEY}: expected a JSON object with globalConfig and nodesConfig"])
    problems = _check_document(data)
    if problems:
        raise ConfigError(problems)
    return data


def for_node(document: Mapping[str, Any] | None, node: Mapping[str, Any]) -> ColocationConfig:
    """The effective configuration of `node` (a Node object); ConfigError when the merge is invalid."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    merged = copy.deepcopy(DEFAULTS)
    document = document or {}
    _merge(merged, document.get("globalConfig") or {})
    chosen: Mapping[str, Any] = {}
    for entry in document.get("nodesConfig") or []:
        if selector_matches(entry.get("selector"), labels):
            chosen = entry  # the last matching entry wins
    _merge(merged, chosen)
    problems = validate(merged)
    if problems:
        raise ConfigError(problems)
    oversub_node = parse_bool(labels.get(OVERSUBSCRIPTION_LABEL))
    ev, th, os_ = merged["evictingConfig"], merged["cpuThrottlingConfig"], merged["overSubscriptionConfig"]
    types = tuple(t.strip() for t in str(os_["overSubscriptionTypes"]).split(",") if t.strip())
    return ColocationConfig(
        colocation=parse_bool(labels.get(COLOCATION_LABEL)) or oversub_node,
        oversubscription_node=oversub_node,
        cpu_qos=bool(merged["cpuQosConfig"]["enable"]),
        cpu_burst=bool(merged["cpuBurstConfig"]["enable"]),
        memory_qos=bool(merged["memoryQosConfig"]["enable"]),
        oversubscription=bool(os_["enable"]),
        oversubscription_types=types,
        watermarks=Watermarks(ev["evictingCPUHighWatermark"], ev["evictingMemoryHighWatermark"],
                              ev["evictingCPULowWatermark"], ev["evictingMemoryLowWatermark"]),
        monitor_interval_s=int(ev["monitorInterval"]),
        high_usage_count_limit=int(merged["nodeMonitor"]["highUsageCountLimit"] or ev["highUsageCountLimit"]),
        cpu_throttling=bool(th["enable"]),
        cpu_throttling_threshold=int(th["cpuThrottlingThreshold"]),
        cpu_jitter_limit_percent=int(th["cpuJitterLimitPercent"]),
        cpu_recover_limit_percent=int(th["cpuRecoverLimitPercent"]),
        not_built=tuple(f"{name}: {why}" for name, why in NOT_BUILT.items() if merged[name].get("enable")),
    )


def validate(merged: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Volcano's `ColocationConfig.Validate` on a merged configuration."""
    out: list[str] = []
    net, ev = merged["networkQosConfig"], merged["evictingConfig"]
    if net.get("qosCheckInterval") is not None and net["qosCheckInterval"] <= 0:
        out.append("networkQosConfig.qosCheckInterval: must be a positive number")
    for key in ("onlineBandwidthWatermarkPercent", "offlineHighBandwidthPercent", "offlineLowBandwidthPercent"):
        value = net.get(key)
        if value is not None and not 0 < value <= 1000:
            out.append(f"networkQosConfig.{key}: must be a positive number between 1 and 1000")
    low, high = net.get("offlineLowBandwidthPercent"), net.get("offlineHighBandwidthPercent")
    if low is not None and high is not None and low > high:
        out.append("networkQosConfig: offlineHighBandwidthPercent cannot be less than offlineLowBandwidthPercent")
    for t in str(merged["overSubscriptionConfig"].get("overSubscriptionTypes") or "").split(","):
        if t not in ("cpu", "memory"):
            out.append(f"overSubscriptionConfig.overSubscriptionTypes: overSubscriptionType({t}) is not supported, "
                       "only supports cpu/memory")
    for key in ("evictingCPUHighWatermark", "evictingMemoryHighWatermark", "evictingCPULowWatermark",
                "evictingMemoryLowWatermark", "monitorInterval", "highUsageCountLimit"):
        if ev.get(key) is not None and ev[key] <= 0:
            out.append(f"evictingConfig.{key}: must be a positive number")
    for res, upper in (("CPU", "cpu"), ("Memory", "memory")):
        lo, hi = ev.get(f"evicting{res}LowWatermark"), ev.get(f"evicting{res}HighWatermark")
        if lo is not None and hi is not None and lo > hi:
            out.append(f"evictingConfig: {upper} evicting low watermark ({lo}) is higher than high watermark ({hi})")
    th = merged["cpuThrottlingConfig"]
    for key in ("cpuThrottlingThreshold", "cpuJitterLimitPercent", "cpuRecoverLimitPercent"):
        if th.get(key) is not None and not 0 <= th[key] <= 100:
            out.append(f"cpuThrottlingConfig.{key}: must be a percent between 0 and 100")
    for key, value in merged["nodeMonitor"].items():
        if value is not None and value <= 0:
            out.append(f"nodeMonitor.{key}: must be positive")
    return out


def watermarks_for(node: Mapping[str, Any], configured: Watermarks) -> tuple[Watermarks, str]:
    """The node's own watermark annotations, if any (a missing one takes Volcano's default), else
    `configured`; the second value says why annotations were refused ('' when they were not)."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    defaults = {("cpu", "high"): 80, ("memory", "high"): 60, ("cpu", "low"): 30, ("memory", "low"): 30}
    values: dict[tuple[str, str], int] = {}
    found = False
    for key, name in WATERMARK_ANNOTATIONS.items():
        old = name.replace("volcano.sh/", "volcano.sh/oversubscription-")
        real = old if old in annotations and name not in annotations else name
        if real not in annotations:
            values[key] = defaults[key]
            continue
        found = True
        text = str(annotations[real]).strip()
        if not text.lstrip("-").isdigit() or int(text) < 0:
            return configured, f"annotation {real}={text!r}: must be a non-negative integer"
        values[key] = int(text)
    if not found:
        return configured, ""
    for res in ("cpu", "memory"):
        if values[(res, "high")] <= values[(res, "low")]:
            return configured, (f"{res} low watermark {values[(res, 'low')]} is not below high watermark "
                                f"{values[(res, 'high')]} in the node's annotations")
    return Watermarks(values[("cpu", "high")], values[("memory", "high")], values[("cpu", "low")],
                      values[("memory", "low")]), ""


def parse_bool(text: Any) -> bool:
    """Go's strconv.ParseBool, false for anything it would refuse."""
    return str(text) in ("1", "t", "T", "TRUE", "true", "True")


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector: a missing selector matches nothing, `{}` matches every node."""
    if not isinstance(selector, Mapping):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), set(expr.get("values") or [])
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False  # an invalid selector selects nothing (Volcano skips it)
    return True


def _merge(into: dict[str, dict[str, Any]], source: Mapping[str, Any]) -> None:
    for section, fields in source.items():
        if section in DEFAULTS and isinstance(fields, Mapping):
            for key, value in fields.items():
                if value is not None:
                    into[section][key] = value


def _check_document(data: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key in data:
        if key not in ("globalConfig", "nodesConfig"):
            out.append(_unknown(key, ("globalConfig", "nodesConfig"), ""))
    glob = data.get("globalConfig")
    if glob is not None:
        out.extend(_check_sections(glob, "globalConfig"))
    nodes = data.get("nodesConfig")
    if nodes is not None and not isinstance(nodes, list):
        out.append("nodesConfig: expected a list of {selector, ...sections}")
    for i, entry in enumerate(nodes if isinstance(nodes, list) else []):
        where = f"nodesConfig[{i}]"
        if not isinstance(entry, Mapping):
            out.append(f"{where}: expected an object")
            continue
        selector = entry.get("selector")
        if selector is not None and not isinstance(selector, Mapping):
            out.append(f"{where}.selector: expected a label selector (matchLabels, matchExpressions)")
        elif isinstance(selector, Mapping):
            for j, expr in enumerate(selector.get("matchExpressions") or []):
                if not isinstance(expr, Mapping) or expr.get("operator") not in ("In", "NotIn", "Exists",
                                                                                   "DoesNotExist"):
                    out.append(f"{where}.selector.matchExpressions[{j}]: operator must be In, NotIn, Exists or "
                               "DoesNotExist")
        out.extend(_check_sections({k: v for k, v in entry.items() if k != "selector"}, where))
    return out


def _check_sections(sections: Any, where: str) -> list[str]:
    if not isinstance(sections, Mapping):
        return [f"{where}: expected an object"]
    out: list[str] = []
    for name, fields in sections.items():
        if name not in _SECTION_KEYS:
            out.append(_unknown(name, sorted(_SECTION_KEYS), where))
            continue
        if name in _OTHER_KEYS or fields is None:
            continue
        if not isinstance(fields, Mapping):
            out.append(f"{where}.{name}: expected an object")
            continue
        for key, value in fields.items():
            path = f"{where}.{name}.{key}"
            if key not in DEFAULTS[name]:
                out.append(_unknown(key, sorted(DEFAULTS[name]), f"{where}.{name}"))
            elif value is None:
                continue
            elif key == "enable":
                if not isinstance(value, bool):
                    out.append(f"{path}: expected true or false, got {json.dumps(value)}")
            elif key in _STRING_FIELDS:
                if not isinstance(value, str):
                    out.append(f"{path}: expected a string such as \"cpu,memory\", got {json.dumps(value)}")
            elif isinstance(value, bool) or not isinstance(value, int):
                out.append(f"{path}: expected an integer, got {json.dumps(value)}")
    return out


def _unknown(key: str, known: Any, where: str) -> str:
    path = f"{where}.{key}" if where else key
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"{path}: unknown key{hint}"

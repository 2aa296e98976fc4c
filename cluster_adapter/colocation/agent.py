"""One pass of the colocation handlers on a node: `ColocationAgent.tick`.

A tick takes the Node and the pods as the API returns them (plain JSON), the node's effective
`ColocationConfig` and the time, samples usage through the probe, writes the pods' cgroups through the
writer, and returns what the API should be told (`Tick`): the Node's annotations and extended resources,
and the pods to evict with why. The runner (`api.run_once`) does those calls; the decisions are
`policy`'s pure functions. The agent keeps the state Volcano's probes keep between passes: the
smoothing window of idle resources, the report count, the last BE cpu quota, the consecutive
high-usage counts per resource.

Node annotations written: `volcano.sh/oversubscription-cpu` (millicores), `volcano.sh/oversubscription-memory`
(bytes), `volcano.sh/offline-job-evicting` ("true" while the node is under pressure, "false" once every
resource is back under its low watermark). Node status: `kubernetes.io/batch-cpu` and
`kubernetes.io/batch-memory` in allocatable and capacity.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster_adapter.colocation import cgroups, config, handlers, policy, probes, qos
from vpolicy.model import quantity

EVICTING_KEY = "volcano.sh/offline-job-evicting"
OVERSUBSCRIPTION_CPU_KEY = "volcano.sh/oversubscription-cpu"
OVERSUBSCRIPTION_MEMORY_KEY = "volcano.sh/oversubscription-memory"
OVERSUBSCRIPTION_TYPES_KEY = "volcano.sh/oversubscription-types"  # a node's own types (Volcano's old API)
BATCH_KEYS = {"cpu": qos.BATCH_CPU, "memory": qos.BATCH_MEMORY}


@dataclass(frozen=True, slots=True)
class ColocationSettings:
    node: str
    ratio_percent: int = 60  # share of idle resources lent (Volcano's --oversubscription-ratio)
    include_system_usage: bool = False  # count the machine's usage, not only the pods' (--include-system-usage)
    pinned_guaranteed_cpus: bool = False  # the kubelet's static cpu manager pins Guaranteed pods' cpus


@dataclass(slots=True)
class Tick:
    annotations: dict[str, str | None] = field(default_factory=dict)  # node annotations to set (None: remove)
    status: dict[str, Any] = field(default_factory=dict)  # node status merge patch
    evictions: list[policy.Eviction] = field(default_factory=list)
    writes: list[cgroups.Write] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was decided and why, for the log
    problems: list[str] = field(default_factory=list)
    percents: dict[str, int | None] = field(default_factory=dict)  # usage % of allocatable this pass


class ColocationAgent:
    def __init__(self, settings: ColocationSettings, writer: cgroups.CgroupWriter, probe: probes.UsageProbe):
        self.settings = settings
        self.writer = writer
        self.probe = probe
        self.history: list[dict[str, int]] = []
        self.reports = 0
        self.last_quota_milli: int | None = None
        self.high_counts: dict[str, int] = {}

    def tick(self, node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], cfg: config.ColocationConfig, *,
             now: float) -> Tick:
        out = Tick()
        infos = qos.active_on(list(pods), self.settings.node)
        usage = self.probe.sample(infos, now)
        for pod in infos:
            out.writes += handlers.apply_pod(self.writer, pod, cfg)
        allocatable = _allocatable(node)
        used = {"cpu": usage.node_cpu_milli if self.settings.include_system_usage else usage.pods_cpu_milli,
                "memory": usage.node_memory if self.settings.include_system_usage else usage.pods_memory}
        out.percents = {res: policy.usage_percent(used[res], allocatable[res]) for res in policy.RESOURCES}
        self._oversubscription(out, node, infos, cfg, allocatable, used)
        self._throttle(out, cfg, allocatable, usage)
        self._eviction(out, node, infos, cfg, allocatable, used, usage)
        out.notes += [f"{name} is enabled in the ConfigMap but not acted on: {why}" for name, why in
                      (n.split(": ", 1) for n in cfg.not_built)]
        return out

    # oversubscription ------------------------------------------------------------------------------------
    def _oversubscription(self, out: Tick, node: Mapping[str, Any], infos: Sequence[qos.PodInfo],
                          cfg: config.ColocationConfig, allocatable: Mapping[str, int],
                          used: Mapping[str, int | None]) -> None:
        current = _published(node)
        if not cfg.enabled("oversubscription"):
            if current is not None:  # turned off: take the lent resources back (Volcano's Cleanup)
                out.status = {"allocatable": {k: None for k in BATCH_KEYS.values()},
                              "capacity": {k: None for k in BATCH_KEYS.values()}}
                out.annotations.update({OVERSUBSCRIPTION_CPU_KEY: "0", OVERSUBSCRIPTION_MEMORY_KEY: "0"})
                for pod in infos:
                    if pod.offline and (pod.batch_cpu_request or pod.batch_memory_request):
                        out.evictions.append(policy.Eviction(pod, "oversubscription",
                                                             "node overSubscription is turned off"))
                self.history.clear()
                out.notes.append("oversubscription is off on this node: batch resources withdrawn")
            return
        if used["cpu"] is None or used["memory"] is None:
            out.notes.append("oversubscription: no usage sample yet, nothing published")
            return
        guaranteed = sum(p.cpu_request_milli for p in infos if p.qos_class == qos.GUARANTEED and not p.offline) \
            if self.settings.pinned_guaranteed_cpus else 0
        idle = policy.idle_resources(allocatable=allocatable, usage={"cpu": used["cpu"], "memory": used["memory"]},
                                     ratio_percent=self.settings.ratio_percent, guaranteed_cpu_request=guaranteed)
        self.history = (self.history + [idle])[-policy.HISTORY:]
        types = _types(node) or cfg.oversubscription_types
        lend = policy.restrict(policy.smooth(self.history), types)
        report = self.reports
        self.reports += 1
        if not policy.should_publish(current or {}, lend, report=report):
            return
        values = {BATCH_KEYS[res]: str(lend[res]) for res in policy.RESOURCES}
        out.status = {"allocatable": dict(values), "capacity": dict(values)}
        out.annotations.update({OVERSUBSCRIPTION_CPU_KEY: str(lend["cpu"]),
                                OVERSUBSCRIPTION_MEMORY_KEY: str(lend["memory"])})
        out.notes.append(f"oversubscription: lending {lend['cpu']}m cpu and {lend['memory']} bytes of memory")

    # CPU throttling ----------------------------------------------------------------------------------------
    def _throttle(self, out: Tick, cfg: config.ColocationConfig, allocatable: Mapping[str, int],
                  usage: probes.Usage) -> None:
        if not cfg.enabled("cpu-throttling"):
            if self.last_quota_milli is not None or cfg.colocation:
                # lift a limit this agent (or an earlier run) set; a node outside colocation is left alone
                out.writes += self.writer.be_quota(None)  # written only if a limit is there
            self.last_quota_milli = None
            return
        online = usage.online_cpu_milli()
        if online is None:
            return
        quota = policy.be_cpu_quota(
            allocatable_cpu_milli=allocatable["cpu"], online_cpu_milli=online,
            threshold_percent=cfg.cpu_throttling_threshold, last_quota_milli=self.last_quota_milli,
            recover_percent=cfg.cpu_recover_limit_percent, jitter_percent=cfg.cpu_jitter_limit_percent)
        if quota is None:
            return
        self.last_quota_milli = quota
        out.writes += self.writer.be_quota(quota)
        out.notes.append(f"cpu throttling: BestEffort pods may use {quota}m (online pods use {online}m)")

    # eviction -----------------------------------------------------------------------------------------------
    def _eviction(self, out: Tick, node: Mapping[str, Any], infos: Sequence[qos.PodInfo],
                  cfg: config.ColocationConfig, allocatable: Mapping[str, int], used: Mapping[str, int | None],
                  usage: probes.Usage) -> None:
        if not cfg.enabled("eviction"):
            self.high_counts = {}
            return
        marks, why = config.watermarks_for(node, cfg.watermarks)
        if why:
            out.problems.append(f"node watermark annotations ignored: {why}")
        high = {res: marks.high(res) for res in policy.RESOURCES}
        low = {res: marks.low(res) for res in policy.RESOURCES}
        self.high_counts = policy.update_high_counts(self.high_counts, out.percents, high)
        evicting = ((node.get("metadata") or {}).get("annotations") or {}).get(EVICTING_KEY) == "true"
        taken = {e.pod.uid for e in out.evictions}
        for res in policy.RESOURCES:
            if self.high_counts[res] < cfg.high_usage_count_limit:
                continue
            evicting = True
            value = used[res]
            assert value is not None  # a high count needs a known usage
            pod_usage = {uid: (u.cpu_milli if res == "cpu" else u.memory) for uid, u in usage.per_pod.items()}
            plan = policy.plan_evictions(res, [p for p in infos if p.uid not in taken], pod_usage=pod_usage,
                                         used=value, allocatable=allocatable[res], low_percent=low[res])
            out.evictions += plan
            taken |= {e.pod.uid for e in plan}
            self.high_counts[res] = 0  # wait for fresh high samples before evicting more
            out.notes.append(f"{res} pressure: {out.percents[res]}% >= {high[res]}% for "
                             f"{cfg.high_usage_count_limit} samples; evicting {len(plan)} BE pod(s)")
        if evicting and policy.all_low(out.percents, low):
            out.annotations[EVICTING_KEY] = "false"
            out.notes.append("every resource is under its low watermark: BE pods may be placed here again")
        elif evicting:
            out.annotations[EVICTING_KEY] = "true"


def cpu_manager_static(kubelet_root: Path) -> bool:
    """Whether the kubelet's cpu manager pins cpus (`policyName: static` in its cpu_manager_state): then
    Guaranteed pods' cpus are theirs alone and are not lent (Volcano's IncludeGuaranteedPods)."""
    try:
        state = json.loads((kubelet_root / "cpu_manager_state").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(state, dict) and state.get("policyName") == "static"


def _allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    values = (node.get("status") or {}).get("allocatable") or {}
    out = {}
    for res in policy.RESOURCES:
        try:
            out[res] = quantity.parse_milli_value(values[res]) if res == "cpu" else quantity.parse_value(values[res])
        except (KeyError, ValueError, TypeError):
            out[res] = 0
    return out


def _published(node: Mapping[str, Any]) -> dict[str, int] | None:
    """The batch resources the node shows now (None when it shows none)."""
    capacity = (node.get("status") or {}).get("capacity") or {}
    if not any(k in capacity for k in BATCH_KEYS.values()):
        return None
    out = {}
    for res, key in BATCH_KEYS.items():
        try:
            out[res] = quantity.parse_value(capacity.get(key, 0))
        except (ValueError, TypeError):
            out[res] = 0
    return out


def _types(node: Mapping[str, Any]) -> tuple[str, ...]:
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(OVERSUBSCRIPTION_TYPES_KEY) or ""
    return tuple(t.strip() for t in str(text).split(",") if t.strip())

"""The engine's only output: what one session decided, in the shape of the decision document (DESIGN §4).

Built by `engine.session`, printed by `harness.report`, checked by `engine.validate`, applied by the
live adapter. Plain data, JSON-ready through `to_document`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from vpolicy.model.numa import NumaHold


@dataclass(frozen=True, slots=True)
class Eviction:
    pod: str  # ns/name
    action: str  # preempt | reclaim | shuffle
    for_job: str  # ns/podgroup of the preemptor
    rule: str  # file:line of the rule that selected the victim


@dataclass(frozen=True, slots=True)
class PodGroupStatus:
    phase: str
    conditions: tuple[dict[str, str], ...] = ()
    running: int = 0
    succeeded: int = 0
    failed: int = 0


@dataclass(slots=True)
class Decisions:
    binds: dict[str, str] = field(default_factory=dict)
    pipelined: dict[str, str] = field(default_factory=dict)
    # the pipelined pods whose own evictions made their room: the live scheduler writes their
    # status.nominatedNodeName, as Volcano does (a pod pipelined onto room being released is not nominated)
    nominated: dict[str, str] = field(default_factory=dict)
    evictions: list[Eviction] = field(default_factory=list)
    podgroups: dict[str, PodGroupStatus] = field(default_factory=dict)
    unschedulable: dict[str, list[str]] = field(default_factory=dict)
    # pod key -> the PodScheduled=False condition Volcano writes on a pod of a job left pending,
    # held for its gang or pipelined: {"reason": Unschedulable | Undetermined | Schedulable, "message"}
    pod_conditions: dict[str, dict[str, str]] = field(default_factory=dict)
    annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    queues: dict[str, dict[str, object]] = field(default_factory=dict)
    stats: dict[str, object] = field(default_factory=dict)
    # the `every` rules that ran in this session (rule id -> session clock): not part of the document;
    # a scheduler that runs sessions one after another passes them on as the next one's `last_runs`
    rule_runs: dict[str, float] = field(default_factory=dict)
    # numa-aware's CPUs and GPUs of the pods bound so far that their Numatopologies do not show yet: not
    # part of the document; a scheduler passes them on as the next snapshot's `numa_holds`
    numa_holds: tuple[NumaHold, ...] = ()
    # the volumes each bound pod's unbound WaitForFirstConsumer claims get (pod key -> claim key -> PV name,
    # "" when the class provisions it): not part of the document; the live binder writes them first
    volume_bindings: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_document(self) -> dict[str, object]:
        return {
            "binds": dict(sorted(self.binds.items())),
            "pipelined": dict(sorted(self.pipelined.items())),
            "nominated": dict(sorted(self.nominated.items())),
            "evictions": [
                {"pod": e.pod, "action": e.action, "for": e.for_job, "rule": e.rule} for e in self.evictions
            ],
            "podgroups": {
                k: {"phase": s.phase, "conditions": [dict(c) for c in s.conditions]}
                for k, s in sorted(self.podgroups.items())
            },
            "unschedulable": dict(sorted(self.unschedulable.items())),
            "pod_conditions": dict(sorted(self.pod_conditions.items())),
            "annotations": dict(sorted(self.annotations.items())),
            "queues": dict(sorted(self.queues.items())),
            "stats": self.stats,
        }

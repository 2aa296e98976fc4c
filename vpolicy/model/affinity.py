"""What a pod says about other pods and about node-level resources it shares: the data behind
kube-scheduler's InterPodAffinity, PodTopologySpread and NodePorts, as plain immutable values.

Kept apart from `snapshot` because these are the one part of a pod spec that relates pods to each
other: the engine indexes them per topology domain (`vpolicy.engine.pod_relations`), rules read them
through the DSL's `term` objects. This module only holds the data and Kubernetes' label-selector
matching (`metav1.LabelSelectorAsSelector` semantics); it does no scheduling.

Invariants: a `LabelSelector` of None in a term means "matches nothing" (Kubernetes turns a nil
selector into `labels.Nothing()`), an empty selector matches every pod.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from vpolicy.model.volumes import AttachedVolume


HOSTNAME_KEY = "kubernetes.io/hostname"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One matchExpression of a label selector."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector: matchLabels AND every matchExpression (In, NotIn, Exists, DoesNotExist)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def empty(self) -> bool:
        """Kubernetes' `selector.Empty()`: no matchLabels and no matchExpressions."""
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for req in self.match_expressions:
            present = req.key in labels
            op = req.operator
            if op == "In" and not (present and labels[req.key] in req.values):
                return False
            if op == "NotIn" and present and labels[req.key] in req.values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """A nil selector matches nothing; an empty one everything."""
    return selector is not None and selector.matches(labels)


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """One pod (anti-)affinity term: pods matching `selector` in `namespaces` (the owner's namespace
    when both `namespaces` and `namespace_selector` are empty), counted per value of the node label
    `topology_key`. `weight` is set for preferred terms only."""

    topology_key: str
    selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    weight: int = 0
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One topologySpreadConstraint, with Kubernetes' defaults."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str = DO_NOT_SCHEDULE
    selector: LabelSelector | None = None
    min_domains: int = 1
    node_affinity_policy: str = "Honor"  # Honor | Ignore
    node_taints_policy: str = "Ignore"  # Honor | Ignore
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HostPort:
    """A container port with a hostPort: (hostIP, protocol, hostPort); "" hostIP means 0.0.0.0."""

    host_ip: str
    protocol: str
    port: int

    def conflicts(self, other: "HostPort") -> bool:
        """kube-scheduler's HostPortInfo: same port and protocol, and the same IP or either is 0.0.0.0."""
        if self.port != other.port or self.protocol != other.protocol:
            return False
        wild = ("", "0.0.0.0")
        return self.host_ip in wild or other.host_ip in wild or self.host_ip == other.host_ip


@dataclass(frozen=True, slots=True)
class PodRelations:
    """Everything a pod says about other pods (and host ports it shares with them); empty by default."""

    required_affinity: tuple[PodAffinityTerm, ...] = ()
    required_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    images: tuple[str, ...] = field(default=(), compare=True)
    claims: tuple[str, ...] = ()  # PersistentVolumeClaim names (of the pod's namespace) its volumes use
    # its inline in-tree volumes that a CSI driver may serve (awsElasticBlockStore, ...): NodeVolumeLimits
    inline_volumes: tuple[AttachedVolume, ...] = ()

    def has_terms(self) -> bool:
        return bool(self.required_affinity or self.required_anti_affinity or self.preferred_affinity
                    or self.preferred_anti_affinity or self.spread)


NO_RELATIONS = PodRelations()

"""Objects that limit what the scheduler may take or evict, beyond queues: PodDisruptionBudgets and
namespace ResourceQuotas, as plain immutable data.

The `pdb` plugin reads `PodDisruptionBudget`s (victims that would break a budget are kept), the
`resourcequota` plugin reads `ResourceQuota`s (a job whose minResources would push its namespace past a
quota's hard limit is not enqueued). Field names are the DSL's attribute names (`lang.builtins`: the
`pdb` and `quota` object types), so rules read these objects directly. This module parses nothing
(`vpolicy.load.budgets` does) and decides nothing (the rule modules do).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from vpolicy.model.affinity import LabelSelector
from vpolicy.model.resources import Resources, ZERO
from vpolicy.source import Span


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """policy/v1 PodDisruptionBudget: how many more pods of its selector may be disrupted now.

    `disruptions_allowed` is the disruption controller's `status.disruptionsAllowed`; `disrupted_pods`
    the pod names in `status.disruptedPods` (evictions the API server has already admitted).
    `selector` is None when the spec has none (a nil selector matches nothing).
    """

    namespace: str
    name: str
    selector: LabelSelector | None = None
    disruptions_allowed: int = 0
    disrupted_pods: tuple[str, ...] = ()
    origin: Span | str | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """v1 ResourceQuota of a namespace: `status.hard` (else `spec.hard`) and `status.used`.

    Resource names are the quota's own (`cpu`, `requests.cpu`, `limits.memory`, `pods`, `count/pods`,
    ...) in the model's units; a PodGroup's minResources is compared on the names both carry, as
    Volcano's `quotav1.Mask` does.
    """

    namespace: str
    name: str
    hard: Resources = ZERO
    used: Resources = ZERO
    origin: Span | str | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether a label selector matches a label set (a nil or empty selector matches nothing here, as
    Volcano's pdb plugin treats a PDB's selector)."""
    return selector is not None and not selector.empty() and selector.matches(labels)

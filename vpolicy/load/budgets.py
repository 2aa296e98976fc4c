"""PodDisruptionBudget and ResourceQuota objects -> `vpolicy.model.budgets`.

Field names are Kubernetes' (`policy/v1` PodDisruptionBudget, `v1` ResourceQuota). A PDB's
`status.disruptionsAllowed` is what the pdb plugin spends (a PDB the disruption controller has not
reported on yet allows nothing, as an absent status reads in Volcano); `status.disruptedPods` lists pods
whose eviction is already admitted. A quota's limits are `status.hard`, else `spec.hard` (a quota the
quota controller has not yet reported on), and its usage `status.used` (empty when absent).

This module does not walk files (`vpolicy.load.cluster` does) and applies no plugin's rule.
"""
from __future__ import annotations

from vpolicy.load.affinity import read_selector
from vpolicy.load.fields import View
from vpolicy.model import budgets
from vpolicy.model.resources import Resources


def read_pdb(obj: View) -> budgets.PodDisruptionBudget | None:
    from vpolicy.load.kinds import read_meta  # kinds is the home of metadata reading

    meta = read_meta(obj, namespaced=True)
    spec, status = obj.mapping("spec"), obj.mapping("status")
    selector = read_selector(spec.mapping("selector")) if spec and spec.has("selector") else None
    allowed = status.integer("disruptionsAllowed", default=0, minimum=0) if status else 0
    disrupted = status.mapping("disruptedPods") if status else None
    if meta is None:
        return None
    return budgets.PodDisruptionBudget(
        namespace=meta.namespace, name=meta.name, selector=selector, disruptions_allowed=allowed,
        disrupted_pods=tuple(disrupted.named_keys()) if disrupted else (), origin=meta.origin)


def read_resource_quota(obj: View) -> budgets.ResourceQuota | None:
    from vpolicy.load.kinds import read_meta

    meta = read_meta(obj, namespaced=True)
    spec, status = obj.mapping("spec"), obj.mapping("status")
    hard = status.quantities("hard") if status else None
    if hard is None and spec is not None:
        hard = spec.quantities("hard")
    used = status.quantities("used") if status else None
    if meta is None:
        return None
    return budgets.ResourceQuota(namespace=meta.namespace, name=meta.name, hard=Resources(hard or {}),
                                 used=Resources(used or {}), origin=meta.origin)

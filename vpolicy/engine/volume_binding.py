"""Volumes a session counts per node: kube-scheduler's NodeVolumeLimits and the VolumeBinding of claims
whose StorageClass waits for the first consumer, as Volcano's predicates plugin runs them.

Both change as tasks are placed, so `vpolicy.engine.pod_relations.PodIndex` owns a `VolumeBook` and
asks it; the DSL reads the answers through `volume_limits_ok` and `volume_binding_ok`
(`vpolicy.compile.relations`), and rules in `policies/volcano/predicates.vpol` decide.

- **Attach limits** (kube's nodevolumelimits/csi.go): a pod's volumes become `(driver, handle)` pairs: a
  bound claim's PV's CSI driver and handle (or its migratable in-tree disk), an unbound claim's class
  provisioner and a handle unique to the claim, an inline in-tree disk. An in-tree one counts against
  its CSI driver only on nodes whose CSINode lists the plugin as migrated. On a node with a CSINode,
  the pod's pairs not already used on the node, per driver, plus the unique pairs of the node's pods,
  must not exceed the driver's `allocatable.count` (or, failing one, the node's allocatable
  `attachable-volumes-csi-<driver>`). A driver with neither has no limit.
- **Delayed binding** (kube's volumebinding FindPodVolumes): each unbound claim of a
  WaitForFirstConsumer class needs, on the node, an available PV of its class (not taken, no other
  claim's claimRef, access modes, volume mode, size, selector, node affinity), the smallest such, claims
  taken smallest request first; or else a class whose provisioner provisions (not
  `kubernetes.io/no-provisioner`) with `allowedTopologies` matching the node. A claim annotated with
  `volume.kubernetes.io/selected-node` is provisioned for that node only. PVs matched to tasks placed
  earlier in the session are taken (Volcano's AllocateVolumes assumes them in its cache); they are
  re-matched in placement order whenever such a task moves.
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Iterable

from vpolicy.model import affinity, volumes

if TYPE_CHECKING:
    from vpolicy.engine.state import NodeInfo, TaskInfo

UNBOUND_PREFIX = "~unbound"
ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"  # kube prefixes an unbound claim's handle with a random string


class VolumeBook:
    """The session's PVs, classes and CSINodes, and the delayed claims of the tasks placed so far."""

    def __init__(self, pvs: Iterable[volumes.PersistentVolume], classes: dict[str, volumes.StorageClass],
                 csi_nodes: Iterable[volumes.CSINode], node_matches: Callable[[Any, "NodeInfo"], bool]):
        self.pvs = list(pvs)
        self.classes = classes
        self.csi_nodes = {c.name: c for c in csi_nodes}
        self._node_matches = node_matches  # (PV node affinity terms, node) -> bool
        self._placed: dict[str, tuple["TaskInfo", "NodeInfo"]] = {}  # uid -> task with delayed claims, node
        self._taken: dict[str, str] | None = None  # claim key -> PV name, for the tasks in `_placed`

    # attach limits ---------------------------------------------------------------------------------
    def limits_anywhere(self, nodes: Iterable["NodeInfo"]) -> bool:
        """Whether any node has an attach limit (if none, volumes need not be resolved for counting)."""
        return bool(self.csi_nodes) or any(_node_limits(n) for n in nodes)

    def attachable(self, claim: volumes.PersistentVolumeClaim | None, pv: volumes.PersistentVolume | None,
                   claim_key: str) -> volumes.AttachedVolume | None:
        """What NodeVolumeLimits counts for one claim (kube's getCSIDriverInfo / ...FromSC)."""
        if claim is None:
            return None
        if pv is not None:
            return pv.attach
        name = claim.storage_class or ""  # GetPersistentVolumeClaimClass: no default class here
        cls = self.classes.get(name) if name else None
        if cls is None or not cls.provisioner:
            return None
        handle = f"{UNBOUND_PREFIX}-{claim_key}"
        migrated = volumes.MIGRATABLE.get(cls.provisioner)
        if migrated is not None:
            return volumes.AttachedVolume(migrated[0], handle, cls.provisioner)
        return volumes.AttachedVolume(cls.provisioner, handle)

    def limits_ok(self, task: "TaskInfo", node: "NodeInfo") -> bool:
        csi = self.csi_nodes.get(node.name)
        limits = _node_limits(node)
        if csi is not None:
            limits.update(csi.limits)
        if not limits:
            return True
        new = _unique(task.relations.attachable, csi)
        if not new:
            return True
        used: dict[str, str] = {}
        for other in node.tasks:
            if other is not task:
                used.update(_unique(other.relations.attachable, csi))
        for name in used:
            new.pop(name, None)
        counts = Counter(used.values())
        for driver, count in Counter(new.values()).items():
            limit = limits.get(driver)
            if limit is not None and counts[driver] + count > limit:
                return False
        return True

    # delayed binding -------------------------------------------------------------------------------
    def moved(self, task: "TaskInfo", node: "NodeInfo", sign: int) -> None:
        """A task with delayed claims was placed on (1) or taken off (-1) `node`."""
        if sign > 0:
            self._placed[task.uid] = (task, node)
        else:
            self._placed.pop(task.uid, None)
        self._taken = None

    def bindings(self, binds: dict[str, str]) -> dict[str, dict[str, str]]:
        """What the binder must write before it binds each pod of `binds` (pod key -> node) that has
        delayed claims: claim key -> the PV matched to it, or "" for a claim its class will provision
        (Volcano's BindVolumes: the PV's claimRef, or the claim's selected-node annotation)."""
        taken = self._taken_now()
        out: dict[str, dict[str, str]] = {}
        for task, node in self._placed.values():
            if binds.get(task.key) == node.name:
                out[task.key] = {c.key: taken.get(c.key, "") for c in task.relations.delayed_claims}
        return out

    def binding_ok(self, task: "TaskInfo", node: "NodeInfo") -> bool:
        taken = self._taken_now()
        own = {k: v for k, v in taken.items() if k in _keys(task)}  # the task's own claims, if it was placed
        used = set(taken.values()) - set(own.values())
        return self._find(task.relations.delayed_claims, node, used) is not None

    def _taken_now(self) -> dict[str, str]:
        if self._taken is None:
            taken: dict[str, str] = {}
            for other, node in self._placed.values():
                found = self._find([c for c in other.relations.delayed_claims if c.key not in taken], node,
                                   set(taken.values()))
                taken.update(found or {})
            self._taken = taken
        return self._taken

    def _find(self, claims: Iterable[volumes.PersistentVolumeClaim], node: "NodeInfo",
              used: set[str]) -> dict[str, str] | None:
        """Each claim's PV on `node` ("" when it would be provisioned), or None when one has neither."""
        chosen: dict[str, str] = {}
        for claim in sorted(claims, key=lambda c: c.request):
            if claim.selected_node:
                if claim.selected_node != node.name or not self._provisions(claim, node):
                    return None
                chosen[claim.key] = ""
                continue
            pv = self._matching(claim, node, used | set(chosen.values()))
            if pv is None:
                if not self._provisions(claim, node):
                    return None
                chosen[claim.key] = ""
            else:
                chosen[claim.key] = pv.name
        return chosen

    def _matching(self, claim: volumes.PersistentVolumeClaim, node: "NodeInfo",
                  used: set[str]) -> volumes.PersistentVolume | None:
        """kube's FindMatchingVolume with a node: a PV pre-bound to the claim, else the smallest fit."""
        wanted = claim.storage_class or ""
        best: volumes.PersistentVolume | None = None
        for pv in self.pvs:
            if pv.storage_class != wanted or pv.name in used:
                continue
            fits_node = not pv.node_affinity or self._node_matches(pv.node_affinity, node)
            if pv.claim_ref == claim.key:
                return pv if fits_node else None
            if (not pv.available or pv.claim_ref or not fits_node
                    or (claim.selector is not None and not affinity.selector_matches(claim.selector, pv.labels))
                    or not set(claim.access_modes) <= set(pv.access_modes)
                    or pv.capacity < claim.request or pv.volume_mode != claim.volume_mode):
                continue
            if best is None or pv.capacity < best.capacity:
                best = pv
        return best

    def _provisions(self, claim: volumes.PersistentVolumeClaim, node: "NodeInfo") -> bool:
        """kube's checkVolumeProvisions: the class provisions, and its allowedTopologies admit the node."""
        cls = self.classes.get(claim.storage_class or "")
        if cls is None or not cls.provisioner or cls.provisioner == volumes.NO_PROVISIONER:
            return False
        return not cls.allowed_topologies or any(
            all(node.labels.get(key) in values for key, values in term) for term in cls.allowed_topologies)


def _node_limits(node: "NodeInfo") -> dict[str, int]:
    """The older limit source kube still reads first: `attachable-volumes-csi-<driver>` entries of the
    node's status.allocatable (a plain count; vpolicy keeps scalar amounts in thousandths)."""
    return {name[len(ATTACH_LIMIT_PREFIX):]: amount // 1000 for name, amount in node.spec.allocatable.items()
            if name.startswith(ATTACH_LIMIT_PREFIX)}


def _unique(attached: Iterable[volumes.AttachedVolume], csi: volumes.CSINode | None) -> dict[str, str]:
    """`driver/handle` -> driver for the volumes that count on this node (in-tree ones only if the
    node's CSINode lists their plugin as migrated)."""
    out = {}
    for v in attached:
        if v.plugin and (csi is None or v.plugin not in csi.migrated_plugins):
            continue
        out[f"{v.driver}/{v.handle}"] = v.driver
    return out


def _keys(task: "TaskInfo") -> set[str]:
    return {c.key for c in task.relations.delayed_claims}

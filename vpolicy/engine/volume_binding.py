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

UNBOUND_PREFIX = "~unbound"  # kube prefixes an unbound claim's handle with a random string
ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"


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
        # PVs per class, smallest first (ties in listing order, as kube's scan keeps the first smallest):
        # those whose node affinity names one hostname label value apart (a local PV: found per node)
        self._pinned: dict[tuple[str, str], list[tuple[int, volumes.PersistentVolume]]] = {}
        self._general: dict[str, list[tuple[int, volumes.PersistentVolume]]] = {}
        self._claimed = {pv.claim_ref: pv for pv in self.pvs if pv.claim_ref}  # pre-bound: claim key -> PV
        self.prebound = frozenset(self._claimed)
        for index, pv in sorted(enumerate(self.pvs), key=lambda e: (e[1].capacity, e[0])):
            hosts = _hostnames(pv)
            if hosts is None:
                self._general.setdefault(pv.storage_class, []).append((index, pv))
            for host in hosts or ():
                self._pinned.setdefault((pv.storage_class, host), []).append((index, pv))
        self._fits: dict[tuple[str, str], bool] = {}  # (PV, node) -> its node affinity admits the node
        self._used: dict[str, tuple[dict[str, str], Counter[str]]] = {}  # node -> its pods' unique volumes
        self._limits: dict[str, tuple[dict[str, int], volumes.CSINode | None]] = {}  # node -> limits, CSINode

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
        limits, csi = self._limits_of(node)
        if not limits:
            return True
        used, counts = self._used_on(node, csi, task)
        need: dict[str, int] = {}
        for name, driver in _unique(task.relations.attachable, csi).items():
            if name not in used:
                need[driver] = need.get(driver, 0) + 1
        for driver, count in need.items():
            limit = limits.get(driver)
            if limit is not None and counts[driver] + count > limit:
                return False
        return True

    def _limits_of(self, node: "NodeInfo") -> tuple[dict[str, int], volumes.CSINode | None]:
        """The node's attach limit per driver (its allocatable's, overridden by its CSINode's), once."""
        found = self._limits.get(node.name)
        if found is None:
            csi = self.csi_nodes.get(node.name)
            limits = _node_limits(node)
            if csi is not None:
                limits.update(csi.limits)
            found = self._limits[node.name] = (limits, csi)
        return found

    def touched(self, node_name: str) -> None:
        """A task with attachable volumes was placed on or taken off the node."""
        self._used.pop(node_name, None)

    def _used_on(self, node: "NodeInfo", csi: volumes.CSINode | None,
                 task: "TaskInfo") -> tuple[dict[str, str], Counter[str]]:
        """The unique volumes of the node's pods (but `task`) and their count per driver, kept per node
        until a placement there changes them (`touched`)."""
        if any(other is task for other in node.tasks):
            used = {k: v for other in node.tasks if other is not task
                    for k, v in _unique(other.relations.attachable, csi).items()}
            return used, Counter(used.values())
        found = self._used.get(node.name)
        if found is None:
            used = {k: v for other in node.tasks for k, v in _unique(other.relations.attachable, csi).items()}
            found = self._used[node.name] = (used, Counter(used.values()))
        return found

    # delayed binding -------------------------------------------------------------------------------
    def moved(self, task: "TaskInfo", node: "NodeInfo", sign: int) -> bool:
        """A task with delayed claims was placed on (1) or taken off (-1) `node`. Whether answers on other
        nodes may change: only when a claim's class has PVs that are not local to one node (a local PV
        taken or given back changes only its node's answers, and that node's version moves anyway)."""
        if sign > 0:
            self._placed[task.uid] = (task, node)
        else:
            self._placed.pop(task.uid, None)
        self._taken = None
        return any(self._general.get(c.storage_class or "") for c in task.relations.delayed_claims)

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
        own = {taken[k] for k in _keys(task) if k in taken}  # the task's own claims' PVs, if it was placed
        used = set(taken.values()) - own
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
        reserved = self._claimed.get(claim.key)
        if reserved is not None and reserved.storage_class == wanted and reserved.name not in used:
            return reserved if self._fits_node(reserved, node) else None
        host = node.labels.get(affinity.HOSTNAME_KEY, "")
        found = [first for candidates in (self._pinned.get((wanted, host), ()), self._general.get(wanted, ()))
                 if (first := next(((i, pv) for i, pv in candidates if self._matches(claim, pv, node, used)), None))]
        return min(found, key=lambda e: (e[1].capacity, e[0]))[1] if found else None

    def _matches(self, claim: volumes.PersistentVolumeClaim, pv: volumes.PersistentVolume, node: "NodeInfo",
                 used: set[str]) -> bool:
        """FindMatchingVolume's checks for a free PV, cheapest first, its node affinity last."""
        return (pv.available and not pv.claim_ref and pv.name not in used and pv.capacity >= claim.request
                and pv.volume_mode == claim.volume_mode and set(claim.access_modes) <= set(pv.access_modes)
                and (claim.selector is None or affinity.selector_matches(claim.selector, pv.labels))
                and self._fits_node(pv, node))

    def _fits_node(self, pv: volumes.PersistentVolume, node: "NodeInfo") -> bool:
        if not pv.node_affinity:
            return True
        key = (pv.name, node.name)
        found = self._fits.get(key)
        if found is None:
            found = self._fits[key] = self._node_matches(pv.node_affinity, node)
        return found

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


def _hostnames(pv: volumes.PersistentVolume) -> tuple[str, ...] | None:
    """The hostname label values a local PV's node affinity allows (one term, `kubernetes.io/hostname In
    [...]`), or None for any other PV."""
    if len(pv.node_affinity) != 1:
        return None
    (term,) = pv.node_affinity
    if len(term.requirements) != 1:
        return None
    (req,) = term.requirements
    if req.key != affinity.HOSTNAME_KEY or req.operator != "In" or getattr(req, "field", False):
        return None
    return tuple(req.values)


def _keys(task: "TaskInfo") -> set[str]:
    return {c.key for c in task.relations.delayed_claims}

"""Pods counted per topology domain, kept current as a session places and removes tasks.

This is the runtime side of the DSL's `term` objects (docs/dsl.md, "Pods per topology domain"):
kube-scheduler's InterPodAffinity and PodTopologySpread ask, for a pod being placed, how many pods that
match a term (label selector + namespaces) run in the node's domain of a topology key (the nodes sharing
that label value). Counting that from scratch for each (task, node) costs O(pods) per question; here
every distinct term of the snapshot becomes a *query* with a per-node count array, updated by one
addition when a matching pod lands on or leaves a node (Volcano's predicates plugin does the same
through its AllocateFunc/DeallocateFunc handlers: pipelined and allocated tasks of the session count).
Domain totals are a `bincount` of those arrays, recomputed only when a query's count changed.

Which pods count: every pod on a node (allocated, pipelined, binding, bound, running, releasing, and
pods of no job), as kube's NodeInfo.Pods; spread queries skip terminating (Releasing) pods, as
kube's countPodsMatchSelector does. A required affinity term counts pods that match *all* of its
owner's required affinity terms (kube's updateWithAffinityTerms).

Symmetry (a placed pod's own required anti-affinity, or preferred (anti-)affinity, matching the
incoming pod) is kept as *owner* queries: per node, how many placed pods own that term. Volcano sees
owners only on some nodes: its snapshot lists the nodes holding a pod with required anti-affinity (and
those holding a pod with any pod affinity) once, when the session opens (plugins/util/k8s/snapshot.go,
NewSnapshot), and kube's InterPodAffinity reads owners from those lists alone; a pod placed this session
on another node is not seen as an owner. The preferred owners of a pod that has preferred terms itself
are read from every node (kube's PreScore lists all nodes then).

Volumes counted per node (NodeVolumeLimits' attach limits, VolumeBinding's delayed claims) are kept by
a `vpolicy.engine.volume_binding.VolumeBook` the index owns and tells of every move.

The index does not decide anything: rules in policies/volcano/predicates.vpol and nodeorder.vpol do.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from vpolicy.engine.volume_binding import VolumeBook
from vpolicy.model import affinity, volumes
from vpolicy.model.snapshot import TaskStatus

if TYPE_CHECKING:
    from vpolicy.engine.state import NodeInfo, SessionState, TaskInfo

# A selector with the namespaces it applies to (None: every namespace).
Scope = tuple[affinity.LabelSelector | None, "frozenset[str] | None"]

AFFINITY, ANTI_AFFINITY, PREFERRED_AFFINITY, PREFERRED_ANTI_AFFINITY, SPREAD = (
    "affinity", "anti_affinity", "preferred_affinity", "preferred_anti_affinity", "spread")
# image sets whose ImageLocality sums (`PodIndex.image_bytes`) are kept, the oldest let go first: all of
# them kept, the L dump's 2,300 sets of 5,000 nodes held 90 MB (a set asked again is summed again)
_IMAGE_SUMS_KEPT = 256


@dataclass(frozen=True, slots=True)
class QueryKey:
    """What a count counts: pods matching every scope, per value of `topology_key`."""

    scopes: tuple[Scope, ...]
    topology_key: str
    skip_terminating: bool = False


class Term:
    """A DSL `term`: one pod affinity / anti-affinity term or topology spread constraint of a task,
    bound to the session's index (the `pods_in_domain` family of built-ins reads it)."""

    __slots__ = ("kind", "topology_key", "weight", "max_skew", "min_domains", "when_unsatisfiable",
                 "query", "eligible", "index")

    def __init__(self, kind: str, topology_key: str, query: int, index: "PodIndex", *, weight: int = 0,
                 max_skew: int = 0, min_domains: int = 1, when_unsatisfiable: str = "",
                 eligible: np.ndarray | None = None):
        self.kind = kind
        self.topology_key = topology_key
        self.weight = weight
        self.max_skew = max_skew
        self.min_domains = min_domains
        self.when_unsatisfiable = when_unsatisfiable
        self.query = query
        self.eligible = eligible  # spread: the rows whose pods count (node inclusion policies, keys)
        self.index = index

    def __repr__(self) -> str:
        return f"Term({self.kind}, {self.topology_key})"


class TaskRelations:
    """A task's terms as DSL objects, and what the index knows of the task as an incoming pod."""

    __slots__ = ("pod_affinity", "pod_anti_affinity", "preferred_pod_affinity", "preferred_pod_anti_affinity",
                 "spread_constraints", "host_ports", "anti_owners", "preferred_owners", "queries", "key", "index",
                 "images", "volumes", "missing_claims", "unbound_immediate_claims", "static_key", "attachable",
                 "foreign_claims", "delayed_claims")

    def __init__(self) -> None:
        self.pod_affinity: list[Term] = []
        self.pod_anti_affinity: list[Term] = []
        self.preferred_pod_affinity: list[Term] = []
        self.preferred_pod_anti_affinity: list[Term] = []
        self.spread_constraints: list[Term] = []
        self.host_ports: tuple[affinity.HostPort, ...] = ()
        self.anti_owners: tuple[int, ...] = ()  # owner queries whose required anti-affinity matches this task
        self.preferred_owners: tuple[tuple[int, int], ...] = ()  # (owner query, signed weight)
        self.queries: tuple[int, ...] = ()  # every query the task's answers read (for `stamp`)
        self.key: tuple[Any, ...] = ()  # what distinguishes the task's answers from another's
        self.index: PodIndex | None = None
        self.images: tuple[str, ...] = ()  # the pod's images, named as kube's ImageLocality names them
        self.volumes: tuple[volumes.PersistentVolume, ...] = ()  # the PVs its bound claims use
        self.missing_claims = 0  # claims the dump lacks (or bound to a PV it lacks)
        self.unbound_immediate_claims = 0  # unbound claims of a class that binds immediately
        self.attachable: tuple[volumes.AttachedVolume, ...] = ()  # what NodeVolumeLimits counts of the pod
        self.foreign_claims = 0  # generic ephemeral volumes whose claim another owner controls
        self.delayed_claims: tuple[volumes.PersistentVolumeClaim, ...] = ()  # unbound, WaitForFirstConsumer
        self.static_key: tuple[Any, ...] = ()  # the part of `key` that never changes: images, volumes


NO_TASK_RELATIONS = TaskRelations()


class PodIndex:
    """Per-node counts of pods matching each query of the session, and the domains of each key."""

    def __init__(self, state: "SessionState"):
        snapshot = state.snapshot
        self.nodes: list[NodeInfo] = list(state.nodes.values())
        self.row = {n.name: i for i, n in enumerate(self.nodes)}
        self.namespace_labels: Mapping[str, Mapping[str, str]] = snapshot.namespace_labels
        self.all_namespaces = frozenset(snapshot.namespaces) | {p.namespace for p in snapshot.pods}
        self.queries: dict[QueryKey, int] = {}
        self.keys: list[QueryKey] = []
        self.counts: list[np.ndarray] = []
        self.versions: list[int] = []
        self._domains: dict[str, tuple[np.ndarray, int]] = {}
        self._sums: dict[tuple[int, int], tuple[int, np.ndarray]] = {}  # (query, mask id) -> (version, sums)
        self._masks: dict[int, np.ndarray] = {}
        self._eligible_cache: dict[tuple[Any, ...], np.ndarray] = {}  # spread eligibility per pod spec
        self._matched: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, ...]] = {}  # per (ns, labels)
        self._owner_matches: dict[tuple[Any, ...], tuple[tuple[int, ...], tuple[tuple[int, int], ...]]] = {}
        # per placed-pod query membership: pod uid -> queries the pod adds to (as a match or as an owner)
        self._member: dict[str, tuple[int, ...]] = {}
        self._owner_queries: list[tuple[str, int, int]] = []  # (kind, query, weight) owned by some pod
        self._owned: dict[str, list[int]] = {}  # pod uid -> owner queries it owns
        tasks = [*state.tasks.values(), *state.other_pods]
        # image name -> (size, nodes holding it), and each node's images (kube's NodeInfo.ImageStates)
        self._image_states = _image_states(self.nodes)
        # image set of a task -> its ImageLocality sum on every node (images never change in a session)
        self._image_sums: dict[tuple[str, ...], np.ndarray] = {}
        self._image_relations: dict[tuple[str, ...], TaskRelations] = {}  # pod's images -> shared relations
        self._claims = {c.key: c for c in snapshot.persistent_volume_claims}
        self._volumes = {v.name: v for v in snapshot.persistent_volumes}
        self._classes = {c.name: c for c in snapshot.storage_classes}
        self._default_class = next((c.name for c in snapshot.storage_classes if c.default), "")
        self.volume_book = VolumeBook(snapshot.persistent_volumes, self._classes, snapshot.csi_nodes, _pv_fits_node)
        self._limits = self.volume_book.limits_anywhere(self.nodes)  # any attach limit to count against
        # pods relate to other pods by terms, host ports and volumes, and only then are there pods to count
        # per node; images relate a pod to nodes alone (a realistic dump's pods: images and nothing else)
        self.counting = any(t.pod.relations.has_terms() or t.pod.relations.host_ports or t.pod.relations.claims
                            or t.pod.relations.inline_volumes for t in tasks)
        self.active = self.counting or bool(self._image_states and any(t.pod.relations.images for t in tasks))
        if not self.active:
            return
        # queries no pod matches, read by the tasks whose answers follow other tasks' volumes (so that they
        # are never relation-free): attach limits change only with their node (its version tells), delayed
        # binding also when a placement elsewhere takes a PV that is not a local one (`VolumeBook.moved`)
        self.attach_query = self._query(QueryKey(((None, frozenset()),), "", skip_terminating=False))
        self.delayed_query = self._query(QueryKey(((None, frozenset()),), "", skip_terminating=True))
        # claims, and volumes by driver and handle, that more than one pod uses (`_volume_signature`)
        uses: Counter[str] = Counter()
        if self.counting:
            for task in tasks:
                self._register_owner(task)
            for t in tasks:
                uses.update(self._volume_names(t))
        self._shared = {name for name, n in uses.items() if n > 1}
        for task in tasks:
            task.relations = self._relations_of(task)
        if not self.counting:  # no query any pod adds to, no pod with affinity terms on any node
            self._anti_rows = self._affinity_rows = self._mask(np.zeros(len(self.nodes), dtype=bool))
            return
        for node in self.nodes:
            for task in node.tasks:
                self._count(task, self.row[node.name], 1)
        self._anti_rows = self._mask(np.array([any(t.pod.relations.required_anti_affinity for t in n.tasks)
                                               for n in self.nodes], dtype=bool))
        self._affinity_rows = self._mask(np.array([any(_has_pod_affinity(t.pod.relations) for t in n.tasks)
                                                   for n in self.nodes], dtype=bool))

    # building ------------------------------------------------------------------------------------
    def _scope(self, owner_ns: str, selector: affinity.LabelSelector | None, namespaces: Iterable[str],
               ns_selector: affinity.LabelSelector | None) -> Scope:
        """kube's AffinityTerm: the owner's namespace when neither namespaces nor a selector is given;
        an empty namespaceSelector means every namespace."""
        names = frozenset(namespaces)
        if ns_selector is None:
            return selector, names or frozenset({owner_ns})
        if not ns_selector.match_labels and not ns_selector.match_expressions:
            return selector, None
        chosen = {ns for ns in self.all_namespaces if ns_selector.matches(self.namespace_labels.get(ns, {}))}
        return selector, frozenset(names | chosen)

    def _query(self, key: QueryKey) -> int:
        found = self.queries.get(key)
        if found is None:
            found = self.queries[key] = len(self.keys)
            self.keys.append(key)
            self.counts.append(np.zeros(len(self.nodes)))
            self.versions.append(0)
        return found

    def _term_scope(self, task: "TaskInfo", t: affinity.PodAffinityTerm) -> Scope:
        return self._scope(task.namespace, t.selector, t.namespaces, t.namespace_selector)

    def _register_owner(self, task: "TaskInfo") -> None:
        """Queries counting placed pods that own a term which may match an incoming pod (symmetry)."""
        rel = task.pod.relations
        owned = []
        for kind, terms, sign in ((ANTI_AFFINITY, rel.required_anti_affinity, 0),
                                  (PREFERRED_AFFINITY, rel.preferred_affinity, 1),
                                  (PREFERRED_ANTI_AFFINITY, rel.preferred_anti_affinity, -1)):
            for t in terms:
                q = self._query(QueryKey((("owner", kind, t.weight * sign), self._term_scope(task, t)),  # type: ignore[arg-type]  # reason: an owner query's first scope is its tag
                                         t.topology_key))
                owned.append(q)
                if (kind, q, t.weight * sign) not in self._owner_queries:
                    self._owner_queries.append((kind, q, t.weight * sign))
        if owned:
            self._owned[task.uid] = owned

    def _relations_of(self, task: "TaskInfo") -> TaskRelations:
        rel = task.pod.relations
        if rel.has_terms() or rel.host_ports or rel.claims or rel.inline_volumes or self._owner_queries:
            return self._build_relations(task)
        # related by its images alone (or by nothing), no placed pod's term to match: the answer depends
        # on the image list only, so the pods sharing one share it (a realistic dump's 20,000 pods)
        found = self._image_relations.get(rel.images)
        if found is None:
            found = self._image_relations[rel.images] = self._build_relations(task)
        return found

    def _build_relations(self, task: "TaskInfo") -> TaskRelations:
        rel = task.pod.relations
        out = TaskRelations()
        out.index = self
        ns = task.namespace
        if rel.required_affinity:
            scopes = tuple(self._term_scope(task, t) for t in rel.required_affinity)
            out.pod_affinity = [Term(AFFINITY, t.topology_key, self._query(QueryKey(scopes, t.topology_key)), self)
                                for t in rel.required_affinity]
        for kind, terms, target in ((ANTI_AFFINITY, rel.required_anti_affinity, out.pod_anti_affinity),
                                    (PREFERRED_AFFINITY, rel.preferred_affinity, out.preferred_pod_affinity),
                                    (PREFERRED_ANTI_AFFINITY, rel.preferred_anti_affinity,
                                     out.preferred_pod_anti_affinity)):
            for t in terms:
                q = self._query(QueryKey((self._term_scope(task, t),), t.topology_key))
                target.append(Term(kind, t.topology_key, q, self, weight=t.weight))
        for c in rel.spread:
            selector = _with_label_keys(c.selector, c.match_label_keys, task.labels)
            q = self._query(QueryKey(((selector, frozenset({ns})),), c.topology_key, skip_terminating=True))
            same = [x.topology_key for x in rel.spread if x.when_unsatisfiable == c.when_unsatisfiable]
            out.spread_constraints.append(Term(
                SPREAD, c.topology_key, q, self, max_skew=c.max_skew, min_domains=c.min_domains,
                when_unsatisfiable=c.when_unsatisfiable, eligible=self._eligible(task, c, same)))
        out.host_ports = rel.host_ports
        if self._image_states:
            out.images = tuple(_normalized_image(i) for i in rel.images)
        self._resolve_claims(task, out)
        out.anti_owners, out.preferred_owners = self._owners_matching(task)
        own = [t.query for t in (*out.pod_affinity, *out.pod_anti_affinity, *out.preferred_pod_affinity,
                                 *out.preferred_pod_anti_affinity, *out.spread_constraints)]
        # attach limits and delayed binding follow other tasks' placements: such a task is never relation-free
        related = [q for q, used in ((self.attach_query, out.attachable), (self.delayed_query, out.delayed_claims))
                   if used]
        out.queries = tuple(dict.fromkeys([*own, *out.anti_owners, *(q for q, _w in out.preferred_owners),
                                           *related]))
        # what VolumeZone and VolumeBinding read of the bound PVs (not their names: pods of a StatefulSet, each
        # with its own PV alike, share their answers and their task class)
        out.static_key = (out.images, tuple((tuple(sorted((k, v) for k, v in pv.labels.items()
                                                          if k in volumes.ZONE_LABELS)), pv.node_affinity)
                                            for pv in out.volumes),
                          out.missing_claims, out.unbound_immediate_claims, out.foreign_claims)
        if not out.queries and not out.host_ports and out.static_key == NO_STATIC_KEY:
            return NO_TASK_RELATIONS
        matched = tuple(q for q in own if self._matches(task, self.keys[q].scopes))
        # how each term reads its query: two tasks may count the same pods to opposite ends (one requires
        # them on the node, another must avoid them or only prefers to), and placed pods' terms may weigh
        # this task differently
        readings = tuple((t.kind, t.query, t.weight, t.max_skew, t.min_domains, t.when_unsatisfiable)
                      for t in (*out.pod_affinity, *out.pod_anti_affinity, *out.preferred_pod_affinity,
                                *out.preferred_pod_anti_affinity, *out.spread_constraints))
        out.key = (out.queries, readings, out.anti_owners, out.preferred_owners, matched, out.host_ports,
                   out.static_key, tuple(id(t.eligible) for t in out.spread_constraints),
                   self._volume_signature(out))
        return out

    def _volume_signature(self, out: TaskRelations) -> tuple[Any, ...]:
        """What the attach limits and delayed binding answers depend on: a volume or claim no other pod
        uses (and no PV is pre-bound to) only by its driver or its spec, so pods alike but for their own
        volumes share their answers; a shared one by itself."""
        attach = tuple(v if f"{v.driver}/{v.handle}" in self._shared else (v.driver, v.plugin) for v in out.attachable)
        delayed = tuple(c.key if c.key in self._shared or c.key in self.volume_book.prebound else
                        (c.storage_class, c.request, c.access_modes, c.selector, c.volume_mode, c.selected_node)
                        for c in out.delayed_claims)
        return attach, delayed

    def _volume_names(self, task: "TaskInfo") -> set[str]:
        """The task's claim keys and its volumes' `driver/handle` names, each once."""
        names = set()
        for name in task.pod.relations.claims:
            key = f"{task.namespace}/{name.replace('{pod}', task.name)}"
            names.add(key)
            claim = self._claims.get(key)
            pv = self._volumes.get(claim.volume_name) if claim is not None and claim.volume_name else None
            if self._limits and (found := self.volume_book.attachable(claim, pv, key)) is not None:
                names.add(f"{found.driver}/{found.handle}")
        names.update(f"{v.driver}/{v.handle}" for v in task.pod.relations.inline_volumes)
        return names

    def _resolve_claims(self, task: "TaskInfo", out: TaskRelations) -> None:
        """The pod's claims as VolumeBinding's PreFilter sorts them: bound (their PVs), missing (no such
        claim, or bound to no such PV), a generic ephemeral volume's claim the pod does not control,
        unbound of a WaitForFirstConsumer class (matched per node, `VolumeBook`), unbound otherwise
        (Immediate); and what NodeVolumeLimits counts of them and of the pod's inline disks, when the
        cluster has CSINodes (no CSINode: no limit anywhere)."""
        bound, delayed, attachable = [], [], []
        counting = self._limits
        for name in task.pod.relations.claims:
            key = f"{task.namespace}/{name.replace('{pod}', task.name)}"
            claim = self._claims.get(key)
            pv = self._volumes.get(claim.volume_name) if claim is not None and claim.volume_name else None
            if counting and (found := self.volume_book.attachable(claim, pv, key)) is not None:
                attachable.append(found)
            if claim is None:
                out.missing_claims += 1
            elif name.startswith("{pod}") and claim.owner_uid != task.uid:
                out.foreign_claims += 1
            elif claim.volume_name:
                if pv is None:
                    out.missing_claims += 1
                else:
                    bound.append(pv)
            else:
                class_name = claim.storage_class if claim.storage_class is not None else self._default_class
                cls = self._classes.get(class_name)
                if cls is None or cls.binding_mode != volumes.WAIT_FOR_FIRST_CONSUMER:
                    out.unbound_immediate_claims += 1
                else:
                    delayed.append(dataclasses.replace(claim, storage_class=class_name))
        out.volumes = tuple(bound)
        out.delayed_claims = tuple(delayed)
        if counting:
            attachable += task.pod.relations.inline_volumes
        out.attachable = tuple(dict.fromkeys(attachable))

    # what the volume built-ins answer (fixed for the session) -----------------------------------
    def volume_zone_ok(self, task: "TaskInfo", rows: np.ndarray) -> np.ndarray:
        """kube's VolumeZone: on a node carrying any zone/region label, every bound PV's zone/region
        labels (a `__`-separated set) hold the node's value (a beta PV label may match the GA one)."""
        out = np.ones(len(rows), dtype=bool)
        wanted = [(key, set(value.split("__"))) for pv in task.relations.volumes
                  for key, value in pv.labels.items() if key in volumes.ZONE_LABELS]
        if not wanted:
            return out
        for k, i in enumerate(rows.tolist()):
            labels = self.nodes[i].labels
            if not any(key in labels for key in volumes.ZONE_LABELS):
                continue
            for key, values in wanted:
                value = labels.get(key, labels.get(volumes.GA_LABEL.get(key, key)))
                if value is None or value not in values:
                    out[k] = False
                    break
        return out

    def volume_node_affinity_ok(self, task: "TaskInfo", rows: np.ndarray) -> np.ndarray:
        """kube's VolumeBinding for bound claims: each PV's required node affinity matches the node."""
        from vpolicy.compile import functions  # the node-selector-term matching the predicates use

        out = np.ones(len(rows), dtype=bool)
        constrained = [pv.node_affinity for pv in task.relations.volumes if pv.node_affinity]
        if not constrained:
            return out
        for k, i in enumerate(rows.tolist()):
            node = self.nodes[i]
            out[k] = all(any(functions.term_matches(t, node.labels, node.name) for t in terms) for terms in constrained)
        return out

    def volume_limits_ok(self, task: "TaskInfo", rows: np.ndarray) -> np.ndarray:
        """kube's NodeVolumeLimits on each row (`VolumeBook.limits_ok`)."""
        return np.array([self.volume_book.limits_ok(task, self.nodes[i]) for i in rows.tolist()], dtype=bool)

    def volume_binding_ok(self, task: "TaskInfo", rows: np.ndarray) -> np.ndarray:
        """kube's VolumeBinding for delayed claims on each row (`VolumeBook.binding_ok`)."""
        return np.array([self.volume_book.binding_ok(task, self.nodes[i]) for i in rows.tolist()], dtype=bool)

    def _eligible(self, task: "TaskInfo", c: affinity.SpreadConstraint, keys: list[str]) -> np.ndarray:
        """Rows whose pods a spread constraint counts: nodes with every topology key of the pod's
        constraints of the same kind, passing the pod's node affinity (nodeAffinityPolicy Honor) and,
        with nodeTaintsPolicy Honor, tolerating its NoSchedule/NoExecute taints. Kept per pod spec: the
        replicas of a job share it."""
        pod = task.pod
        spec = (tuple(keys), c.node_affinity_policy, c.node_taints_policy, tuple(sorted(pod.node_selector.items())),
                pod.required_affinity, pod.tolerations if c.node_taints_policy == "Honor" else ())
        found = self._eligible_cache.get(spec)
        if found is None:
            found = self._eligible_cache[spec] = self._mask(self._eligible_rows(task, c, keys))
        return found

    def _eligible_rows(self, task: "TaskInfo", c: affinity.SpreadConstraint, keys: list[str]) -> np.ndarray:
        from vpolicy.compile import functions  # the same matching the predicates use

        mask = np.array([all(k in n.labels for k in keys) for n in self.nodes], dtype=bool)
        if c.node_affinity_policy == "Honor":
            mask &= [functions.matches_node_selector(task, n) and functions.matches_required_affinity(task, n)
                     for n in self.nodes]
        if c.node_taints_policy == "Honor":
            mask &= [functions.tolerates_taints(task, n, ("NoSchedule", "NoExecute")) for n in self.nodes]
        return mask

    def _mask(self, mask: np.ndarray) -> np.ndarray:
        """One array per distinct mask: its id keys the domain sums."""
        for known in self._masks.values():
            if np.array_equal(known, mask):
                return known
        self._masks[id(mask)] = mask
        return mask

    def _owners_matching(self, task: "TaskInfo") -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
        """The owner queries whose term matches the task: required anti-affinity ones, and preferred
        ones with their signed weights. Kept per (namespace, labels): replicas share them."""
        key = ("owners", task.namespace, tuple(sorted(task.labels.items())))
        found = self._owner_matches.get(key)
        if found is None:
            matching = [(kind, q, w) for kind, q, w in self._owner_queries
                        if self._matches(task, self.keys[q].scopes[1:])]
            found = self._owner_matches[key] = (
                tuple(q for kind, q, _w in matching if kind == ANTI_AFFINITY),
                tuple((q, w) for kind, q, w in matching if kind != ANTI_AFFINITY))
        return found

    # matching ------------------------------------------------------------------------------------
    def _matches(self, task: "TaskInfo", scopes: Iterable[Scope]) -> bool:
        for selector, namespaces in scopes:
            if namespaces is not None and task.namespace not in namespaces:
                return False
            if not affinity.selector_matches(selector, task.labels):
                return False
        return True

    def _membership(self, task: "TaskInfo") -> tuple[int, ...]:
        found = self._member.get(task.uid)
        if found is None:
            labels = (task.namespace, tuple(sorted(task.labels.items())))
            matched = self._matched.get(labels)
            if matched is None:  # pods with the same namespace and labels match the same queries
                matched = self._matched[labels] = tuple(q for q, key in enumerate(self.keys)
                                                        if not _is_owner(key) and self._matches(task, key.scopes))
            found = matched + tuple(self._owned.get(task.uid, ()))
            self._member[task.uid] = found
        return found

    # placements ----------------------------------------------------------------------------------
    def move(self, task: "TaskInfo", row: int, sign: int) -> None:
        """A task was added to (sign 1) or removed from (-1) the node at `row`."""
        if not self.counting:  # (volumes are relations too: with none, nothing below applies)
            return
        if task.relations.delayed_claims and self.volume_book.moved(task, self.nodes[row], sign):
            self.versions[self.delayed_query] += 1
        if task.relations.attachable:
            self.volume_book.touched(self.nodes[row].name)
        if task.evicted_this_session:
            return  # out of kube-scheduler's NodeInfo, so out of every count (state.TaskInfo.evicted_this_session)
        terminating = task.status is TaskStatus.RELEASING
        for q in self._membership(task):
            if terminating and self.keys[q].skip_terminating:
                continue
            self.counts[q][row] += sign
            self.versions[q] += 1

    def _count(self, task: "TaskInfo", row: int, sign: int) -> None:
        self.move(task, row, sign)

    def stamp(self, task: "TaskInfo") -> int:
        """Grows whenever a count the task's answers read changes (0 for a task without relations)."""
        versions = self.versions
        return sum(versions[q] for q in task.relations.queries)

    # domains -------------------------------------------------------------------------------------
    def domains(self, key: str) -> tuple[np.ndarray, int]:
        """Each row's domain id for a topology key (-1: the node lacks the label), and how many."""
        found = self._domains.get(key)
        if found is None:
            ids: dict[str, int] = {}
            dom = np.array([ids.setdefault(n.labels[key], len(ids)) if key in n.labels else -1
                            for n in self.nodes], dtype=np.int64)
            found = self._domains[key] = (dom, len(ids))
        return found

    def _domain_sums(self, query: int, key: str, mask: np.ndarray | None) -> np.ndarray:
        """Pods matching `query` per domain of `key`, over the rows in `mask` (all rows: None)."""
        cache_key = (query, 0 if mask is None else id(mask))
        found = self._sums.get(cache_key)
        version = self.versions[query]
        if found is not None and found[0] == version:
            return found[1]
        dom, n = self.domains(key)
        valid = dom >= 0 if mask is None else (dom >= 0) & mask
        sums = np.bincount(dom[valid], weights=self.counts[query][valid], minlength=n)
        self._sums[cache_key] = (version, sums)
        return sums

    def _present(self, key: str, mask: np.ndarray | None) -> np.ndarray:
        """Which domains of `key` have at least one row in `mask`."""
        dom, n = self.domains(key)
        valid = dom >= 0 if mask is None else (dom >= 0) & mask
        present = np.zeros(n, dtype=bool)
        present[dom[valid]] = True
        return present

    # what the DSL's built-ins answer --------------------------------------------------------------
    def in_domain(self, term: Term, rows: np.ndarray) -> np.ndarray:
        """Pods matching the term in each row's domain of its key (0 where the node lacks the key)."""
        dom, _n = self.domains(term.topology_key)
        sums = self._domain_sums(term.query, term.topology_key, term.eligible)
        d = dom[rows]
        return np.where(d >= 0, sums[np.maximum(d, 0)] if len(sums) else 0, 0)

    def anywhere(self, term: Term) -> int:
        return int(self._domain_sums(term.query, term.topology_key, term.eligible).sum())

    def domain_min(self, term: Term) -> int:
        """kube's global minimum for a spread constraint: the fewest matching pods in any domain the
        constraint counts, or 0 when it counts fewer domains than minDomains."""
        present = self._present(term.topology_key, term.eligible)
        if int(present.sum()) < term.min_domains:
            return 0
        sums = self._domain_sums(term.query, term.topology_key, term.eligible)
        return int(sums[present].min())

    def domain_count(self, term: Term) -> int:
        """How many domains the term counts (nodes it counts that carry its key)."""
        return int(self._present(term.topology_key, term.eligible).sum())

    def matches(self, task: "TaskInfo", term: Term) -> bool:
        return self._matches(task, self.keys[term.query].scopes)

    def owners_in_domain(self, task: "TaskInfo", rows: np.ndarray) -> np.ndarray:
        """Placed pods whose required anti-affinity term matches the task, in each row's domain."""
        out = np.zeros(len(rows))
        for q in task.relations.anti_owners:
            key = self.keys[q].topology_key
            dom, _n = self.domains(key)
            sums = self._domain_sums(q, key, self._anti_rows)
            d = dom[rows]
            if len(sums):
                out += np.where(d >= 0, sums[np.maximum(d, 0)], 0)
        return out

    def owner_preference(self, task: "TaskInfo", rows: np.ndarray) -> np.ndarray:
        """Sum of signed weights of placed pods' preferred (anti-)affinity terms matching the task,
        over each row's domain (kube's processExistingPod, the existing pod's side)."""
        out = np.zeros(len(rows))
        rel = task.relations
        seen = None if rel.preferred_pod_affinity or rel.preferred_pod_anti_affinity else self._affinity_rows
        for q, weight in rel.preferred_owners:
            key = self.keys[q].topology_key
            dom, _n = self.domains(key)
            sums = self._domain_sums(q, key, seen)
            d = dom[rows]
            if len(sums):
                out += weight * np.where(d >= 0, sums[np.maximum(d, 0)], 0)
        return out

    def image_bytes(self, images: tuple[str, ...], rows: np.ndarray) -> np.ndarray:
        """kube's ImageLocality sumImageScores: for each image the node holds, its size times the share
        of nodes holding it (truncated), summed. It reads only the task's images and the nodes' image
        lists, neither of which a placement changes, so an image set is summed over all nodes (one
        array step per image) and the calls after it are an index, while it is among the latest asked."""
        sums = self._image_sums.get(images)
        if sums is None:
            if len(self._image_sums) >= _IMAGE_SUMS_KEPT:  # the oldest set: a job's pods ask for theirs together
                del self._image_sums[next(iter(self._image_sums))]
            sums = self._image_sums[images] = self._sum_images(images)
        on_rows: np.ndarray = sums[rows]
        return on_rows

    def _sum_images(self, images: tuple[str, ...]) -> np.ndarray:
        total = len(self.nodes)
        out = np.zeros(total)
        for image in images:
            state = self._image_states.get(image)
            if state is not None:
                size, holders = state
                out[holders] += int(size * (len(holders) / total))
        return out

    def ports_free(self, task: "TaskInfo", rows: np.ndarray) -> np.ndarray:
        """No pod on the node uses a host port that conflicts with one of the task's."""
        wanted = task.relations.host_ports
        out = np.ones(len(rows), dtype=bool)
        if not wanted:
            return out
        for k, i in enumerate(rows.tolist()):
            used = [p for other in self.nodes[i].tasks if other is not task and not other.evicted_this_session
                    for p in other.pod.relations.host_ports]
            out[k] = not any(w.conflicts(u) for w in wanted for u in used)
        return out


NO_STATIC_KEY: tuple[Any, ...] = ((), (), 0, 0, 0)  # TaskRelations.static_key relating to nothing


def _pv_fits_node(terms: Any, node: "NodeInfo") -> bool:
    from vpolicy.compile import functions  # the node-selector-term matching the predicates use

    return any(functions.term_matches(t, node.labels, node.name) for t in terms)


def _image_states(nodes: list["NodeInfo"]) -> dict[str, tuple[int, np.ndarray]]:
    """Every image name a node reports: its size and the rows of the nodes holding it."""
    sizes: dict[str, int] = {}
    holders: dict[str, list[int]] = {}
    for row, node in enumerate(nodes):
        for names, size in node.spec.images:
            for name in names:
                held = holders.setdefault(name, [])
                if not held or held[-1] != row:
                    held.append(row)
                    sizes.setdefault(name, size)
    return {name: (sizes[name], np.array(rows, dtype=np.int64)) for name, rows in holders.items()}


def _normalized_image(name: str) -> str:
    """kube's normalizedImageName: an image without a tag is `:latest`."""
    return name if name.rfind(":") > name.rfind("/") else name + ":latest"


def _has_pod_affinity(rel: affinity.PodRelations) -> bool:
    """kube's NodeInfo.PodsWithAffinity: the pod has pod affinity or anti-affinity, of any kind."""
    return bool(rel.required_affinity or rel.required_anti_affinity or rel.preferred_affinity
                or rel.preferred_anti_affinity)


def _is_owner(key: QueryKey) -> bool:
    first = key.scopes[0] if key.scopes else None
    return isinstance(first, tuple) and len(first) == 3 and first[0] == "owner"


def _with_label_keys(selector: affinity.LabelSelector | None, keys: tuple[str, ...],
                     labels: Mapping[str, str]) -> affinity.LabelSelector | None:
    """matchLabelKeys: each key the pod carries adds `key In [its value]` to the selector."""
    if selector is None or not keys:
        return selector
    extra = tuple(affinity.Requirement(k, "In", (labels[k],)) for k in keys if k in labels)
    return affinity.LabelSelector(selector.match_labels, selector.match_expressions + extra)


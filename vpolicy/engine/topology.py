"""The session's network topology: HyperNodes as live DSL objects, and each job's topology settings.

`open_topology` runs once when a session opens (`SessionState`). It resolves the snapshot's HyperNodes
against the Ready nodes (`model.hypernodes.HyperNodeTree`) and binds what the DSL reads
(`lang.builtins`): `hypernode` objects (tier, nodes, allocatable, live `used`), `node.hypernode` (the
node's lowest domain) and `node.hypernodes`, a job's `topology_mode`, `highest_tier_allowed` (a
`highestTierName` resolved through the HyperNodes' tierName) and `allocated_hypernode`, and the cluster's
`hypernodes`, `hypernode_tiers`, `min_tier`, `max_tier`.

A job's allocated HyperNode is kept across sessions the way Volcano keeps it since v1.13: rebuilt from
where its tasks run (the lowest common ancestor of their nodes' domains), with the PodGroup annotation
`volcano.sh/job-allocated-hypernode` (older releases) as the fallback when none of its tasks is placed.

It decides nothing: `actions.allocate_topology` searches the domains; rules score them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from vpolicy.model import hypernodes as hn
from vpolicy.model.resources import ZERO, Resources, total
from vpolicy.model.snapshot import ALLOCATED_STATUSES, READY_STATUSES, TaskStatus

if TYPE_CHECKING:
    from vpolicy.engine.state import JobInfo, NodeInfo, SessionState, TaskInfo

class HyperNodeInfo:
    """One domain as rules see it (`hypernode` in the DSL)."""

    def __init__(self, name: str, tier: int, tier_name: str, nodes: list[NodeInfo], state: SessionState):
        self.name = name
        self.tier = tier
        self.tier_name = tier_name
        self.nodes = nodes
        self.node_names = [n.name for n in nodes]
        self.node_set = frozenset(self.node_names)
        self.allocatable: Resources = total(n.allocatable for n in nodes) if nodes else ZERO
        self.children: list[HyperNodeInfo] = []
        self.parent_name = ""
        self._state = state
        self._used: tuple[int, Resources, Resources] = (-1, ZERO, ZERO)  # (state version, used, idle)
        self._rows: np.ndarray | None = None
        self._by_usage: dict[bytes, tuple[Resources, Resources]] = {}
        self._counted: tuple[int, int, int] = (-1, 0, 0)  # (state version, id of the task list, count)

    @property
    def used(self) -> Resources:
        """Requests placed in the domain now (follows every placement of the session)."""
        return self._usage()[1]

    @property
    def idle(self) -> Resources:
        return self._usage()[2]

    @property
    def future_idle(self) -> Resources:
        """The nodes' FutureIdle summed (idle + releasing - pipelined), from the node arrays."""
        arrays = self._state.arrays
        if self._rows is None:
            self._rows = np.array([arrays.row[n.name] for n in self.nodes], dtype=np.int64)
        summed = arrays.future[self._rows].sum(axis=0)
        return Resources({d: int(v) for d, v in zip(arrays.dims, summed.tolist()) if v})

    def _usage(self) -> tuple[int, Resources, Resources]:
        """(state version, used, idle), summed again only after the session state changed, and then
        only when the domain's nodes' usage is one not seen before (allocate's domain search tries a
        gang in a domain and undoes it, for every domain)."""
        version = self._state.version
        if self._used[0] != version:
            arrays = self._state.arrays
            if self._rows is None:
                self._rows = np.array([arrays.row[n.name] for n in self.nodes], dtype=np.int64)
            key = arrays.used[self._rows].tobytes()
            found = self._by_usage.get(key)
            if found is None:
                used = total(n.used for n in self.nodes) if self.nodes else ZERO
                found = self._by_usage[key] = (used, self.allocatable - used)
            self._used = (version, *found)
        return self._used

    def count_tasks(self, tasks: list[TaskInfo]) -> int:
        """How many of `tasks` sit on the domain's nodes; kept until the session state changes (node
        scores ask it of one job's tasks for every candidate node of the domain)."""
        version, kept_id, count = self._counted
        if version == self._state.version and kept_id == id(tasks):
            return count
        names = self.node_set
        count = sum(1 for t in tasks if t.node_name in names)
        self._counted = (self._state.version, id(tasks), count)
        return count

    def __repr__(self) -> str:
        return f"HyperNode({self.name})"


class SessionTopology:
    """The tree and the DSL objects of one session; `rows` gives each domain's node rows."""

    def __init__(self, state: SessionState):
        snapshot = state.snapshot
        self.tree = hn.HyperNodeTree(snapshot.hypernodes, ((n.name, n.labels) for n in state.nodes.values()))
        self.infos: dict[str, HyperNodeInfo] = {}
        for name, spec in self.tree.hypernodes.items():
            nodes = [state.nodes[n] for n in sorted(self.tree.real_nodes.get(name, ())) if n in state.nodes]
            self.infos[name] = HyperNodeInfo(name, spec.tier, spec.tier_name, nodes, state)
        for name, info in self.infos.items():
            info.children = [self.infos[c] for c in self.tree.children.get(name, ()) if c in self.infos]
            info.parent_name = self.tree.parent.get(name, "")
        root_nodes = list(state.nodes.values())
        self.root = HyperNodeInfo(hn.CLUSTER_ROOT, self.tree.max_tier + 1, "", root_nodes, state)
        self.root.children = [i for n, i in self.infos.items() if n not in self.tree.parent]
        self._row = state.arrays.row
        self._n = len(root_nodes)
        self._masks: dict[str, np.ndarray] = {}
        self._rows: dict[str, np.ndarray] = {}
        self._ordered: dict[str, np.ndarray] = {}

    @property
    def enabled(self) -> bool:
        return bool(self.infos)

    def info(self, name: str) -> HyperNodeInfo:
        return self.root if name == hn.CLUSTER_ROOT else self.infos[name]

    def mask(self, name: str) -> np.ndarray:
        """A node-row mask of the domain's nodes (cached: membership is fixed for the session)."""
        found = self._masks.get(name)
        if found is None:
            found = np.zeros(self._n, dtype=bool)
            for node in self.info(name).nodes:
                found[self._row[node.name]] = True
            self._masks[name] = found
        return found

    def rows(self, name: str) -> np.ndarray:
        """The domain's node rows, ascending (cached as `mask`)."""
        found = self._rows.get(name)
        if found is None:
            found = self._rows[name] = np.flatnonzero(self.mask(name))
        return found

    def node_rows(self, name: str) -> np.ndarray:
        """The domain's node rows in the order of `HyperNodeInfo.nodes` (by node name; cached)."""
        found = self._ordered.get(name)
        if found is None:
            found = self._ordered[name] = np.array([self._row[n.name] for n in self.info(name).nodes], dtype=np.int64)
        return found

    def leaf_of(self, node_name: str) -> str:
        return self.tree.leaf_of.get(node_name, "")

    def lca(self, a: str, b: str) -> str:
        return self.tree.lca(a, b)

    def placed_domain(self, job: JobInfo) -> str:
        """The LCA of the domains of the nodes the job's tasks hold now ("" when none is placed)."""
        found = ""
        for task in job.tasks:
            if task.node_name and task.status in ALLOCATED_STATUSES:
                leaf = self.leaf_of(task.node_name)
                if leaf:
                    found = self.lca(found, leaf)
        return found

    def gradients(self, root: str) -> list[list[str]]:
        """The domains under `root` (itself included) grouped by tier, lowest tier first; breadth-first
        order within a tier, as Volcano's hyperNodeGradientFn lists them."""
        by_tier: dict[int, list[str]] = {}
        for name in self.tree.descendants(root):
            by_tier.setdefault(self.tree.tier(name), []).append(name)
        return [by_tier[t] for t in sorted(by_tier)]


def open_topology(state: SessionState) -> SessionTopology:
    """Bind the topology to the session's nodes, jobs and cluster (every job and node gets the
    attributes, so rules read them whether or not the cluster has HyperNodes)."""
    topo = SessionTopology(state)
    for node in state.nodes.values():
        node.hypernode = topo.leaf_of(node.name)
        node.hypernodes = [topo.infos[a] for a in topo.tree.ancestors(node.hypernode)]
    for job in state.jobs.values():
        bind_job(topo, job)
    cluster = state.cluster
    cluster.hypernodes = list(topo.infos.values())
    cluster.min_tier = topo.tree.min_tier
    cluster.max_tier = topo.tree.max_tier
    cluster.hypernode_tiers = list(range(topo.tree.min_tier, topo.tree.max_tier + 1)) if topo.enabled else []
    cluster.topology = topo
    return topo


class SubGroupInfo:
    """One sub-group of a job (`subgroup` in the DSL): the tasks one `subGroupPolicy` entry selects that
    share their values of its matchLabelKeys; a gang of `size` tasks, kept inside one domain when the
    policy's networkTopology says so (Volcano's SubJob)."""

    def __init__(self, policy: hn.SubGroupPolicy, name: str, tasks: list[TaskInfo], tree: hn.HyperNodeTree):
        self.name = name
        self.policy_name = policy.name
        self.tasks = tasks
        self.size = policy.sub_group_size if policy.sub_group_size is not None else len(tasks)
        spec = policy.network_topology
        self.topology_mode = _mode(tree, spec)
        self.highest_tier_allowed = tree.highest_tier(spec)
        self.priority = max((t.priority for t in tasks), default=0)
        first = tasks[0].labels.get(policy.match_label_keys[0], "") if tasks and policy.match_label_keys else ""
        self.match_index = int(first) if first.isdigit() else 0  # Volcano's MatchIndex

    @property
    def ready_count(self) -> int:
        return sum(1 for t in self.tasks if t.status in READY_STATUSES)

    @property
    def pipelined_count(self) -> int:
        return sum(1 for t in self.tasks if t.status is TaskStatus.PIPELINED)

    def __repr__(self) -> str:
        return f"SubGroup({self.name})"


def sub_groups(tree: hn.HyperNodeTree, job: JobInfo) -> list[SubGroupInfo]:
    """The job's sub-groups, policy by policy, each in the order its first task was read; a task the
    first policy selects is not selected again by a later one."""
    out: list[SubGroupInfo] = []
    taken: set[str] = set()
    for policy in job.pg.sub_group_policy:
        groups: dict[str, list[TaskInfo]] = {}
        for task in job.tasks:
            if task.uid not in taken and policy.selects(task.labels):
                groups.setdefault(policy.group_of(task.labels), []).append(task)
                taken.add(task.uid)
        out += [SubGroupInfo(policy, name, tasks, tree) for name, tasks in groups.items()]
    return out


def _mode(tree: hn.HyperNodeTree, spec: hn.NetworkTopology | None) -> str:
    """The networkTopology's mode as the session uses it: "" without one, and for a hard one naming a
    tier no HyperNode carries (Volcano's IsHardTopologyMode is false then: `holds_to_a_tier`)."""
    if spec is None or (spec.mode == "hard" and not tree.holds_to_a_tier(spec)):
        return ""
    return spec.mode


def bind_job(topo: SessionTopology, job: JobInfo) -> None:
    spec = job.pg.network_topology
    job.topology_mode = _mode(topo.tree, spec)
    job.highest_tier_allowed = topo.tree.highest_tier(spec)
    placed = topo.placed_domain(job) if topo.enabled else ""
    kept = job.pg.annotations.get(hn.ALLOCATED_HYPERNODE_ANNOTATION, "")
    job.allocated_hypernode = placed or (kept if kept in topo.infos else "")
    if job.pg.sub_group_policy:
        job.sub_groups = sub_groups(topo.tree, job)
        job.min_sub_groups = {p.name: p.min_sub_groups for p in job.pg.sub_group_policy}

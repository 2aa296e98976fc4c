"""Finding and choosing nodes for one task, the way Volcano's actions do, and recording why not.

`feasible_nodes` applies the action's resource check (request <= FutureIdle, "Insufficient <res>") and
then the policy's `predicate` rules; `best_node` splits candidates into those that fit Idle now and those
that fit only once releasing resources free up, and scores the first non-empty group with the policy's
`node_order` rules. Score ties go to the node that comes first in the snapshot (Volcano picks at random;
a deterministic choice keeps dry-runs reproducible).

Speed: rules run over all nodes at once when they vectorise (`compile.vectorize`). Rules that depend
only on the task's spec and fixed node fields are cached per task class; rules that read node usage are
cached per node and recomputed only for nodes whose version changed; a rule that never names its task
(usage's score, a fold over the node's pods) keeps one answer per node for every task class, and a rule
reading annotations by a literal key is keyed by those annotations only. Above 100 nodes only a sample of
feasible nodes is searched, starting where the previous search stopped, as Volcano's
`minimum-feasible-nodes` / `percentage-nodes-to-find` do. Fit errors are computed only when a task fits
nowhere, by the exact scalar path, so their wording and order never depend on the fast path.
"""
from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Protocol

import numpy as np

from vpolicy.compile import ir
from vpolicy.compile.lower import ANY_ANNOTATION, CompiledRule
from vpolicy.compile.vectorize import NodeBatch, ResMatrix
from vpolicy.engine.runtime import RULE_FAILURES, Runtime, evaluate_clause
from vpolicy.engine.state import NodeInfo, SessionState, TaskInfo
from vpolicy.model.resources import CPU, MEMORY, Resources

if TYPE_CHECKING:
    import numpy.typing as npt

MINIMUM_FEASIBLE_NODES = 100  # Volcano's --minimum-feasible-nodes
_FEW_ROWS = 4  # optimize chooses among rows themselves below a quarter of the nodes (`_packed_among`)
MINIMUM_PERCENTAGE = 5  # Volcano's --minimum-percentage-nodes-to-find
_SCALAR_BELOW = 8  # measured: below this many nodes one closure call per node beats a numpy batch
# image sets whose own scores (`Placement._own_values`) are kept, the oldest let go first: a job's pods
# share theirs and are placed together; all of them kept, the L dump's 2,500 sets of 5,000 nodes held 100 MB
_OWN_SCORES_KEPT = 256


class Pack(Protocol):
    """optimize mode's choice among candidate nodes (`engine.optimize.Packer`): over a mask of every
    node, or among a few ascending rows with their scores; the same node either way."""

    def __call__(self, task: TaskInfo, group: np.ndarray, scores: np.ndarray, idle: bool,
                 reach: np.ndarray | None) -> int: ...

    def choose_among(self, task: TaskInfo, rows: np.ndarray, scores: np.ndarray, idle: bool,
                     reach: np.ndarray | None) -> int: ...


@dataclass(slots=True)
class FitErrors:
    """Why one task fits no node: node name -> reasons (Volcano's FitErrors)."""

    nodes: dict[str, list[str]] = field(default_factory=dict)
    message: str = ""
    # nodes whose failure is UnschedulableAndUnresolvable (the first failing rule is `unresolvable`):
    # the evicting actions skip them for this task (`Placement.preempt_rows`)
    unresolvable: set[str] = field(default_factory=set)
    _text: str | None = field(default=None, repr=False, compare=False)  # summary, asked per pending pod

    def add(self, node: str, reasons: list[str]) -> None:
        self.nodes[node] = reasons
        self._text = None

    def text(self) -> str:
        if self.message and not self.nodes:
            return self.message
        if self._text is None:
            counts: Counter[str] = Counter(r for reasons in self.nodes.values() for r in reasons)
            histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
            self._text = f"0/{len(self.nodes)} nodes are unavailable: {', '.join(histogram)}."
        return self._text


def fits(request: Resources, available: Resources) -> bool:
    """Volcano's `request.LessEqual(available, Zero)`: cpu and memory always, then each requested dim."""
    if request.get(CPU, 0) > available.get(CPU, 0) or request.get(MEMORY, 0) > available.get(MEMORY, 0):
        return False
    return all(v <= available.get(k, 0) for k, v in request.items())


def insufficient(request: Resources, available: Resources) -> list[str]:
    names = {CPU, MEMORY} | set(request)
    return sorted(k for k in names if request.get(k, 0) > available.get(k, 0))


# Task attributes a cacheable rule may read (see compile.lower._STATIC_ATTRS); the cache key of a rule
# is the values of those it reads, plus the pod's scheduling constraints the matching built-ins read.
_TASK_KEY_ATTRS = ("resreq", "best_effort", "priority_class_name", "namespace", "role", "guaranteed",
                   "topology_policy", "container_cpus", "container_gpus", "containers_without_cpu_request",
                   "containers_without_memory_request")
# Node usage attributes: a rule reading one changes as tasks are placed (compile.lower._NODE_ATTRS)
_USAGE = frozenset({"used", "idle", "releasing", "pipelined", "future_idle", "evicted", "pod_count", "numa",
                    "pods_without_cpu_request", "pods_without_memory_request"})


# What a rule reads of a task's relations to other pods (compile.lower.classify adds "relations" for a
# rule calling one of compile.relations' built-ins, "images" for image_bytes): its relations' key is then
# part of the rule's cache key; a rule reading none of them needs only to know the task is relation-free.
_RELATION_READS = frozenset({"relations", "pod_affinity", "pod_anti_affinity", "preferred_pod_affinity",
                             "preferred_pod_anti_affinity", "spread_constraints"})

# Every spec attribute, for callers that key on "the same kind of task" whatever a rule reads.
SPEC_READS = frozenset(_TASK_KEY_ATTRS) | _RELATION_READS | {"images"}


def task_key(task: TaskInfo, reads: frozenset[str]) -> tuple[Any, ...]:
    """What a cached node rule can see of a task: its spec, never its identity."""
    pod = task.pod
    spec = (tuple(sorted(pod.node_selector.items())), pod.required_affinity, pod.preferred_affinity,
            pod.tolerations)
    # `labels` is also a node field: a rule reading it may read the pod's, so they are part of the key
    labels = (tuple(sorted(task.labels.items())),) if "labels" in reads else ()
    # likewise `annotations`, by the keys the rules read (not each job's group name), or all of them
    annotations = _annotations_key(task, reads) if "annotations" in reads else ()
    # the task's terms and which of them it matches itself (engine.pod_relations), () for most tasks
    relations = (task.relations.key,) if reads & _RELATION_READS else ()
    images = (pod.relations.images,) if "images" in reads else ()
    return spec + labels + annotations + relations + images + tuple(getattr(task, a) for a in _TASK_KEY_ATTRS if a in reads)


def _annotations_key(task: TaskInfo, reads: frozenset[str]) -> tuple[Any, ...]:
    """The task's annotations that rules reading `reads` can see (compile.lower.annotation_reads)."""
    if ANY_ANNOTATION in reads:
        return (tuple(sorted(task.annotations.items())),)
    prefix = len("annotations[")
    return tuple((r, task.annotations.get(r[prefix:-1])) for r in sorted(reads) if r.startswith("annotations["))


def class_key(task: TaskInfo, reads: frozenset[str]) -> tuple[Any, ...]:
    """`task_key` for what is kept per task class across every rule (the static predicate mask, the
    class view): a rule counting pods takes part there only for a relation-free task (`relation_free`),
    which answers it like every other relation-free task, so the class needs only that flag and the
    relations that never change (images, volumes); the images only where a rule reads them (nodeorder's
    image locality, not the predicates), so tasks alike but for their images share one predicate mask."""
    static = task.relations.static_key or _NO_STATIC_RELATIONS
    return task_key(task, reads - _RELATION_READS) + (relation_free(task),
                                                      static if "images" in reads else static[1:])


# TaskRelations.static_key of a task relating to nothing (pod_relations.NO_STATIC_KEY): images, bound
# volumes, missing, unbound immediate, foreign ephemeral claims
_NO_STATIC_RELATIONS: tuple[Any, ...] = ((), (), 0, 0, 0)


def relation_free(task: TaskInfo) -> bool:
    """A task with no terms, host ports or placed pods' terms matching it: every rule counting pods
    (depends "pods") answers it the same all session, so such rules are cached as static ones."""
    return not task.relations.queries and not task.relations.host_ports


def rule_score(rule: CompiledRule, raw: np.ndarray, env: dict[str, Any]) -> np.ndarray:
    """A node_order rule's contribution from its raw values over the candidate nodes: as is, or for a
    `normalize [reverse] by W` rule kube's DefaultNormalizeScore (0..100 by the maximum, reversed if
    asked, 100 for all when the maximum is 0 and reversed) truncated, times W; `minmax` and `spread`
    are InterPodAffinity's and PodTopologySpread's own scalings (`_minmax`, `_spread`)."""
    if rule.normalize_weight is None:
        return raw
    weight = float(evaluate_clause(rule, rule.normalize_weight, env, part="normalize"))
    if weight == 0:
        return np.zeros(len(raw))
    if rule.normalize_mode == "minmax":
        return _minmax(raw) * weight
    if rule.normalize_mode == "spread":
        return _spread(raw) * weight
    top = raw.max() if len(raw) else 0.0
    norm: npt.NDArray[np.float64]
    if top == 0:
        norm = np.full(len(raw), 100.0 if rule.normalize_reverse else 0.0)
    else:
        norm = 100.0 * raw / top
        if rule.normalize_reverse:
            norm = 100.0 - norm
    return np.trunc(norm) * weight


def _minmax(raw: np.ndarray) -> np.ndarray:
    """kube's InterPodAffinity NormalizeScore: 100 * (s - min) / (max - min), truncated; 0 for all when
    every score is the same."""
    if not len(raw):
        return raw
    low, high = raw.min(), raw.max()
    if high <= low:
        return np.zeros(len(raw))
    scaled: np.ndarray = np.floor(100.0 * (raw - low) / (high - low))
    return scaled


def _spread(raw: np.ndarray) -> np.ndarray:
    """kube's PodTopologySpread NormalizeScore: a negative raw score marks a node left out (it scores 0);
    over the others, 100 * (max + min - s) / max in integers, 100 for all when the maximum is 0."""
    counted = raw >= 0
    out = np.zeros(len(raw))
    if not counted.any():
        return out
    values = raw[counted]
    low, high = values.min(), values.max()
    out[counted] = 100.0 if high == 0 else np.floor(100.0 * (high + low - values) / high)
    return out


def _always_zero(term: ir.Term) -> bool:
    """A score rule that is 0 whatever it sees: a literal 0, or 0 times a floor (an int, never inf or
    nan), as a nodeorder score with weight 0 compiles to."""
    if isinstance(term, ir.Const):
        value: object = term.value
        return value == 0
    if isinstance(term, ir.Op) and term.op == "*" and len(term.args) == 2:
        for k, other in (term.args, term.args[::-1]):
            if isinstance(k, ir.Const) and k.value == 0 and isinstance(other, ir.Apply) and other.func == "floor":
                return True
    return False


class _LazyInfos:
    """The NodeInfo objects of a batch, built only if a per-node function asks for them."""

    def __init__(self, nodes: list[NodeInfo], rows: np.ndarray):
        self._nodes, self._rows = nodes, rows

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[NodeInfo]:
        return (self._nodes[i] for i in self._rows)


@dataclass(slots=True, eq=False)
class _TailPart:
    """A score rule after a rule reading the task's own images (`_ClassView.tail`): its score on every
    node, shared by the class (`shared`, a static rule), kept per node from the node change log
    (`usage`, a node-usage rule), or neither: the task's own (the images rule), asked per task."""

    rule: CompiledRule
    shared: np.ndarray | None = None
    usage: np.ndarray | None = None


@dataclass(slots=True, eq=False)
class _ClassView:
    """One task class's answers on every node, kept current from the node change log.

    `feasible` is the resource fit on FutureIdle AND every predicate rule that the class cache may hold
    (static and node-usage ones); `fits_idle` the fit on Idle; `total` the summed node score, or None
    when a score rule needs the candidate group (a rule reading anything else, or a normalised rule
    whose values are not all zero for this class: its scale depends on the group's maximum).

    A score rule reading the task's images (nodeorder's image locality, `Placement._own_rules`) is not
    in the view: the class is not split by image set. `total` then sums the rules before it, and the
    choice adds, in the rules' order, that rule's answer for the task itself and each rule after it
    (`tail`), so every node's score is the same sum of the same terms in the same order as before."""

    task: TaskInfo  # the first task of the class: every rule the view holds sees the same of any other
    static_mask: np.ndarray | None
    # the score rules in combination order: a static rule's score on every node, or None (node usage:
    # computed per row); rules that always score 0 are left out (adding 0.0 changes no sum)
    parts: list[tuple[CompiledRule, np.ndarray | None]]
    # the score rules from the first of the task's own on, in order (`tail_scores`); empty when none
    tail: list[_TailPart]
    # the request on the columns Volcano compares (cpu, memory and each requested resource) and -inf on
    # every other: a row of Idle or FutureIdle is >= it exactly where the class fits it
    needs: np.ndarray
    wants: list[tuple[int, float]]  # (column, request) of those columns, for the one-row check
    unknown: bool
    feasible: np.ndarray
    fits_idle: np.ndarray
    total: np.ndarray | None
    synced: int  # entries of NodeArrays.changed already applied
    found: np.ndarray | None = None  # the rows of `feasible`, kept until one of them changes
    # score rules reading anything (job state, say) that come after every rule of `total`, none of them
    # normalised: asked over the candidate group on each choice and added to `total` in that same order
    late: list[CompiledRule] = field(default_factory=list)
    # (row, its usage) -> (fits_idle, feasible, total, each usage tail part's score) as `_refresh_row`
    # found them (`_usage_keyed`)
    seen: dict[tuple[Any, ...], tuple[bool, bool, float, tuple[float, ...]]] = field(default_factory=dict)


class Placement:
    def __init__(self, runtime: Runtime, state: SessionState):
        self.rt = runtime
        self.state = state
        self.arrays = state.arrays
        self.node_list = list(state.nodes.values())
        self._numa: np.ndarray | None = None  # each node's NodeNuma or None (fixed for the session), by row
        self._domains: np.ndarray | None = None  # each node's lowest HyperNode, numbered (`_domain_ids`)
        self.predicates = runtime.rules("predicate")
        self._static_predicates = [r for r in self.predicates if r.depends == "static"]
        self._dynamic_predicates = [r for r in self.predicates if r.depends != "static"]
        self._static_reads = frozenset().union(*(r.reads for r in self.predicates if r.depends in ("static", "pods")))
        self._static_masks: dict[tuple[Any, ...], np.ndarray] = {}
        self.score_rules = runtime.rules("node_order")
        self._scores_read_candidates = any("$candidates" in r.reads for r in self.score_rules)
        self._static: dict[tuple[Any, ...], np.ndarray] = {}
        self._cached: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}
        self._views: dict[tuple[Any, ...], _ClassView] = {}
        self._task_views: dict[str, _ClassView] = {}  # task uid -> its class's view (a task's spec is fixed)
        # (rule, task_key) -> a rule reading the task's own images on every node (`_own_values`), and the
        # last (view, images, their scores) asked: the tasks of one job ask in a row
        self._own: dict[tuple[Any, ...], np.ndarray] = {}
        self._last_own: tuple[_ClassView, tuple[str, ...], list[np.ndarray]] | None = None
        self._names = [n.name for n in self.node_list]
        self._node_predicates = [r for r in self._dynamic_predicates if r.depends == "node"]
        self._any_predicates = [r for r in self._dynamic_predicates if r.depends == "any"]
        # rules counting placed pods: static for a relation-free task, recomputed per task otherwise
        self._pods_predicates = [r for r in self._dynamic_predicates if r.depends == "pods"]
        self._pods_cached: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray, int]] = {}
        # what any predicate reads of a task; task class -> (per row: the first failing predicate is
        # unresolvable, entries of NodeArrays.changed applied, the class's PodIndex.stamp, the answers
        # of the rules that never change for the class) (`preempt_rows`)
        self._predicate_reads = frozenset().union(*(r.reads for r in self.predicates))
        self._unresolvable: dict[tuple[Any, ...], tuple[np.ndarray, int, int, list[np.ndarray | None]]] = {}
        # request -> (per row: it fits FutureIdle, the request as `_needs`, entries of NodeArrays.changed
        # applied) (`fits_future`)
        self._fits_future: dict[Resources, tuple[np.ndarray, np.ndarray, int]] = {}
        self._fixed_reasons: dict[int, list[str] | None] = {}  # id(predicate) -> its reason, if it reads nothing
        # what a class view is keyed by: what its rules read, and the request its fit checks compare
        self._view_reads = frozenset().union(*(r.reads for r in (*self.predicates, *self.score_rules)), {"resreq"})
        # score rules reading the task's images (static, not normalised: a task's answer on a node is its
        # own whatever the candidates), kept beside the class views (`_ClassView.tail`) and not in their
        # key: a realistic dump's pods have hundreds of image sets, each a view of its own otherwise
        self._own_rules = frozenset(id(r) for r in self.score_rules if "images" in r.reads
                                    and r.depends == "static" and r.normalize_weight is None)
        if not any("images" in r.reads for r in (*self.predicates, *self.score_rules) if id(r) not in self._own_rules):
            self._view_reads -= {"images"}
        # `_refresh_row` keeps answers per node usage; not for rules reading numa, or a node's tasks (two
        # sets of tasks may weigh the same): of the rules whose answers it keeps (a predicate or score
        # rule reading node usage; a rule reading anything else, as a job's tasks, is asked anew anyway)
        kept_reads = frozenset().union(*(r.reads for r in (*self._node_predicates, *self.score_rules)
                                         if r.depends == "node"))
        self._usage_keyed = "numa" not in kept_reads and "tasks" not in kept_reads
        self._start = 0
        n = len(self.node_list)
        self._all_rows = np.arange(n)
        self._cpu_mem = [self.arrays.index[d] for d in (CPU, MEMORY) if d in self.arrays.index]
        # optimize mode (engine.optimize.configure): search every feasible node, choose with `pack`
        self.sample = True
        self.pack: Pack | None = None
        # every feasible row the last `feasible_rows` found, before sampling: the rows it did not find
        # are the nodes that failed the task (`actions.role_fit_memo`)
        self.last_found: np.ndarray = self._all_rows

    # batches --------------------------------------------------------------------------------------
    def _batch(self, rows: np.ndarray) -> NodeBatch:
        a = self.arrays

        def matrix(m: np.ndarray) -> ResMatrix:
            return ResMatrix({d: m[:, j] for j, d in enumerate(a.dims)}, len(rows))

        def columns(name: str) -> ResMatrix:
            if name == "allocatable":
                return matrix(a.allocatable[rows])
            if name == "used":
                return matrix(a.used[rows])
            if name == "releasing":
                return matrix(a.releasing[rows])
            if name == "pipelined":
                return matrix(a.pipelined[rows])
            if name == "evicted":
                return matrix(a.evicted[rows])
            if name == "idle":
                return matrix(a.idle_now[rows])
            return matrix(a.future[rows])  # future_idle

        def counts(name: str) -> np.ndarray:
            if name == "pod_count":
                pod_count: np.ndarray = a.pod_count[rows]
                return pod_count
            if name == "pods_without_cpu_request":
                without: np.ndarray = a.without_request[rows, 0]
                return without
            if name == "pods_without_memory_request":
                without = a.without_request[rows, 1]
                return without
            if name == "numa":
                sources: np.ndarray = self._numa_column()[rows]
                return sources
            i = a.index.get("pods")
            return a.allocatable[rows, i] if i is not None else np.zeros(len(rows))

        return NodeBatch(_LazyInfos(self.node_list, rows), columns, counts, rows)

    def _numa_column(self) -> np.ndarray:
        """node.numa by row, built once: the NodeNuma objects change inside, never their identity."""
        if self._numa is None:
            self._numa = np.empty(len(self.node_list), dtype=object)
            self._numa[:] = [n.numa for n in self.node_list]
        return self._numa

    def _eval(self, rule: CompiledRule, task: TaskInfo, rows: np.ndarray, batch: NodeBatch | None = None) -> np.ndarray:
        """A rule's answers on `rows` (`batch`: the same rows as a batch, to share its columns)."""
        # numpy pays a fixed cost per operation: for a handful of nodes the scalar closure is cheaper
        if rule.vector is not None and len(rows) > _SCALAR_BELOW:
            env = dict(self.rt.env)
            env[rule.params[0]] = task
            env[rule.params[1]] = batch if batch is not None else self._batch(rows)
            self.rt.calls += 1
            try:
                out = rule.vector(env)
            except RULE_FAILURES:
                # node by node: a rule that fails says why in the DSL's words, not numpy's (RuleFailed);
                # one the batch alone could not take still gets its exact answers
                return self._scalar_values(rule, task, rows)
            values = np.asarray(out, dtype=float)
            if values.shape == rows.shape:  # the usual answer, one per row: no broadcast to pay for
                return values.copy()
            return np.broadcast_to(values, rows.shape).copy()  # a rule whose answer is one for all
        return self._scalar_values(rule, task, rows)

    def _scalar_values(self, rule: CompiledRule, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        if rule.by_domain and len(rows) > 1:  # one call per lowest domain, its answer on each of its nodes
            domains = self._domain_ids()[rows]
            if (domains == domains[0]).all():  # the usual case: rows of one domain (a domain's dry run)
                return np.full(len(rows), float(self.rt._call(rule, task, self.node_list[rows[0]])))
            _ids, first, where = np.unique(domains, return_index=True, return_inverse=True)
            if len(first) < len(rows):
                answers = np.array([float(self.rt._call(rule, task, self.node_list[rows[i]])) for i in first])
                return answers[where.reshape(-1)]
        return np.array([float(self.rt._call(rule, task, self.node_list[i])) for i in rows])

    def _domain_ids(self) -> np.ndarray:
        """Each node row's lowest HyperNode as a number (0: none), for rules asked once per domain."""
        if self._domains is None:
            ids: dict[str, int] = {"": 0}
            self._domains = np.array([ids.setdefault(n.hypernode, len(ids)) for n in self.node_list], dtype=np.int64)
        return self._domains

    def _rule_values(self, rule: CompiledRule, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """A rule's answers on `rows`, from the cache when the rule allows it."""
        if rule.depends == "any":
            return self._eval(rule, task, rows)
        if rule.depends == "pods":
            return self._pods_values(rule, task, rows)
        key = () if rule.task_blind else task_key(task, rule.reads)
        if rule.depends == "static":
            on_rows: np.ndarray = self._static_values(rule, task, key)[rows]
            return on_rows
        if rule.depends == "node":
            ck = (id(rule), key)
            entry = self._cached.get(ck)
            version = self.arrays.version
            if entry is None:
                values = np.full(len(self.node_list), np.nan)
                seen = np.full(len(self.node_list), -1, dtype=np.int64)
                entry = self._cached[ck] = (values, seen)
            values, seen = entry
            stale = rows[seen[rows] != version[rows]]
            if len(stale):
                values[stale] = self._eval(rule, task, stale)
                seen[stale] = version[stale]
        on_rows = values[rows]
        return on_rows

    def _static_values(self, rule: CompiledRule, task: TaskInfo, key: tuple[Any, ...]) -> np.ndarray:
        """A static rule's answers on every node for the tasks of `key` (its `task_key`), kept all session."""
        ck = (id(rule), key)
        full = self._static.get(ck)
        if full is None:
            full = self._static[ck] = self._eval(rule, task, self._all_rows)
        return full

    def _own_values(self, rule: CompiledRule, task: TaskInfo) -> np.ndarray:
        """`_static_values` for a rule reading the task's images (`_own_rules`), from a cache of the
        latest image sets asked (`_OWN_SCORES_KEPT`): one answer per image set, kept all session, cost
        the L dump 100 MB; one asked again after it was let go is computed again, the same answer."""
        key = (id(rule), () if rule.task_blind else task_key(task, rule.reads))
        values = self._own.get(key)
        if values is None:
            if len(self._own) >= _OWN_SCORES_KEPT:
                del self._own[next(iter(self._own))]
            values = self._own[key] = self._eval(rule, task, self._all_rows)
        return values

    def _pods_values(self, rule: CompiledRule, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """A rule counting placed pods on `rows`: kept per task class and node version, and all of it
        recomputed when a count the class reads has changed (`PodIndex.stamp`)."""
        ck = (id(rule), task_key(task, rule.reads))
        stamp = self.state.pod_index.stamp(task)
        entry = self._pods_cached.get(ck)
        if entry is None or entry[2] != stamp:
            n = len(self.node_list)
            entry = self._pods_cached[ck] = (np.full(n, np.nan), np.full(n, -1, dtype=np.int64), stamp)
        values, seen, _stamp = entry
        version = self.arrays.version
        stale = rows[seen[rows] != version[rows]]
        if len(stale):
            values[stale] = self._eval(rule, task, stale)
            seen[stale] = version[stale]
        on_rows: np.ndarray = values[rows]
        return on_rows

    # feasibility ----------------------------------------------------------------------------------
    def _static_mask(self, task: TaskInfo) -> np.ndarray:
        """All predicate rules that depend only on the task's spec and fixed node fields, ANDed, per class.

        The rules' order does not matter for which nodes pass, only for the reason of a failure, and
        reasons come from the scalar path."""
        key = class_key(task, self._static_reads)
        mask = self._static_masks.get(key)
        if mask is None:
            mask = np.ones(len(self.node_list), dtype=bool)
            free = relation_free(task)  # (part of the key: task_key holds the task's relations)
            for rule in (*self._static_predicates, *(r for r in self._pods_predicates if free and not r.reads & _USAGE)):
                mask &= self._eval(rule, task, self._all_rows).astype(bool)
            self._static_masks[key] = mask
        return mask

    def feasible_nodes(self, task: TaskInfo, errors: FitErrors, *, nodes: list[NodeInfo] | None = None) -> list[NodeInfo]:
        """Nodes passing the allocate-flavour predicate: resources fit FutureIdle, then every rule."""
        if nodes is not None or not self.node_list:
            return self._feasible_scalar(task, errors, self.node_list if nodes is None else nodes)
        rows = self.feasible_rows(task, errors)
        return [self.node_list[i] for i in rows]

    def feasible_rows(self, task: TaskInfo, errors: FitErrors) -> np.ndarray:
        """`feasible_nodes` as row indices into the session's node arrays (the fast path)."""
        view = self._view(task)
        free = relation_free(task)
        counted = [r for r in self._pods_predicates if not free or r.reads & _USAGE]
        if self._any_predicates or counted:
            mask = view.feasible.copy()
            for rule in (*counted, *self._any_predicates):
                rows = np.flatnonzero(mask)
                if not len(rows):
                    break
                mask[rows] &= self._rule_values(rule, task, rows).astype(bool)
            found = np.flatnonzero(mask)
        else:
            if view.found is None:
                view.found = view.feasible.nonzero()[0]  # np.flatnonzero, without its Python wrapper
            found = view.found
        self.last_found = found
        rows = self._sample(found, len(view.feasible)) if self.sample else found
        if not len(rows):
            self._fit_errors(task, errors)
        return rows

    def explain(self, task: TaskInfo, errors: FitErrors) -> None:
        """Why `task` fails on each node where it fails now, into `errors` (as when it fits nowhere)."""
        self._fit_errors(task, errors)

    def _fit_errors(self, task: TaskInfo, errors: FitErrors) -> None:
        """Why the task fits no node, node by node: what `_feasible_scalar` finds, in the same words and
        order, with the resource check and the cached rules over all nodes at once."""
        a, request = self.arrays, task.resreq
        names = sorted({CPU, MEMORY} | set(request))
        short = np.zeros((len(self.node_list), len(names)), dtype=bool)
        for j, name in enumerate(names):
            col = a.index.get(name)
            available = a.future[:, col] if col is not None else np.zeros(len(self.node_list))
            short[:, j] = request.get(name, 0) > available
        reasons: dict[int, list[str]] = {}
        # one list of words per pattern of short resources (a handful), shared by the nodes that have it
        pattern = short @ (1 << np.arange(len(names)))
        words = {int(p): [f"Insufficient {n}" for j, n in enumerate(names) if p >> j & 1] for p in np.unique(pattern)}
        shortfall = np.flatnonzero(pattern)
        reasons.update(zip(shortfall.tolist(), (words[p] for p in pattern[shortfall].tolist())))
        undecided = np.flatnonzero(pattern == 0)
        # nodes that failed a rule preemption can help: Volcano's predicates go on past such a failure
        # (the pod count's, and in main any Unschedulable one: only ShouldAbort's codes stop the chain),
        # so a later unresolvable rule still marks them for preempt and reclaim (`preempt_rows`)
        resolvable = np.zeros(0, dtype=np.int64)
        env = self.rt.env
        for rule in self.predicates:
            if rule.unresolvable and len(resolvable):
                hard = resolvable[~self._rule_values(rule, task, resolvable).astype(bool)]
                errors.unresolvable.update(self._names[i] for i in hard.tolist())
                resolvable = resolvable[~np.isin(resolvable, hard)]
            if not len(undecided):
                continue
            passed = self._rule_values(rule, task, undecided).astype(bool)
            failed = undecided[~passed].tolist()
            if rule.unresolvable:
                errors.unresolvable.update(self._names[i] for i in failed)
            fixed = self._fixed_reason(rule)
            if fixed is not None:  # one list for every node it failed: read only, as the words above
                reasons.update(dict.fromkeys(failed, fixed))
            elif rule.reason is not None:
                for i in failed:
                    env[rule.params[0]], env[rule.params[1]] = task, self.node_list[i]
                    reasons[i] = [evaluate_clause(rule, rule.reason, env, part="reason")]
            if not rule.unresolvable:
                resolvable = np.concatenate((resolvable, undecided[~passed]))
            undecided = undecided[passed]
        names = self._names
        errors.nodes.update((names[i], reasons[i]) for i in sorted(reasons))  # lists shared: read only
        errors._text = None

    def _fixed_reason(self, rule: CompiledRule) -> list[str] | None:
        """A predicate rule's reason when it reads nothing (a literal, as every Volcano predicate's),
        computed once: a task failing at 5,000 nodes would otherwise ask it on each. A clause that
        reads any variable fails on an empty environment; None then (asked per node)."""
        if id(rule) not in self._fixed_reasons:
            fixed: list[str] | None = [f"rule {rule.label.rule_id} failed"] if rule.reason is None else None
            if rule.reason is not None:
                try:
                    fixed = [rule.reason({})]
                except Exception:  # noqa: BLE001  # reason: any failure means it reads something
                    fixed = None
            self._fixed_reasons[id(rule)] = fixed
        return self._fixed_reasons[id(rule)]

    # per task class, on every node ------------------------------------------------------------------
    def _view(self, task: TaskInfo) -> _ClassView:
        """The task's class view, brought up to date with every node change since it was last used."""
        view = self._task_views.get(task.uid)
        if view is None:
            key = class_key(task, self._view_reads)
            view = self._views.get(key)
            if view is None:
                view = self._views[key] = self._new_view(task)
            self._task_views[task.uid] = view
        changed = self.arrays.changed
        if view.synced < len(changed):
            stale = changed[view.synced:]
            view.synced = len(changed)
            if len(stale) > _SCALAR_BELOW:
                # a row changed twice is recomputed twice (the same answer): cheaper than np.unique
                self._refresh_rows(view, np.array(stale, dtype=np.int64))
            else:
                for i in dict.fromkeys(stale):
                    self._refresh_row(view, i)
        return view

    def _needs(self, task: TaskInfo) -> tuple[np.ndarray, list[tuple[int, float]]]:
        """The task's request as `_ClassView.needs` (-inf on the columns Volcano does not compare) and
        as (column, request) pairs of the compared columns: cpu, memory and each requested resource."""
        a = self.arrays
        request = a.cached_vector(task.resreq)
        cols = sorted({*self._cpu_mem, *(a.index[k] for k in task.resreq if k in a.index)})
        needs = np.full(len(a.dims), -np.inf)
        needs[cols] = request[cols]
        return needs, [(j, float(request[j])) for j in cols]

    def _new_view(self, task: TaskInfo) -> _ClassView:
        a = self.arrays
        unknown = bool(a.unknown_dims(task.resreq))
        n = len(self.node_list)
        static_mask = self._static_mask(task) if self._static_predicates or self._pods_predicates else None
        parts, tail, late = self._score_parts(task)
        needs, wants = self._needs(task)
        view = _ClassView(task, static_mask, parts or [], tail, needs, wants, unknown, np.zeros(n, dtype=bool),
                          np.zeros(n, dtype=bool), None if parts is None else np.zeros(n), len(a.changed),
                          late=late)
        self._refresh_rows(view, self._all_rows)
        return view

    def _score_parts(self, task: TaskInfo) -> tuple[list[tuple[CompiledRule, np.ndarray | None]] | None,
                                                    list[_TailPart], list[CompiledRule]]:
        """How the view sums node scores for this class, or None when it cannot keep them per node; the
        rules from the first reading the task's own images on (`_ClassView.tail`); and the trailing
        rules asked on each choice (`_ClassView.late`)."""
        parts: list[tuple[CompiledRule, np.ndarray | None]] = []
        tail: list[_TailPart] = []
        free = relation_free(task)
        rules = self.score_rules
        late: list[CompiledRule] = []
        while rules and rules[-1].depends == "any" and rules[-1].normalize_weight is None:
            late.insert(0, rules[-1])  # scores added after the cached sum: the same sum, in the same order
            rules = rules[:-1]
        for rule in rules:
            if rule.depends == "pods" and not free:
                return None, [], []
            static = rule.depends == "static" or (rule.depends == "pods" and free and not rule.reads & _USAGE)
            if rule.depends == "any" or (rule.normalize_weight is not None and not static):
                return None, [], []
            if _always_zero(rule.term):
                continue
            if id(rule) in self._own_rules:
                tail.append(_TailPart(rule))
            elif static:
                raw = self._rule_values(rule, task, self._all_rows)
                if rule.normalize_weight is not None and len(raw) and (raw != raw[0]).any():
                    return None, [], []  # scaled by the candidate group's maximum: no per-node score
                score = rule_score(rule, raw, self.rt.env)
                if tail:
                    tail.append(_TailPart(rule, shared=score))
                else:
                    parts.append((rule, score))
            elif tail:
                tail.append(_TailPart(rule, usage=np.zeros(len(self.node_list))))
            else:
                parts.append((rule, None))
        return parts, tail, late

    def _refresh_rows(self, view: _ClassView, rows: np.ndarray) -> None:
        """Recompute the view on `rows` with the batched rules (the first build: every row)."""
        if view.unknown:
            return
        task, a = view.task, self.arrays
        view.fits_idle[rows] = (a.idle_now[rows] >= view.needs).all(axis=1)
        ok = (a.future[rows] >= view.needs).all(axis=1)
        if view.static_mask is not None:
            ok &= view.static_mask[rows]
        batch = self._batch(rows)
        for rule in self._node_predicates:
            ok &= self._node_values(rule, task, rows, batch).astype(bool)
        if view.found is not None and (view.feasible[rows] != ok).any():
            view.found = None
        view.feasible[rows] = ok
        if view.total is not None:
            total = np.zeros(len(rows))
            for rule, values in view.parts:
                total += values[rows] if values is not None else self._node_values(rule, task, rows, batch)
            view.total[rows] = total
            for part in view.tail:
                if part.usage is not None:
                    part.usage[rows] = self._node_values(part.rule, task, rows, batch)

    def _node_values(self, rule: CompiledRule, task: TaskInfo, rows: np.ndarray, batch: NodeBatch) -> np.ndarray:
        """A node-usage rule's answers on a view's changed `rows`: a batched rule anew (numpy over the
        rows costs less than keeping them), one with only a scalar form from the per-rule cache, which
        the classes alike for it share (all of them for a rule blind to its task, as usage's score):
        each changed node is then asked once, not once per class."""
        if rule.vector is not None:
            return self._eval(rule, task, rows, batch)
        return self._rule_values(rule, task, rows)

    def _refresh_row(self, view: _ClassView, i: int) -> None:
        """`_refresh_rows` for one changed node, through the rules' scalar forms (the same answers).

        The answers are kept per node usage: every rule of the view reads of a node only its fixed
        fields and its usage (used, releasing, pipelined, pod count), so a node back at a usage it had
        before (a dry run undone, as allocate's domain search does for every domain it tries) gets
        the answers it had then. Not with a rule reading `numa` (its state is not in the key)."""
        if view.unknown:
            return
        a = self.arrays
        key = None
        if self._usage_keyed:
            key = (i, a.used[i].tobytes(), a.releasing[i].tobytes(), a.pipelined[i].tobytes(), a.evicted[i].tobytes(),
                   a.pod_count[i],
                   a.without_request[i].tobytes())
            kept = view.seen.get(key)
            if kept is not None:
                fits_idle, ok, total, tail_scores = kept
                view.fits_idle[i] = fits_idle
                if view.feasible[i] != ok:
                    view.feasible[i] = ok
                    view.found = None
                if view.total is not None:
                    view.total[i] = total
                    scores = iter(tail_scores)
                    for part in view.tail:
                        if part.usage is not None:
                            part.usage[i] = next(scores)
                return
        task = view.task
        idle, future = a.idle_now[i].tolist(), a.future[i].tolist()
        fits_idle = ok = True
        for j, v in view.wants:  # a loop, not all(<generator>): this runs once per task placed
            if idle[j] < v:
                fits_idle = False
            if future[j] < v:
                ok = False
        view.fits_idle[i] = fits_idle
        if ok and view.static_mask is not None:
            ok = bool(view.static_mask[i])
        node = self.node_list[i]
        call = self._node_value
        for rule in self._node_predicates:
            if not ok:
                break
            ok = bool(call(rule, task, node, i))
        if view.feasible[i] != ok:
            view.feasible[i] = ok
            view.found = None
        total = 0.0
        usage: tuple[float, ...] = ()
        if view.total is not None:
            for rule, values in view.parts:
                total += float(values[i]) if values is not None else float(call(rule, task, node, i))
            view.total[i] = total
            for part in view.tail:
                if part.usage is not None:
                    part.usage[i] = value = float(call(part.rule, task, node, i))
                    usage += (value,)
        if key is not None:
            view.seen[key] = (fits_idle, ok, total, usage)

    def _node_value(self, rule: CompiledRule, task: TaskInfo, node: NodeInfo, i: int) -> Any:
        """`_node_values` on one row: a scalar-only rule's answer from the per-rule cache, otherwise
        the rule's scalar form called."""
        if rule.vector is not None or rule.depends != "node":
            return self.rt._call(rule, task, node)
        return self._rule_values(rule, task, np.array((i,)))[0]

    def _sample(self, found: np.ndarray, n: int) -> np.ndarray:
        """Volcano's node sampling among the feasible rows `found` of `n` nodes: above 100 nodes, stop
        after enough feasible ones, round-robin."""
        if n <= MINIMUM_FEASIBLE_NODES:
            return found
        pct = max(MINIMUM_PERCENTAGE, 50 - n // 125)
        want = max(MINIMUM_FEASIBLE_NODES, n * pct // 100)
        if len(found) <= want:
            return found
        split = int(found.searchsorted(self._start))  # the method: np.searchsorted adds a Python wrapper
        chosen = found[split:split + want]
        if len(chosen) < want:  # wrap around to the first nodes
            chosen = np.concatenate((chosen, found[:want - len(chosen)]))
        self._start = (int(chosen[-1]) + 1) % n
        return chosen

    def _feasible_scalar(self, task: TaskInfo, errors: FitErrors, nodes: list[NodeInfo]) -> list[NodeInfo]:
        found = []
        for node in nodes:
            future = node.future_idle
            if not fits(task.resreq, future):
                errors.add(node.name, [f"Insufficient {r}" for r in insufficient(task.resreq, future)])
                continue
            failure = self.rt.predicate(task, node)
            if failure is not None:
                errors.add(node.name, [failure.reason])
                if failure.unresolvable:
                    errors.unresolvable.add(node.name)
                continue
            found.append(node)
        return found

    def nominated_node(self, task: TaskInfo) -> list[NodeInfo]:
        """The pod's nominatedNodeName, tried first when the task fits its FutureIdle and passes the
        rules (Volcano's allocate since v1.12): a preemptor whose victims are still terminating is
        pipelined there again rather than sent to another node that has room now."""
        node = self.state.nodes.get(task.pod.nominated_node) if task.pod.nominated_node else None
        if node is None or not fits(task.resreq, node.future_idle):
            return []
        return self._feasible_scalar(task, FitErrors(), [node])

    def fits_future(self, task: TaskInfo) -> np.ndarray:
        """Per node row: the task's request fits the node's FutureIdle now (`fits`, on every row)."""
        if self.arrays.unknown_dims(task.resreq):  # a resource no node column holds: ask each node
            return np.array([fits(task.resreq, n.future_idle) for n in self.node_list], dtype=bool)
        # kept per request and brought up to date on the rows changed since: preempt asks for every
        # preemptor task, and a few nodes change between two of them
        a, request = self.arrays, task.resreq
        kept = self._fits_future.get(request)
        if kept is None:
            needs = self._needs(task)[0]
            mask: np.ndarray = np.asarray((a.future >= needs).all(axis=1))
            kept = self._fits_future[request] = (mask, needs, len(a.changed))
        elif kept[2] < len(a.changed):
            mask, needs, synced = kept
            rows = np.unique(np.array(a.changed[synced:], dtype=np.int64))
            mask[rows] = (a.future[rows] >= needs).all(axis=1)
            kept = self._fits_future[request] = (mask, needs, len(a.changed))
        copy: np.ndarray = kept[0].copy()
        return copy

    def preempt_nodes(self, task: TaskInfo) -> list[NodeInfo]:
        """Nodes where evicting could help (`preempt_rows`)."""
        return [self.node_list[i] for i in self.preempt_rows(task)]

    def preempt_rows(self, task: TaskInfo, recorded: FitErrors | None = None) -> np.ndarray:
        """Rows of the nodes where evicting could help, ascending: a node is excluded when a predicate
        rule it fails is `unresolvable` (Volcano's predicates go on past a failure preemption can help,
        the pod count's in v1.10.0 and main, any Unschedulable one in main, whose `ShouldAbort` stops
        the chain only at UnschedulableAndUnresolvable, Error, Wait or Skip), and when `recorded`, the fit errors an earlier action of the session kept for
        the task, found it so then: Volcano's preempt and reclaim start from
        `GetUnschedulableAndUnresolvableNodesForTask` (v1.10.0 framework/session.go:291, main's
        `FilterOutUnschedulableAndUnresolvableNodesForTask`), which reads those errors as they were,
        though a pod placed since may now satisfy the task's pod affinity there."""
        passing = self.preempt_mask(task)
        if recorded is not None and recorded.unresolvable:
            row = self.arrays.row
            passing[[row[name] for name in recorded.unresolvable if name in row]] = False
        return np.flatnonzero(passing)

    def preempt_mask(self, task: TaskInfo) -> np.ndarray:
        """`preempt_rows` without `recorded`, as a new mask over the rows."""
        return ~self._unresolvable_rows(task)

    def _unresolvable_rows(self, task: TaskInfo) -> np.ndarray:
        """Per row: an unresolvable predicate rule fails the task there (read only). Kept per task class
        (what any predicate reads of a task) and brought up to date on the rows changed since
        (`NodeArrays.changed`): each rule's answer on a row follows the row's version, the task's class
        and, for a rule counting pods, the task's `PodIndex.stamp`, which starts it over. preempt asks
        for every preemptor task, and a few nodes change between two of them."""
        if self._any_predicates:  # a rule reading anything else: asked on every row each time
            excluded = np.zeros(len(self.node_list), dtype=bool)
            self._mark_unresolvable(task, self._all_rows, excluded, [None] * len(self.predicates))
            return excluded
        key = task_key(task, self._predicate_reads)
        stamp = self.state.pod_index.stamp(task) if self._pods_predicates else 0
        changed = self.arrays.changed
        kept = self._unresolvable.get(key)
        if kept is None or kept[2] != stamp:
            # the answers of the unresolvable rules that never change for this class, on every row: a
            # static rule's, and for a relation-free task a pod-counting rule's reading no usage (`_static_mask`)
            free = relation_free(task)
            fixed = [self._rule_values(rule, task, self._all_rows).astype(bool)
                     if rule.unresolvable and (rule.depends == "static"
                                               or (rule.depends == "pods" and free and not rule.reads & _USAGE))
                     else None for rule in self.predicates]
            excluded = np.zeros(len(self.node_list), dtype=bool)
            self._mark_unresolvable(task, self._all_rows, excluded, fixed)
            kept = self._unresolvable[key] = (excluded, len(changed), stamp, fixed)
        elif kept[1] < len(changed):
            excluded, _synced, _stamp, fixed = kept
            self._mark_unresolvable(task, np.unique(np.array(changed[kept[1]:], dtype=np.int64)), excluded, fixed)
            kept = self._unresolvable[key] = (excluded, len(changed), stamp, fixed)
        return kept[0]

    def _mark_unresolvable(self, task: TaskInfo, rows: np.ndarray, excluded: np.ndarray,
                           fixed: list[np.ndarray | None]) -> None:
        """`excluded` on the ascending `rows`: whether an unresolvable predicate rule fails there (a
        rule preemption can help neither excludes a node nor stops the chain: its answer is not
        needed); `fixed`: per rule, its answers on every row where they never change, else None."""
        excluded[rows] = False
        for rule, answers in zip(self.predicates, fixed):
            if not len(rows):
                break
            if not rule.unresolvable:
                continue
            passed = answers[rows] if answers is not None else self._rule_values(rule, task, rows).astype(bool)
            excluded[rows[~passed]] = True
            rows = rows[passed]

    # scoring --------------------------------------------------------------------------------------
    def scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> np.ndarray:
        rows = np.array([self.arrays.row[n.name] for n in nodes], dtype=np.int64)
        return self._scores_rows(task, rows)

    def _scores_rows(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        total = np.zeros(len(rows))
        with self._scored_among(rows):
            for rule in self.score_rules:
                raw = self._rule_values(rule, task, rows)
                total += rule_score(rule, raw, self.rt.env)
        return total

    @contextmanager
    def _scored_among(self, rows: np.ndarray) -> Iterator[None]:
        """While scoring `rows` together, `candidate_nodes()` answers their nodes (Volcano hands a batch
        node order function the node list it scores); only when a score rule reads it."""
        if not self._scores_read_candidates:
            yield
            return
        env = self.rt.env
        before = env["$candidates"]
        env["$candidates"] = [self.node_list[int(i)] for i in rows]
        try:
            yield
        finally:
            env["$candidates"] = before

    def best_node(self, task: TaskInfo, nodes: list[NodeInfo]) -> tuple[NodeInfo, bool]:
        """The node to use and whether it fits Idle now (allocate) or only FutureIdle (pipeline)."""
        rows = np.array([self.arrays.row[n.name] for n in nodes], dtype=np.int64)
        return self.best_row(task, rows)

    def best_row(self, task: TaskInfo, rows: np.ndarray) -> tuple[NodeInfo, bool]:
        view = self._view(task)
        if self.pack is not None:
            return self._packed_row(task, view, rows, self.pack)
        idle_rows = rows[view.fits_idle[rows]]
        group = idle_rows if len(idle_rows) else rows
        if len(group) == 1:
            return self.node_list[int(group[0])], bool(len(idle_rows))
        scores = self._scores_rows(task, group) if view.total is None else self._view_scores(view, task, group)
        return self.node_list[int(group[int(scores.argmax())])], bool(len(idle_rows))

    def _view_scores(self, view: _ClassView, task: TaskInfo, group: np.ndarray) -> np.ndarray:
        """`task`'s node scores on `group` from its class view (one that keeps them: `total` is set):
        the view's sum, then its tail's and its late rules' scores added in the rules' order, the
        same sum `_scores_rows` makes."""
        assert view.total is not None
        scores = self._add_tail(view, task, view.total[group], group)
        if view.late:
            with self._scored_among(group):
                for rule in view.late:
                    scores = scores + self._rule_values(rule, task, group)
        return scores

    def _add_tail(self, view: _ClassView, task: TaskInfo, scores: np.ndarray, rows: np.ndarray | slice) -> np.ndarray:
        """`scores` (the view's sum on `rows`) with the view's tail rules added, in order."""
        images, last = task.pod.relations.images, self._last_own
        if last is not None and last[0] is view and last[1] == images:
            own = last[2]
        else:  # what else the rules read is the class's: the same answers for the same images
            own = [self._own_values(p.rule, task) for p in view.tail if p.shared is None and p.usage is None]
            self._last_own = (view, images, own)
        k = 0
        for part in view.tail:
            values = part.shared if part.shared is not None else part.usage
            if values is None:
                values, k = own[k], k + 1
            scores = scores + values[rows]
        return scores

    def _packed_row(self, task: TaskInfo, view: _ClassView, rows: np.ndarray, pack: Pack) -> tuple[NodeInfo, bool]:
        """`best_row` in optimize mode: the same Idle-else-FutureIdle group, chosen by `pack` over
        whole-node masks (with no sampling `rows` is the view's own feasible set, its mask at hand);
        a few rows (a HyperNode's, in a domain's dry run) are chosen among on their own."""
        if rows is not view.found and len(rows) * _FEW_ROWS < len(self.node_list):
            return self._packed_among(task, view, np.sort(rows), pack)
        if rows is view.found:
            feasible = view.feasible
        else:
            feasible = np.zeros(len(self.node_list), dtype=bool)
            feasible[rows] = True
        group = feasible & view.fits_idle
        idle = bool(group.any())
        if not idle:
            group = feasible
        scores = view.total
        if scores is not None and view.tail:
            scores = self._add_tail(view, task, scores, slice(None))
        if scores is not None and view.late:
            members = np.flatnonzero(group)
            scores = scores.copy()
            with self._scored_among(members):
                for rule in view.late:
                    scores[members] += self._rule_values(rule, task, members)
        elif scores is None:  # scores normalised over the candidates: computed on the group alone
            scores = np.zeros(len(self.node_list))
            members = np.flatnonzero(group)
            scores[members] = self._scores_rows(task, members)
        return self.node_list[pack(task, group, scores, idle, view.static_mask)], idle

    def _packed_among(self, task: TaskInfo, view: _ClassView, rows: np.ndarray, pack: Pack) -> tuple[NodeInfo, bool]:
        """`_packed_row` on ascending `rows` themselves: the same group, scores and choice (ties to the
        lowest row) without masks over every node."""
        fits_idle = view.fits_idle[rows]
        idle = bool(fits_idle.any())
        group = rows[fits_idle] if idle else rows
        if view.total is None:  # scores normalised over the candidates: computed on the group alone
            scores = self._scores_rows(task, group)
        else:
            scores = self._view_scores(view, task, group)
        return self.node_list[pack.choose_among(task, group, scores, idle, view.static_mask)], idle

    def rows_by_score(self, task: TaskInfo, rows: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
        """`rows` highest score first, ties in the order given. The scores are computed over all of
        `rows`: a normalised score depends on the set it is computed over. `among` (ascending rows of
        `rows`): only those are returned, in that order (preempt walks a few of the nodes it scores).
        From the task's class view where it keeps the scores (no rule normalised over the candidates:
        each row's score is its own)."""
        if not len(rows):
            return rows
        view = self._view(task)
        if view.total is None or view.unknown or self._scores_read_candidates:
            scores = self._scores_rows(task, rows)
            if among is not None:
                scores = scores[np.searchsorted(rows, among)]
        else:
            scores = self._view_scores(view, task, rows if among is None else among)
        return (rows if among is None else among)[np.argsort(-scores, kind="stable")]

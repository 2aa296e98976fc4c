"""Kubernetes and Volcano objects -> `vpolicy.model.snapshot` dataclasses, one reader per kind.

Each `read_*` takes a `View` of one object and returns the model object, or None when the object is
too broken to use (its mistakes are then already recorded as diagnostics). Volcano's semantics are
applied here once, so every consumer of the snapshot agrees (reference §1, §13):

- a pod's request is Volcano's InitResreq: the sum of its containers (limits stand in for missing
  requests, as API defaulting does) plus `spec.overhead`, max'ed per resource with each init
  container (sidecars, `restartPolicy: Always`, add to both sides), plus `pods: 1`;
- task status comes from phase, nodeName and deletionTimestamp; a pod without `status.phase` is
  Pending, as the API server would have made it;
- a pod's vGPU limits stay per container, as Volcano's resourcereqs reads them: one device request per
  container, never their sum;
- task priority is `spec.priority`, else the value of a known `priorityClassName` (what the
  Priority admission plugin writes), else 1; `volcano.sh/task-priority` overrides it;
- a node with no conditions at all is Ready (hand-written dumps omit them).

This module does not walk files or kinds (`vpolicy.load.cluster` does) and does not derive objects
from vcjobs (`vpolicy.load.vcjob` does, reusing `read_pod_spec`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, cast

import msgspec
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.scalarstring import LiteralScalarString

from vpolicy.load import affinity as pod_affinity, plain, topology
from vpolicy.load.fields import View, memoized, rfc3339_seconds
from vpolicy.load.yaml_spans import YamlFile
from vpolicy.model import numa as numa_model
from vpolicy.model import quantity, resources, snapshot
from vpolicy.model.affinity import NO_RELATIONS, PodRelations
from vpolicy.model.resources import Resources
from vpolicy.source import Span

CONF_KEY = "volcano-scheduler.conf"
DEFAULT_SCHEDULER = "default-scheduler"
VGPU_KEYS = ("volcano.sh/vgpu-number", "volcano.sh/vgpu-memory", "volcano.sh/vgpu-cores",
             "volcano.sh/vgpu-memory-percentage")
_POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPERATORS = ("In", "NotIn")  # matchFields supports only these (Kubernetes validation)
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_INT32 = (-(2**31), 2**31 - 1)
# a Queue's spec.affinity.nodeGroup(Anti)Affinity lists of node group names
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class Meta:
    """The metadata every kind shares; `origin` is the span of metadata.name."""

    name: str
    namespace: str
    uid: str
    origin: Span
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    creation: float = 0.0
    deleting: bool = False
    owners: tuple[tuple[str, str], ...] = ()  # (kind, name) of each ownerReference


@dataclass(frozen=True, slots=True)
class PodSpec:
    """What a pod spec (a Pod's or a vcjob task template's) tells the scheduler."""

    resreq: Resources
    scheduler_name: str = ""
    priority: int | None = None
    priority_class_name: str = ""
    node_name: str = ""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_affinity: tuple[snapshot.NodeSelectorTerm, ...] = ()
    preferred_affinity: tuple[snapshot.PreferredTerm, ...] = ()
    tolerations: tuple[snapshot.Toleration, ...] = ()
    preemption_policy: str = "PreemptLowerPriority"
    scheduling_gated: bool = False
    vgpu_limits: tuple[Mapping[str, int], ...] = ()
    relations: PodRelations = NO_RELATIONS
    guaranteed: bool = False  # QoS class computed from the containers (kubelet's ComputePodQOS)
    container_cpus: tuple[tuple[str, int], ...] = ()  # whole CPUs each container requests (0: none/fraction)
    container_gpus: tuple[int, ...] = ()  # nvidia.com/gpu each container requests, in the same order
    containers_without_request: tuple[int, int] | None = None  # containers asking no cpu, no memory (snapshot.Pod)
    limits: Resources = resources.ZERO  # cpu and memory limits: containers summed, then an init container's max


@dataclass(frozen=True, slots=True)
class Conf:
    """A volcano-scheduler.conf found in a ConfigMap; see ClusterSnapshot.conf_* for the offsets."""

    text: str
    origin: Span
    line_offset: int | None
    col_offset: int


def read_meta(obj: View, *, namespaced: bool) -> Meta | None:
    if type(obj.node) is dict:  # as a JSON decoder or the API gives it (a YAML file's objects are read checked)
        try:
            return _plain_meta(obj, namespaced=namespaced)
        except plain.NotPlain:
            pass  # read it again, checked: the View readers report what is wrong
    meta = obj.mapping("metadata", required=True)
    if meta is None:
        return None
    name = meta.text("name", required=True)
    if not name:
        return None
    namespace = (meta.text("namespace") or "default") if namespaced else ""
    uid = meta.text("uid") or (f"{namespace}/{name}" if namespaced else name)
    owners = tuple((ref.text("kind"), ref.text("name")) for ref in meta.mappings("ownerReferences"))
    return Meta(name=name, namespace=namespace, uid=uid, origin=meta.value_span("name"),
                labels=meta.text_map("labels"), annotations=meta.text_map("annotations"),
                creation=meta.timestamp("creationTimestamp") or 0.0,
                deleting=meta.has("deletionTimestamp"), owners=owners)


def _plain_meta(obj: View, *, namespaced: bool) -> Meta:
    """`read_meta` of metadata written as the API writes it (`vpolicy.load.plain`); NotPlain otherwise."""
    meta = plain.mapping(obj.node, "metadata")
    if meta is None:
        raise plain.NotPlain
    name = plain.text(meta, "name")
    if not name:
        raise plain.NotPlain
    namespace = (plain.text(meta, "namespace") or "default") if namespaced else ""
    uid = plain.text(meta, "uid") or (f"{namespace}/{name}" if namespaced else name)
    owners = tuple([(plain.text(ref, "kind"), plain.text(ref, "name"))
                    for ref in plain.mappings(meta, "ownerReferences")])
    return Meta(name=name, namespace=namespace, uid=uid, origin=obj.file.value_span(meta, "name"),
                labels=plain.text_map(meta, "labels"), annotations=plain.text_map(meta, "annotations"),
                creation=plain.timestamp(meta, "creationTimestamp") or 0.0,
                deleting=meta.get("deletionTimestamp") is not None, owners=owners)


@memoized
def read_node(obj: View) -> snapshot.Node | None:
    meta = read_meta(obj, namespaced=False)
    spec, status = obj.mapping("spec"), obj.mapping("status")
    allocatable = status.quantities("allocatable") if status else None
    capacity = status.quantities("capacity") if status else None
    taints = tuple(_read_taint(t) for t in spec.mappings("taints")) if spec else ()
    conditions = status.mappings("conditions") if status else []
    ready = not conditions or any(c.text("type") == "Ready" and c.text("status") == "True" for c in conditions)
    if meta is None:
        return None
    if allocatable is None and capacity is None:
        obj.problems.warn(meta.origin, f"node {meta.name} has neither status.allocatable nor status.capacity: "
                                       "no pod fits on it")
    return snapshot.Node(
        name=meta.name, allocatable=Resources(allocatable if allocatable is not None else capacity or {}),
        capacity=Resources(capacity or {}), labels=meta.labels, annotations=meta.annotations,
        taints=tuple(t for t in taints if t is not None),
        unschedulable=spec.flag("unschedulable", default=False) if spec else False,
        ready=ready, images=pod_affinity.read_node_images(status), origin=meta.origin,
        usage=_read_node_usage(obj, meta))


# A dump's node usage (usage and rescheduling read it), from its annotations (docs/plugins.md).
USAGE_CPU, USAGE_MEMORY, USAGE_TIME = (snapshot.USAGE_CPU_ANNOTATION, snapshot.USAGE_MEMORY_ANNOTATION,
                                       snapshot.USAGE_TIME_ANNOTATION)


def _read_node_usage(obj: View, meta: Meta) -> snapshot.NodeUsage | None:
    """CPU and memory percent and the RFC 3339 time they were measured, from the node's annotations;
    None when it has none of them. A value that does not read is warned about and left out."""
    notes = meta.annotations
    if not any(key in notes for key in (USAGE_CPU, USAGE_MEMORY, USAGE_TIME)):
        return None

    def percent(key: str) -> float:
        text = notes.get(key)
        if text is None:
            return 0.0
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if value != value or value in (float("inf"), float("-inf")):
            obj.problems.warn(meta.origin, f"node {meta.name}: annotation {key} is not a number ({text!r}); "
                                           "read as 0")
            return 0.0
        return value

    at = 0.0
    if USAGE_TIME in notes:
        seconds = rfc3339_seconds(notes[USAGE_TIME])
        if seconds is None:
            obj.problems.warn(meta.origin, f"node {meta.name}: annotation {USAGE_TIME} is not an RFC 3339 time "
                                           f"({notes[USAGE_TIME]!r}); the usage counts as stale")
        else:
            at = seconds
    return snapshot.NodeUsage(cpu=percent(USAGE_CPU), memory=percent(USAGE_MEMORY), at=at)


@dataclass(frozen=True, slots=True)
class _PodStatus:
    """What a pod's status tells the scheduler."""

    phase: str = "Pending"
    qos_class: str = ""  # status.qosClass as written; "" when the kubelet has not written it
    started_at: float = 0.0
    nominated_node: str = ""
    scheduled_at: float = 0.0


@memoized
def read_pod(obj: View, *, class_values: Mapping[str, int]) -> snapshot.Pod | None:
    if type(obj.node) is dict:  # a pod as the API writes it, read without a View per field (vpolicy.load.plain)
        try:
            plain_meta, status = _plain_meta(obj, namespaced=True), _plain_pod_status(obj.node)
        except plain.NotPlain:
            pass
        else:
            return _pod(obj, plain_meta, _read_pod_spec_once(obj.mapping("spec")), status, class_values)
    meta = read_meta(obj, namespaced=True)
    spec = _read_pod_spec_once(obj.mapping("spec"))
    status_view = obj.mapping("status")
    phase = status_view.choice("phase", _POD_PHASES, default="Pending") if status_view else "Pending"
    if meta is None:
        return None
    return _pod(obj, meta, spec, _read_pod_status(status_view, phase), class_values)


def _pod(obj: View, meta: Meta, spec: PodSpec, status: _PodStatus, class_values: Mapping[str, int]) -> snapshot.Pod:
    # QoS class Guaranteed: status.qosClass when the kubelet wrote it (GetPodQOS), else the spec's
    guaranteed = status.qos_class == "Guaranteed" if status.qos_class else spec.guaranteed
    return snapshot.Pod(
        namespace=meta.namespace, name=meta.name, uid=meta.uid, resreq=spec.resreq,
        status=task_status(status.phase, node_name=spec.node_name, deleting=meta.deleting),
        node_name=spec.node_name, phase=status.phase,
        priority=task_priority(obj, meta, spec, class_values),
        priority_class_name=spec.priority_class_name,
        scheduler_name=spec.scheduler_name,  # "" = not written; see snapshot.Pod.scheduler_name
        group=meta.annotations.get(snapshot.GROUP_NAME_ANNOTATION, ""),
        # Volcano's getTaskRole: the annotation, else the label of the same name (pods made by other tools)
        role=meta.annotations.get(snapshot.TASK_SPEC_ANNOTATION) or meta.labels.get(snapshot.TASK_SPEC_ANNOTATION, ""),
        labels=meta.labels, annotations=meta.annotations, node_selector=spec.node_selector,
        required_affinity=spec.required_affinity, preferred_affinity=spec.preferred_affinity,
        tolerations=spec.tolerations, creation=meta.creation, preemption_policy=spec.preemption_policy,
        limits=spec.limits, started_at=status.started_at, nominated_node=status.nominated_node,
        scheduling_gated=spec.scheduling_gated, vgpu_limits=spec.vgpu_limits, relations=spec.relations,
        scheduled_at=status.scheduled_at, guaranteed=guaranteed, container_cpus=pinned_cpus(guaranteed, spec),
        container_gpus=pinned_gpus(guaranteed, spec), containers_without_request=spec.containers_without_request,
        origin=meta.origin)


def pinned_cpus(guaranteed: bool, spec: PodSpec) -> tuple[tuple[str, int], ...]:
    """Each container's whole CPUs for a Guaranteed pod; none for another pod, whose CPUs the kubelet's
    static CPU manager never pins (so its task class and written YAML do not depend on them)."""
    return spec.container_cpus if guaranteed else ()


def pinned_gpus(guaranteed: bool, spec: PodSpec) -> tuple[int, ...]:
    """Each container's nvidia.com/gpu for a Guaranteed pod that asks for any (numa-aware aligns them as
    it does CPUs); none otherwise, so pods without GPUs keep their task class."""
    return spec.container_gpus if guaranteed and any(spec.container_gpus) else ()


def _read_pod_status(status: View | None, phase: str) -> _PodStatus:
    """The status after its phase (read first: a pod without metadata reports only that)."""
    if status is None:
        return _PodStatus()
    return _PodStatus(phase=phase, qos_class=status.text("qosClass"), started_at=status.timestamp("startTime") or 0.0,
                      nominated_node=status.text("nominatedNodeName"), scheduled_at=_scheduled_at(status))


def _plain_pod_status(node: dict[str, object]) -> _PodStatus:
    """`_read_pod_status` of a status written as the API writes it (`vpolicy.load.plain`); NotPlain otherwise."""
    status = plain.mapping(node, "status")
    if status is None:
        return _PodStatus()
    phase = plain.text(status, "phase") or "Pending"
    if phase not in _POD_PHASES:
        raise plain.NotPlain
    scheduled = 0.0
    for condition in plain.mappings(status, "conditions"):
        if plain.text(condition, "type") == "PodScheduled" and plain.text(condition, "status") == "True":
            scheduled = plain.timestamp(condition, "lastTransitionTime") or 0.0
            break
    return _PodStatus(phase=phase, qos_class=plain.text(status, "qosClass"),
                      started_at=plain.timestamp(status, "startTime") or 0.0,
                      nominated_node=plain.text(status, "nominatedNodeName"), scheduled_at=scheduled)


def _scheduled_at(status: View) -> float:
    """lastTransitionTime of the PodScheduled=True condition (epoch seconds), 0 when there is none."""
    for condition in status.mappings("conditions"):
        if condition.text("type") == "PodScheduled" and condition.text("status") == "True":
            return condition.timestamp("lastTransitionTime") or 0.0
    return 0.0


def _read_pod_spec_once(spec: View | None) -> PodSpec:
    """`read_pod_spec`, once per distinct spec (nodeName aside) in one load of a big dump: the pods of a job
    share their spec, and reading one costs more than all the rest of the pod. Only specs that reported
    nothing are reused (a report names its own object's position); only objects decoded by the fast path
    are keyed (their keys are all strings, so the JSON text of the spec identifies it). A volume that is no
    claim counts by its place only: a reader that needs such a volume's name must change this key
    (tests/load/test_dumpfile.py compares the fast and the exact path on pods whose volume names differ)."""
    if spec is None or isinstance(spec.file, YamlFile):
        return read_pod_spec(spec)
    node_name = spec.node.get("nodeName")
    if node_name is not None and not isinstance(node_name, str):
        return read_pod_spec(spec)
    keyed = {k: v for k, v in spec.node.items() if k != "nodeName"}
    volumes = keyed.get("volumes")
    if isinstance(volumes, list):  # a volume matters only as a claim: the service-account token's own name
        keyed["volumes"] = [v if not isinstance(v, dict) or "persistentVolumeClaim" in v or "ephemeral" in v
                            else {} for v in volumes]  # (kube-api-access-x7k2p) differs in every pod
    try:
        key = ("PodSpec", msgspec.json.encode(keyed))
    except (TypeError, msgspec.EncodeError):
        return read_pod_spec(spec)
    memo = spec.problems.memo
    found: PodSpec | None = memo.get(key)
    if found is not None:
        placed = (key, node_name or "")  # one PodSpec per spec and node: all of a job's pending pods share one
        on_node: PodSpec | None = memo.get(placed)
        if on_node is None:
            on_node = memo[placed] = replace(found, node_name=node_name or "")
        return on_node
    before = spec.problems.count()
    read = read_pod_spec(spec)
    if spec.problems.count() == before:
        memo[key] = read
    return read


def read_pod_spec(spec: View | None) -> PodSpec:
    """The scheduling-relevant part of a pod spec; an absent spec asks for nothing but `pods: 1`."""
    if spec is None:
        return PodSpec(resreq=Resources({resources.PODS: 1}))
    containers = spec.mappings("containers")
    total: dict[str, int] = {}
    vgpu: list[dict[str, int]] = []
    asked: list[tuple[dict[str, int], dict[str, int]]] = []  # each container's requests and limits (QoS)
    cpus: list[tuple[str, int]] = []
    gpus: list[int] = []
    limit_total: dict[str, int] = {}
    without = [0, 0]  # containers asking no cpu, no memory (init containers left out)
    for container in containers:
        request, limits = _container_request(container)
        without[0] += not request.get(resources.CPU)
        without[1] += not request.get(resources.MEMORY)
        asked.append((request, _limit_amounts(limits)))
        _add(limit_total, asked[-1][1])
        cpus.append((container.text("name"), _whole_cpus(request)))
        gpus.append(request.get(numa_model.GPU, 0) // 1000)
        _add(total, request)
        asks = {key: amount for key in VGPU_KEYS
                if limits is not None and (amount := limits.plain_quantity(key)) is not None}
        if asks:
            vgpu.append(asks)
    _add(total, spec.quantities("overhead") or {})  # Volcano adds overhead before the init-container max
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    inits = spec.mappings("initContainers")
    for init in inits:
        request, init_limits = _container_request(init)
        asked.append((request, _limit_amounts(init_limits)))
        _max(limit_total, asked[-1][1])
        if init.text("restartPolicy") == "Always":  # a sidecar runs beside the containers
            _add(total, request)
            _add(sidecars, request)
            _max(init_peak, sidecars)
        else:
            _max(init_peak, _added(request, sidecars))
    _max(total, init_peak)
    total[resources.PODS] = 1
    return PodSpec(
        resreq=Resources(total), scheduler_name=spec.text("schedulerName"),
        priority=spec.optional_integer("priority"), priority_class_name=spec.text("priorityClassName"),
        node_name=spec.text("nodeName"), node_selector=spec.text_map("nodeSelector"),
        required_affinity=_required_affinity(spec), preferred_affinity=_preferred_affinity(spec),
        tolerations=tuple(t for t in (_read_toleration(v) for v in spec.mappings("tolerations")) if t),
        preemption_policy=spec.choice("preemptionPolicy", _PREEMPTION_POLICIES, default="PreemptLowerPriority"),
        scheduling_gated=spec.sequence_length("schedulingGates") > 0, vgpu_limits=tuple(vgpu),
        relations=pod_affinity.read_relations(spec, containers, inits),
        guaranteed=_qos_guaranteed(asked), container_cpus=tuple(cpus), container_gpus=tuple(gpus),
        limits=Resources(limit_total),
        containers_without_request=_counted_apart(Resources(total), (without[0], without[1])))


def _counted_apart(total: Resources, without: tuple[int, int]) -> tuple[int, int] | None:
    """The containers without a cpu / memory request, or None where they are what snapshot.Pod assumes of a
    pod made by hand (one container lacking what the whole request lacks): a pod read from a dump and
    the same pod built in code (verify's worlds, a recorded simulation) are then equal objects."""
    assumed = (int(not total.get(resources.CPU, 0)), int(not total.get(resources.MEMORY, 0)))
    return None if without == assumed else without


def _limit_amounts(limits: View | None) -> dict[str, int]:
    """cpu and memory of a container's limits (read again from the node the request reader checked)."""
    if limits is None:
        return {}
    out: dict[str, int] = {}
    for name in (resources.CPU, resources.MEMORY):
        value = limits.node.get(name)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            try:
                out[name] = quantity.parse_quantity(limits.file.value_text(limits.node, name), name)
            except ValueError:
                pass  # already reported by the request reader
    return out


def _qos_guaranteed(asked: list[tuple[dict[str, int], dict[str, int]]]) -> bool:
    """kubelet's ComputePodQOS says Guaranteed: every container has cpu and memory limits, and the pod's
    summed cpu and memory requests (a limit without a request is the request) equal its summed limits."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    if not asked:
        return False
    for request, limit in asked:
        for name in (resources.CPU, resources.MEMORY):
            if request.get(name, 0) > 0:
                requests[name] = requests.get(name, 0) + request[name]
            if limit.get(name, 0) > 0:
                limits[name] = limits.get(name, 0) + limit[name]
        if not (limit.get(resources.CPU, 0) > 0 and limit.get(resources.MEMORY, 0) > 0):
            return False
    return requests == limits


def _whole_cpus(request: Mapping[str, int]) -> int:
    """cpumanager's guaranteedCPUs: the cpu request in whole CPUs, 0 when absent or a fraction."""
    milli = request.get(resources.CPU, 0)
    return milli // 1000 if milli % 1000 == 0 else 0


def task_status(phase: str, *, node_name: str, deleting: bool) -> snapshot.TaskStatus:
    """Volcano's getTaskStatus (reference §1)."""
    if phase in ("Pending", "Running") and deleting:
        return snapshot.TaskStatus.RELEASING
    if phase == "Pending":
        return snapshot.TaskStatus.BOUND if node_name else snapshot.TaskStatus.PENDING
    return {"Running": snapshot.TaskStatus.RUNNING, "Succeeded": snapshot.TaskStatus.SUCCEEDED,
            "Failed": snapshot.TaskStatus.FAILED}.get(phase, snapshot.TaskStatus.UNKNOWN)


def task_priority(obj: View, meta: Meta, spec: PodSpec, class_values: Mapping[str, int]) -> int:
    priority = spec.priority
    if priority is None:
        priority = class_values.get(spec.priority_class_name, 1)
    raw = meta.annotations.get(snapshot.TASK_PRIORITY_ANNOTATION)
    if raw is not None:
        try:
            override = int(raw.strip(), 10)
        except ValueError:
            override = None
        if override is not None and _INT32[0] <= override <= _INT32[1]:
            return override
        obj.problems.warn(meta.origin, f"pod {meta.namespace}/{meta.name}: ignoring "
                                       f"{snapshot.TASK_PRIORITY_ANNOTATION}={raw!r} (not a 32-bit integer), "
                                       "as Volcano does")
    return priority


@memoized
def read_podgroup(obj: View) -> tuple[snapshot.PodGroup, Meta] | None:
    meta = read_meta(obj, namespaced=True)
    spec, status = obj.mapping("spec"), obj.mapping("status")
    min_resources = spec.quantities("minResources") if spec else None
    phases = [p.value for p in snapshot.PodGroupPhase]
    phase = status.choice("phase", phases, default="Pending") if status else "Pending"
    conditions = tuple(snapshot.Condition(type=c.text("type", required=True), status=c.text("status"),
                                          reason=c.text("reason"), message=c.text("message"))
                       for c in (status.mappings("conditions") if status else []))
    if meta is None:
        return None
    group = snapshot.PodGroup(
        namespace=meta.namespace, name=meta.name, uid=meta.uid,
        queue=(spec.text("queue") if spec else "") or snapshot.DEFAULT_QUEUE,
        min_member=spec.integer("minMember", default=1, minimum=0) if spec else 1,
        min_task_member=spec.int_map("minTaskMember") if spec else {},
        min_resources=None if min_resources is None else Resources(min_resources),
        priority_class_name=spec.text("priorityClassName") if spec else "",
        phase=snapshot.PodGroupPhase(phase), conditions=conditions, creation=meta.creation,
        annotations=meta.annotations, labels=meta.labels, origin=meta.origin,
        network_topology=topology.read_network_topology(spec), sub_group_policy=topology.read_sub_group_policy(spec))
    return group, meta


@memoized
def read_queue(obj: View) -> snapshot.Queue | None:
    meta = read_meta(obj, namespaced=False)
    spec, status = obj.mapping("spec"), obj.mapping("status")
    weight = spec.integer("weight", default=1, minimum=0) if spec else 1
    capability = spec.quantities("capability") if spec else None
    deserved = spec.quantities("deserved") if spec else None
    guarantee = spec.mapping("guarantee") if spec else None
    guaranteed = guarantee.quantities("resource") if guarantee else None
    states = [s.value for s in snapshot.QueueState]
    state = status.choice("state", states, default="Open") if status else "Open"
    affinity = spec.mapping("affinity") if spec else None
    groups = affinity.mapping("nodeGroupAffinity") if affinity else None
    anti = affinity.mapping("nodeGroupAntiAffinity") if affinity else None
    if meta is None:
        return None
    return snapshot.Queue(
        name=meta.name, weight=weight or 1,  # the queue webhook turns weight 0 into 1
        capability=None if capability is None else Resources(capability),
        deserved=None if deserved is None else Resources(deserved),
        guarantee=Resources(guaranteed or {}),
        reclaimable=spec.flag("reclaimable", default=True) if spec else True,
        parent=spec.text("parent") if spec else "",
        priority=spec.integer("priority", default=0, minimum=0) if spec else 0,
        state=snapshot.QueueState(state), creation=meta.creation, annotations=meta.annotations,
        has_node_group_affinity=affinity is not None,
        node_group_required=groups.texts(_REQUIRED) if groups else (),
        node_group_preferred=groups.texts(_PREFERRED) if groups else (),
        node_group_anti_required=anti.texts(_REQUIRED) if anti else (),
        node_group_anti_preferred=anti.texts(_PREFERRED) if anti else (),
        origin=meta.origin)


@memoized
def read_priority_class(obj: View) -> snapshot.PriorityClass | None:
    meta = read_meta(obj, namespaced=False)
    if "value" not in obj.node or obj.node["value"] is None:
        obj.missing("value")
        return None
    value = obj.optional_integer("value")
    if meta is None or value is None:
        return None
    return snapshot.PriorityClass(name=meta.name, value=value,
                                  global_default=obj.flag("globalDefault", default=False))


def read_conf(obj: View) -> Conf | None:
    """The volcano-scheduler.conf of a ConfigMap, or None when it holds none."""
    data = obj.mapping("data")
    if data is None or CONF_KEY not in data.node:
        return None
    text = data.text(CONF_KEY)
    span = data.value_span(CONF_KEY)
    value = data.node.get(CONF_KEY)
    if not isinstance(value, LiteralScalarString) or not isinstance(data.file, YamlFile):
        return Conf(text=text, origin=span, line_offset=None, col_offset=0)
    # (`source` may hold only the object's region of the file: see yaml_spans.parse_region.)
    lines = data.file.source.text.splitlines()
    indent = _literal_indent(lines, span.line - 1 - data.file.line_offset, cast(CommentedMap, data.node))
    # A literal block's content starts on the line after its `|` header, every line indented alike.
    return Conf(text=text, origin=Span(span.file, span.line + 1, indent + 1), line_offset=span.line,
                col_offset=indent)


def _literal_indent(lines: list[str], header: int, parent: CommentedMap) -> int:
    header_text = lines[header].split("|", 1)[-1].split("#", 1)[0]
    indicator = "".join(ch for ch in header_text if ch.isdigit())[:1]
    if indicator:
        return int(parent.lc.col) + int(indicator)
    for line in lines[header + 1:]:
        if line.strip():
            return len(line) - len(line.lstrip(" "))
    return 0


def _container_request(container: View) -> tuple[dict[str, int], View | None]:
    """A container's requests, and its `limits` mapping for the readers of per-container limits."""
    spec = container.mapping("resources")
    if spec is None:
        return {}, None
    limits = spec.quantities("limits") or {}
    requests = spec.quantities("requests") or {}
    # API defaulting: a limit without a request is also the request.
    return {**limits, **requests}, spec.mapping("limits") if limits else None


def _read_taint(view: View) -> snapshot.Taint | None:
    key = view.text("key", required=True)
    effect = view.text("effect", required=True)
    if effect and effect not in _TAINT_EFFECTS:
        effect = view.choice("effect", _TAINT_EFFECTS, default="")
    if not key or not effect:
        return None
    return snapshot.Taint(key=key, value=view.text("value"), effect=effect)


def _read_toleration(view: View) -> snapshot.Toleration | None:
    operator = view.choice("operator", ("Equal", "Exists"), default="Equal")
    key, value = view.text("key"), view.text("value")
    effect = view.choice("effect", ("", *_TAINT_EFFECTS), default="")
    if operator == "Exists" and value:
        view.bad_value("value", f'must be empty when operator is Exists, got "{value}"',
                       "remove the value, or use operator: Equal")
        return None
    if not key and operator != "Exists":
        view.bad_value("operator", "must be Exists when key is empty (a toleration of every taint)",
                       "set operator: Exists, or give a key")
        return None
    return snapshot.Toleration(key=key, operator=operator, value=value, effect=effect)


def _node_affinity(spec: View) -> View | None:
    affinity = spec.mapping("affinity")
    return affinity.mapping("nodeAffinity") if affinity else None


def _required_affinity(spec: View) -> tuple[snapshot.NodeSelectorTerm, ...]:
    node_affinity = _node_affinity(spec)
    required = node_affinity.mapping("requiredDuringSchedulingIgnoredDuringExecution") if node_affinity else None
    return tuple(_read_term(t) for t in required.mappings("nodeSelectorTerms")) if required else ()


def _preferred_affinity(spec: View) -> tuple[snapshot.PreferredTerm, ...]:
    node_affinity = _node_affinity(spec)
    if node_affinity is None:
        return ()
    out = []
    for item in node_affinity.mappings("preferredDuringSchedulingIgnoredDuringExecution"):
        weight = item.integer("weight", default=1, minimum=1)
        if weight > 100:
            item.bad_value("weight", f"must be at most 100, got {weight}", "use a weight from 1 to 100")
        preference = item.mapping("preference", required=True)
        if preference is not None:
            out.append(snapshot.PreferredTerm(weight=weight, term=_read_term(preference)))
    return tuple(out)


def read_node_selector_terms(selector: View) -> tuple[snapshot.NodeSelectorTerm, ...]:
    """A v1.NodeSelector's ORed terms (a PersistentVolume's spec.nodeAffinity.required)."""
    return tuple(_read_term(t) for t in selector.mappings("nodeSelectorTerms"))


def _read_term(term: View) -> snapshot.NodeSelectorTerm:
    requirements = [r for r in (_read_requirement(e, field=False) for e in term.mappings("matchExpressions")) if r]
    requirements += [r for r in (_read_requirement(e, field=True) for e in term.mappings("matchFields")) if r]
    return snapshot.NodeSelectorTerm(requirements=tuple(requirements))


def _read_requirement(view: View, *, field: bool) -> snapshot.SelectorRequirement | None:
    key = view.text("key", required=True)
    operators = _FIELD_OPERATORS if field else _SELECTOR_OPERATORS
    if not view.has("operator"):
        view.missing("operator")
        return None
    operator = view.choice("operator", operators, default="")
    values = view.texts("values")
    if operator in ("In", "NotIn") and not values:
        view.bad_value("operator", f"{operator} needs at least one value", "add values: [...]")
        return None
    if operator in ("Exists", "DoesNotExist") and values:
        view.bad_value("values", f"must be empty for operator {operator}", "remove the values")
        return None
    if operator in ("Gt", "Lt") and (len(values) != 1 or not values[0].lstrip("-").isdigit()):
        view.bad_value("values", f"{operator} needs exactly one integer value", 'write e.g. values: ["4"]')
        return None
    if not key or not operator:
        return None
    return snapshot.SelectorRequirement(key=key, operator=operator, values=values, field=field)


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + amount


def _added(left: Mapping[str, int], right: Mapping[str, int]) -> dict[str, int]:
    out = dict(left)
    _add(out, right)
    return out


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        into[name] = max(into.get(name, 0), amount)

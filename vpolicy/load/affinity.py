"""A pod spec's relations to other pods -> `vpolicy.model.affinity.PodRelations`.

Reads `affinity.podAffinity` / `podAntiAffinity` (required and preferred terms), `topologySpreadConstraints`
(with Kubernetes' defaults: minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore), the
containers' `hostPort`s and images. Mistakes are reported at the field, as every reader in
`vpolicy.load` does (`check` shows them; a broken term is dropped, never guessed at).

Called by `vpolicy.load.kinds.read_pod_spec`; it does not read anything else of the pod.
"""
from __future__ import annotations

from vpolicy.load import plain
from vpolicy.load.fields import View
from vpolicy.model import affinity, volumes

_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_UNSATISFIABLE = (affinity.DO_NOT_SCHEDULE, affinity.SCHEDULE_ANYWAY)
_POLICIES = ("Honor", "Ignore")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def read_relations(spec: View, containers: list[View], inits: list[View]) -> affinity.PodRelations:
    """The pod's affinity terms, spread constraints, host ports and images; NO_RELATIONS when none.
    `containers` and `inits` are the spec's containers and init containers as the caller read them
    (read twice, a broken one would be reported twice)."""
    block = spec.mapping("affinity")
    pod_affinity = block.mapping("podAffinity") if block else None
    anti = block.mapping("podAntiAffinity") if block else None
    relations = affinity.PodRelations(
        required_affinity=_required(pod_affinity), required_anti_affinity=_required(anti),
        preferred_affinity=_preferred(pod_affinity), preferred_anti_affinity=_preferred(anti),
        spread=tuple(c for c in (_spread(v) for v in spec.mappings("topologySpreadConstraints")) if c),
        host_ports=_host_ports(containers), images=_images([*inits, *containers]), claims=_claims(spec),
        inline_volumes=tuple(v for volume in spec.mappings("volumes") if (v := in_tree_volume(volume)) is not None))
    return relations if relations != affinity.NO_RELATIONS else affinity.NO_RELATIONS


def read_selector(view: View | None) -> affinity.LabelSelector | None:
    """A metav1.LabelSelector; None when absent (which matches nothing in a term)."""
    if view is None:
        return None
    labels = tuple(sorted(view.text_map("matchLabels").items()))
    expressions = []
    for item in view.mappings("matchExpressions"):
        key = item.text("key", required=True)
        if not item.has("operator"):
            item.missing("operator")
            continue
        operator = item.choice("operator", _LABEL_OPERATORS, default="")
        values = item.texts("values")
        if operator in ("In", "NotIn") and not values:
            item.bad_value("operator", f"{operator} needs at least one value", "add values: [...]")
            continue
        if operator in ("Exists", "DoesNotExist") and values:
            item.bad_value("values", f"must be empty for operator {operator}", "remove the values")
            continue
        if key and operator:
            expressions.append(affinity.Requirement(key, operator, tuple(values)))
    return affinity.LabelSelector(labels, tuple(expressions))


def _term(view: View, *, weight: int = 0) -> affinity.PodAffinityTerm | None:
    key = view.text("topologyKey", required=True)
    if not key:
        return None
    return affinity.PodAffinityTerm(
        topology_key=key, selector=read_selector(view.mapping("labelSelector")),
        namespaces=view.texts("namespaces"), namespace_selector=read_selector(view.mapping("namespaceSelector")),
        weight=weight, match_label_keys=view.texts("matchLabelKeys"),
        mismatch_label_keys=view.texts("mismatchLabelKeys"))


def _required(block: View | None) -> tuple[affinity.PodAffinityTerm, ...]:
    if block is None:
        return ()
    return tuple(t for t in (_term(v) for v in block.mappings(_REQUIRED)) if t)


def _preferred(block: View | None) -> tuple[affinity.PodAffinityTerm, ...]:
    if block is None:
        return ()
    out = []
    for item in block.mappings(_PREFERRED):
        weight = item.integer("weight", default=1, minimum=1)
        if weight > 100:
            item.bad_value("weight", f"must be at most 100, got {weight}", "use a weight from 1 to 100")
        term = item.mapping("podAffinityTerm", required=True)
        read = _term(term, weight=weight) if term is not None else None
        if read is not None:
            out.append(read)
    return tuple(out)


def _spread(view: View) -> affinity.SpreadConstraint | None:
    key = view.text("topologyKey", required=True)
    max_skew = view.integer("maxSkew", default=0, minimum=1)
    if not view.has("maxSkew"):
        view.missing("maxSkew")
    if not view.has("whenUnsatisfiable"):
        view.missing("whenUnsatisfiable")
    when = view.choice("whenUnsatisfiable", _UNSATISFIABLE, default=affinity.DO_NOT_SCHEDULE)
    min_domains = view.integer("minDomains", default=1, minimum=1)
    if not key or max_skew < 1:
        return None
    return affinity.SpreadConstraint(
        max_skew=max_skew, topology_key=key, when_unsatisfiable=when,
        selector=read_selector(view.mapping("labelSelector")), min_domains=min_domains,
        node_affinity_policy=view.choice("nodeAffinityPolicy", _POLICIES, default="Honor"),
        node_taints_policy=view.choice("nodeTaintsPolicy", _POLICIES, default="Ignore"),
        match_label_keys=view.texts("matchLabelKeys"))


def _host_ports(containers: list[View]) -> tuple[affinity.HostPort, ...]:
    """Every container's ports with a hostPort, as kube-scheduler's NodePorts collects them."""
    out = []
    for container in containers:
        for port in container.mappings("ports"):
            host_port = port.optional_integer("hostPort", minimum=0)
            if not host_port:
                continue
            if host_port > 65535:
                port.bad_value("hostPort", f"must be at most 65535, got {host_port}", "use a port from 1 to 65535")
                continue
            protocol = port.choice("protocol", _PROTOCOLS, default="TCP")
            out.append(affinity.HostPort(port.text("hostIP"), protocol, host_port))
    return tuple(out)


def _claims(spec: View) -> tuple[str, ...]:
    """The PersistentVolumeClaims the pod's volumes use: `persistentVolumeClaim.claimName`, and for a
    generic ephemeral volume the claim Kubernetes creates for it, `<pod>-<volume>`."""
    out = []
    for volume in spec.mappings("volumes"):
        claim = volume.mapping("persistentVolumeClaim")
        if claim is not None:
            name = claim.text("claimName", required=True)
            if name:
                out.append(name)
        elif volume.has("ephemeral"):
            out.append(f"{{pod}}-{volume.text('name')}")
    return tuple(out)


def in_tree_volume(source: View) -> volumes.AttachedVolume | None:
    """A volume source (a pod's volume, a PV's spec) of an in-tree plugin that CSI migration moves to a
    driver (`volumes.MIGRATABLE`), as NodeVolumeLimits counts it; None for any other source. The disk id
    is the handle (an EBS `aws://zone/vol-x` id counts as `vol-x`, as csi-translation-lib writes it)."""
    for plugin, (driver, key, id_key) in volumes.MIGRATABLE.items():
        found = source.mapping(key)
        if found is None:
            continue
        disk = found.text(id_key, required=True)
        if not disk:
            return None
        if plugin == "kubernetes.io/aws-ebs" and disk.startswith("aws://"):
            disk = disk.rsplit("/", 1)[-1]
        return volumes.AttachedVolume(driver, disk, plugin)
    return None


def _images(containers: list[View]) -> tuple[str, ...]:
    return tuple(image for c in containers if (image := c.text("image")))


def read_node_images(status: View | None) -> tuple[tuple[tuple[str, ...], int], ...]:
    """status.images: each image's names and size in bytes."""
    if status is None:
        return ()
    if type(status.node) is dict:  # as the API writes it (30 images a node, and more): read plain
        try:
            return _plain_images(status.node)
        except plain.NotPlain:
            pass  # read checked: the View readers report what is wrong
    return tuple((names, image.integer("sizeBytes", default=0, minimum=0))
                 for image in status.mappings("images") if (names := image.texts("names")))


def _plain_images(status: dict[str, object]) -> tuple[tuple[tuple[str, ...], int], ...]:
    out = []
    for image in plain.mappings(status, "images"):
        names = image.get("names")
        if names is None:
            continue
        if type(names) is not list or not all(type(name) is str for name in names):
            raise plain.NotPlain
        if not names:
            continue
        size = image.get("sizeBytes")
        if size is None:
            size = 0
        elif type(size) is not int or size < 0:
            raise plain.NotPlain
        out.append((tuple(names), size))
    return tuple(out)

"""Network-topology objects and fields -> `vpolicy.model.hypernodes`: HyperNode objects, and the
`networkTopology` / `subGroupPolicy` fields of PodGroups and vcjobs.

Field names and defaults are Volcano's API (`topology.volcano.sh/v1alpha1` HyperNode;
`scheduling.volcano.sh/v1beta1` PodGroup): a member's selector has exactly one of `exactMatch`,
`regexMatch`, `labelMatch` (the validating webhook's rule, `vpolicy.admission.hypernodes` says why);
`networkTopology.mode` defaults to `hard`. The tree the HyperNodes form, and what is wrong with it
(cycles, unknown members, a node in two domains of one tier), is `HyperNodeTree`'s; `check_topology`
turns its problems into located load errors.

This module does not walk files (`vpolicy.load.cluster` does).
"""
from __future__ import annotations

from typing import Sequence

from vpolicy.load.fields import Problems, View
from vpolicy.model import hypernodes as hn
from vpolicy.model import snapshot
from vpolicy.source import Span

_MEMBER_TYPES = ("Node", "HyperNode")
_MODES = ("hard", "soft")
_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def read_hypernode(obj: View) -> hn.HyperNode | None:
    from vpolicy.load.kinds import read_meta  # kinds imports this module for the PodGroup fields

    meta = read_meta(obj, namespaced=False)
    spec = obj.mapping("spec", required=True)
    if meta is None or spec is None:
        return None
    tier = spec.optional_integer("tier", minimum=0)
    if tier is None:
        if not spec.has("tier"):
            spec.missing("tier")
        return None
    members = []
    for view in spec.mappings("members"):
        member = _read_member(view)
        if member is not None:
            members.append(member)
    return hn.HyperNode(name=meta.name, tier=tier, tier_name=spec.text("tierName"), members=tuple(members),
                        labels=meta.labels, origin=meta.origin)


def _read_member(view: View) -> hn.Member | None:
    kind = view.choice("type", _MEMBER_TYPES, default="")
    if not kind:
        view.missing("type")
        return None
    sel = view.mapping("selector", required=True)
    if sel is None:
        return None
    chosen = [k for k in ("exactMatch", "regexMatch", "labelMatch") if sel.has(k)]
    if len(chosen) != 1:
        sel.bad_value("exactMatch" if not chosen else chosen[1],
                      "a member selector has exactly one of exactMatch, regexMatch, labelMatch"
                      + ("" if chosen else ", and none is set"),
                      "keep one way of choosing the members")
        return None
    if kind == "HyperNode" and chosen[0] != "exactMatch":
        sel.bad_value(chosen[0], "a HyperNode member is chosen by exactMatch only",
                      "name the member HyperNode with exactMatch: {name: ...}")
        return None
    if chosen[0] == "exactMatch":
        exact = sel.mapping("exactMatch")
        name = exact.text("name", required=True) if exact else ""
        return hn.Member(kind, hn.MemberSelector(exact=name)) if name else None  # type: ignore[arg-type]  # reason: choice() checked it
    if chosen[0] == "regexMatch":
        regex = sel.mapping("regexMatch")
        pattern = regex.text("pattern", required=True) if regex else ""
        return hn.Member(kind, hn.MemberSelector(regex=pattern)) if pattern else None  # type: ignore[arg-type]  # reason: choice() checked it
    labels = sel.mapping("labelMatch")
    if labels is None:
        return None
    match_labels, expressions = read_label_selector(labels)
    return hn.Member(kind, hn.MemberSelector(match_labels=match_labels,  # type: ignore[arg-type]  # reason: choice() checked it
                                             match_expressions=expressions))


def read_label_selector(view: View) -> tuple[dict[str, str], tuple[hn.LabelRequirement, ...]]:
    expressions = []
    for expr in view.mappings("matchExpressions"):
        key = expr.text("key", required=True)
        op = expr.choice("operator", _LABEL_OPERATORS, default="In")
        expressions.append(hn.LabelRequirement(key, op, expr.texts("values")))
    return view.text_map("matchLabels"), tuple(expressions)


def read_network_topology(spec: View | None) -> hn.NetworkTopology | None:
    """`spec.networkTopology` of a PodGroup, a vcjob, or a sub-group policy; None when absent."""
    view = spec.mapping("networkTopology") if spec is not None else None
    if view is None:
        return None
    mode = view.choice("mode", _MODES, default="hard")
    return hn.NetworkTopology(mode=mode,  # type: ignore[arg-type]  # reason: choice() checked it
                              highest_tier_allowed=view.optional_integer("highestTierAllowed", minimum=0),
                              highest_tier_name=view.text("highestTierName"))


def read_sub_group_policy(spec: View | None) -> tuple[hn.SubGroupPolicy, ...]:
    if spec is None:
        return ()
    out = []
    for view in spec.mappings("subGroupPolicy"):
        selector = view.mapping("labelSelector")
        match_labels, expressions = read_label_selector(selector) if selector else ({}, ())
        out.append(hn.SubGroupPolicy(
            name=view.text("name", required=True), network_topology=read_network_topology(view),
            sub_group_size=view.optional_integer("subGroupSize", minimum=1),
            min_sub_groups=view.integer("minSubGroups", default=0, minimum=0),
            match_labels=match_labels, match_expressions=expressions,
            match_label_keys=view.texts("matchLabelKeys")))
    return tuple(out)


def check_topology(hypernodes: Sequence[hn.HyperNode], nodes: Sequence[snapshot.Node], problems: Problems) -> None:
    """The tree's problems as errors at each HyperNode's name (cycles, unknown HyperNode members, a node
    or a HyperNode in two domains, a member's tier not below its parent's); a Node member naming no node
    of the cluster is a warning (it is ignored, as Volcano ignores it: nodes come and go)."""
    if not hypernodes:
        return
    tree = hn.HyperNodeTree(hypernodes, ((n.name, n.labels) for n in nodes))
    by_name = {h.name: h for h in hypernodes}
    for problem in tree.problems:
        origin = by_name[problem.hypernode].origin
        span = origin if isinstance(origin, Span) else Span("<hypernodes>", 1, 1)
        if problem.warning:
            problems.warn(span, problem.message)
        else:
            problems.error(problem.code, problem.message, span, problem.help)

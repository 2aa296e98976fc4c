"""Volcano's HyperNode webhook (hypernodes/validate, on create and update): each member has a known
type (Node or HyperNode) and a selector with exactly one of exactMatch, regexMatch and labelMatch;
an exactMatch name is a qualified name; a regexMatch pattern is non-empty and compiles; a labelMatch
selects something (matchLabels or matchExpressions); a HyperNode member is chosen by exactMatch only;
spec.tier is an integer >= 0.

What needs the whole set of HyperNodes (cycles, unknown members, a node in two domains of one tier)
is not an admission rule in Volcano either: `vpolicy check` reports it from the loader
(`vpolicy.model.hypernodes.HyperNodeTree`).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vpolicy.admission.common import Violation, integer

_SELECTORS = ("exactMatch", "regexMatch", "labelMatch")
# Kubernetes' qualified name: an optional DNS-subdomain prefix and "/", then up to 63 characters of
# alphanumerics, '-', '_', '.', starting and ending alphanumeric.
_QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                        r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def validate_hypernode(hypernode: Mapping[str, Any]) -> list[Violation]:
    out: list[Violation] = []
    spec = hypernode.get("spec") or {}
    tier = integer(spec.get("tier"))
    if tier is None or tier < 0:
        out.append(Violation("admission.hypernode-tier", "spec.tier", "tier must be an integer >= 0"))
    for index, member in enumerate(spec.get("members") or []):
        where = f"spec.members[{index}]"
        if not isinstance(member, Mapping):
            out.append(Violation("admission.hypernode-member", where, "a member is a mapping with type and selector"))
            continue
        kind = member.get("type")
        if kind not in ("Node", "HyperNode"):
            out.append(Violation("admission.hypernode-member-type", f"{where}.type",
                                 f"unknown member type {kind!r}: Node or HyperNode"))
        out.extend(_selector(member.get("selector") or {}, f"{where}.selector", kind))
    return out


def _selector(selector: Mapping[str, Any], where: str, kind: Any) -> list[Violation]:
    chosen = [k for k in _SELECTORS if selector.get(k) is not None]
    if len(chosen) != 1:
        what = "none is set" if not chosen else f"{' and '.join(chosen)} are set"
        return [Violation("admission.hypernode-selector", where,
                          f"a member selector has exactly one of exactMatch, regexMatch, labelMatch ({what})")]
    key = chosen[0]
    value = selector[key] if isinstance(selector[key], Mapping) else {}
    if kind == "HyperNode" and key != "exactMatch":
        return [Violation("admission.hypernode-selector", f"{where}.{key}",
                          "a HyperNode member is chosen by exactMatch only")]
    if key == "exactMatch":
        name = str(value.get("name") or "")
        if not name:
            return [Violation("admission.hypernode-selector", f"{where}.exactMatch.name",
                              "member exactMatch name is required")]
        if not _QUALIFIED.match(name):
            return [Violation("admission.hypernode-selector", f"{where}.exactMatch.name",
                              f"{name!r} is not a qualified name")]
        return []
    if key == "regexMatch":
        pattern = str(value.get("pattern") or "")
        if not pattern:
            return [Violation("admission.hypernode-selector", f"{where}.regexMatch.pattern",
                              "member regexMatch pattern is required")]
        try:
            re.compile(pattern)
        except re.error as exc:
            return [Violation("admission.hypernode-selector", f"{where}.regexMatch.pattern",
                              f"member regexMatch pattern is invalid: {exc}")]
        return []
    if not value.get("matchLabels") and not value.get("matchExpressions"):
        return [Violation("admission.hypernode-selector", f"{where}.labelMatch",
                          "member labelMatch needs matchLabels or matchExpressions")]
    return []

"""Volcano's HyperNode validating webhook rules (`vpolicy.admission.hypernodes`), and the route the
webhook server gives them."""
from __future__ import annotations

from typing import Any

import pytest

from cluster_adapter.controllers import webhook
from vpolicy.admission import hypernodes


def hypernode(*members: dict[str, Any], tier: Any = 1) -> dict[str, Any]:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "h"},
            "spec": {"tier": tier, "members": list(members)}}


def member(kind: str, **selector: Any) -> dict[str, Any]:
    return {"type": kind, "selector": selector}


@pytest.mark.parametrize("obj, field, code", [
    pytest.param(hypernode(member("Node", exactMatch={"name": "n1"}), member("HyperNode", exactMatch={"name": "s0"})),
                 None, None, id="valid"),
    pytest.param(hypernode(member("Node", labelMatch={"matchLabels": {"rack": "r1"}})), None, None, id="labels"),
    pytest.param(hypernode(member("Switch", exactMatch={"name": "n1"})), "spec.members[0].type",
                 "admission.hypernode-member-type", id="unknown-type"),
    pytest.param(hypernode(member("Node")), "spec.members[0].selector", "admission.hypernode-selector",
                 id="no-selector"),
    pytest.param(hypernode(member("Node", exactMatch={"name": "n1"}, regexMatch={"pattern": "n.*"})),
                 "spec.members[0].selector", "admission.hypernode-selector", id="two-selectors"),
    pytest.param(hypernode(member("Node", regexMatch={"pattern": "n[("})), "spec.members[0].selector.regexMatch.pattern",
                 "admission.hypernode-selector", id="bad-regex"),
    pytest.param(hypernode(member("Node", exactMatch={"name": "Bad Name!"})),
                 "spec.members[0].selector.exactMatch.name", "admission.hypernode-selector", id="unqualified-name"),
    pytest.param(hypernode(member("HyperNode", regexMatch={"pattern": "s.*"})),
                 "spec.members[0].selector.regexMatch", "admission.hypernode-selector", id="hypernode-by-regex"),
    pytest.param(hypernode(member("Node", labelMatch={})), "spec.members[0].selector.labelMatch",
                 "admission.hypernode-selector", id="empty-label-match"),
    pytest.param(hypernode(tier=-1), "spec.tier", "admission.hypernode-tier", id="negative-tier"),
])
def test_hypernode_rules(obj: dict[str, Any], field: str | None, code: str | None) -> None:
    found = [(v.field, v.code) for v in hypernodes.validate_hypernode(obj)]
    assert found == ([] if code is None else [(field, code)])


def test_the_webhook_refuses_a_bad_hypernode_and_admits_a_good_one() -> None:
    handler = webhook.ROUTES["/hypernodes/validate"]
    bad = handler({"operation": "CREATE", "object": hypernode(member("Node"))}, None, "volcano")
    good = handler({"operation": "CREATE", "object": hypernode(member("Node", exactMatch={"name": "n1"}))}, None,
                   "volcano")
    assert (bad["allowed"], good["allowed"]) == (False, True)
    assert "exactly one of exactMatch, regexMatch, labelMatch" in bad["status"]["message"]

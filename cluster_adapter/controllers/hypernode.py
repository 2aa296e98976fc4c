"""HyperNode controller: keeps `topology.volcano.sh/v1alpha1` HyperNodes in step with the network
topology the cluster reports (Volcano's hypernode controller and its discovery manager).

The sources are listed in the controller ConfigMap (`volcano-system/volcano-controller-configmap`, key
`volcano-controller.conf`), as Volcano reads them:

    networkTopologyDiscovery:
    - source: label
      enabled: true
      config:
        networkTopologyTypes:
          topologyA:                      # one tree per type, its labels from the top tier down
          - nodeLabel: volcano.sh/hypercluster
          - nodeLabel: volcano.sh/hypernode
          - nodeLabel: kubernetes.io/hostname   # the node itself: the last entry is dropped

- `label` (implemented): for each type, a node's value of the label just above the hostname names its
  tier-1 HyperNode (members: Nodes), the next label up its tier-2 HyperNode (members: the tier-1
  HyperNodes), and so on; a node missing a label stops its chain there. Each HyperNode gets the labels
  `volcano.sh/network-topology-source: label` and `<nodeLabel>: <value>`, and `tierName` = the label
  key. An existing discovered HyperNode with the same label and value keeps its name; a new one is
  named `hypernode-<type>-tier<N>-<value>` (Volcano appends a random suffix instead; a name from the
  value is stable across restarts and readable). Discovered HyperNodes are created, updated when their
  members change, and deleted when no node carries their label value any more; HyperNodes from other
  sources, or written by hand, are never touched.
- Every HyperNode's `status.nodeCount` is kept: the nodes under it, members of members included.
- `ufm` and `roce` (InfiniBand UFM and RoCE fabric managers): behind the same `Discoverer` interface
  but NOT IMPLEMENTED: an enabled one logs a warning once per sync and discovers nothing.

A node added, deleted or relabelled, a discovered HyperNode deleted by hand, or the ConfigMap changing
re-runs discovery (one whole pass; it is cheap next to the scheduler's sessions). Admission rules for
HyperNodes written by hand are `vpolicy.admission.hypernodes`'.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from cluster_adapter.controllers.api import CONFIGMAPS, NODES
from cluster_adapter.controllers.framework import Controller, register
from cluster_adapter.controllers.options import Options
from cluster_adapter.kube.client import HYPERNODES, APIConflict
import vpolicy
from vpolicy.model.hypernodes import HyperNodeTree

log = logging.getLogger(__name__)

CONFIG_NAMESPACE = "volcano-system"
CONFIG_NAME = "volcano-controller-configmap"
CONFIG_KEY = "volcano-controller.conf"
SOURCE_LABEL = "volcano.sh/network-topology-source"
_TYPE_NAME_LIMIT = 20  # Volcano skips a topology type whose name is longer
_DISCOVER = ("discover",)


@dataclass(frozen=True, slots=True)
class DesiredHyperNode:
    name: str
    tier: int
    tier_name: str
    member_type: str  # Node | HyperNode
    members: tuple[str, ...]
    labels: dict[str, str] = field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        return {"apiVersion": HYPERNODES.api_version, "kind": HYPERNODES.kind,
                "metadata": {"name": self.name, "labels": dict(self.labels)},
                "spec": {"tier": self.tier, "tierName": self.tier_name,
                         "members": [{"type": self.member_type, "selector": {"exactMatch": {"name": m}}}
                                     for m in self.members]}}


class Discoverer(Protocol):
    """One source of topology: the HyperNodes it sees, given the cluster's nodes and the existing
    HyperNodes it discovered before (for stable names)."""

    name: str

    def discover(self, nodes: list[dict[str, Any]], existing: list[dict[str, Any]]) -> list[DesiredHyperNode]: ...


class NotImplementedDiscoverer:
    """A source vpolicy does not read yet (UFM, RoCE): enabled, it warns and discovers nothing."""

    def __init__(self, name: str) -> None:
        self.name = name

    def discover(self, nodes: list[dict[str, Any]], existing: list[dict[str, Any]]) -> list[DesiredHyperNode]:
        log.warning("hypernode-controller: discovery source %r is not implemented; it discovers nothing", self.name)
        return []


class LabelDiscoverer:
    """Volcano's `label` source: HyperNode trees from node labels (see the module docstring)."""

    name = "label"

    def __init__(self, config: Any) -> None:
        self.types: dict[str, list[str]] = parse_label_config(config)

    def discover(self, nodes: list[dict[str, Any]], existing: list[dict[str, Any]]) -> list[DesiredHyperNode]:
        known = {(k, v): h["metadata"]["name"] for h in existing
                 for k, v in ((h.get("metadata") or {}).get("labels") or {}).items() if k != SOURCE_LABEL}
        found: dict[str, dict[str, Any]] = {}
        names: dict[tuple[str, str], str] = {}
        for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
            labels = (node.get("metadata") or {}).get("labels") or {}
            for type_name, keys in sorted(self.types.items()):
                member = node["metadata"]["name"]
                for index, key in enumerate(keys):
                    value = labels.get(key)
                    if value is None:
                        break
                    tier = index + 1
                    name = names.get((key, value)) or known.get((key, value)) or _name(type_name, tier, value)
                    names[(key, value)] = name
                    entry = found.setdefault(name, {"tier": tier, "key": key, "value": value, "members": set()})
                    entry["members"].add(member)
                    member = name
        return [DesiredHyperNode(name, e["tier"], e["key"], "Node" if e["tier"] == 1 else "HyperNode",
                                 tuple(sorted(e["members"])), {SOURCE_LABEL: self.name, e["key"]: e["value"]})
                for name, e in sorted(found.items())]


def parse_label_config(config: Any) -> dict[str, list[str]]:
    """topology type -> its label keys from tier 1 up (the hostname entry dropped, as Volcano does);
    a type with a name over 20 characters or a repeated label is skipped with a warning."""
    types = (config or {}).get("networkTopologyTypes") if isinstance(config, dict) else None
    out: dict[str, list[str]] = {}
    for name, entries in (types or {}).items():
        keys = [str(e.get("nodeLabel", "")) for e in entries or [] if isinstance(e, dict)]
        if len(str(name)) > _TYPE_NAME_LIMIT:
            log.warning("hypernode-controller: topology type %r: name longer than %d", name, _TYPE_NAME_LIMIT)
            continue
        if len(set(keys)) != len(keys):
            log.warning("hypernode-controller: topology type %r lists a label twice", name)
            continue
        out[str(name)] = list(reversed(keys[:-1]))
    return out


def discoverers(conf_text: str) -> list[Discoverer]:
    """The enabled sources of the controller conf; a conf that does not parse enables none."""
    try:
        conf = YAML(typ="safe", pure=True).load(conf_text) or {}
    except YAMLError as exc:
        log.warning("hypernode-controller: %s does not parse: %s", CONFIG_KEY, exc)
        return []
    out: list[Discoverer] = []
    for source in (conf.get("networkTopologyDiscovery") or []) if isinstance(conf, dict) else []:
        if not isinstance(source, dict) or not source.get("enabled"):
            continue
        if source.get("source") == "label":
            out.append(LabelDiscoverer(source.get("config")))
        else:
            out.append(NotImplementedDiscoverer(str(source.get("source"))))
    return out


def _name(type_name: str, tier: int, value: str) -> str:
    cleaned = re.sub(r"[^a-z0-9.-]", "-", f"{type_name}".lower())
    tail = re.sub(r"[^a-z0-9.-]", "-", value.lower()).strip("-.") or "x"
    return f"hypernode-{cleaned}-tier{tier}-{tail}"[:253]


@register
class HyperNodeController(Controller):
    name = "hypernode-controller"
    resources = (NODES, HYPERNODES, CONFIGMAPS)

    def setup(self, options: Options) -> None:
        options.store.on(NODES.name, self._on_node)
        options.store.on(HYPERNODES.name, self._on_hypernode)
        options.store.on(CONFIGMAPS.name, self._on_configmap)
        self.work.add(_DISCOVER)

    def key_of(self, item: Any) -> str:
        return "/".join(item)

    def _on_node(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event != "MODIFIED" or old is None or _labels(obj) != _labels(old):
            self.work.add(_DISCOVER)

    def _on_hypernode(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event == "DELETED":
            self.work.add(_DISCOVER)

    def _on_configmap(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        meta = obj.get("metadata") or {}
        if (meta.get("namespace"), meta.get("name")) == (CONFIG_NAMESPACE, CONFIG_NAME):
            self.work.add(_DISCOVER)

    def process(self, item: Any) -> None:
        store, api = self.opts.store, self.opts.api
        cm = store.get(CONFIGMAPS.name, CONFIG_NAMESPACE, CONFIG_NAME)
        sources = discoverers(str(((cm or {}).get("data") or {}).get(CONFIG_KEY, "")))
        nodes = store.list(NODES.name)
        existing = store.list(HYPERNODES.name)
        for source in sources:
            mine = [h for h in existing if _labels(h).get(SOURCE_LABEL) == source.name]
            desired = {d.name: d for d in source.discover(nodes, mine)}
            for hypernode in mine:
                if hypernode["metadata"]["name"] not in desired:
                    api.delete(HYPERNODES, "", hypernode["metadata"]["name"])
                    log.info("deleted HyperNode %s (no node carries it any more)", hypernode["metadata"]["name"])
            current = {h["metadata"]["name"]: h for h in existing}
            for name, want in desired.items():
                have = current.get(name)
                manifest = want.manifest()
                if have is None:
                    try:
                        api.create(HYPERNODES, manifest)
                        log.info("created HyperNode %s (tier %d, %d members)", name, want.tier, len(want.members))
                    except APIConflict:
                        self.work.add(_DISCOVER)  # made meanwhile: compare on the next pass
                elif _labels(have).get(SOURCE_LABEL) != source.name:
                    log.warning("HyperNode %s exists and was not discovered from %s: left alone", name, source.name)
                elif (have.get("spec") or {}) != manifest["spec"] or not _has_labels(have, want.labels):
                    api.patch(HYPERNODES, "", name, {"metadata": {"labels": want.labels}, "spec": manifest["spec"]})
                    log.info("updated HyperNode %s (%d members)", name, len(want.members))
        self._node_counts()

    def _node_counts(self) -> None:
        """`status.nodeCount` of every HyperNode: the nodes under it, members of members included (as
        Volcano's controller keeps it)."""
        store, api = self.opts.store, self.opts.api
        nodes, hypernodes = store.list(NODES.name), store.list(HYPERNODES.name)
        if not hypernodes:
            return
        snapshot = vpolicy.snapshot_from_objects([*nodes, *hypernodes], strict=False)
        tree = HyperNodeTree(snapshot.hypernodes, ((n.name, n.labels) for n in snapshot.nodes))
        for h in hypernodes:
            name = h["metadata"]["name"]
            count = len(tree.real_nodes.get(name, ()))
            if (h.get("status") or {}).get("nodeCount") != count:
                api.patch(HYPERNODES, "", name, {"status": {"nodeCount": count}}, subresource="status")


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _has_labels(obj: dict[str, Any], wanted: dict[str, str]) -> bool:
    have = _labels(obj)
    return all(have.get(k) == v for k, v in wanted.items())

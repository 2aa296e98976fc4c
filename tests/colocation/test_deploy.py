"""deploy/agent.yaml agrees with the code: the DaemonSet's flags parse, its ConfigMap validates, and its
RBAC allows every call a colocation pass makes (evictions included) and nothing destructive."""
from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from cluster_adapter.colocation import agent, api, cgroups, config, probes
from cluster_adapter.gpu_agent import cli
from tests.colocation import fakes

kubeemu = pytest.importorskip("tests.adapter.kubeemu")
server = pytest.importorskip("tests.adapter.kubeemu.server")
DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
GiB = 1 << 30


def objects() -> list[dict[str, Any]]:
    return [d for d in YAML(typ="safe", pure=True).load_all((DEPLOY / "agent.yaml").read_text(encoding="utf-8")) if d]


@pytest.fixture
def emu() -> Iterator[Any]:
    thread = kubeemu.EmulatorThread().start()
    yield thread
    thread.stop()


def test_the_daemonset_runs_the_agent_with_flags_it_accepts() -> None:
    daemonset = next(o for o in objects() if o["kind"] == "DaemonSet")
    [container] = daemonset["spec"]["template"]["spec"]["containers"]
    parser = argparse.ArgumentParser(prog="vpolicy")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(container["args"])
    assert (args.features, args.metrics_port, args.config_namespace) == ("auto", 3300, config.DEFAULT_NAMESPACE)
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {str(args.cgroup_root), str(args.proc_root), str(args.kubelet_root_dir)} <= mounts
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 3300}


def test_the_shipped_configmap_is_volcanos_defaults() -> None:
    configmap = next(o for o in objects() if o["kind"] == "ConfigMap")
    assert configmap["metadata"] == {"name": config.CONFIG_MAP_NAME, "namespace": config.DEFAULT_NAMESPACE}
    document = config.parse_document(configmap["data"][config.CONFIG_KEY])
    node = fakes.node(labels={config.OVERSUBSCRIPTION_LABEL: "true"})
    assert config.for_node(document, node) == config.for_node(None, node)


def allowed(rules: list[dict[str, Any]], resource: str, verb: str, name: str | None) -> bool:
    return any("" in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"]
               and (not r.get("resourceNames") or name in r["resourceNames"]) for r in rules)


def test_rbac_allows_every_call_of_a_pass_and_nothing_destructive(emu: Any, tmp_path: Path) -> None:
    configmap = next(o for o in objects() if o["kind"] == "ConfigMap")
    node = fakes.node(labels={config.OVERSUBSCRIPTION_LABEL: "true"})
    be = fakes.pod("etl", level="BE", batch_cpu=1000, batch_memory=GiB)
    emu.call(lambda e: [e.put_object(node), e.put_object(configmap), e.put_object(be)])
    tree = fakes.make_tree(tmp_path, "v2", "cgroupfs", [])
    probe = probes.StaticProbe(probes.Usage(7500, 2 * GiB, 1000, 0))  # 93 %: evicts at once (limit 1 below)
    colo = agent.ColocationAgent(agent.ColocationSettings("n1"), cgroups.writer_for(tree), probe)
    client = api.KubernetesColocationApi(str(server.write_kubeconfig(emu.url, tmp_path / "kubeconfig")))
    document = json.loads(configmap["data"][config.CONFIG_KEY])
    document["globalConfig"]["evictingConfig"]["highUsageCountLimit"] = 1
    emu.call(lambda e: e.put_object({**configmap, "data": {config.CONFIG_KEY: json.dumps(document)}}))
    report = api.run_once(colo, client, api.ConfigSource(), now=0)
    assert report.errors == [] and report.tick is not None
    assert [e.pod.name for e in report.tick.evictions] == ["etl"]
    cluster_rules = next(o for o in objects() if o["kind"] == "ClusterRole")["rules"]
    role_rules = next(o for o in objects() if o["kind"] == "Role")["rules"]
    verbs = {"list": "list", "get": "get", "patch": "patch", "evict": "create"}
    calls = {(r.call.plural, r.call.subresource or ("eviction" if r.call.verb == "evict" else None),
              verbs[r.call.verb], r.call.name) for r in emu.call(lambda e: e.records)}
    assert {(c[0], c[2]) for c in calls} >= {("nodes", "get"), ("nodes", "patch"), ("pods", "list"),
                                            ("configmaps", "get"), ("pods", "create")}
    for plural, sub, verb, name in calls:
        resource = f"{plural}/{sub}" if sub else plural
        rules = role_rules if plural == "configmaps" else cluster_rules
        assert allowed(rules, resource, verb, name), (resource, verb, name)
    for rule in cluster_rules + role_rules:
        assert not {"delete", "deletecollection", "*", "escalate", "impersonate", "update"} & set(rule["verbs"])

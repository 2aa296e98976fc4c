"""deploy/ agrees with the code: the CRDs declare what the emulator serves (and Volcano has), RBAC
allows every call a scheduler session makes and nothing destructive, the Deployment's flags parse."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from cluster_adapter import cli as scheduler_cli
from cluster_adapter.config import SchedulerSettings
from cluster_adapter.kube.client import KubeClient
from cluster_adapter.scheduler import Scheduler
from tests.adapter.conftest import EXAMPLE, FAST_APPLY, FAST_INFORMERS, ROOT, load, read_objects
from tests.adapter.kubeemu import EmulatorThread
from tests.adapter.kubeemu.resources import RESOURCES

DEPLOY = ROOT / "deploy"


def objects(name: str) -> list[dict[str, Any]]:
    yaml = YAML(typ="safe", pure=True)
    return [d for d in yaml.load_all((DEPLOY / name).read_text(encoding="utf-8")) if d]


def all_objects() -> list[dict[str, Any]]:
    return [o for f in sorted(DEPLOY.glob("*.yaml")) if f.name != "kustomization.yaml" for o in objects(f.name)]


def test_kustomization_lists_every_manifest() -> None:
    [kustomization] = objects("kustomization.yaml")
    assert sorted(kustomization["resources"]) == sorted(f.name for f in DEPLOY.glob("*.yaml")
                                                         if f.name != "kustomization.yaml")


@pytest.mark.parametrize("kind", ["Queue", "PodGroup", "Job", "CronJob", "HyperNode"])
def test_crds_match_volcano_and_the_emulator(kind: str) -> None:
    crd = next(o for o in objects("crds.yaml") if o["spec"]["names"]["kind"] == kind)
    served = next(r for r in RESOURCES if r.kind == kind and r.group.endswith("volcano.sh"))
    [version] = crd["spec"]["versions"]
    assert (crd["spec"]["group"], version["name"], crd["spec"]["names"]["plural"]) == \
        (served.group, served.version, served.plural)
    assert crd["metadata"]["name"] == f"{served.plural}.{served.group}"
    assert (crd["spec"]["scope"] == "Namespaced") == served.namespaced
    assert set(version.get("subresources") or {}) == ({"status"} if served.has_status else set())


def allowed(rules: list[dict[str, Any]], group: str, resource: str, verb: str, name: str | None) -> bool:
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"]
               and (not r.get("resourceNames") or name in r["resourceNames"]) for r in rules)


def test_rbac_allows_every_call_of_a_session_and_nothing_destructive(emu: EmulatorThread,
                                                                      client: KubeClient) -> None:
    load(emu, read_objects(EXAMPLE))
    settings = SchedulerSettings(once=True, apply=FAST_APPLY, informers=FAST_INFORMERS, conf=str(
        ROOT / "examples" / "volcano-scheduler.conf"), leader=SchedulerSettings().leader.__class__(enabled=True))
    scheduler = Scheduler(client, settings)
    try:
        assert scheduler.run() == 0
    finally:
        scheduler.stop.set()
    rbac = objects("rbac.yaml")
    cluster_rules = next(o for o in rbac if o["kind"] == "ClusterRole")["rules"]
    lease_rules = next(o for o in rbac if o["kind"] == "Role")["rules"]
    http_to_rbac = {"list": "list", "watch": "watch", "get": "get", "create": "create", "bind": "create",
                    "evict": "create", "patch": "patch", "update": "update"}
    calls = {(r.call.kind.group, r.call.plural, r.call.subresource or
              {"bind": "binding", "evict": "eviction"}.get(r.call.verb), http_to_rbac[r.call.verb], r.call.name)
             for r in emu.call(lambda e: e.records)}
    assert {c[1] for c in calls} >= {"pods", "nodes", "podgroups", "queues", "leases", "events"}
    for group, plural, sub, verb, name in calls:
        resource = f"{plural}/{sub}" if sub else plural
        rules = lease_rules if plural == "leases" else cluster_rules
        assert allowed(rules, group, resource, verb, name), (group, resource, verb, name)
    for rule in cluster_rules + lease_rules:
        assert not {"delete", "deletecollection", "*", "escalate", "impersonate"} & set(rule["verbs"])
        assert not {"secrets", "configmaps", "*"} & set(rule["resources"])


def test_the_deployment_runs_the_scheduler_with_flags_it_accepts() -> None:
    deployment = next(o for o in objects("deployment.yaml") if o["kind"] == "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    parser = argparse.ArgumentParser(prog="vpolicy")
    scheduler_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(container["args"])
    settings = scheduler_cli.settings_from(args)
    assert settings.leader.enabled and settings.metrics_port == 8080 and settings.scheduler_name == "volcano"
    assert settings.conf == "/etc/vpolicy/volcano-scheduler.conf"
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "conf"]
    configmap = next(o for o in objects("configmap.yaml"))
    assert mount["mountPath"] == str(Path(settings.conf).parent)
    assert "volcano-scheduler.conf" in configmap["data"]
    sa = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    assert any(o["kind"] == "ServiceAccount" and o["metadata"]["name"] == sa for o in objects("rbac.yaml"))


def test_the_shipped_conf_loads(tmp_path: Path) -> None:
    import vpolicy

    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(next(o for o in objects("configmap.yaml"))["data"]["volcano-scheduler.conf"])
    assert vpolicy.resolve_policy(None, conf=str(conf)).actions == ("enqueue", "allocate", "backfill")

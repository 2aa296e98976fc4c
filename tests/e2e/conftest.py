"""Session fixtures of the e2e suite: the real control plane (scripts/control-plane up --fresh, built
once into ~/.cache/vpolicy; this session's own cluster, its files in a temporary directory), deploy/'s namespace and RBAC, and vpolicy's admission webhook registered
with real Mutating/ValidatingWebhookConfigurations over TLS (a CA made here). Every test in this
directory is marked `e2e`.

Without Go the build cannot happen and every e2e test errors with the build's message: the suite is
meant to run (CI has Go and the module proxy), so a missing toolchain must show, not skip.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cluster import DEPLOY, Cluster, Component, control_plane, eventually

WEBHOOKS = {  # Volcano's admission paths, what each one is registered for
    "jobs": ("batch.volcano.sh", "v1alpha1", "jobs", ["CREATE"], ["CREATE", "UPDATE"]),
    "queues": ("scheduling.volcano.sh", "v1beta1", "queues", ["CREATE"], ["CREATE", "UPDATE", "DELETE"]),
    "podgroups": ("scheduling.volcano.sh", "v1beta1", "podgroups", ["CREATE"], ["CREATE"]),
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    workdir = Path(tempfile.mkdtemp(prefix="vpolicy-e2e-"))
    up = control_plane(workdir / "control-plane", "up", "--fresh")
    if up.returncode != 0:
        pytest.fail(f"scripts/control-plane up failed:\n{up.stderr[-6000:]}", pytrace=False)
    kubeconfig = Path(up.stdout.strip().splitlines()[-1])
    env = json.loads(control_plane(workdir / "control-plane", "env", "--json").stdout)
    c = Cluster(kubeconfig, env, workdir)
    for manifest in ("namespace.yaml", "rbac.yaml", "controllers-rbac.yaml"):
        c.apply_file(DEPLOY / manifest)
    try:
        yield c
    finally:
        c.control_plane("down", timeout=120)
        if not os.environ.get("VPOLICY_E2E_KEEP"):  # set it to read the logs and the audit log after
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def webhook(cluster: Cluster) -> Iterator[Component]:
    """`vpolicy webhook` under its ServiceAccount, called by the API server over TLS for vcjobs, queues
    and podgroups (failurePolicy Fail: nothing of those is admitted without it)."""
    from controlplane import certs

    ca_dir = cluster.workdir / "webhook-pki"
    cert, key = certs.issue(ca_dir, "webhook", "vpolicy-webhook", ips=["127.0.0.1"], dns=["localhost"],
                            server=True)
    kubeconfig = cluster.service_account_kubeconfig("vpolicy-webhook")
    proc = Component("webhook", ["webhook", "--tls-cert", str(cert), "--tls-key", str(key), "--port", "0",
                                 "--address", "127.0.0.1", "--kubeconfig", str(kubeconfig)], cluster.workdir)
    line = eventually(lambda: next((ln for ln in proc.output().splitlines() if "serving admission" in ln), None),
                      30, "the webhook's first line")
    url = line.rsplit(" ", 1)[-1]
    bundle = base64.b64encode((ca_dir / "ca.crt").read_bytes()).decode()
    for kind, verb_index in (("Mutating", 3), ("Validating", 4)):
        verb = "mutate" if kind == "Mutating" else "validate"
        hooks = []
        for name, spec in WEBHOOKS.items():
            group, version, plural, *ops = spec
            hooks.append({"name": f"{verb}-{name}.volcano.sh", "admissionReviewVersions": ["v1"],
                          "sideEffects": "None", "failurePolicy": "Fail", "timeoutSeconds": 10,
                          "clientConfig": {"url": f"{url}/{name}/{verb}", "caBundle": bundle},
                          "rules": [{"apiGroups": [group], "apiVersions": [version], "resources": [plural],
                                     "operations": spec[verb_index]}]})
        cluster.apply({"apiVersion": "admissionregistration.k8s.io/v1", "kind": f"{kind}WebhookConfiguration",
                       "metadata": {"name": f"vpolicy-{verb}"}, "webhooks": hooks})
    try:
        yield proc
    finally:
        for kind, verb in (("mutating", "mutate"), ("validating", "validate")):
            cluster.admin.call("DELETE", f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations/"
                                         f"vpolicy-{verb}")
        proc.stop()


@pytest.fixture
def components(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[list[Component]]:
    """The processes a test starts; stopped at its end, their logs printed if it failed."""
    started: list[Component] = []
    yield started
    for proc in started:
        proc.stop()
    cluster.retire()
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        for proc in started:
            print(f"==== {proc.name}\n{proc.output()[-4000:]}")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)

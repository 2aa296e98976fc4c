"""`vpolicy webhook`: AdmissionReview over HTTPS on 127.0.0.1 with a self-signed certificate made here."""
from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cluster_adapter.controllers import webhook
from cluster_adapter.kube.client import KubeClient
from tests.adapter.conftest import queue
from tests.adapter.kubeemu import EmulatorThread
from tests.controllers.conftest import create

LOOPBACK = "127.0.0.1"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vpolicy-webhook")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(LOOPBACK))]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "tls.crt", folder / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture
def server(certificate: tuple[Path, Path], emu: EmulatorThread, client: KubeClient) -> Iterator[str]:
    create(emu, queue("default"), {**queue("closed"), "status": {"state": "Closed"}})
    running = webhook.serve(LOOPBACK, 0, cert=str(certificate[0]), key=str(certificate[1]),
                            lookup=webhook.ClusterLookup(client))
    thread = threading.Thread(target=running.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"https://{LOOPBACK}:{running.server_address[1]}"
    running.shutdown()
    running.server_close()


def post(url: str, path: str, request: dict[str, Any], cert: Path) -> dict[str, Any]:
    context = ssl.create_default_context(cafile=str(cert))
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()
    req = urllib.request.Request(url + path, data=body, headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, context=context, timeout=10) as answer:  # noqa: S310  # reason: loopback https
        return dict(json.loads(answer.read()))["response"]


def vcjob(queue_name: str, min_available: int = 1) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
            "spec": {"queue": queue_name, "minAvailable": min_available,
                     "tasks": [{"name": "w", "replicas": 2, "template": {}}]}}


def test_validating_webhook_allows_and_denies_with_one_message(server: str, certificate: tuple[Path, Path]) -> None:
    ok = post(server, "/jobs/validate", {"uid": "1", "operation": "CREATE", "object": vcjob("default")}, certificate[0])
    assert ok == {"allowed": True, "uid": "1"}
    denied = post(server, "/jobs/validate", {"uid": "2", "operation": "CREATE", "object": vcjob("closed", 5)},
                  certificate[0])
    assert denied["allowed"] is False and denied["status"]["code"] == 400
    assert denied["status"]["message"] == (
        "spec.minAvailable: job 'minAvailable' (5) should not be greater than total replicas in tasks (2); "
        "spec.queue: can only submit job to queue with state `Open`, queue `closed` status is `Closed`")


def test_mutating_webhook_answers_a_json_patch(server: str, certificate: tuple[Path, Path]) -> None:
    answer = post(server, "/queues/mutate", {"uid": "3", "operation": "CREATE",
                                             "object": {"metadata": {"name": "q"}, "spec": {}}}, certificate[0])
    assert answer["allowed"] is True and answer["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(answer["patch"])) == [
        {"op": "replace", "path": "/spec", "value": {"weight": 1, "reclaimable": True}}]


def test_queue_delete_is_refused_for_default(server: str, certificate: tuple[Path, Path]) -> None:
    answer = post(server, "/queues/validate", {"uid": "4", "operation": "DELETE", "name": "default"}, certificate[0])
    assert answer["allowed"] is False and answer["status"]["code"] == 403

"""A throwaway CA on disk and the certificates the control plane's components present (ECDSA P-256).

The CA also signs whatever else a test needs to be trusted by the API server (the admission webhook's
serving certificate: `issue`). Client certificates carry the user (CN) and groups (O) the API server
authenticates, so each component acts under its own name and RBAC.
"""
from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID = datetime.timedelta(days=365)
CLIENTS = {  # file stem -> (user, groups)
    "admin": ("vpolicy-admin", ["system:masters"]),
    "kube-controller-manager": ("system:kube-controller-manager", []),
    "kwok": ("kwok", ["system:masters"]),  # plays every kubelet: writes any node's and pod's status
}
APISERVER_NAMES = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                   "kubernetes.default.svc.cluster.local"]
APISERVER_IPS = ["127.0.0.1", "10.96.0.1"]


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _write_cert(cert: x509.Certificate, path: Path) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(common: str, orgs: list[str] | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs or []]
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, common)])


def ensure_ca(directory: Path) -> None:
    cert_path, key_path = directory / "ca.crt", directory / "ca.key"
    if cert_path.exists() and key_path.exists():
        return
    directory.mkdir(parents=True, exist_ok=True)
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name("vpolicy-control-plane-ca"))
            .issuer_name(_name("vpolicy-control-plane-ca")).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALID)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    _write_key(key, key_path)
    _write_cert(cert, cert_path)


def issue(directory: Path, stem: str, common: str, *, orgs: list[str] | None = None,
          dns: list[str] | None = None, ips: list[str] | None = None, server: bool = False) -> tuple[Path, Path]:
    """`<stem>.crt`/`<stem>.key` signed by the CA in `directory` (made if missing); kept if present."""
    ensure_ca(directory)
    cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    ca_key = serialization.load_pem_private_key((directory / "ca.key").read_bytes(), None)
    ca_cert = x509.load_pem_x509_certificate((directory / "ca.crt").read_bytes())
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (x509.CertificateBuilder().subject_name(_name(common, orgs)).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    if dns or ips:
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns or []]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips or []]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    _write_key(key, key_path)
    _write_cert(builder.sign(ca_key, hashes.SHA256()), cert_path)
    return cert_path, key_path


def ensure_all(directory: Path) -> None:
    """The CA, the API server's serving certificate, each client's, and the service-account key pair."""
    directory.mkdir(parents=True, exist_ok=True)
    ensure_ca(directory)
    issue(directory, "kube-apiserver", "kube-apiserver", dns=APISERVER_NAMES, ips=APISERVER_IPS, server=True)
    for stem, (user, groups) in CLIENTS.items():
        issue(directory, stem, user, orgs=groups)
    sa_key = directory / "sa.key"
    if not sa_key.exists():
        key = _key()
        (directory / "sa.pub").write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        _write_key(key, sa_key)

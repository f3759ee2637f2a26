"""A certificate authority and a serving certificate for the emulator, made per stack.

kubectl (client-go's clientcmd) sends a kubeconfig's credentials only over TLS, as a real cluster is
reached; so an emulator that authenticates serves HTTPS. `generate(directory)` writes `ca.crt` (a
self-signed CA), `apiserver.crt` (signed by it, for 127.0.0.1 and localhost, server authentication)
and `apiserver.key` (private, 0600), and returns their paths; clients trust `ca.crt` (a kubeconfig's
`certificate-authority-data`). `server_context(cert, key)` is the server side's SSL context.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=30)


@dataclass(frozen=True)
class TlsFiles:
    ca_file: Path
    cert_file: Path
    key_file: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def generate(directory: Path) -> TlsFiles:
    """Write a new CA and a serving certificate for 127.0.0.1 and localhost into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_usage = x509.KeyUsage(False, False, False, False, False, True, True, False, False)  # cert and CRL sign
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("nodeflow-dev-ca"))
        .issuer_name(_name("nodeflow-dev-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(ca_usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf_usage = x509.KeyUsage(True, False, True, False, False, False, False, False, False)  # signature, key
    names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(leaf_usage, critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    files = TlsFiles(directory / "ca.crt", directory / "apiserver.crt", directory / "apiserver.key")
    files.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files.cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    files.key_file.touch(mode=0o600)
    files.key_file.chmod(0o600)
    files.key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return files


def server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """The SSL context of a server presenting `cert_file` with `key_file`."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context


def client_context(ca_file: Path) -> ssl.SSLContext:
    """An SSL context that trusts `ca_file` (for the stack's own HTTP clients of the emulator)."""
    return ssl.create_default_context(cafile=str(ca_file))

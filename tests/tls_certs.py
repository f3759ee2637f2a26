"""Certificates made at test time (the `cryptography` package of the dev dependencies): a CA, a server
certificate it signs for localhost/127.0.0.1, and a client certificate it signs, written as PEM files."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    ca: Pair
    server: Pair
    client: Pair
    other_ca: Pair  # an unrelated CA: trusting it must fail the handshake


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pair:
    pair = Pair(directory / f"{stem}.pem", directory / f"{stem}-key.pem")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return pair


def _builder(subject: str, issuer: str, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
    )


def _ca(directory: Path, stem: str) -> tuple[Pair, x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(stem, stem, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # key_cert_sign, crl_sign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _write(directory, stem, cert, key), cert, key


def _leaf(directory: Path, stem: str, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, server: bool) -> Pair:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(stem, ca.subject.rfc4514_string().removeprefix("CN="), key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if server:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return _write(directory, stem, builder.sign(ca_key, hashes.SHA256()), key)


def make_pki(directory: Path) -> Pki:
    """A CA with a server certificate (localhost, 127.0.0.1) and a client certificate, plus another CA."""
    ca, ca_cert, ca_key = _ca(directory, "test-ca")
    other, _, _ = _ca(directory, "other-ca")
    return Pki(
        ca=ca,
        server=_leaf(directory, "server", ca_cert, ca_key, server=True),
        client=_leaf(directory, "client", ca_cert, ca_key, server=False),
        other_ca=other,
    )

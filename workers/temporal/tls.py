"""The TLS side of the Temporal connection: the settings' CA, client certificate and key files read and
checked before connecting, so that a bad file fails in one line naming its setting rather than deep in
the handshake.

Checks (Python's ssl module, which parses the files with the same OpenSSL rules the PEM format has
everywhere): the file exists and is readable, is PEM, holds what its setting says (CA certificates, a
certificate, a private key that is not encrypted), and the key belongs to the certificate.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from temporalio.client import TLSConfig

from workers.settings import Settings, where
from workers.temporal.errors import TemporalSettingError


class _EncryptedKeyError(Exception):
    pass


def _refuse_password() -> str:
    raise _EncryptedKeyError  # called by OpenSSL only for an encrypted key: never prompt on the terminal


def read_pem(name: str, path: str, marker: str) -> bytes:
    """The bytes of the file of setting `name`; TemporalSettingError when it is missing, unreadable or
    has no `-----BEGIN <marker>` block (marker "CERTIFICATE" or "PRIVATE KEY", which also matches
    "RSA PRIVATE KEY" and "EC PRIVATE KEY")."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise TemporalSettingError(f"{where(name)}: {path}: no such file") from None
    except IsADirectoryError:
        raise TemporalSettingError(f"{where(name)}: {path}: is a directory, not a file") from None
    except OSError as err:
        raise TemporalSettingError(f"{where(name)}: {path}: cannot read it: {err.strerror or err}") from None
    if b"-----BEGIN " not in data:
        raise TemporalSettingError(f"{where(name)}: {path}: not a PEM file (no -----BEGIN line)")
    begins = [line for line in data.splitlines() if line.startswith(b"-----BEGIN ")]
    if not any(line.rstrip(b"-").endswith(marker.encode()) for line in begins):
        found = begins[0].decode("ascii", "replace").strip("-").removeprefix("BEGIN ")
        raise TemporalSettingError(f"{where(name)}: {path}: holds a PEM {found}, not a {marker}")
    return data


def check_ca(path: str) -> bytes:
    """The CA file's PEM bytes, once OpenSSL has loaded at least one certificate from it."""
    data = read_pem("temporal_tls_ca_file", path, "CERTIFICATE")
    _parse_certificates("temporal_tls_ca_file", path, data)
    return data


def _parse_certificates(name: str, path: str, data: bytes) -> None:
    try:
        ssl.create_default_context(cadata=data.decode("ascii", "replace"))
    except (ssl.SSLError, ValueError) as err:
        why = _why(err) if isinstance(err, ssl.SSLError) else str(err)
        raise TemporalSettingError(f"{where(name)}: {path}: not a valid PEM certificate (OpenSSL: {why})") from None


def check_client_pair(cert_path: str, key_path: str) -> tuple[bytes, bytes]:
    """The client certificate and key PEM bytes, once OpenSSL has loaded them as one pair: each parses,
    the key is not encrypted and it is the certificate's key."""
    cert = read_pem("temporal_tls_cert_file", cert_path, "CERTIFICATE")
    key = read_pem("temporal_tls_key_file", key_path, "PRIVATE KEY")
    _parse_certificates("temporal_tls_cert_file", cert_path, cert)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_cert_chain(cert_path, key_path, password=_refuse_password)
    except _EncryptedKeyError:
        raise TemporalSettingError(
            f"{where('temporal_tls_key_file')}: {key_path}: the key is encrypted; give it unencrypted "
            "(openssl pkey -in KEY -out PLAIN)"
        ) from None
    except ssl.SSLError as err:
        if "KEY_VALUES_MISMATCH" in str(err):
            raise TemporalSettingError(
                f"{where('temporal_tls_key_file')}: {key_path}: is not the key of the certificate in "
                f"temporal_tls_cert_file ({cert_path})"
            ) from None
        # the certificate parsed above, so what is left to fail is the key
        why = f"{key_path}: not a valid PEM private key (OpenSSL: {_why(err)})"
        raise TemporalSettingError(f"{where('temporal_tls_key_file')}: {why}") from None
    return cert, key


def tls_config(settings: Settings) -> TLSConfig | bool:
    """What `Client.connect(tls=...)` takes for these settings: False without TLS, True for TLS with the
    system's roots and nothing else, else a TLSConfig with the checked files' bytes and the server name.
    Raises TemporalSettingError for a bad file."""
    if not settings.temporal_tls_enabled():
        return False
    ca = check_ca(settings.temporal_tls_ca_file) if settings.temporal_tls_ca_file else None
    cert = key = None
    if settings.temporal_tls_cert_file and settings.temporal_tls_key_file:
        cert, key = check_client_pair(settings.temporal_tls_cert_file, settings.temporal_tls_key_file)
    if ca is None and cert is None and not settings.temporal_tls_server_name:
        return True
    name = settings.temporal_tls_server_name or None
    return TLSConfig(server_root_ca_cert=ca, domain=name, client_cert=cert, client_private_key=key)


def _why(err: ssl.SSLError) -> str:
    """OpenSSL's reason without the library prefix and source line: "[PEM: NO_START_LINE] no start line
    (_ssl.c:4149)" -> "no start line"."""
    text = str(err.args[1] if len(err.args) > 1 else err)
    return text.split("] ", 1)[-1].split(" (_ssl.c", 1)[0]

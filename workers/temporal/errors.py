"""Why a Temporal connection failed, in one line naming the setting to look at.

The SDK reports a failed connect as a RuntimeError whose text is the Rust transport's debug output
(`tonic::transport::Error(... InvalidCertificate(UnknownIssuer) ...)`); `describe_connect_failure`
recognises the common causes in it and says them in the settings' terms, and otherwise keeps the
first line of the text."""

from __future__ import annotations

import re

from workers.settings import Settings, where

MAX_CAUSE = 200
# The server hung up right after connecting: during or just after the TLS handshake (TLS 1.3 servers
# check the client's certificate after the client considers the handshake done), or on a plain request.
CLOSED_SIGNS = ("close_notify", "UnexpectedEof", '"connection closed"', "broken pipe", "ConnectionReset")


class TemporalSettingError(Exception):
    """A user-facing failure of the Temporal connection: one line, naming the setting and the cause.
    (Here, in a module that does not import temporalio, so commands can catch it without loading it.)"""


def _cause(text: str) -> str:
    line = text.splitlines()[0] if text else "unknown error"
    return line if len(line) <= MAX_CAUSE else line[: MAX_CAUSE - 3] + "..."


def describe_connect_failure(settings: Settings, text: str) -> str:
    """One line for a failed `Client.connect` with these settings, from the error's text."""
    address = settings.temporal_address
    if "ConnectionRefused" in text or "Connection refused" in text:
        return f"{where('temporal_address')}: cannot reach Temporal at {address}: connection refused"
    if "dns error" in text or "failed to lookup address" in text:
        return f"{where('temporal_address')}: cannot resolve the host of {address}"
    if "tcp connect error" in text:
        return f"{where('temporal_address')}: cannot reach Temporal at {address}: {_cause(text)}"
    return _tls_failure(settings, text) or _other_failure(settings, text)


def _tls_failure(settings: Settings, text: str) -> str | None:
    """The handshake's failures: the server's certificate, or the server refusing ours or TLS itself."""
    address = settings.temporal_address
    if "NotValidForName" in text:
        expected = re.search(r'expected: DnsName\("([^"]*)"\)', text)
        presented = re.search(r"presented: \[([^\]]*)\]", text)
        names = presented.group(1).replace('\\"', "").replace('"', "") if presented else "other names"
        return (
            f"{where('temporal_tls_server_name')}: TLS handshake with {address} failed: the server's certificate "
            f"is not valid for {expected.group(1) if expected else 'the expected name'!r} (it is for {names})"
        )
    if "UnknownIssuer" in text:
        if settings.temporal_tls_ca_file:
            why = f"is not signed by the CA in {settings.temporal_tls_ca_file}"
        else:
            why = "is not signed by a CA this system trusts (give the CA)"
        return f"{where('temporal_tls_ca_file')}: TLS handshake with {address} failed: the server's certificate {why}"
    certificate = re.search(r"InvalidCertificate\((\w+)", text)
    if certificate:
        return (
            f"{where('temporal_tls_ca_file')}: TLS handshake with {address} failed: the server's certificate is "
            f"invalid ({certificate.group(1)})"
        )
    if "InvalidContentType" in text or "CorruptMessage" in text:
        return (
            f"{where('temporal_tls')}: TLS handshake with {address} failed: the server does not answer in TLS "
            "(turn TLS off, or check the address and port)"
        )
    return None


def _other_failure(settings: Settings, text: str) -> str:
    """Failures after or around the handshake: TLS expected but off, credentials, anything else."""
    address = settings.temporal_address
    tls = settings.temporal_tls_enabled()
    closed = any(sign in text for sign in CLOSED_SIGNS)
    if tls and (closed or "CertificateRequired" in text or "BadCertificate" in text):
        if settings.temporal_tls_cert_file:
            why = f"refused the client certificate {settings.temporal_tls_cert_file}"
        else:
            why = "closed the connection during TLS: it may require a client certificate (mutual TLS)"
        return f"{where('temporal_tls_cert_file')}: Temporal at {address} {why}"
    if not tls and closed:
        return (
            f"{where('temporal_tls')}: Temporal at {address} closed the connection: it may require TLS "
            "(set temporal_tls to true)"
        )
    if "Unauthenticated" in text or "PermissionDenied" in text:
        return f"{where('temporal_api_key')}: Temporal at {address} refused the credentials: {_cause(text)}"
    return f"{where('temporal_address')}: connecting to Temporal at {address} failed: {_cause(text)}"

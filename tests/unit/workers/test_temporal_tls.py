"""The Temporal TLS settings (flags over environment over defaults) and the checks of their files, each
failure one line naming the setting."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
from temporalio.client import TLSConfig

from tests.tls_certs import Pki, make_pki
from workers.settings import Settings, add_arguments
from workers.temporal.errors import TemporalSettingError, describe_connect_failure
from workers.temporal.tls import check_ca, check_client_pair, tls_config


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


# -- settings ---------------------------------------------------------------------------------------------


def test_tls_is_off_by_default_and_implied_by_a_file_or_an_api_key() -> None:
    assert not Settings.from_env({}).temporal_tls_enabled()
    assert Settings.from_env({"NODEFLOW_TEMPORAL_TLS_CA_FILE": "/ca.pem"}).temporal_tls_enabled()
    assert Settings.from_env({"NODEFLOW_TEMPORAL_API_KEY": "k"}).temporal_tls_enabled()
    assert Settings.from_env({"NODEFLOW_TEMPORAL_TLS_SERVER_NAME": "x"}).temporal_tls_enabled() is False


def test_the_helm_chart_environment_variables_are_read() -> None:
    env = {
        "NODEFLOW_TEMPORAL_TLS": "true",
        "NODEFLOW_TEMPORAL_TLS_CA_FILE": "/tls/ca.crt",
        "NODEFLOW_TEMPORAL_TLS_CERT_FILE": "/tls/tls.crt",
        "NODEFLOW_TEMPORAL_TLS_KEY_FILE": "/tls/tls.key",
        "NODEFLOW_TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
        "NODEFLOW_TEMPORAL_API_KEY": "secret-key",
    }
    settings = Settings.from_env(env)
    assert (
        settings.temporal_tls,
        settings.temporal_tls_ca_file,
        settings.temporal_tls_cert_file,
        settings.temporal_tls_key_file,
        settings.temporal_tls_server_name,
        settings.temporal_api_key,
    ) == (True, "/tls/ca.crt", "/tls/tls.crt", "/tls/tls.key", "temporal.internal", "secret-key")
    assert "secret-key" not in repr(settings)


def test_flags_beat_the_environment() -> None:
    env = {"NODEFLOW_TEMPORAL_TLS": "false", "NODEFLOW_TEMPORAL_TLS_SERVER_NAME": "a"}
    settings = Settings.from_env(env).with_args(parse("--temporal-tls", "--temporal-tls-server-name", "b"))
    assert (settings.temporal_tls, settings.temporal_tls_server_name) == (True, "b")
    turned_off = Settings.from_env({"NODEFLOW_TEMPORAL_TLS": "1"}).with_args(parse("--temporal-tls", "off"))
    assert turned_off.temporal_tls is False


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"NODEFLOW_TEMPORAL_TLS": "maybe"}, "NODEFLOW_TEMPORAL_TLS"),
        ({"NODEFLOW_TEMPORAL_TLS": "false", "NODEFLOW_TEMPORAL_TLS_CA_FILE": "/ca"}, "NODEFLOW_TEMPORAL_TLS_CA_FILE"),
        ({"NODEFLOW_TEMPORAL_TLS_CERT_FILE": "/c"}, "NODEFLOW_TEMPORAL_TLS_KEY_FILE"),
        ({"NODEFLOW_TEMPORAL_TLS_KEY_FILE": "/k"}, "NODEFLOW_TEMPORAL_TLS_CERT_FILE"),
    ],
)
def test_inconsistent_tls_settings_are_refused_naming_the_setting(env: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        Settings.from_env(env)


# -- the files ----------------------------------------------------------------------------------------------


def one_line(err: pytest.ExceptionInfo[TemporalSettingError]) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


def test_good_files_make_a_tls_config(pki: Pki) -> None:
    settings = Settings(
        temporal_tls_ca_file=str(pki.ca.cert),
        temporal_tls_cert_file=str(pki.client.cert),
        temporal_tls_key_file=str(pki.client.key),
        temporal_tls_server_name="temporal.internal",
    )
    config = tls_config(settings)
    assert isinstance(config, TLSConfig)
    assert config.server_root_ca_cert == pki.ca.cert.read_bytes()
    assert config.client_cert == pki.client.cert.read_bytes()
    assert config.client_private_key == pki.client.key.read_bytes()
    assert config.domain == "temporal.internal"


def test_tls_without_files_uses_the_system_roots() -> None:
    assert tls_config(Settings(temporal_tls=True)) is True
    assert tls_config(Settings(temporal_api_key="k")) is True
    assert tls_config(Settings()) is False


def test_a_missing_ca_file(tmp_path: Path) -> None:
    with pytest.raises(TemporalSettingError) as err:
        check_ca(str(tmp_path / "nope.pem"))
    where = "temporal_tls_ca_file (flag --temporal-tls-ca-file, env NODEFLOW_TEMPORAL_TLS_CA_FILE)"
    assert one_line(err).startswith(where)
    assert "no such file" in str(err.value)


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(TemporalSettingError, match="is a directory"):
        check_ca(str(tmp_path))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file(tmp_path: Path, pki: Pki) -> None:
    path = tmp_path / "ca.pem"
    path.write_bytes(pki.ca.cert.read_bytes())
    path.chmod(0)
    with pytest.raises(TemporalSettingError, match="cannot read it"):
        check_ca(str(path))


def test_not_pem(tmp_path: Path) -> None:
    path = tmp_path / "ca.der"
    path.write_bytes(b"\x30\x82\x01\x0a binary DER")
    with pytest.raises(TemporalSettingError) as err:
        check_ca(str(path))
    assert "temporal_tls_ca_file" in one_line(err) and "not a PEM file" in str(err.value)


def test_a_key_given_as_the_ca(pki: Pki) -> None:
    with pytest.raises(TemporalSettingError, match="holds a PEM PRIVATE KEY, not a CERTIFICATE"):
        check_ca(str(pki.ca.key))


def test_a_pem_certificate_with_garbage_inside(tmp_path: Path) -> None:
    path = tmp_path / "ca.pem"
    path.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
    with pytest.raises(TemporalSettingError) as err:
        check_ca(str(path))
    assert "temporal_tls_ca_file" in one_line(err) and "not a valid PEM certificate" in str(err.value)


def test_a_certificate_and_a_key_that_do_not_match(pki: Pki) -> None:
    with pytest.raises(TemporalSettingError) as err:
        check_client_pair(str(pki.client.cert), str(pki.server.key))
    assert one_line(err).startswith("temporal_tls_key_file (flag --temporal-tls-key-file")
    assert "is not the key of the certificate" in str(err.value)


def test_the_key_and_the_certificate_swapped(pki: Pki) -> None:
    with pytest.raises(TemporalSettingError, match=r"temporal_tls_cert_file .*holds a PEM PRIVATE KEY"):
        check_client_pair(str(pki.client.key), str(pki.client.cert))


def test_an_encrypted_key_is_refused_without_a_prompt(tmp_path: Path, pki: Pki) -> None:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pki.client.key.read_bytes(), password=None)
    encrypted = tmp_path / "key.pem"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    with pytest.raises(TemporalSettingError, match=r"temporal_tls_key_file .*the key is encrypted"):
        check_client_pair(str(pki.client.cert), str(encrypted))


def test_a_truncated_key(tmp_path: Path, pki: Pki) -> None:
    lines = pki.client.key.read_text().splitlines()
    broken = tmp_path / "key.pem"
    broken.write_text("\n".join([lines[0], lines[1][:10], lines[-1]]) + "\n")
    with pytest.raises(TemporalSettingError) as err:
        check_client_pair(str(pki.client.cert), str(broken))
    assert one_line(err).startswith("temporal_tls_key_file")


# -- the transport's errors in the settings' terms ------------------------------------------------------


TRANSPORT = "Failed client connect: Server connection error: tonic::transport::Error(Transport, ConnectError({}))"


@pytest.mark.parametrize(
    ("settings", "text", "starts", "says"),
    [
        (
            Settings(temporal_address="127.0.0.1:1"),
            TRANSPORT.format('ConnectError("tcp connect error", Os { kind: ConnectionRefused })'),
            "temporal_address",
            "connection refused",
        ),
        (
            Settings(temporal_tls_ca_file="/ca.pem"),
            TRANSPORT.format("Custom { kind: InvalidData, error: InvalidCertificate(UnknownIssuer) }"),
            "temporal_tls_ca_file",
            "not signed by the CA in /ca.pem",
        ),
        (
            Settings(temporal_tls=True),
            TRANSPORT.format(
                'Custom { error: InvalidCertificate(NotValidForNameContext { expected: DnsName("a.example"), '
                'presented: ["DnsName(\\"localhost\\")"] }) }'
            ),
            "temporal_tls_server_name",
            "not valid for 'a.example' (it is for DnsName(localhost))",
        ),
        (
            Settings(temporal_tls=True),
            TRANSPORT.format("Custom { kind: InvalidData, error: InvalidMessage(InvalidContentType) }"),
            "temporal_tls",
            "does not answer in TLS",
        ),
        (
            Settings(temporal_tls=True),
            "`get_system_info` call error after connection: peer closed connection without sending TLS close_notify",
            "temporal_tls_cert_file",
            "may require a client certificate",
        ),
        (
            Settings(),
            "`get_system_info` call error after connection: stream closed because of a broken pipe",
            "temporal_tls",
            "may require TLS",
        ),
        (
            Settings(temporal_tls=True),
            'get_system_info call error: Status { code: Cancelled, hyper::Error(Canceled, "connection closed") }',
            "temporal_tls_cert_file",
            "may require a client certificate",
        ),
    ],
)
def test_transport_errors_name_the_setting(settings: Settings, text: str, starts: str, says: str) -> None:
    message = describe_connect_failure(settings, text)
    assert message.startswith(f"{starts} (flag") and says in message and "\n" not in message

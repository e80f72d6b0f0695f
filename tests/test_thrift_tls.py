"""TLS of `sql-ext thriftserver --tls-cert FILE --tls-key FILE` (PEM files, as a certificate
authority hands them out): beeline, PyHive over thrift's TSSLSocket under the SASL transport and
dbt-spark's `use_ssl` sign in with a password over TLS and run windowed SQL; a plaintext client
is refused on the TLS port; bad PEM files and a key that is not the certificate's are refused
with an error naming the file; password sign-in beyond loopback without TLS warns."""

import os
import re
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from certificates import certificate
from dbt.cli.main import dbtRunner
from pyhive import hive
from pyhive.sasl_compat import PureSASLClient
from test_catalog import _kill
from test_dbt import _project
from thrift.transport.TSocket import TSocket
from thrift.transport.TSSLSocket import TSSLSocket
from thrift_sasl import TSaslClientTransport

from sql_ext.server import tls
from sql_ext.server.auth import set_password
from sql_ext.server.thrift import free_port, wait_for_port

WINDOWED = ("SELECT k, WINDOW_ID() AS w, COUNT(*) AS n FROM VALUES ('a'), ('a'), ('b'), ('a') "
            "AS t(k) WINDOW TUMBLING COUNT(2) OVER (PARTITION BY k)")
CLI = [sys.executable, "-m", "sql_ext.cli"]


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A certificate authority and a server certificate it signed for 127.0.0.1: the server's
    PEM chain (server, then CA), its key (PKCS#8 PEM), the CA's PEM, and a PKCS#12 truststore
    of the CA for Java clients (keytool, as a beeline user makes one)."""
    folder = tmp_path_factory.mktemp("pki")
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca = certificate("sql-ext test CA", "sql-ext test CA", ca_key.public_key(), ca_key, True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    server = certificate("127.0.0.1", "sql-ext test CA", key.public_key(), ca_key, False)
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca.public_bytes(pem))
    (folder / "server.pem").write_bytes(server.public_bytes(pem) + ca.public_bytes(pem))
    (folder / "server.key").write_bytes(key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    made = subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file",
                           str(folder / "ca.pem"), "-keystore", str(folder / "trust.p12"),
                           "-storetype", "PKCS12", "-storepass", "trustpass"],
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    return folder


@pytest.fixture(scope="module")
def tls_server(pki, tmp_path_factory):
    """`sql-ext thriftserver --auth password --tls-cert --tls-key`; ann's password is s3cret."""
    work = tmp_path_factory.mktemp("tls")
    passwords = work / "team.passwords"
    set_password(passwords, "ann", "s3cret")
    port = free_port()
    with open(work / "server.log", "w") as log:
        process = subprocess.Popen(
            [*CLI, "thriftserver", "--port", str(port), "--warehouse", str(work / "warehouse"),
             "--auth", "password", "--password-file", str(passwords),
             "--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key")],
            stdout=log, stderr=subprocess.STDOUT, cwd=work, start_new_session=True)
    wait_for_port("127.0.0.1", port, timeout=120)
    yield port
    _kill(process, port)
    assert "jdbc:hive2://127.0.0.1:%d/default;ssl=true" % port in \
        (work / "server.log").read_text()


def _sasl(socket, user="ann", password="s3cret") -> TSaslClientTransport:
    return TSaslClientTransport(lambda: PureSASLClient(
        "127.0.0.1", mechanism="PLAIN", username=user, password=password), "PLAIN", socket)


def _windowed(transport) -> list:
    with hive.connect(thrift_transport=transport) as conn:
        cursor = conn.cursor()
        cursor.execute(WINDOWED)
        return sorted(cursor.fetchall())


def test_pyhive_over_tls_checks_the_certificate_and_runs_windowed_sql(tls_server, pki):
    verified = ssl.create_default_context(cafile=str(pki / "ca.pem"))  # and the host name
    assert _windowed(_sasl(TSSLSocket("127.0.0.1", tls_server, ssl_context=verified))) == \
        [("a", 0, 2)]
    with pytest.raises(Exception, match="Error validating the login"):
        _windowed(_sasl(TSSLSocket("127.0.0.1", tls_server, ssl_context=verified),
                        password="wrong"))
    # The server presents the certificate it was given (a client that does not trust the
    # authority refuses it), and its chain.
    with socket.create_connection(("127.0.0.1", tls_server), timeout=30) as raw:
        with verified.wrap_socket(raw, server_hostname="127.0.0.1") as wrapped:
            presented = x509.load_der_x509_certificate(wrapped.getpeercert(binary_form=True))
    assert presented == x509.load_pem_x509_certificates((pki / "server.pem").read_bytes())[0]
    with socket.create_connection(("127.0.0.1", tls_server), timeout=30) as raw:
        with pytest.raises(ssl.SSLCertVerificationError):
            ssl.create_default_context().wrap_socket(raw, server_hostname="127.0.0.1")


def test_a_plaintext_client_is_refused_on_the_tls_port(tls_server):
    plain = TSocket("127.0.0.1", tls_server)
    plain.setTimeout(30_000)  # refused, not left waiting
    with pytest.raises(Exception) as refused:
        _windowed(_sasl(plain))
    assert "timed out" not in str(refused.value)


def test_beeline_over_tls(tls_server, pki):
    beeline = Path(pyspark.__file__).parent / "bin" / "beeline"
    env = dict(os.environ, SPARK_HOME=str(Path(pyspark.__file__).parent))
    url = (f"jdbc:hive2://127.0.0.1:{tls_server}/default;ssl=true;"
           f"sslTrustStore={pki / 'trust.p12'};trustStorePassword=trustpass")
    result = subprocess.run([str(beeline), "-u", url, "-n", "ann", "-p", "s3cret",
                             "--silent=true", "--outputformat=csv2", "-e", "SELECT 40 + 2 AS x"],
                            capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert [re.sub(r"^\d+: jdbc:\S*> ", "", line) for line in result.stdout.split()
            if line.strip()][-2:] == ["x", "42"]


def test_dbt_use_ssl(tls_server, tmp_path, monkeypatch):
    project = _project(tmp_path, tls_server, monkeypatch)
    profiles = project / "profiles.yml"
    profiles.write_text(profiles.read_text().replace(
        "      connect_retries: 3\n",
        "      connect_retries: 3\n      user: ann\n      password: s3cret\n      auth: CUSTOM\n"
        "      use_ssl: true\n", 1))
    assert "use_ssl: true" in profiles.read_text()
    result = dbtRunner().invoke(["debug", "--project-dir", str(project), "--profiles-dir",
                                 str(project), "--target", "thrift"])
    assert result.success, result.exception
    deps = dbtRunner().invoke(["deps", "--project-dir", str(project), "--profiles-dir",
                               str(project)])
    assert deps.success, deps.exception
    shown = dbtRunner().invoke(["show", "--inline", WINDOWED, "--project-dir", str(project),
                                "--profiles-dir", str(project), "--target", "thrift",
                                "--output", "json"])
    assert shown.success, shown.exception
    rows = shown.result.results[0].agate_table.rows
    assert sorted(tuple(r) for r in rows) == [("a", 0, 2)]


def test_bad_pem_files_are_refused_naming_the_file(pki, tmp_path):
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    with pytest.raises(SystemExit, match="--tls-cert .*garbage.pem: not a PEM certificate"):
        tls.server_conf(str(garbage), str(pki / "server.key"))
    with pytest.raises(SystemExit, match="--tls-key .*garbage.pem: not an unencrypted PEM"):
        tls.server_conf(str(pki / "server.pem"), str(garbage))
    other = tmp_path / "other.key"
    other.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption()))
    with pytest.raises(SystemExit, match="is not the key of the certificate"):
        tls.server_conf(str(pki / "server.pem"), str(other))
    with pytest.raises(SystemExit, match="needs both --tls-cert FILE and --tls-key FILE"):
        tls.server_conf(str(pki / "server.pem"), None)
    with pytest.raises(SystemExit, match="missing.pem: No such file"):
        tls.server_conf(str(tmp_path / "missing.pem"), str(pki / "server.key"))
    path = tls.server_conf(str(pki / "server.pem"), str(pki / "server.key"))[
        "spark.hadoop.hive.server2.keystore.path"]
    assert oct(Path(path).stat().st_mode & 0o777) == "0o600"


def test_password_sign_in_beyond_loopback_without_tls_warns(capsys):
    tls.warn_clear_text("0.0.0.0", "password", tls=False)
    assert "without TLS: passwords and data cross the network in clear text" in \
        capsys.readouterr().err
    for host, auth, secure in (("127.0.0.1", "password", False), ("0.0.0.0", "password", True),
                               ("0.0.0.0", "none", False)):
        tls.warn_clear_text(host, auth, tls=secure)
        assert capsys.readouterr().err == ""

"""TLS for `sql-ext thriftserver`: the PEM certificate and key a certificate authority hands
out, turned into the keystore HiveServer2 reads (`hive.server2.use.SSL`).

    sql-ext thriftserver --auth password --password-file team.passwords --host 0.0.0.0 \\
        --tls-cert server.pem --tls-key server.key

Clients: beeline `jdbc:hive2://host:10000/default;ssl=true;sslTrustStore=ca.p12;
trustStorePassword=...`, PyHive over thrift's TSSLSocket under the SASL transport, a dbt
profile `use_ssl: true`.
"""

from __future__ import annotations

import atexit
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from sql_ext.server.auth import is_loopback


def keystore(cert_file: str, key_file: str) -> tuple[str, str]:
    """A PKCS#12 keystore of the key and its certificate chain (the first certificate of
    `cert_file` is the server's, any others its issuers), in a folder only this user reads,
    removed at exit: (path, password). Errors name the file and what is wrong with it."""
    chain = _read(cert_file, "--tls-cert")
    try:
        certificates = x509.load_pem_x509_certificates(chain)
    except ValueError as error:
        raise SystemExit(f"sql-ext thriftserver --tls-cert {cert_file}: not a PEM certificate "
                         f"(-----BEGIN CERTIFICATE-----): {error}") from None
    try:
        key = serialization.load_pem_private_key(_read(key_file, "--tls-key"), password=None)
    except (ValueError, TypeError) as error:
        raise SystemExit(f"sql-ext thriftserver --tls-key {key_file}: not an unencrypted PEM "
                         f"private key (-----BEGIN PRIVATE KEY-----, RSA or EC): {error}") \
            from None
    server = certificates[0]
    if _spki(server.public_key()) != _spki(key.public_key()):
        raise SystemExit(f"sql-ext thriftserver: the key in {key_file} is not the key of the "
                         f"certificate in {cert_file} (its first certificate)")
    password = secrets.token_urlsafe(24)
    folder = Path(tempfile.mkdtemp(prefix="sql_ext_tls_"))  # mode 0700
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "server.p12"
    path.write_bytes(pkcs12.serialize_key_and_certificates(
        b"sql-ext", key, server, certificates[1:] or None,
        serialization.BestAvailableEncryption(password.encode())))
    path.chmod(0o600)
    return str(path), password


def server_conf(cert_file: str | None, key_file: str | None) -> dict[str, str]:
    """Session settings (the Hive configuration is fixed at session start) for TLS: none
    without --tls-cert and --tls-key, both or neither."""
    if cert_file is None and key_file is None:
        return {}
    if cert_file is None or key_file is None:
        raise SystemExit("sql-ext thriftserver: TLS needs both --tls-cert FILE and --tls-key "
                         "FILE (PEM)")
    path, password = keystore(cert_file, key_file)
    # HiveServer2 loads the keystore as Java's default type, which also reads PKCS#12.
    return {"spark.hadoop.hive.server2.use.SSL": "true",
            "spark.hadoop.hive.server2.keystore.path": path,
            "spark.hadoop.hive.server2.keystore.password": password}


def warn_clear_text(host: str, auth: str, tls: bool) -> None:
    """Passwords travel in clear text beyond this machine without TLS: say so."""
    if auth == "password" and not tls and not is_loopback(host):
        print(f"sql-ext thriftserver: WARNING: listening on {host} with password sign-in but "
              "without TLS: passwords and data cross the network in clear text; add "
              "--tls-cert FILE --tls-key FILE", file=sys.stderr, flush=True)


def _read(path: str, option: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise SystemExit(f"sql-ext thriftserver {option} {path}: {error.strerror}") from None


def _spki(public_key) -> bytes:
    """A public key's DER SubjectPublicKeyInfo: comparable whatever the key's algorithm."""
    return public_key.public_bytes(serialization.Encoding.DER,
                                   serialization.PublicFormat.SubjectPublicKeyInfo)

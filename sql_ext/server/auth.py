"""Password authentication for `sql-ext thriftserver`: HiveServer2's CUSTOM authentication
with the JVM module's PasswordFileAuthenticator, over a file of salted PBKDF2-SHA256 hashes.

    sql-ext passwd team.passwords ann            # asks for ann's password, adds or replaces her
    sql-ext thriftserver --auth password --password-file team.passwords --host 0.0.0.0

Clients sign in with a user name and password: beeline `-n ann -p ...`, PyHive
`hive.connect(..., username="ann", password="...", auth="CUSTOM")`, a dbt profile `auth:
CUSTOM`, `user`, `password`.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import secrets
import socket
from pathlib import Path

from sql_ext import jvm

AUTHENTICATOR = "io.sqlext.auth.PasswordFileAuthenticator"
FILE_PROPERTY = "sql_ext.auth.password_file"  # read by the authenticator (a JVM property)
ITERATIONS = 200_000


def hash_line(user: str, password: str, iterations: int = ITERATIONS) -> str:
    """The password file's line for `user`: user:pbkdf2_sha256:iterations:salt:hash."""
    check_user_name(user)
    salt = secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations, 32)
    encode = base64.b64encode
    return f"{user}:pbkdf2_sha256:{iterations}:{encode(salt).decode()}:{encode(digest).decode()}"


def check_user_name(user: str) -> None:
    """A user name of a `user:...` file line (the password file, the Connect token file)."""
    if not user or ":" in user or "\n" in user:
        raise ValueError(f"a user name must be non-empty, without ':' or newlines: {user!r}")


def set_user_line(path: str | Path, user: str, line: str) -> None:
    """Makes `line` the line of `user` in a file of `user:...` lines (added, or replacing
    theirs); the file is kept 0600, from before anything is written to it."""
    path = Path(path)
    kept = [old for old in (path.read_text().splitlines() if path.exists() else [])
            if old.split(":", 1)[0] != user]
    path.touch(mode=0o600)
    os.chmod(path, 0o600)
    path.write_text("\n".join(kept + [line]) + "\n")


def set_password(path: str | Path, user: str, password: str) -> None:
    """Adds `user` to the password file, or replaces their password; the file is kept 0600."""
    set_user_line(path, user, hash_line(user, password))


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) means this machine only."""
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback
                   for info in socket.getaddrinfo(host, None))
    except (OSError, ValueError):
        return False


def check_bind(host: str, auth: str, insecure: bool, command: str = "sql-ext thriftserver",
               remedy: str = "--auth password --password-file FILE (sql-ext passwd FILE USER "
                             "adds users)") -> None:
    """Refuses to serve beyond this machine without authentication, unless told to."""
    if auth == "none" and not is_loopback(host) and not insecure:
        raise SystemExit(
            f"{command}: refusing to listen on {host} without authentication: anyone who "
            f"reaches it could read and change every table. Use {remedy}, or "
            "--insecure-no-auth if the network is trusted.")


def server_conf(auth: str, password_file: str | None) -> dict[str, str]:
    """Session settings (the Hive configuration is fixed at session start) for `auth`."""
    if auth == "none":
        return {}
    if not password_file or not Path(password_file).is_file():
        raise SystemExit(f"sql-ext thriftserver --auth password needs --password-file FILE "
                         f"(an existing file; sql-ext passwd FILE USER creates it), got "
                         f"{password_file!r}")
    # No client may name another user to act as (HiveServer2's hive.server2.proxy.user): who
    # a session's user is decides what the access checks let it do (sql_ext.server.access).
    return {"spark.hadoop.hive.server2.authentication": "CUSTOM",
            "spark.hadoop.hive.server2.custom.authentication.class": AUTHENTICATOR,
            "spark.hadoop.hive.server2.allow.user.substitution": "false"}


def install(spark, password_file: str) -> None:
    """Points the JVM's authenticator at the password file, and names the class where
    HiveServer2's fresh HiveConf looks for it (system properties)."""
    jvm.set_system_properties(spark, {
        FILE_PROPERTY: str(Path(password_file).resolve()),
        "hive.server2.custom.authentication.class": AUTHENTICATOR})

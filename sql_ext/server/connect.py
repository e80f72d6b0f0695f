"""The Spark Connect door: Spark's Connect service started inside this Python process, after
the rewriter, the UDAF modules and the resumed streams are in place, so that a remote client
(pyspark's `SparkSession.builder.remote`, the Go, Rust and Swift clients, `spark-pipelines
--remote`) gets the whole windowed SQL surface from its first statement on.

    sql-ext connect-server --port 15002                 # loopback, no token
    SPARK_CONNECT_AUTHENTICATE_TOKEN=... sql-ext connect-server --host 0.0.0.0 --auth token
    sql-ext connect-token team.tokens ann               # prints ann's new token
    sql-ext connect-server --host 0.0.0.0 --auth token --users team.tokens --admin ops

Clients connect to `sc://host:port` (with a token: `sc://host:port/;token=...`). With --users,
each user has a token of their own, and who a client is comes from its token (the JVM's
io.sqlext.access.ConnectGuard); users who are not admins are held to the same access checks as
on the Thrift server.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
from pathlib import Path

from pyspark.sql import SparkSession

from sql_ext import jvm
from sql_ext.server.auth import check_user_name, set_user_line
from sql_ext.server.thrift import wait_for_port

log = logging.getLogger("sql_ext")

TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"  # Spark's own: the server and pyspark read it
DEFAULT_PORT = 15002


def connect_conf(host: str, port: int, token: str | None,
                 guarded: bool = False) -> dict[str, str]:
    """Session settings of the service: its address and, when given, the token every client
    must present (Spark's pre-shared-key check); `guarded`: every call passes sql-ext's
    ConnectGuard (users by their tokens, client code). Spark redacts settings named *token* in
    its UI and logs."""
    conf = {"spark.connect.grpc.binding.address": host,
            "spark.connect.grpc.binding.port": str(port),
            # A taken port is an error, not a silent move to the next one clients do not know.
            "spark.connect.grpc.port.maxRetries": "0"}
    if token:
        conf["spark.connect.authenticate.token"] = token
    if guarded:
        conf["spark.connect.grpc.interceptor.classes"] = jvm.CONNECT_GUARD
    return conf


def add_token(path: str | Path, user: str) -> str:
    """A new token for `user` in the token file (replacing theirs), kept as its SHA-256 so that
    the file gives nobody a token; the file is kept 0600. Returns the token (shown once)."""
    check_user_name(user)
    if user != user.strip():  # the server reads each line without its surrounding spaces
        raise ValueError(f"a user name must not start or end with spaces: {user!r}")
    token = secrets.token_urlsafe(32)
    set_user_line(path, user, f"{user}:sha256:{hashlib.sha256(token.encode()).hexdigest()}")
    return token


def guard(spark: SparkSession, users: str | None, no_client_udfs: bool) -> None:
    """Configures ConnectGuard before the service starts: clients told apart by the tokens of
    the file `users` (None: not told apart), and client code refused to every user when
    `no_client_udfs`. An invalid file raises ValueError naming its line."""
    jvm.guard_connect(spark, users, no_client_udfs)


def token_of(token_file: str | None) -> str:
    """The token for `--auth token`: the file's first line, else Spark's environment variable,
    else a new random one (printed once, in the connection string)."""
    if token_file:
        path = Path(token_file)
        if not path.is_file():
            raise SystemExit(f"sql-ext connect-server --token-file {token_file}: no such file")
        lines = path.read_text().split()
        if not lines:
            raise SystemExit(f"sql-ext connect-server --token-file {token_file}: it is empty")
        return lines[0]
    return os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(32)


def start_connect_server(spark: SparkSession, host: str, port: int) -> str:
    """Starts the Connect service over `spark` (built with `conf=connect_conf(...)`); returns
    its address as clients write it, without the token."""
    jvm.start_connect_server(spark)
    wait_for_port(host if host not in ("0.0.0.0", "::") else "127.0.0.1", port)
    log.info("sql_ext Spark Connect server listening on %s:%s", host, port)
    return f"sc://{host}:{port}"


def stop_connect_server(spark: SparkSession) -> None:
    """Stops the service that start_connect_server started; call it before `spark.stop()`
    (see jvm.stop_connect_server for why)."""
    jvm.stop_connect_server(spark)

"""The Spark Connect door: Spark's Connect service started inside this Python process, after
the rewriter, the UDAF modules and the resumed streams are in place, so that a remote client
(pyspark's `SparkSession.builder.remote`, the Go, Rust and Swift clients, `spark-pipelines
--remote`) gets the whole windowed SQL surface from its first statement on.

    sql-ext connect-server --port 15002                 # loopback, no token
    SPARK_CONNECT_AUTHENTICATE_TOKEN=... sql-ext connect-server --host 0.0.0.0 --auth token

Clients connect to `sc://host:port` (with a token: `sc://host:port/;token=...`).
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from pyspark.sql import SparkSession

from sql_ext import jvm
from sql_ext.server.thrift import wait_for_port

log = logging.getLogger("sql_ext")

TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"  # Spark's own: the server and pyspark read it
DEFAULT_PORT = 15002


def connect_conf(host: str, port: int, token: str | None) -> dict[str, str]:
    """Session settings of the service: its address and, when given, the token every client
    must present (Spark's pre-shared-key check). Spark redacts settings named *token* in its
    UI and logs."""
    conf = {"spark.connect.grpc.binding.address": host,
            "spark.connect.grpc.binding.port": str(port),
            # A taken port is an error, not a silent move to the next one clients do not know.
            "spark.connect.grpc.port.maxRetries": "0"}
    if token:
        conf["spark.connect.authenticate.token"] = token
    return conf


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

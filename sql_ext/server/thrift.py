"""The JDBC/Thrift door: Spark's Thrift server started inside this Python process, so the
rewriter (py4j callback) is there for every statement a JDBC client sends."""

from __future__ import annotations

import logging
import random
import socket
import time

from pyspark.sql import SparkSession

from sql_ext import jvm

log = logging.getLogger("sql_ext")


def thrift_conf(host: str, port: int) -> dict[str, str]:
    """Session settings of the server's address. With the Hive catalog the server reads the
    Hive configuration the session started with, so they must be there from the start."""
    return {"spark.hadoop.hive.server2.thrift.bind.host": host,
            "spark.hadoop.hive.server2.thrift.port": str(port)}


def free_port() -> int:
    """A free port on 127.0.0.1 for a server about to start (tests, benchmarks), below the
    ephemeral range: between this check and the server's bind no socket bound to port 0 (the
    server's own PySpark accumulator server once was) can take it."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            ephemeral = int(ports.read().split()[0])
    except OSError:
        ephemeral = 0
    for port in random.sample(range(10_000, ephemeral), min(200, max(0, ephemeral - 10_000))):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # no such range here: any free port
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_thrift_server(spark: SparkSession, host: str = "127.0.0.1", port: int = 10000):
    """Starts HiveThriftServer2 on (host, port) over `spark`'s context; returns the server. A
    session with the Hive catalog must have been built with `conf=thrift_conf(host, port)`."""
    _check_hive_address(spark, host, port)
    spark.conf.set("hive.server2.thrift.bind.host", host)
    spark.conf.set("hive.server2.thrift.port", str(port))
    server = jvm.start_thrift_server(spark, host, port)
    wait_for_port(host, port)
    log.info("sql_ext Thrift server listening on %s:%s", host, port)
    return server


def _check_hive_address(spark: SparkSession, host: str, port: int) -> None:
    """With the Hive catalog the server takes its address from the Hive configuration the
    session started with, and would listen elsewhere: say so instead of waiting for it."""
    conf = spark.sparkContext.getConf()
    if conf.get("spark.sql.catalogImplementation", "in-memory") != "hive":
        return
    fixed = (conf.get("spark.hadoop.hive.server2.thrift.bind.host"),
             conf.get("spark.hadoop.hive.server2.thrift.port"))
    if fixed != (host, str(port)):
        raise ValueError(
            f"this session uses the Hive catalog, whose Thrift address is fixed when the session "
            f"starts ({fixed[0] or 'unset'}:{fixed[1] or 'unset'}), not {host}:{port}: build it "
            f"with conf=sql_ext.server.thrift.thrift_conf({host!r}, {port}), as sql-ext "
            "thriftserver does")


def wait_for_port(host: str, port: int, timeout: float = 60.0, process=None) -> None:
    """Returns once something listens on host:port; `process` (a subprocess.Popen): the server
    that should, whose exit ends the wait at once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before it "
                               f"listened on {host}:{port}")
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout:.0f} s")

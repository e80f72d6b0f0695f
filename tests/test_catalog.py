"""The persistent catalog: what a Thrift server is given, the restarted server and the next
process find by name; a second process on an embedded catalog gets a clear error."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pyhive import hive

from sql_ext.server.thrift import free_port, wait_for_port


def _python(code: str, cwd, timeout: float = 300) -> subprocess.CompletedProcess:
    """`code` in a new Python process (its own Spark session), from `cwd`."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_a_second_process_on_an_embedded_catalog_is_a_clear_error(spark, tmp_path):
    """The test session holds its warehouse's embedded catalog: a second process is refused."""
    warehouse = spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    start = time.monotonic()
    second = _python(f"""
        import sql_ext
        from sql_ext.metastore import CatalogInUse
        try:
            sql_ext.session(warehouse={warehouse!r})
        except CatalogInUse as error:
            print("refused:", error)
        """, cwd=tmp_path, timeout=240)
    took = time.monotonic() - start
    assert "refused: the catalog of warehouse" in second.stdout, second.stderr[-3000:]
    assert "admits one" in second.stdout
    assert took < 120, f"the second process took {took:.0f} s to be refused"


def _start_server(warehouse, port, log, *options):
    """`sql-ext thriftserver` with `options`; the tests folder is on its PYTHONPATH (the
    UDAF modules of tests/udafs)."""
    tests = str(Path(__file__).resolve().parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [tests] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    with open(log, "a") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "sql_ext.cli", "thriftserver", "--port", str(port),
             "--warehouse", str(warehouse), *options],
            stdout=out, stderr=subprocess.STDOUT, cwd=warehouse.parent,
            start_new_session=True, env=env)
    wait_for_port("127.0.0.1", port, timeout=120)
    return process


def _kill(process, port):
    """SIGKILL to the server's process group (Python and its JVM); returns once the port is
    free, so a restarted server is not mistaken for the dying one."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            time.sleep(0.2)
        except OSError:
            return
    raise AssertionError(f"port {port} still answers after the server was killed")


@pytest.mark.heavy
def test_a_killed_thrift_server_restarts_with_its_tables(tmp_path):
    """Tables, views and databases created through JDBC answer by name after the server is
    killed with SIGKILL and started again, and in the next process on the warehouse (started
    from another directory); opening and closing JDBC sessions is fast (no metastore
    retries); the metastore and its log live in the warehouse, not the working directory.
    The restarted server's JVM killed (a crash, the OOM killer): the server does not linger
    answering nothing; it says so and exits 1, so a supervisor restarts it."""
    warehouse, port, log = tmp_path / "warehouse", free_port(), tmp_path / "server.log"
    process = _start_server(warehouse, port, log)
    try:
        with hive.connect(host="127.0.0.1", port=port) as conn:
            cursor = conn.cursor()
            cursor.execute("CREATE DATABASE IF NOT EXISTS shop")
            cursor.execute("CREATE TABLE shop.orders USING DELTA AS SELECT id AS seq, "
                           "CAST(id AS DOUBLE) AS cost FROM range(0, 12)")
            cursor.execute("INSERT INTO shop.orders VALUES (12, 12.0)")
            cursor.execute("CREATE VIEW shop.big AS SELECT * FROM shop.orders WHERE cost > 9")
        closes = []
        for _ in range(20):
            start = time.monotonic()
            conn = hive.connect(host="127.0.0.1", port=port)
            conn.cursor().execute("SELECT 1")
            conn.close()
            closes.append(time.monotonic() - start)
    finally:
        _kill(process, port)
    print(f"20 JDBC connect/query/close cycles: {sum(closes):.2f} s, slowest {max(closes):.2f} s")
    assert max(closes) < 5, closes  # each took ~21 s when the metastore retried at close
    process = _start_server(warehouse, port, log)
    try:
        with hive.connect(host="127.0.0.1", port=port) as conn:
            cursor = conn.cursor()
            cursor.execute("SHOW TABLES IN shop")
            assert sorted(row[1] for row in cursor.fetchall()) == ["big", "orders"]
            cursor.execute("SELECT SUM(cost) FROM shop.orders WINDOW TUMBLING COUNT(4) "
                           "OVER (ORDER BY seq)")
            assert sorted(row[0] for row in cursor.fetchall()) == [6.0, 22.0, 38.0]
        # Started whole (the second start's line), it now only serves: its JVM dies.
        wait_for_line(process, log, "resumed ", count=2)
        kill_jvm_and_expect_exit(process, log, "sql-ext Thrift server")
    finally:
        if process.poll() is None:
            _kill(process, port)
    (tmp_path / "elsewhere").mkdir()
    read = _python(f"""
        import sql_ext
        spark = sql_ext.session(warehouse={str(warehouse)!r})
        print(spark.sql("SELECT COUNT(*) FROM shop.orders").first()[0])
        print(sorted(r.seq for r in spark.table("shop.big").collect()))
        """, cwd=tmp_path / "elsewhere")
    assert read.returncode == 0, read.stderr[-3000:]
    assert read.stdout.splitlines()[-2:] == ["13", "[10, 11, 12]"]
    assert (warehouse / "metastore_db").is_dir() and (warehouse / "derby.log").exists()
    for folder in (tmp_path, tmp_path / "elsewhere"):
        assert not (folder / "metastore_db").exists() and not (folder / "derby.log").exists()


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if parent == pid:
            children.append(int(stat.parent.name))
    return children


def wait_for_line(process, log: Path, text: str, timeout: float = 60, count: int = 1) -> None:
    """Until the server's log holds `text` (`count` times: a log a restarted server appends
    to); fails if it exits first."""
    deadline = time.monotonic() + timeout
    while log.read_text().count(text) < count:
        assert time.monotonic() < deadline and process.poll() is None, log.read_text()[-3000:]
        time.sleep(0.2)


def kill_jvm_and_expect_exit(process, log: Path, server: str) -> None:
    """SIGKILL to the JVM under a `sql-ext` server: the server must say so and exit 1."""
    [jvm] = [pid for pid in _children(process.pid)
             if b"java" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    os.kill(jvm, signal.SIGKILL)
    assert process.wait(timeout=60) == 1, log.read_text()[-3000:]
    assert f"{server}: its JVM exited with code -9; the server stops" in log.read_text()


def test_a_catalog_whose_creation_was_killed_is_created_anew(tmp_path):
    """A process killed while Derby created the embedded catalog leaves metastore_db without
    service.properties; the next process sets it aside (warning) and works, instead of being
    refused forever."""
    warehouse = tmp_path / "warehouse"
    (warehouse / "metastore_db" / "seg0").mkdir(parents=True)  # as a kill mid-creation leaves
    result = _python(f"""
        import sql_ext
        spark = sql_ext.session(warehouse={str(warehouse)!r})
        spark.sql("CREATE TABLE t USING DELTA AS SELECT 1 AS x")
        print("rows:", spark.table("t").count())
        """, cwd=tmp_path, timeout=240)
    assert "rows: 1" in result.stdout, result.stderr[-3000:]
    assert "was never completely created" in result.stderr
    aside = [p.name for p in warehouse.iterdir() if p.name.startswith("metastore_db.unfinished-")]
    assert len(aside) == 1 and (warehouse / "metastore_db" / "service.properties").exists()

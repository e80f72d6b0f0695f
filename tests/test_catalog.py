"""The persistent catalog: a second process on an embedded catalog gets a clear error; a
catalog whose creation was killed is created anew; the helpers that start, kill and watch a
`sql-ext thriftserver` process. (What a killed server was given, the restarted server and the
next process find by name: tests/test_managed_streams.py.)"""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from sql_ext.server.thrift import wait_for_port


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
    assert "refused: [SQL_EXT_CATALOG_IN_USE] the catalog of warehouse" in second.stdout, \
        second.stderr[-3000:]
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

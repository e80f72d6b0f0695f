"""The class-data archive of the test run's Spark JVMs (not a test).

    python tests/jvm_archive.py <archive>          # `dev.sh test` runs it before pytest

A Spark driver with sql-ext spends most of its first 15 s loading and verifying some 20,000
classes, and the suite starts about a hundred of them (stream drivers killed and restarted,
servers, pipelines, deploy jobs). The JVM can map those classes ready-made from a class-data
sharing archive (JDK 17's dynamic AppCDS): a session then starts in about half the time, and the
JVMs share the archive's pages. This script writes the archive once: a training driver does
what the tests' drivers do (a Hive catalog in a new warehouse, Delta tables, windowed queries,
a streaming table, the Thrift and Connect servers answering a client) and dumps the classes it
loaded when it exits.

The JVM checks the archive against the class path it was made with (every jar, its size and
time) and quietly goes without it when they differ (another pyspark, a rebuilt jar): a stale
archive costs time, never a wrong result. `is_current` rebuilds it when a jar it holds is newer.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

# The archive's own messages (and "unable to use shared archive" where the class path differs,
# as in a wheel's virtual environment) would reach every test's log: off.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def use_options(archive: Path) -> str:
    """JVM options that map `archive`. Spark's launcher splits Java options at spaces outside
    quotes: the path is quoted, for a checkout in a folder with a space."""
    return f"'-XX:SharedArchiveFile={archive}' {QUIET}"


def is_current(archive: Path) -> bool:
    """Whether `archive` exists and is newer than every jar a driver loads."""
    import pyspark

    from sql_ext import jars

    if not archive.is_file():
        return False
    made = archive.stat().st_mtime
    loaded = [*jars.all_jars(), *(Path(pyspark.__file__).parent / "jars").glob("*.jar")]
    return all(jar.stat().st_mtime < made for jar in loaded)


def train(work: Path) -> None:
    """The training driver's work: each kind of statement the tests' JVMs run."""
    from pyhive import hive

    import sql_ext
    from sql_ext.server.connect import connect_conf, start_connect_server, stop_connect_server
    from sql_ext.server.thrift import free_port, start_thrift_server, thrift_conf

    thrift, connect = free_port(), free_port()
    spark = sql_ext.session(warehouse=work / "warehouse",
                            conf={**thrift_conf("127.0.0.1", thrift),
                                  **connect_conf("127.0.0.1", connect, None)})
    spark.sql("CREATE TABLE src (seq BIGINT, k STRING, ts TIMESTAMP, v DOUBLE) USING DELTA")
    spark.sql("INSERT INTO src SELECT id, CAST(id % 3 AS STRING), "
              "TIMESTAMP_SECONDS(id * 7), id * 1.5 FROM range(200)")
    for window in ("TUMBLING COUNT(4) OVER (PARTITION BY k ORDER BY seq)",
                   "SLIDING COUNT(6) TRIGGER COUNT(2) OVER (PARTITION BY k)",
                   "TIME_INTERVAL(60, 30) ON ts OVER (PARTITION BY k)"):
        spark.sql(f"SELECT k, WINDOW_ID() AS w, SUM(v) AS total, COLLECT_LIST(seq) AS ids "
                  f"FROM src WINDOW {window}").collect()
    spark.sql("CREATE STREAMING TABLE panes AS SELECT k, PANE_START() AS s, SUM(v) AS total "
              "FROM STREAM(src) WINDOW TIME_INTERVAL(60, 30) ON ts OVER (PARTITION BY k) "
              "WATERMARK DELAY 5")
    spark.sql("CREATE STREAMING TABLE counts AS SELECT k, WINDOW_ID() AS w, COUNT(*) AS n "
              "FROM STREAM(src) WINDOW TUMBLING COUNT(5) OVER (PARTITION BY k ORDER BY seq)")
    spark.sql("SHOW STREAMS").collect()
    start_thrift_server(spark, "127.0.0.1", thrift)
    with hive.connect(host="127.0.0.1", port=thrift) as conn:
        cursor = conn.cursor()
        cursor.execute("SELECT k, SUM(v) FROM src WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k)")
        cursor.fetchall()
        cursor.execute("SELECT COUNT(*) FROM counts")
        cursor.fetchall()
    start_connect_server(spark, "127.0.0.1", connect)
    client = ("from pyspark.sql import SparkSession\n"
              f"s = SparkSession.builder.remote('sc://127.0.0.1:{connect}').getOrCreate()\n"
              "s.sql('SELECT k, COUNT(*) FROM src WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k)').collect()\n")
    done = subprocess.run([sys.executable, "-c", client], timeout=300, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    stop_connect_server(spark)
    spark.stop()


def build(archive: Path) -> None:
    """Runs the training driver in a process of its own and keeps what its JVM dumped."""
    import tempfile

    archive.parent.mkdir(parents=True, exist_ok=True)
    dumped = archive.with_suffix(".part")
    dumped.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="sql_ext_cds_") as work:
        options = f"-XX:TieredStopAtLevel=1 '-XX:ArchiveClassesAtExit={dumped}' {QUIET}"
        env = dict(os.environ, SQL_EXT_CDS_TRAIN=work,
                   PYSPARK_SUBMIT_ARGS=f'--driver-java-options "{options}" pyspark-shell')
        env.pop("SPARK_CONF_DIR", None)  # a non-empty folder on the class path: no archive
        done = subprocess.run([sys.executable, __file__, "--train"], env=env, cwd=work,
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise SystemExit("the archive's training driver failed:\n" + done.stderr[-4000:])
        # The JVM writes the archive as it exits, after the Python process that started it.
        deadline = time.monotonic() + 120
        size = -1
        while time.monotonic() < deadline:
            if dumped.is_file() and dumped.stat().st_size == size and not _jvm_writing(dumped):
                break
            size = dumped.stat().st_size if dumped.is_file() else -1
            time.sleep(1)
    if not dumped.is_file():
        raise SystemExit(f"the training driver's JVM wrote no archive ({dumped})")
    dumped.replace(archive)


def _jvm_writing(path: Path) -> bool:
    """Whether a process still has `path` open (the JVM dumping into it)."""
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) == str(path) for fd in fd_dir.iterdir()):
                return True
        except OSError:
            continue
    return False


if __name__ == "__main__":
    if sys.argv[1:] == ["--train"]:
        train(Path(os.environ["SQL_EXT_CDS_TRAIN"]))
    else:
        target = Path(sys.argv[1]).resolve()
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        if not is_current(target):
            started = time.monotonic()
            build(target)
            print(f"class-data archive {target} written in {time.monotonic() - started:.0f} s")

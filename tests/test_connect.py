"""The Spark Connect door: `sql-ext connect-server` in its own process and a remote client in
another (tests/connect_client.py), both on 127.0.0.1. The oracle for the windowed rows is the
same query in this process's classic session over the same rows."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from shared_servers import CONNECT_TOKEN as TOKEN

from sql_ext.server.thrift import free_port, wait_for_port

TESTS = Path(__file__).resolve().parent
ROWS = [("a", i, float(i)) for i in range(10)] + [("b", i, 100.0 + i) for i in range(7)]


def _start(tmp_path, *options):
    port = free_port()
    log = open(tmp_path / "connect.log", "a")
    process = subprocess.Popen(
        [sys.executable, "-m", "sql_ext.cli", "connect-server", "--port", str(port),
         "--warehouse", str(tmp_path / "warehouse"), *options],
        stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path, start_new_session=True,
        env=dict(os.environ, SPARK_CONNECT_AUTHENTICATE_TOKEN=TOKEN))
    return process, port


def _client(url, source, timeout=600):
    return subprocess.run([sys.executable, str(TESTS / "connect_client.py"), url, source],
                          capture_output=True, text=True, timeout=timeout)


def _load(spark, name):
    spark.createDataFrame(ROWS, "k string, seq int, x double") \
        .write.mode("overwrite").saveAsTable(name)


def test_a_remote_client_gets_the_windowed_surface(connect_server, spark):
    port = connect_server.port
    # The rows reach the server's warehouse from a first remote statement: a plain one.
    loader = subprocess.run(
        [sys.executable, "-c", "import sys; from pyspark.sql import SparkSession; "
         "s = SparkSession.builder.remote(sys.argv[1]).getOrCreate(); "
         "s.createDataFrame(eval(sys.argv[2]), 'k string, seq int, x double')"
         ".write.saveAsTable('remote_src')", f"sc://localhost:{port}/;token={TOKEN}",
         repr(ROWS)], capture_output=True, text=True, timeout=300)
    assert loader.returncode == 0, loader.stderr[-3000:]
    result = _client(f"sc://localhost:{port}/;token={TOKEN}", "remote_src")
    assert result.returncode == 0, (result.stderr[-3000:]
                                    + connect_server.log.read_text()[-3000:])
    seen = json.loads(result.stdout.split("RESULT ", 1)[1])
    assert seen["session"] == "pyspark.sql.connect.session"

    _load(spark, "connect_oracle_src")
    windowed = ("SELECT k, SUM(x) AS s, COUNT(*) AS n, WINDOW_ID() AS w FROM connect_oracle_src "
                "WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k ORDER BY seq)")
    expected = sorted([list(r) for r in spark.sql(windowed).collect()])
    assert sorted(seen["windowed"]) == expected and len(expected) == 5
    assert sorted(seen["parameters"]) == [["a", 1.0], ["a", 5.0]]  # seq 0,1 and 2,3 (seq < 5)
    assert all(s == builtin for _, s, builtin in seen["udaf"]) and len(seen["udaf"]) == 5
    assert sorted(seen["streamed"]) == sorted([[k, n, s, w] for k, s, n, w in expected])
    assert seen["shown"] == ["STOPPED"]
    assert seen["state_rows"] >= 1  # the partial windows left in the checkpoint
    assert "needs a classic session" in seen["helper_error"]
    assert seen["dropped"]


def test_a_misspelt_window_gets_the_suggestion_over_connect(connect_server):
    """The Connect door reports sql-ext's "did you mean", at the misspelling, as a parse error
    the client can catch (not Spark's bare syntax error)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; from pyspark.sql import SparkSession\n"
         "from pyspark.errors import ParseException\n"
         "s = SparkSession.builder.remote(sys.argv[1]).getOrCreate()\n"
         "try:\n"
         "    s.sql('SELECT SUM(id) FROM range(5) WINDOW TUMBLNG COUNT(2)').collect()\n"
         "except ParseException as e:\n"
         "    print('PARSE', e)\n",
         f"sc://localhost:{connect_server.port}/;token={TOKEN}"],
        capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr[-3000:]
    assert "PARSE" in probe.stdout and "did you mean TUMBLING?" in probe.stdout, probe.stdout
    assert "(line 1, pos 36)" in probe.stdout


@pytest.mark.parametrize("url_tail", [";token=wrong", ""])
def test_a_client_without_the_token_is_refused(connect_server, url_tail):
    port = connect_server.port
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; from pyspark.sql import SparkSession; "
         "s = SparkSession.builder.remote(sys.argv[1]).getOrCreate(); s.sql('SELECT 1').collect()",
         f"sc://localhost:{port}/{url_tail}"],
        capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if k != "SPARK_CONNECT_AUTHENTICATE_TOKEN"})
    assert probe.returncode != 0
    assert "UNAUTHENTICATED" in probe.stderr or "authentication" in probe.stderr.lower()


def test_a_reachable_address_without_a_token_is_refused(tmp_path):
    refused = subprocess.run(
        [sys.executable, "-m", "sql_ext.cli", "connect-server", "--host", "0.0.0.0",
         "--warehouse", str(tmp_path / "w")], capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert "refusing to listen on 0.0.0.0 without authentication" in refused.stderr
    assert "--auth token" in refused.stderr


def test_a_connect_server_whose_jvm_dies_exits_non_zero(tmp_path):
    """As the Thrift server: the JVM killed, `sql-ext connect-server` says so and exits 1."""
    from test_catalog import kill_jvm_and_expect_exit, wait_for_line

    (tmp_path / "team.token").write_text(TOKEN + "\n")
    process, port = _start(tmp_path, "--auth", "token", "--token-file",
                           str(tmp_path / "team.token"))
    log = tmp_path / "connect.log"
    try:
        wait_for_port("127.0.0.1", port, timeout=180)
        wait_for_line(process, log, "Ctrl-C")  # started whole: it now only serves
        assert "token=<your token>" in log.read_text()  # a given token is never printed
        assert TOKEN not in log.read_text()
        kill_jvm_and_expect_exit(process, log, "sql-ext Spark Connect server")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)

"""A server that many clients share: a statement time limit for every session (the server's
--query-timeout, which a session may SET lower and never higher) and for one session; a JDBC
cancel or a timeout stops a long windowed query's jobs, and a long REFRESH's stream, whose
checkpoint stays whole (the next REFRESH writes exactly the windows of the source, none twice);
FAIR scheduling. Real servers on 127.0.0.1, PyHive clients; the windows are checked against
their closed form."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
from pyhive import hive
from scale import size
from TCLIService.ttypes import TExecuteStatementReq, TGetOperationStatusReq, TOperationState
from test_catalog import _kill, _start_server
from test_managed_streams import _streams, _until

from sql_ext.server.thrift import free_port

KEYS = 7
SIZE = 3
# Rows of the source before the long REFRESH, and of its backlog: in the suite a backlog whose
# rows each sleep as they are read (reflect returns the string 'null'), in one task, so that a
# pass takes 12 s with the CPU free for the statements that watch it; in the soak 3M rows
# that take minutes to window.
SMALL = 70
BACKLOG, SLEEP_MS = size((40, 300), (3_000_000, 0))
LARGE = SMALL + BACKLOG
COUNTS = ("SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, MIN(seq) AS lo, MAX(seq) AS hi "
          "FROM STREAM({source}) WHERE seq < {small} OR "
          "reflect('java.lang.Thread', 'sleep', {sleep} + seq * 0) = 'null' "
          f"WINDOW TUMBLING COUNT({SIZE}) OVER (PARTITION BY k ORDER BY seq)")
# A windowed query that runs for minutes, its rows sleeping as they are read in 2 splits:
# long enough to cancel or time out, with the CPU free.
LONG_QUERY = ("SELECT k, COUNT(*) FROM (SELECT k, WINDOW_ID() AS w, SUM(seq) AS s FROM "
              "(SELECT id AS seq, id % 100 AS k FROM range(0, 100000, 1, 2) "
              "WHERE reflect('java.lang.Thread', 'sleep', 10 + id * 0) = 'null') "
              "WINDOW TUMBLING COUNT(10) OVER (PARTITION BY k ORDER BY seq)) GROUP BY k")
# A statement's state without HiveServer2's long polling: a status request about a running
# background statement otherwise waits up to 5 s for it to end (hive.server2.long.polling.timeout),
# and two such waits took most of an 18 s pass before the test's cancel.
NO_LONG_POLL = {"set:hiveconf:hive.server2.long.polling.timeout": "0ms"}
ENDED = (TOperationState.CANCELED_STATE, TOperationState.TIMEDOUT_STATE,
         TOperationState.FINISHED_STATE, TOperationState.ERROR_STATE,
         TOperationState.CLOSED_STATE)


def expected_windows(rows: int) -> tuple[int, int, int]:
    """TUMBLING COUNT(3) per key k = seq % 7 over seq 0..rows-1 in order: (windows, sum of
    their first seq, sum of their last seq). Window w of key k holds the 3w-th to 3w+2-th seq
    of the key, k + 7 * (3w) ... k + 7 * (3w + 2)."""
    windows = lo = hi = 0
    for k in range(KEYS):
        full = len(range(k, rows, KEYS)) // SIZE
        windows += full
        lo += sum(k + KEYS * SIZE * w for w in range(full))
        hi += sum(k + KEYS * (SIZE * w + SIZE - 1) for w in range(full))
    return windows, lo, hi


def _table_figures(cursor) -> tuple:
    cursor.execute("SELECT COUNT(*), COUNT(DISTINCT k, w), SUM(n), SUM(lo), SUM(hi) "
                   "FROM share.cnt")
    return cursor.fetchone()


def _state(cursor) -> int:
    return cursor.poll().operationState


@pytest.mark.heavy
@pytest.mark.soak
def test_a_cancelled_or_timed_out_refresh_stops_its_stream_and_keeps_its_checkpoint(
        thrift_server):
    counts = COUNTS.format(source="share.src", small=SMALL, sleep=SLEEP_MS)
    with hive.connect(host="127.0.0.1", port=thrift_server, configuration=NO_LONG_POLL) as conn, \
            hive.connect(host="127.0.0.1", port=thrift_server) as other:
        cursor, watcher = conn.cursor(), other.cursor()
        cursor.execute("CREATE DATABASE share")
        cursor.execute("CREATE TABLE share.src (seq BIGINT, k STRING) USING DELTA")
        cursor.execute(f"INSERT INTO share.src SELECT id, CAST(id % {KEYS} AS STRING) "
                       f"FROM range(0, {SMALL})")
        cursor.execute(f"CREATE STREAMING TABLE share.cnt AS {counts}")
        windows, lo, hi = expected_windows(SMALL)
        assert _table_figures(cursor) == (windows, windows, SIZE * windows, lo, hi)
        cursor.execute(f"INSERT INTO share.src SELECT id, CAST(id % {KEYS} AS STRING) "
                       f"FROM range({SMALL}, {LARGE}, 1, {size(1, 4)})")

        def running() -> bool:
            return _streams(watcher).get("share.cnt", {}).get("state") == "RUNNING"

        # A JDBC cancel, as Statement.cancel() sends it: the statement runs in the background.
        cursor.execute("REFRESH STREAMING TABLE share.cnt", async_=True)
        _until(running, "the REFRESH's stream to run")
        time.sleep(1)
        assert _state(cursor) == TOperationState.RUNNING_STATE, "the pass ended before cancel"
        cursor.cancel()
        assert _state(cursor) == TOperationState.CANCELED_STATE
        _until(lambda: not running(), "the cancelled REFRESH's stream to stop", 30)
        small = expected_windows(SMALL)
        assert _table_figures(watcher) == (small[0], small[0], SIZE * small[0], *small[1:])

        # The session's timeout, on a statement run in the client's thread (PyHive's default).
        cursor.execute("SET spark.sql.thriftServer.queryTimeout=2s")
        started = time.monotonic()
        with pytest.raises(Exception, match="TIMEDOUT"):
            cursor.execute("REFRESH STREAMING TABLE share.cnt")
            cursor.fetchall()
        assert time.monotonic() - started < 40
        _until(lambda: not running(), "the timed-out REFRESH's stream to stop", 30)
        assert _table_figures(watcher) == (small[0], small[0], SIZE * small[0], *small[1:])
        stream = _streams(watcher)["share.cnt"]
        assert stream["last_error"] is None, stream

        # Neither pass committed half a batch: the next one writes every window once.
        cursor.execute("SET spark.sql.thriftServer.queryTimeout=0")
        cursor.execute("REFRESH STREAMING TABLE share.cnt")
        windows, lo, hi = expected_windows(LARGE)
        assert _table_figures(cursor) == (windows, windows, SIZE * windows, lo, hi)
        cursor.execute("DROP STREAMING TABLE share.cnt")

        # Two clients create the same table at once: the second joins the first one's pass,
        # and a cancel of the first does not cut the pass the second waits for.
        third = hive.connect(host="127.0.0.1", port=thrift_server,
                             configuration=NO_LONG_POLL).cursor()
        cursor.execute(f"CREATE STREAMING TABLE share.cnt AS {counts}", async_=True)
        _until(running, "the first CREATE's stream to run")
        third.execute(f"CREATE STREAMING TABLE share.cnt AS {counts}", async_=True)
        time.sleep(5)  # it has joined (the first CREATE's pass has been running for seconds)
        cursor.cancel()
        assert _state(cursor) == TOperationState.CANCELED_STATE
        _until(lambda: _state(third) in ENDED, "the second CREATE to end", 300)
        assert _state(third) == TOperationState.FINISHED_STATE, third.poll()
        assert _table_figures(watcher) == (windows, windows, SIZE * windows, lo, hi)
        cursor.execute("DROP STREAMING TABLE share.cnt")


@pytest.mark.heavy
def test_a_cancelled_or_timed_out_alter_keeps_the_old_definition(thrift_server):
    """ALTER STREAMING TABLE waits for the new query's first micro-batch (Spark checks the
    checkpoint against the query then). A cancel or a timeout during that wait stops the stream
    and the old definition stays, not running, as it was; its checkpoint stays whole."""
    # A first micro-batch that takes 12 s however warm the server is: each row after the first
    # SMALL sleeps 0.3 s as it is read, in one task, so that the other core serves the
    # statements that watch it.
    source = "altering.src"
    query = COUNTS.format(source=source, small=SMALL, sleep=300)
    backlog = SMALL + 40  # in one file
    altered = f"ALTER STREAMING TABLE altering.cnt TRIGGER EVERY 5 AS {query}"
    with hive.connect(host="127.0.0.1", port=thrift_server, configuration=NO_LONG_POLL) as conn, \
            hive.connect(host="127.0.0.1", port=thrift_server) as other:
        cursor, watcher = conn.cursor(), other.cursor()
        cursor.execute("CREATE DATABASE altering")
        cursor.execute(f"CREATE TABLE {source} (seq BIGINT, k STRING) USING DELTA")
        cursor.execute(f"INSERT INTO {source} SELECT id, CAST(id % {KEYS} AS STRING) "
                       f"FROM range(0, {SMALL})")
        cursor.execute(f"CREATE STREAMING TABLE altering.cnt AS {query}")
        cursor.execute(f"INSERT INTO {source} SELECT id, CAST(id % {KEYS} AS STRING) "
                       f"FROM range({SMALL}, {backlog}, 1, 1)")
        small = expected_windows(SMALL)

        def stream() -> dict:
            return _streams(watcher)["altering.cnt"]

        def as_before() -> None:
            _until(lambda: stream()["state"] != "RUNNING", "the ALTER's stream to stop", 30)
            assert stream()["trigger"] == "AVAILABLE NOW"  # the old definition
            assert stream()["last_error"] is None  # a stop, which Spark knows from a failure
            cursor.execute("SELECT COUNT(*), COUNT(DISTINCT k, w), SUM(n), SUM(lo), SUM(hi) "
                           "FROM altering.cnt")
            assert cursor.fetchone() == (small[0], small[0], SIZE * small[0], *small[1:])

        cursor.execute(altered, async_=True)  # cancelled as Statement.cancel() does it
        _until(lambda: stream()["state"] == "RUNNING" or _state(cursor) in ENDED,
               "the altered stream to run")
        assert _state(cursor) == TOperationState.RUNNING_STATE, cursor.poll().errorMessage
        time.sleep(1)
        assert _state(cursor) == TOperationState.RUNNING_STATE, "the first batch ended"
        cursor.cancel()
        assert _state(cursor) == TOperationState.CANCELED_STATE
        as_before()

        cursor.execute("SET spark.sql.thriftServer.queryTimeout=2s")  # in the client's thread
        started = time.monotonic()
        with pytest.raises(Exception, match="TIMEDOUT"):
            cursor.execute(altered)
            cursor.fetchall()
        assert time.monotonic() - started < 40
        as_before()

        cursor.execute("SET spark.sql.thriftServer.queryTimeout=0")
        cursor.execute("REFRESH STREAMING TABLE altering.cnt")
        windows, lo, hi = expected_windows(backlog)
        cursor.execute("SELECT COUNT(*), COUNT(DISTINCT k, w), SUM(n), SUM(lo), SUM(hi) "
                       "FROM altering.cnt")
        assert cursor.fetchone() == (windows, windows, SIZE * windows, lo, hi)
        cursor.execute(altered)  # uncut, it holds: the stream runs on with the new trigger
        assert (stream()["state"], stream()["trigger"]) == ("RUNNING", "EVERY 5 SECONDS")
        cursor.execute("DROP STREAMING TABLE altering.cnt")


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    """A server with a 20-second statement timeout (above the first query's planning on a busy
    machine) and Spark's UI (its REST API shows the
    jobs that run): (port, ui port)."""
    work = tmp_path_factory.mktemp("shared_server")
    port, ui = free_port(), free_port()
    process = _start_server(work / "warehouse", port, work / "server.log",
                            "--query-timeout", "20", "--ui-port", str(ui))
    yield port, ui
    _kill(process, port)


def _running_jobs(ui: int) -> list:
    def get(path: str):
        with urllib.request.urlopen(f"http://127.0.0.1:{ui}/api/v1/{path}", timeout=10) as r:
            return json.loads(r.read())
    app = get("applications")[0]["id"]
    return get(f"applications/{app}/jobs?status=running")


@pytest.mark.xdist_group("ceiling_server")  # one shared_server for the three
def test_a_cancelled_windowed_query_stops_its_jobs(shared_server):
    port, ui = shared_server
    with hive.connect(host="127.0.0.1", port=port) as conn:
        cursor = conn.cursor()
        cursor.execute(LONG_QUERY, async_=True)
        _until(lambda: _running_jobs(ui) or _state(cursor) in ENDED, "the query's jobs to run")
        status = cursor.poll()
        assert status.operationState == TOperationState.RUNNING_STATE, status
        cursor.cancel()
        assert _state(cursor) == TOperationState.CANCELED_STATE
        _until(lambda: not _running_jobs(ui), "the cancelled query's jobs to stop", 30)
        cursor.execute("SELECT 1")
        assert cursor.fetchall() == [(1,)]


def _with_timeout(conn, sql: str, seconds: int) -> int:
    """Runs `sql` as JDBC's Statement.setQueryTimeout(seconds) sends it (the statement's own
    timeout, in the background); its final state."""
    handle = conn.client.ExecuteStatement(TExecuteStatementReq(
        conn.sessionHandle, sql, runAsync=True, queryTimeout=seconds)).operationHandle
    while True:
        state = conn.client.GetOperationStatus(TGetOperationStatusReq(handle)).operationState
        if state in ENDED:
            return state
        time.sleep(0.2)


@pytest.mark.xdist_group("ceiling_server")
def test_the_server_timeout_is_every_session_s_ceiling(shared_server):
    port, ui = shared_server
    with hive.connect(host="127.0.0.1", port=port) as conn:
        cursor = conn.cursor()
        cursor.execute("SET spark.scheduler.mode")
        assert cursor.fetchall() == [("spark.scheduler.mode", "FAIR")]
        cursor.execute("SET spark.sql.thriftServer.queryTimeout")
        assert cursor.fetchall() == [("spark.sql.thriftServer.queryTimeout", "20s")]
        for higher in ("60s", "0"):
            with pytest.raises(Exception, match="this server's statement timeout is 20 seconds"):
                cursor.execute(f"SET spark.sql.thriftServer.queryTimeout={higher}")
        started = time.monotonic()
        with pytest.raises(Exception, match="TIMEDOUT"):
            cursor.execute(LONG_QUERY)
            cursor.fetchall()
        took = time.monotonic() - started
        assert 20 <= took < 60, took
        _until(lambda: not _running_jobs(ui), "the timed-out query's jobs to stop", 30)
        started = time.monotonic()  # a statement's own, lower timeout (JDBC's)
        assert _with_timeout(conn, LONG_QUERY, 2) == TOperationState.TIMEDOUT_STATE
        assert 2 <= time.monotonic() - started < 20
        started = time.monotonic()  # a statement's own, higher timeout: the server's holds
        assert _with_timeout(conn, LONG_QUERY, 60) == TOperationState.TIMEDOUT_STATE
        assert 20 <= time.monotonic() - started < 60
        cursor.execute("SET spark.sql.thriftServer.queryTimeout=3s")  # lower: this session's
        started = time.monotonic()
        with pytest.raises(Exception, match="TIMEDOUT"):
            cursor.execute(LONG_QUERY)
            cursor.fetchall()
        assert 3 <= time.monotonic() - started < 20


@pytest.mark.xdist_group("ceiling_server")
def test_a_timeout_brought_by_the_connection_is_held_to_the_ceiling(shared_server):
    """A connection's session configuration (a JDBC URL's `?key=value`, PyHive's
    `configuration`) reaches the session without a SET: the session's statements are refused,
    naming the ceiling, until it SETs a value within it."""
    port, _ = shared_server
    key = "spark.sql.thriftServer.queryTimeout"
    for brought in ("0", "1h"):
        with hive.connect(host="127.0.0.1", port=port,
                          configuration={f"set:hiveconf:{key}": brought}) as conn:
            cursor = conn.cursor()
            cursor.execute(f"SET {key}")  # the connection's value did reach the session
            assert cursor.fetchall() == [(key, brought)]
            with pytest.raises(Exception, match="above this server's 20 seconds"):
                cursor.execute("SELECT 1")
            with pytest.raises(Exception, match="above this server's 20 seconds"):
                cursor.execute("SELECT COUNT(*) FROM range(10) WINDOW TUMBLING COUNT(3)")
            cursor.execute(f"SET {key}=5s")
            cursor.execute("SELECT 1")
            assert cursor.fetchall() == [(1,)]
    with hive.connect(host="127.0.0.1", port=port,
                      configuration={f"set:hiveconf:{key}": "10s"}) as conn:
        cursor = conn.cursor()  # within the ceiling: the connection's own value holds
        cursor.execute("SELECT 1")
        assert cursor.fetchall() == [(1,)]

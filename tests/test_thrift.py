"""The JDBC/Thrift door: `sql-ext thriftserver` in its own process, queried by PyHive and by
Spark's beeline over 127.0.0.1."""

import os
import re
import subprocess
from pathlib import Path

import pyspark
import pytest

from sql_ext.server.thrift import free_port

WINDOWED = ("SELECT customer, WINDOW_ID() AS n, SUM(cost) AS total FROM thrift_orders "
            "WINDOW TUMBLING COUNT(3) OVER (PARTITION BY customer ORDER BY seq)")
EXPECTED = [("A", 0, 9.0), ("A", 1, 27.0), ("B", 0, 12.0), ("B", 1, 30.0)]


def test_pyhive_runs_windowed_sql(jdbc):
    with jdbc.connect() as conn:
        cursor = conn.cursor()
        cursor.execute("CREATE OR REPLACE TABLE thrift_orders USING DELTA AS "
                       "SELECT id AS seq, IF(id % 2 = 1, 'A', 'B') AS customer, "
                       "CAST(id AS DOUBLE) AS cost FROM range(1, 13)")
        cursor.execute(WINDOWED)
        assert sorted(cursor.fetchall()) == EXPECTED


def test_bad_window_is_a_clear_error_and_server_survives(jdbc):
    test_pyhive_runs_windowed_sql(jdbc)  # the table
    with jdbc.connect() as conn:
        cursor = conn.cursor()
        with pytest.raises(Exception, match=r"COUNT\(0\): the count must be at least 1"):
            cursor.execute("SELECT SUM(cost) FROM thrift_orders WINDOW TUMBLING COUNT(0)")
        # A misspelt window kind: sql-ext's suggestion, not Spark's bare syntax error.
        with pytest.raises(Exception, match=r"TUMBLNG is not a window kind .*did you mean "
                                            r"TUMBLING\?"):
            cursor.execute("SELECT SUM(cost) FROM thrift_orders WINDOW TUMBLNG COUNT(3)")
        cursor.execute("SELECT COUNT(*) FROM thrift_orders")
        assert cursor.fetchall() == [(12,)]


def test_beeline_runs_windowed_sql(jdbc):
    test_pyhive_runs_windowed_sql(jdbc)  # the table beeline reads
    beeline = Path(pyspark.__file__).parent / "bin" / "beeline"
    env = dict(os.environ, SPARK_HOME=str(Path(pyspark.__file__).parent))
    result = subprocess.run(
        [str(beeline), "-u", f"jdbc:hive2://127.0.0.1:{jdbc.port}/{jdbc.database}", "--silent=true",
         "--outputformat=csv2", "-e", WINDOWED + " ORDER BY customer, n"],
        capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    # beeline echoes its prompt before the first output line
    lines = [re.sub(r"^\d+: jdbc:\S*> ", "", line) for line in result.stdout.splitlines()]
    lines = [line for line in lines if line.strip()]
    assert lines == ["customer,n,total", "A,0,9.0", "A,1,27.0", "B,0,12.0", "B,1,30.0"]


def test_streaming_table_statements_over_thrift(jdbc):
    """CREATE STREAMING TABLE, SHOW STREAMS and STOP STREAM from a JDBC client: the stream
    runs in the server's process on the client's session."""
    with jdbc.connect() as conn:
        cursor = conn.cursor()
        cursor.execute("CREATE TABLE thrift_events (k STRING, ts TIMESTAMP, v DOUBLE) USING DELTA")
        cursor.execute("INSERT INTO thrift_events VALUES ('a', TIMESTAMP'2020-01-01 00:00:01', 1),"
                       " ('a', TIMESTAMP'2020-01-01 00:00:07', 2),"
                       " ('b', TIMESTAMP'2020-01-01 00:00:12', 4),"
                       " ('a', TIMESTAMP'2020-01-01 00:00:31', 8)")
        # No setting makes the server import a module a client names (once a test hook: this
        # one made the stream import `this` and fail on its missing `x`).
        cursor.execute("SET spark.sql_ext.streaming.sinkWrapper=this:x")
        cursor.execute("CREATE STREAMING TABLE thrift_sums AS "
                       "SELECT k, PANE_START() AS s, SUM(v) AS total FROM STREAM(thrift_events) "
                       "WINDOW TIME_INTERVAL(10) ON ts OVER (PARTITION BY k) WATERMARK DELAY 0")
        cursor.execute("SELECT k, CAST(s AS STRING), total FROM thrift_sums ORDER BY k, s")
        # The watermark after the batch is 00:00:31: panes [0,10) and [10,20) fired.
        assert cursor.fetchall() == [("a", "2020-01-01 00:00:00", 3.0),
                                     ("b", "2020-01-01 00:00:10", 4.0)]
        cursor.execute("SHOW STREAMS")
        rows = {row[0]: row for row in cursor.fetchall()}
        sums = rows[f"{jdbc.database}.thrift_sums"]
        assert sums[1] == "STOPPED" and sums[4] == 4
        with pytest.raises(Exception, match="STOP STREAM thrift_sums: no streaming table"):
            cursor.execute("STOP STREAM thrift_sums")
        cursor.execute("SELECT COUNT(*) FROM thrift_events")
        assert cursor.fetchall() == [(4,)]


def test_a_hive_session_without_the_thrift_address_is_refused_at_once(spark):
    """The test session has the Hive catalog and no thrift_conf: its server would listen on the
    address fixed at session start, so starting one on another port is refused, not awaited."""
    from sql_ext.server.thrift import start_thrift_server

    port = free_port()
    with pytest.raises(ValueError, match=r"fixed when the session starts \(unset:unset\), not "
                                         rf"127.0.0.1:{port}: build it with conf=sql_ext"):
        start_thrift_server(spark, "127.0.0.1", port)


def test_a_kafka_topic_table_through_pyhive(jdbc, kafka):
    """A topic declared, windowed in batch, and streamed into a streaming table, all by JDBC;
    its undecodable message counted and read."""
    import uuid

    from kafka_messages import create_topic, produce

    topic = f"thrift_{uuid.uuid4().hex[:8]}"
    create_topic(kafka, topic, 2)
    produce(kafka, topic, [(k, {"id": i, "k": k, "v": float(i)})
                           for i, k in enumerate("ababab")] + [("a", "oops")],
            {"a": 0, "b": 1}.get)
    with jdbc.connect() as conn:
        cursor = conn.cursor()
        cursor.execute("DROP TABLE IF EXISTS thrift_topic")
        cursor.execute(f"CREATE TABLE thrift_topic (id BIGINT, k STRING, v DOUBLE) USING kafka "
                       f"OPTIONS ('kafka.bootstrap.servers' = '{kafka}', 'subscribe' = "
                       f"'{topic}', 'format' = 'json')")
        windowed = ("SELECT k, WINDOW_ID() AS w, SUM(v) AS total FROM {source} "
                    "WINDOW TUMBLING COUNT(2) OVER (PARTITION BY k)")
        expected = [("a", 0, 2.0), ("b", 0, 4.0)]
        cursor.execute(windowed.format(source="thrift_topic"))
        assert sorted(cursor.fetchall()) == expected
        cursor.execute("DROP TABLE IF EXISTS thrift_topic_sums")
        cursor.execute("CREATE STREAMING TABLE thrift_topic_sums TRIGGER AVAILABLE NOW AS "
                       + windowed.format(source="STREAM(thrift_topic)"))
        cursor.execute("SELECT * FROM thrift_topic_sums")
        assert sorted(cursor.fetchall()) == expected
        cursor.execute("SHOW STREAMS")
        names = [d[0] for d in cursor.description]
        stream = [dict(zip(names, r)) for r in cursor.fetchall()
                  if r[0].endswith("thrift_topic_sums")][0]
        # rows_in: the messages read (Spark's count at the source), decodable or not.
        assert (stream["rows_in"], stream["undecodable_messages"]) == (7, 1)
        cursor.execute("SELECT kafka_value, kafka_offset FROM kafka_undecodable('thrift_topic')")
        assert cursor.fetchall() == [("oops", 3)]
        cursor.execute("DROP TABLE thrift_topic_sums")

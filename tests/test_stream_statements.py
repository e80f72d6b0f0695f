"""CREATE STREAMING TABLE, SHOW STREAMS and STOP STREAM as SQL statements through spark.sql
(sql.md section 5): results against the pane oracle, streams listed and stopped, errors."""

import datetime
import time

import pytest
from pyspark.errors import AnalysisException, ParseException
from test_streaming import QUERY, T0, _expected

from sql_ext.streaming import catalog

SCHEMA = "id long, k string, event_time timestamp, v double"


def _append(spark, table, batch):
    spark.createDataFrame(
        [(r["id"], r["k"], T0 + datetime.timedelta(seconds=r["ts"]), r["v"]) for r in batch],
        SCHEMA).write.format("delta").mode("append").saveAsTable(table)


def _create_source(spark, name):
    spark.sql(f"CREATE TABLE {name} (id BIGINT, k STRING, event_time TIMESTAMP, v DOUBLE) "
              "USING DELTA")


BATCHES = [
    [{"id": 1, "k": "a", "ts": 101, "v": 1.0}, {"id": 2, "k": "b", "ts": 103, "v": 2.0},
     {"id": 3, "k": "a", "ts": 112, "v": 3.0}],
    [{"id": 4, "k": "a", "ts": 108, "v": 4.0}, {"id": 5, "k": "b", "ts": 125, "v": 5.0}],
    [{"id": 6, "k": "b", "ts": 121, "v": 6.0}, {"id": 7, "k": "a", "ts": 150, "v": 7.0}],
]


def _rows(spark, table):
    return sorted((r.k, (r.s - T0).total_seconds(), r.t, r.i, tuple(r.ids), r.total)
                  for r in spark.table(table).collect())


def test_create_streaming_table_statement_matches_oracle(spark, tmp_path):
    """Each statement (TRIGGER AVAILABLE NOW) picks up where the checkpoint left off; late
    tuples re-fire their panes, which replace the earlier rows."""
    _create_source(spark, "stmt_src")
    statement = (f"CREATE STREAMING TABLE stmt_out LOCATION '{tmp_path / 'out'}' "
                 f"CHECKPOINT '{tmp_path / 'ckpt'}' TRIGGER AVAILABLE NOW AS "
                 + QUERY.format(source="stmt_src"))
    for batch in BATCHES:
        _append(spark, "stmt_src", batch)
        assert spark.sql(statement).collect() == []  # returns when the batch is written
    assert _rows(spark, "stmt_out") == _expected(BATCHES)
    shown = _stream(spark, "stmt_out")
    assert shown.state == "STOPPED" and shown.trigger == "AVAILABLE NOW"
    assert shown.rows_in == 7 and shown.rows_out >= 4 and shown.batch >= 2  # + no-data batches
    assert shown.checkpoint == str(tmp_path / "ckpt") and shown.watermark


def test_trigger_every_runs_until_stop_stream(spark):
    """TRIGGER EVERY returns at once with the stream running; the default checkpoint lies in
    the warehouse; STOP STREAM ends it and a second STOP is an error that names it."""
    _create_source(spark, "every_src")
    _append(spark, "every_src", BATCHES[0])
    spark.sql("CREATE STREAMING TABLE every_out TRIGGER EVERY INTERVAL 1 SECOND AS "
              + QUERY.format(source="every_src"))
    try:
        shown = _stream(spark, "every_out")
        assert shown.state == "RUNNING" and shown.trigger == "EVERY 1 SECONDS"
        assert "_sql_ext_checkpoints/every_out" in shown.checkpoint
        _append(spark, "every_src", BATCHES[1])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _stream(spark, "every_out").rows_in < 5:
            time.sleep(0.5)
        assert _stream(spark, "every_out").rows_in == 5
        with pytest.raises(AnalysisException, match="every_out exists with another definition: "
                           "TRIGGER is EVERY 1 SECONDS, not AVAILABLE NOW"):
            spark.sql("CREATE STREAMING TABLE every_out AS " + QUERY.format(source="every_src"))
    finally:
        spark.sql("STOP STREAM every_out")
    assert _stream(spark, "every_out").state == "STOPPED"
    with pytest.raises(AnalysisException, match="STOP STREAM every_out: no streaming table"):
        spark.sql("STOP STREAM every_out")
    # A REFRESH is one pass: the catalog keeps the stream stopped, so a server's next start
    # (streaming.resume, which skips what is recorded STOPPED) does not bring it back. The
    # pass once recorded it RUNNING.
    spark.sql("REFRESH STREAMING TABLE every_out")
    assert catalog.read(spark, "default", "every_out")["sql_ext.stream.state"] == "STOPPED"


def _stream(spark, name):
    return {r.name: r for r in spark.sql("SHOW STREAMS").collect()}[f"default.{name}"]


@pytest.mark.parametrize("statement, message", [
    ("CREATE STREAMING TABLE bad TRIGGER EVERY 5 AS SELECT k FROM STREAM(src)",
     "CREATE STREAMING TABLE needs a windowed query over FROM STREAM"),
    ("CREATE STREAMING TABLE bad AS SELECT k, COUNT(*) FROM src WINDOW TIME_INTERVAL(10) ON ts",
     "CREATE STREAMING TABLE needs a windowed query over FROM STREAM"),
    ("CREATE STREAMING TABLE bad TRIGGER SOMETIMES AS SELECT 1",
     "TRIGGER must be followed by AVAILABLE NOW or EVERY"),
    ("CREATE STREAMING TABLE bad TRIGGER EVERY -1 AS SELECT k, COUNT(*) FROM STREAM(s) "
     "WINDOW TIME_INTERVAL(10) ON ts", "TRIGGER EVERY must be a positive duration"),
    ("CREATE STREAMING TABLE bad AS SELECT k, COUNT(*) FROM STREAM(s) "
     "WINDOW TIME_INTERVAL(0) ON ts", "duration"),
    ("CREATE STREAMING TABLE bad CHECKPOINT ckpt AS SELECT 1",
     "CHECKPOINT must be followed by a quoted path"),
    ("CREATE STREAMING TABLE bad TRIGGER EVERY 5 TRIGGER AVAILABLE NOW AS SELECT 1",
     "TRIGGER is given twice"),
    ("CREATE STREAMING TABLE bad CHECKPOINT '/a' CHECKPOINT '/b' AS SELECT 1",
     "CHECKPOINT is given twice"),
])
def test_bad_statements_name_the_problem(spark, statement, message):
    with pytest.raises(ParseException, match=message):
        spark.sql(statement)


def test_ordinary_sql_still_reaches_spark(spark):
    with pytest.raises(ParseException, match="PARSE_SYNTAX_ERROR"):
        spark.sql("SHOW STREAMZ")
    assert spark.sql("SHOW TABLES").columns == ["namespace", "tableName", "isTemporary"]

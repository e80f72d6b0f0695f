"""Streaming-table definitions in the catalog, in this process: stored and read back whole,
differences named, `resume` starting what was running and leaving what STOP STREAM stopped."""

import shutil
import time

import pytest
from pyspark.errors import AnalysisException

from sql_ext.streaming import catalog as stream_catalog
from sql_ext.sql.errors import WindowSqlError
from sql_ext.streaming.catalog import AVAILABLE_NOW, Definition
from sql_ext.streaming import create_streaming_table, resume, stop_stream, stream_status

QUERY = ("SELECT k, WINDOW_ID() AS w, COUNT(*) AS n FROM STREAM({source}) "
         "WINDOW TUMBLING COUNT(2) OVER (PARTITION BY k)")


def test_a_definition_round_trips_through_catalog_properties():
    long_query = "SELECT k, " + " + ".join(f"c{i}" for i in range(1500)) + " FROM STREAM(t)"
    for definition in (Definition(long_query, AVAILABLE_NOW, "/ckpt/a", None),
                       Definition("SELECT 1", 2.5, "/ckpt/b", "/data/b"),
                       Definition("SELECT 1", 0.1, "/ckpt/b", None)):
        props = definition.properties()
        assert all(len(value) <= stream_catalog.QUERY_PART for value in props.values())
        assert Definition.from_properties(props) == definition
    assert len(Definition(long_query, AVAILABLE_NOW, "/c", None).properties()) > 4


def test_differences_name_each_changed_part():
    stored = Definition("SELECT  a\nFROM STREAM(t);", 2.0, "/c", None)
    assert stored.differences(Definition("SELECT a FROM STREAM(t)", 2.0, "/c", None)) == []
    changed = stored.differences(Definition("SELECT b FROM STREAM(t)", AVAILABLE_NOW, "/d", "/x"))
    assert [c.split(" ", 2)[1] for c in changed] == ["query", "is", "is", "is"]
    assert changed[1] == "TRIGGER is EVERY 2 SECONDS, not AVAILABLE NOW"
    assert changed[2] == "CHECKPOINT is '/c', not '/d'"
    assert changed[3] == "LOCATION is the catalog's (none given), not '/x'"


def test_a_plain_table_is_not_taken_over(spark):
    spark.sql("CREATE TABLE plain_out (k STRING) USING DELTA")
    spark.sql("CREATE TABLE plain_src (k STRING) USING DELTA")
    with pytest.raises(AnalysisException, match="plain_out is a table, not a streaming table"):
        spark.sql("CREATE STREAMING TABLE plain_out AS " + QUERY.format(source="plain_src"))
    assert spark.table("plain_out").columns == ["k"]


def _wait(check, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_resume_starts_streams_that_were_running_not_stopped_ones(spark, tmp_path):
    spark.sql("CREATE DATABASE IF NOT EXISTS ops")
    spark.sql("CREATE TABLE ops.src (k STRING) USING DELTA")
    spark.sql("INSERT INTO ops.src VALUES ('a'), ('a')")
    query = create_streaming_table(spark, "ops.every", QUERY.format(source="ops.src"),
                                   trigger=0.2)
    assert "_sql_ext_checkpoints/ops.every" in stream_status(spark, "ops.every")["checkpoint"]
    _wait(lambda: spark.table("ops.every").count() == 1, "the first window")
    query.stop()  # as a process that dies: the catalog still records it RUNNING
    assert stream_status(spark, "ops.every")["state"] == "STOPPED"
    spark.sql("INSERT INTO ops.src VALUES ('a'), ('a')")
    assert resume(spark) == ["ops.every"]
    assert stream_status(spark, "ops.every")["state"] == "RUNNING"
    _wait(lambda: spark.table("ops.every").count() == 2, "the resumed stream")
    assert resume(spark) == []  # running already
    stop_stream(spark, "ops.every")
    assert resume(spark) == []  # STOP STREAM is kept: a restart does not undo it
    with pytest.raises(WindowSqlError, match="STOP STREAM ops.every: no streaming table of "
                                             "that name is running"):
        stop_stream(spark, "ops.every")
    spark.sql("DROP STREAMING TABLE ops.every")


def test_a_streaming_table_whose_files_are_gone_can_be_replaced(spark, tmp_path):
    """The catalog outlives folders: a table cataloged at a deleted LOCATION (a temporary
    directory of an earlier run) is still replaced or dropped by name."""
    spark.sql("CREATE TABLE gone_src (k STRING) USING DELTA")
    spark.sql("INSERT INTO gone_src VALUES ('a'), ('a'), ('b'), ('b')")
    where = tmp_path / "gone_out"
    statement = (f"STREAMING TABLE gone_out LOCATION '{where}' AS "
                 + QUERY.format(source="gone_src"))
    spark.sql("CREATE " + statement)
    shutil.rmtree(where)
    spark.sql("CREATE OR REPLACE " + statement)
    assert spark.table("gone_out").count() == 2
    shutil.rmtree(where)
    spark.sql("DROP STREAMING TABLE IF EXISTS gone_out")
    assert not spark.catalog.tableExists("gone_out")


def test_alter_streaming_table_applies_in_place_or_says_why_not(spark, tmp_path):
    spark.sql("CREATE TABLE alter_src (k STRING) USING DELTA")
    spark.sql("INSERT INTO alter_src VALUES ('a'), ('a'), ('b')")
    query = QUERY.format(source="alter_src")
    spark.sql("CREATE STREAMING TABLE alter_out PARTITIONED BY (k) "
              "TBLPROPERTIES ('team' = 'ops', 'delta.appendOnly' = 'false') AS " + query)
    detail = spark.sql("DESCRIBE DETAIL alter_out").first()
    assert detail.partitionColumns == ["k"] and detail.properties["team"] == "ops"
    assert spark.table("alter_out").count() == 1  # a: one window of 2

    with pytest.raises(AnalysisException, match="cannot change in place: PARTITIONED BY is"):
        spark.sql("ALTER STREAMING TABLE alter_out AS " + query)
    with pytest.raises(AnalysisException, match=r"the query's columns \(k string, w bigint\)"):
        spark.sql("ALTER STREAMING TABLE alter_out PARTITIONED BY (k) AS "
                  + query.replace(", COUNT(*) AS n", ""))
    # Another window family would misread the checkpoint's state (Spark would accept it).
    with pytest.raises(AnalysisException, match=r"keeps other window state than the "
                                                r"checkpoint holds \(kind 'tumbling' -> "
                                                r"'sliding'; trigger '' -> 'count'\)"):
        spark.sql("ALTER STREAMING TABLE alter_out PARTITIONED BY (k) AS " + query.replace(
            "TUMBLING COUNT(2)", "SLIDING COUNT(2) TRIGGER COUNT(1)"))
    # A new window size and new properties: the same checkpoint goes on with COUNT(3).
    spark.sql("ALTER STREAMING TABLE alter_out PARTITIONED BY (k) TBLPROPERTIES "
              "('team' = 'data') AS " + query.replace("COUNT(2)", "COUNT(3)"))
    detail = spark.sql("DESCRIBE DETAIL alter_out").first()
    assert detail.properties.get("team") == "data" and "delta.appendOnly" not in detail.properties
    spark.sql("INSERT INTO alter_src VALUES ('b'), ('b'), ('a')")
    spark.sql("REFRESH STREAMING TABLE alter_out")
    # b: its first tuple waited in state, two more make a window of 3; a: one tuple waits.
    assert sorted(spark.table("alter_out").select("k", "n").collect()) == [("a", 2), ("b", 3)]

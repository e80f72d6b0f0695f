"""WATERMARK DELAY d IDLE t (spec/sql.md section 8): when the source brings no rows for t of
wall-clock time, the watermark advances by the elapsed time, so open panes still complete.
Wall-clock test: margins of at least 0.5 s on each side."""

import datetime
import time

import pytest

from sql_ext.sql.errors import WindowSqlError
from sql_ext.streaming import create_streaming_table, stop_stream

T0 = datetime.datetime(2020, 1, 1)
QUERY = """SELECT k, PANE_START() AS s, COUNT(*) AS n FROM STREAM(idle_src)
           WINDOW TIME_INTERVAL(10) ON ts OVER (PARTITION BY k) WATERMARK DELAY 0 {idle}"""


def _rows(spark, name):
    return [(r.k, (r.s - T0).total_seconds(), r.n) for r in spark.table(name).collect()]


def test_an_idle_source_still_closes_its_panes(spark, tmp_path):
    spark.sql("CREATE TABLE idle_src (k STRING, ts TIMESTAMP) USING DELTA")
    idle = create_streaming_table(spark, "idle_on", QUERY.format(idle="IDLE 3"), trigger=0.5,
                                  checkpoint=str(tmp_path / "on"))
    still = create_streaming_table(spark, "idle_off", QUERY.format(idle=""), trigger=0.5,
                                   checkpoint=str(tmp_path / "off"))
    try:
        spark.createDataFrame([("a", T0 + datetime.timedelta(seconds=s)) for s in (100, 105)],
                              "k string, ts timestamp").write.format("delta").mode("append") \
            .saveAsTable("idle_src")
        appended = time.monotonic()
        # The data's micro-batch starts no earlier than the append, so its idle time reaches
        # 3 s (the watermark starts to move) no earlier than appended + 3 s, and the watermark
        # (105 s + idle time) reaches the pane's end 110 s no earlier than appended + 5 s.
        time.sleep(4.5)
        assert _rows(spark, "idle_on") == []
        deadline = appended + 20
        while not _rows(spark, "idle_on") and time.monotonic() < deadline:
            time.sleep(0.2)
        closed = time.monotonic() - appended
        assert _rows(spark, "idle_on") == [("a", 100.0, 2)], f"not closed after {closed:.1f} s"
        # Without IDLE the pane waits for data.
        assert _rows(spark, "idle_off") == []
    finally:
        for query, name in ((idle, "idle_on"), (still, "idle_off")):
            if query.isActive:
                stop_stream(spark, name)


def test_idle_needs_a_running_stream(spark):
    with pytest.raises(WindowSqlError, match="IDLE .* needs a running stream"):
        create_streaming_table(spark, "idle_now", QUERY.format(idle="IDLE 3"))

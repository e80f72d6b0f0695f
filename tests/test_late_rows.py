"""LATE ROWS INTO (spec/sql.md section 8): every tuple dropped for lateness is a row of a Delta
table, with its event time, the watermark that dropped it and the panes it would have joined;
batch replay and streaming against the pane oracle (test_exactly_once.py kills a driver between
and after the commits of a micro-batch: no late row lost or doubled)."""

import datetime
import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle_panes import pane_firings
from scale import examples
from test_panes_sql import SELECT, _number, _shape_sql, pane_rows, window_input
from test_streaming import T0, _run_batches, batches_with_markers, micro_batches
from test_tumbling_oracle import SETTINGS

from sql_ext.streaming import create_streaming_table, show_streams

_names = itertools.count()


def _late_shape(rows):
    """Late table rows as (id, event time, watermark, ((start, end), ...)) in seconds."""
    return sorted((r.id, _number(r.late_event_time), _number(r.late_watermark),
                   tuple((_number(p.start), _number(p.end)) for p in r.late_panes))
                  for r in rows)


def _oracle_late(late_rows):
    return sorted((lr["row"]["id"], _number(lr["event_time"]), float(lr["watermark"]),
                   tuple((_number(s), _number(e)) for s, e in lr["panes"]))
                  for lr in late_rows)


@pytest.mark.heavy
@pytest.mark.soak  # tests/scale.py sizes its examples
@SETTINGS
@given(timestamps=st.booleans(), data=st.data(), partitioned=st.booleans(),
       mode=st.sampled_from(["delay", "by"]),
       interval=st.sampled_from([(10, 5, 0, 0), (10, 5, 3, 0), (4, 7, 0, 1)]))
def test_batch_late_rows_match_oracle(spark, timestamps, data, partitioned, mode, interval):
    """The late table holds exactly the oracle's dropped tuples; the query's own rows are the
    same as without LATE ROWS INTO."""
    rows = data.draw(pane_rows(timestamps))
    clause, kwargs, rows = window_input(spark, rows, timestamps, partitioned, mode)
    window = f"TIME_INTERVAL{interval} ON ts {clause}"
    key = "k" if partitioned else "NULL"
    got = spark.sql(SELECT.format(key=key, window=f"{window} LATE ROWS INTO late_batch"))
    expected = pane_firings(rows, *interval, event_time=lambda r: r["ts"], **kwargs)
    assert _shape_sql(got.collect()) == _shape_sql(
        spark.sql(SELECT.format(key=key, window=window)).collect())
    assert _late_shape(spark.table("late_batch").collect()) == \
        _oracle_late(expected["late_rows"])
    # The source's columns, in order, then the three late columns.
    assert spark.table("late_batch").columns == [
        "seq", "id", "k", "ts", "wm", "late_event_time", "late_watermark", "late_panes"]


def test_batch_late_rows_replace_the_table_at_each_run(spark):
    query = """SELECT COUNT(*) AS n FROM VALUES (1, 20.0), (2, 3.0), (3, 4.0) AS v(id, t)
               WINDOW TIME_INTERVAL(10) ON t OVER (ORDER BY id) WATERMARK DELAY 1
               LATE ROWS INTO late_replaced"""
    for _ in range(2):
        spark.sql(query).collect()
        assert sorted(r.id for r in spark.table("late_replaced").collect()) == [2, 3]


def _streaming_late_oracle(batches, interval):
    rows, seen = [], []
    for batch in batches:
        rows += [dict(r, pos=len(rows) + j) for j, r in enumerate(batch)]
        seen += [r["ts"] for r in batch]
        rows.append({"pos": len(rows), "wm": max(seen) - 2})
    result = pane_firings(rows, *interval, event_time=lambda r: r.get("ts"),
                          partition_by=lambda r: r.get("k"), order_by=lambda r: r["pos"],
                          watermark_by=lambda r: r.get("wm"), final_watermark=False)
    return sorted((lr["row"]["id"], float(lr["event_time"]), float(lr["watermark"]),
                   tuple((float(s), float(e)) for s, e in lr["panes"]))
                  for lr in result["late_rows"])


def _seconds(value):
    return (value - T0).total_seconds()


def _streamed_late(rows):
    return sorted((r.id, _seconds(r.late_event_time), _seconds(r.late_watermark),
                   tuple((_seconds(p.start), _seconds(p.end)) for p in r.late_panes))
                  for r in rows)


STREAMING = """
    SELECT k, PANE_START() AS s, {aggregates}
    FROM STREAM({{source}})
    WINDOW TIME_INTERVAL(10, 5) ON event_time OVER (PARTITION BY k) WATERMARK DELAY 2
    LATE ROWS INTO {late}"""


@pytest.mark.soak
@settings(max_examples=examples(2, 4), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=micro_batches())
@pytest.mark.parametrize("aggregates", ["SUM(v) AS total", "ARRAY_SORT(COLLECT_LIST(id)) AS ids"],
                         ids=["partials", "tuples"])
def test_streaming_late_rows_match_oracle(spark, tmp_path_factory, aggregates, batches):
    """Micro-batches of random sizes: the late table holds the oracle's dropped tuples (each
    under the watermark of the micro-batch it came in), and SHOW STREAMS counts its rows."""
    n = next(_names)
    late, sink = f"late_stream_{n}", f"late_out_{n}"
    _run_batches(spark, tmp_path_factory, batches,
                 STREAMING.format(aggregates=aggregates, late=late), sink=sink)
    assert _streamed_late(spark.table(late).collect()) == \
        _streaming_late_oracle(batches, (10, 5))
    status = {s["name"]: s for s in show_streams(spark)}[f"default.{sink}"]
    assert status["late_dropped"] == spark.table(late).count()


MARKER_LATE = """
    SELECT k, PANE_START() AS s, SUM(v) AS total
    FROM STREAM({{source}})
    WINDOW TIME_INTERVAL(10, 5) ON event_time OVER (PARTITION BY k ORDER BY id)
    WATERMARK BY IF(v < 0, event_time, NULL) LATE ROWS INTO {late}"""


@pytest.mark.soak
@settings(max_examples=examples(2, 4), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=batches_with_markers())
def test_streaming_late_rows_under_watermark_markers(spark, tmp_path_factory, batches):
    """WATERMARK BY: lateness is decided in the window's one state machine, marker by marker
    within a micro-batch; its late rows reach the table as the oracle drops them."""
    late = f"late_markers_{next(_names)}"
    _run_batches(spark, tmp_path_factory, batches, MARKER_LATE.format(late=late))
    rows = [{"id": r["id"], "wm": r["ts"]} if r["v"] < 0 else r
            for batch in batches for r in batch]
    result = pane_firings(rows, 10, 5, event_time=lambda r: r.get("ts"),
                          partition_by=lambda r: r.get("k"), order_by=lambda r: r["id"],
                          watermark_by=lambda r: r.get("wm"), final_watermark=False)
    assert _streamed_late(spark.table(late).collect()) == sorted(
        (lr["row"]["id"], float(lr["event_time"]), float(lr["watermark"]),
         tuple((float(s), float(e)) for s, e in lr["panes"])) for lr in result["late_rows"])


BACKLOG = """
    SELECT k, PANE_START() AS s, COUNT(*) AS n, SUM(v) AS total
    FROM {source}
    WINDOW TIME_INTERVAL(10, 5) ON event_time OVER (PARTITION BY k) WATERMARK DELAY 2
    LATE ROWS INTO {late} EMIT FINAL"""


def test_a_backlog_of_unequal_appends_with_late_rows_and_final_panes(spark, tmp_path):
    """Three runs: one append, then backlogs of 4 and 3 unequal appends (several files each,
    one task per file), each backlog one micro-batch. Every task finds its own late tuples, so
    a micro-batch commits several late files at once; the late table and the FINAL rows are
    the oracle's for those three micro-batches."""
    rng = random.Random(17)
    ids = itertools.count()

    def append_rows(size, base):
        # Mostly near `base`; one in four far behind it (late from the second run on).
        return [{"id": next(ids), "k": rng.choice("ab"), "v": float(rng.randint(0, 9)),
                 "ts": base + rng.randint(0, 20) - (60 if rng.random() < 0.25 else 0)}
                for _ in range(size)]
    runs = [[append_rows(30, 100)],
            [append_rows(n, 140) for n in (12, 45, 7, 30)],
            [append_rows(n, 180) for n in (25, 5, 40)]]
    source = str(tmp_path / "source")
    late, sink = f"late_backlog_{next(_names)}", f"backlog_out_{next(_names)}"
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1024")  # a task per file
    try:
        for appends in runs:
            for rows in appends:
                spark.createDataFrame(
                    [(r["id"], r["k"], T0 + datetime.timedelta(seconds=r["ts"]), r["v"])
                     for r in rows], "id long, k string, event_time timestamp, v double") \
                    .repartition(2).write.format("delta").mode("append").save(source)
            view = f"backlog_view_{sink}"
            spark.readStream.format("delta").load(source).createOrReplaceTempView(view)
            create_streaming_table(spark, sink, BACKLOG.format(source=f"STREAM({view})",
                                                               late=late),
                checkpoint=str(tmp_path / "ckpt")).awaitTermination()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    batches = [[r for rows in appends for r in rows] for appends in runs]
    assert _streamed_late(spark.table(late).collect()) == \
        _streaming_late_oracle(batches, (10, 5))
    commits = [r for r in spark.sql(f"DESCRIBE HISTORY {late}").collect()
               if r.operation == "STREAMING UPDATE"]
    assert len(commits) == 2  # the runs with late tuples: one commit each...
    assert spark.sql(f"DESCRIBE DETAIL {late}").first().numFiles > 2  # ...of several files
    expected = _final_oracle(batches)
    got = sorted(((r.k, (r.s - T0).total_seconds(), r.n, r.total)
                  for r in spark.table(sink).collect()))
    assert got == expected


def _final_oracle(batches):
    """EMIT FINAL of BACKLOG: (k, pane start, count, sum) of each pane closed by the
    watermark a micro-batch leaves behind."""
    rows, seen = [], []
    for batch in batches:
        rows += [dict(r, pos=len(rows) + j) for j, r in enumerate(batch)]
        seen += [r["ts"] for r in batch]
        rows.append({"pos": len(rows), "wm": max(seen) - 2})
    result = pane_firings(rows, 10, 5, event_time=lambda r: r.get("ts"),
                          partition_by=lambda r: r.get("k"), order_by=lambda r: r["pos"],
                          watermark_by=lambda r: r.get("wm"), final_watermark=False,
                          emit="final")
    return sorted((f["partition"], float(f["pane_start"]), len(f["rows"]),
                   float(sum(r["v"] for r in f["rows"]))) for f in result["firings"])

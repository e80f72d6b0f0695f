"""Streaming TIME_INTERVAL tables: a Delta source fed in micro-batches, the windowed query run
with trigger AVAILABLE NOW after each append, the Delta sink compared with the pane oracle.

Each append is one micro-batch; after it the watermark becomes max(event time) - delay. The
oracle sees the same sequence: the batch's tuples, then a watermark marker."""

import datetime
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle_panes import pane_firings
from scale import examples

import sql_ext
from sql_ext.streaming import create_streaming_table, stream_status

T0 = datetime.datetime(2020, 1, 1)
QUERY = """
    SELECT k, PANE_START() AS s, PANE_TIMING() AS t, PANE_INDEX() AS i,
           ARRAY_SORT(COLLECT_LIST(id)) AS ids, SUM(v) AS total
    FROM STREAM({source})
    WINDOW TIME_INTERVAL(10, 5, 15) ON event_time OVER (PARTITION BY k) WATERMARK DELAY 2"""
_names = itertools.count()


def _expected(batches, delay=2):
    """The oracle's last firing of every (partition, pane) under WATERMARK DELAY `delay` (a
    marker after each micro-batch): what the upserted table holds."""
    rows, seen = [], []
    for batch in batches:
        rows += [dict(r, pos=len(rows) + j) for j, r in enumerate(batch)]
        seen += [r["ts"] for r in batch]
        if seen:
            rows.append({"pos": len(rows), "wm": max(seen) - delay})
    return _last_firings(rows, order_by=lambda r: r["pos"])


def _last_firings(rows, order_by):
    """The oracle's last firing of every (partition, pane) of TIME_INTERVAL(10, 5, 15) over
    `rows` (tuples, and markers with "wm"), without a final watermark (a stream does not end):
    (partition, pane start, timing, index, ids, sum of v)."""
    result = pane_firings(rows, 10, 5, 15, event_time=lambda r: r.get("ts"),
                          partition_by=lambda r: r.get("k"), order_by=order_by,
                          watermark_by=lambda r: r.get("wm"), final_watermark=False)
    last = {}
    for f in result["firings"]:
        last[(f["partition"], f["window_id"])] = f
    return sorted((f["partition"], f["pane_start"], f["timing"], f["index"],
                   tuple(sorted(r["id"] for r in f["rows"])),
                   float(sum(r["v"] for r in f["rows"]))) for f in last.values())


@st.composite
def micro_batches(draw):
    counter = itertools.count()
    return [[{"id": next(counter), "k": draw(st.sampled_from(["a", "b"])),
              "ts": draw(st.integers(100, 160)), "v": float(draw(st.integers(0, 9)))}
             for _ in range(draw(st.integers(1, 6)))]
            for _ in range(draw(st.integers(1, 4)))]


def _run_batches(spark, tmp_path_factory, batches, query, sink=None):
    """Appends each micro-batch to a new Delta source and runs the streaming table (`sink`, or
    a new name) after each (AVAILABLE NOW); the sink's rows."""
    n = next(_names)
    source, sink = f"stream_src_{n}", sink or f"stream_out_{n}"
    checkpoint = tmp_path_factory.mktemp("checkpoint")
    spark.sql(f"CREATE TABLE {source} (id BIGINT, k STRING, event_time TIMESTAMP, v DOUBLE) "
              "USING DELTA")
    for batch in batches:
        spark.createDataFrame(
            [(r["id"], r["k"], T0 + datetime.timedelta(seconds=r["ts"]), r["v"]) for r in batch],
            "id long, k string, event_time timestamp, v double") \
            .write.format("delta").mode("append").saveAsTable(source)
        create_streaming_table(spark, sink, query.format(source=source),
                               checkpoint=str(checkpoint)).awaitTermination()
    return spark.table(sink).collect() if spark.catalog.tableExists(sink) else []


@pytest.mark.soak
@settings(max_examples=examples(3, 8), deadline=None,  # each example runs several streaming queries
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=micro_batches())
def test_streaming_panes_match_oracle(spark, tmp_path_factory, batches):
    got = sorted((r.k, (r.s - T0).total_seconds(), r.t, r.i, tuple(r.ids), r.total)
                 for r in _run_batches(spark, tmp_path_factory, batches, QUERY))
    assert got == _expected(batches)


PARTIAL_QUERY = """
    SELECT k, PANE_START() AS s, PANE_TIMING() AS t, PANE_INDEX() AS i, COUNT(*) AS n,
           MIN(id) AS lo, MAX(id) AS hi, SUM(v) AS total, AVG(v) AS a
    FROM STREAM({source})
    WINDOW TIME_INTERVAL(10, 5, 15) ON event_time OVER (PARTITION BY k) WATERMARK DELAY 2"""


@pytest.mark.soak
@settings(max_examples=examples(2, 6), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=micro_batches())
def test_streaming_pane_partial_aggregates_match_oracle(spark, tmp_path_factory, batches):
    """COUNT, MIN, MAX, SUM and AVG leave the pane processor as one row of partials per firing
    (over all the pane's tuples, late ones included); the table equals the oracle's."""
    got = sorted((r.k, (r.s - T0).total_seconds(), r.t, r.i, r.n, r.lo, r.hi, r.total,
                  round(r.a, 9)) for r in _run_batches(spark, tmp_path_factory, batches,
                                                       PARTIAL_QUERY))
    assert got == sorted((k, s, t, i, len(ids), min(ids), max(ids), total,
                          round(total / len(ids), 9))
                         for k, s, t, i, ids, total in _expected(batches))


MARKER_QUERY = """
    SELECT k, PANE_START() AS s, PANE_TIMING() AS t, PANE_INDEX() AS i,
           ARRAY_SORT(COLLECT_LIST(id)) AS ids, SUM(v) AS total
    FROM STREAM({source})
    WINDOW TIME_INTERVAL(10, 5, 15) ON event_time OVER (PARTITION BY k ORDER BY id)
    WATERMARK BY IF(v < 0, event_time, NULL)"""


@st.composite
def batches_with_markers(draw):
    """Micro-batches of tuples and watermark markers (v < 0: the event time is the watermark),
    several markers within one micro-batch included."""
    counter = itertools.count()
    return [[{"id": next(counter), "k": "m", "ts": draw(st.integers(100, 170)), "v": -1.0}
             if draw(st.integers(0, 3)) == 0 else
             {"id": next(counter), "k": draw(st.sampled_from(["a", "b"])),
              "ts": draw(st.integers(100, 160)), "v": float(draw(st.integers(0, 9)))}
             for _ in range(draw(st.integers(1, 8)))]
            for _ in range(draw(st.integers(1, 4)))]


@pytest.mark.soak
@settings(max_examples=examples(2, 6), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=batches_with_markers())
def test_streaming_watermark_by_markers_match_oracle(spark, tmp_path_factory, batches):
    """WATERMARK BY in streaming: each marker advances the watermark where it arrives, between
    the tuples of its micro-batch, as the oracle replays them; the table holds each pane's last
    firing (no final watermark: a stream does not end)."""
    rows = [{"id": r["id"], "wm": r["ts"]} if r["v"] < 0 else r
            for batch in batches for r in batch]
    expected = _last_firings(rows, order_by=lambda r: r["id"])
    got = sorted((r.k, (r.s - T0).total_seconds(), r.t, r.i, tuple(r.ids), r.total)
                 for r in _run_batches(spark, tmp_path_factory, batches, MARKER_QUERY))
    assert got == expected


def test_stream_progress_is_visible(spark, tmp_path):
    spark.sql("CREATE TABLE progress_src (id BIGINT, k STRING, event_time TIMESTAMP, v DOUBLE) "
              "USING DELTA")
    spark.createDataFrame([(1, "a", T0 + datetime.timedelta(seconds=105), 1.0),
                           (2, "a", T0 + datetime.timedelta(seconds=150), 2.0)],
                          "id long, k string, event_time timestamp, v double") \
        .write.format("delta").mode("append").saveAsTable("progress_src")
    query = create_streaming_table(spark, "progress_out", QUERY.format(source="progress_src"),
                                   checkpoint=str(tmp_path / "ckpt"))
    query.awaitTermination()
    stream = stream_status(spark, "progress_out")
    assert stream["watermark"] and stream["state"] == "STOPPED"
    assert spark.table("progress_out").count() == 2  # [100,110) and [95,105) fired for a@105


def test_batch_query_over_stream_points_to_streaming_tables(spark):
    import pytest
    from pyspark.errors import ParseException

    with pytest.raises(ParseException, match="create_streaming_table"):
        spark.sql("SELECT COUNT(*) FROM STREAM(x) WINDOW TIME_INTERVAL(10) ON ts")
    assert sql_ext.transpile("SELECT 1") == "SELECT 1"


@pytest.mark.parametrize("query, state", [(QUERY, "pane"), (PARTIAL_QUERY, "key_panes")],
                         ids=["tuples", "partials"])
def test_closed_panes_leave_the_state_store(spark, tmp_path, query, state):
    """After the watermark passes end + discard age, a pane is gone from the state store (read
    with Spark's state data source): only the panes of the newest tuple are left. Tuple panes
    are one state key each ("pane" flags); partial panes are elements of their key's one value
    ("key_panes"), and a key whose panes all closed has no value."""
    spark.sql("DROP TABLE IF EXISTS state_src")
    spark.sql("DROP TABLE IF EXISTS state_out")
    spark.sql("CREATE TABLE state_src (id BIGINT, k STRING, event_time TIMESTAMP, v DOUBLE) "
              "USING DELTA")
    checkpoint = str(tmp_path / "ckpt")
    for seconds in ([101, 104, 107, 112, 118], [400]):
        spark.createDataFrame(
            [(s, "a" if s % 2 else "b", T0 + datetime.timedelta(seconds=s), 1.0)
             for s in seconds], "id long, k string, event_time timestamp, v double") \
            .write.format("delta").mode("append").saveAsTable("state_src")
        create_streaming_table(spark, "state_out", query.format(source="state_src"),
                               checkpoint=checkpoint).awaitTermination()
    panes = spark.read.format("statestore").option("stateVarName", state).load(checkpoint)
    # 400 s lies in panes [395, 405) and [400, 410); every earlier pane closed at W = 398.
    if state == "key_panes":  # key "b" (400 is even) holds both; key "a" is gone
        assert [(r.key[0], len(r.value.panes)) for r in panes.collect()] == [("b", 2)]
    else:
        assert panes.count() == 2
    assert spark.table("state_out").count() == 8  # every closed pane fired once per key


@pytest.mark.parametrize("query", [QUERY, PARTIAL_QUERY], ids=["tuples", "partials"])
def test_late_tuples_drop_under_the_batch_watermark(spark, tmp_path, query):
    """Four micro-batches in one run (one file each): 100, then 200 (W = 198), then 150, late
    under W - A = 183 but not under the watermark of the batch before (83), which Spark's own
    late filter would use. SPL drops it (semantics.md 6); taken, it would reopen panes
    [145, 155) and [150, 160), closed at W = 198, and fire them anew when 230 moves the
    watermark on. It is counted, as is a tuple without an event time."""
    n = next(_names)
    source, sink = f"late_src_{n}", f"late_out_{n}"
    spark.sql(f"CREATE TABLE {source} (id BIGINT, k STRING, event_time TIMESTAMP, v DOUBLE) "
              "USING DELTA")
    batches = [[{"id": i, "k": k, "ts": ts, "v": float(i)}]
               for i, (k, ts) in enumerate([("a", 100), ("a", 200), ("a", 150), ("b", 230)])]
    for i, batch in enumerate(batches):
        rows = [(r["id"], r["k"], T0 + datetime.timedelta(seconds=r["ts"]), r["v"]) for r in batch]
        if i == 0:
            rows.append((9, "a", None, 8.0))
        spark.createDataFrame(rows, "id long, k string, event_time timestamp, v double") \
            .coalesce(1).write.format("delta").mode("append").saveAsTable(source)
    spark.readStream.format("delta").option("maxFilesPerTrigger", 1).table(source) \
        .createOrReplaceTempView(f"{source}_files")
    create_streaming_table(spark, sink, query.format(source=f"{source}_files"),
                           checkpoint=str(tmp_path / "ckpt")).awaitTermination()
    got = spark.table(sink).collect()
    assert sorted((r.k, (r.s - T0).total_seconds(), r.t, r.i) for r in got) == \
        sorted((k, s, t, i) for k, s, t, i, _, _ in _expected(batches)) == \
        [("a", 95.0, "ON_TIME", 0), ("a", 100.0, "ON_TIME", 0), ("a", 195.0, "ON_TIME", 0),
         ("a", 200.0, "ON_TIME", 0)]
    stream = stream_status(spark, sink)
    assert (stream["late_dropped"], stream["not_windowed"]) == (1, 1)


def test_a_select_without_the_pane_key_gets_a_key_column(spark, tmp_path_factory):
    """Late re-firings replace rows by the partition keys, group keys and pane the SELECT list
    carries; a SELECT without them (here no partition key) gets the documented `_pane_key`
    column, and re-firings still replace their pane's row. The oracle: the keyed query."""
    keyed = _run_batches(spark, tmp_path_factory, FIXED, QUERY)
    unkeyed = QUERY.replace("SELECT k, PANE_START() AS s", "SELECT PANE_START() AS s")
    rows = _run_batches(spark, tmp_path_factory, FIXED, unkeyed)
    assert "_pane_key" not in keyed[0].asDict() and "_pane_key" in rows[0].asDict()
    assert [r._pane_key.p0 for r in rows].count("a") == [r.k for r in keyed].count("a")
    assert sorted((r._pane_key.p0, r.s, r.t, r.i, tuple(r.ids)) for r in rows) \
        == sorted((r.k, r.s, r.t, r.i, tuple(r.ids)) for r in keyed)
    assert any(r.i > 0 for r in keyed)  # late tuples did re-fire panes


def test_a_stream_without_a_watermark_clause_replaces_refired_panes(spark, tmp_path_factory):
    """A stream's watermark is WATERMARK DELAY 0 when the query gives none: late tuples re-fire
    their panes, and each re-firing replaces the pane's row, whether or not the SELECT list
    has PANE_INDEX() (it once appended a second row without it). The oracle: the last firing
    of every pane under DELAY 0."""
    query = """
        SELECT k, PANE_START() AS s, ARRAY_SORT(COLLECT_LIST(id)) AS ids, SUM(v) AS total
        FROM STREAM({source}) WINDOW TIME_INTERVAL(10, 5, 15) ON event_time
        OVER (PARTITION BY k)"""
    rows = _run_batches(spark, tmp_path_factory, FIXED, query)
    got = sorted((r.k, (r.s - T0).total_seconds(), tuple(r.ids), r.total) for r in rows)
    expected = [(k, s, ids, total) for k, s, _, _, ids, total in _expected(FIXED, delay=0)]
    assert got == expected
    assert any(i > 0 for _, _, _, i, _, _ in _expected(FIXED, delay=0))  # panes did re-fire


FIXED = [
    [{"id": 1, "k": "a", "ts": 101, "v": 1.0}, {"id": 2, "k": "b", "ts": 103, "v": 2.0},
     {"id": 3, "k": "a", "ts": 112, "v": 3.0}],
    [{"id": 4, "k": "a", "ts": 108, "v": 4.0}, {"id": 5, "k": "b", "ts": 125, "v": 5.0}],
    [{"id": 6, "k": "b", "ts": 121, "v": 6.0}, {"id": 7, "k": "a", "ts": 150, "v": 7.0}],
]


def test_a_numeric_event_time_is_refused_naming_its_type(spark, tmp_path):
    """A streaming TIME_INTERVAL needs a TIMESTAMP event time; the error names the type the
    query gave, in SQL's words."""
    n = next(_names)
    spark.sql(f"CREATE TABLE num_src_{n} (id BIGINT, t BIGINT) USING DELTA")
    with pytest.raises(Exception) as error:
        create_streaming_table(spark, f"num_out_{n}", f"""
            SELECT PANE_START() AS s, COUNT(*) AS c FROM STREAM(num_src_{n})
            WINDOW TIME_INTERVAL(10) ON t""", checkpoint=str(tmp_path / "ckpt"))
    assert "a streaming TIME_INTERVAL needs a TIMESTAMP event time (ON ...), got BIGINT" \
        in str(error.value)
    assert "Some(" not in str(error.value)


def test_a_stream_is_read_under_its_alias_or_its_name(spark, tmp_path):
    """Columns qualified by the stream's alias or by its table's name resolve (they once met
    the stream's internal view name instead)."""
    n = next(_names)
    source = f"alias_src_{n}"
    spark.sql(f"CREATE TABLE {source} (k STRING, v INT) USING DELTA")
    spark.sql(f"INSERT INTO {source} SELECT /*+ COALESCE(1) */ * FROM VALUES ('a', 1), "
              "('a', 2), ('b', 3), ('a', 4)")  # one file: arrival order is the values' order
    for i, (reference, read) in enumerate([("x", f"STREAM({source}) AS x"),
                                           (source, f"STREAM({source})"),
                                           ("y", f"STREAM(default.{source}) y")]):
        sink = f"alias_out_{n}_{i}"
        create_streaming_table(spark, sink, f"""
            SELECT {reference}.k, SUM({reference}.v) AS total FROM {read}
            WHERE {reference}.v > 0 WINDOW TUMBLING COUNT(2) OVER (PARTITION BY {reference}.k)""",
                               checkpoint=str(tmp_path / sink)).awaitTermination()
        assert sorted(tuple(r) for r in spark.table(sink).collect()) == [("a", 3)], reference

"""A stream's result does not depend on how its input was cut (issue 12, spec/sql.md section 2).

A Delta source written in appends of random, unequal sizes (one or two files each) is streamed
in random cuts: several appends per micro-batch (a backlog), one micro-batch per file
(maxFilesPerTrigger), restarts between runs. The streaming table must equal the batch query
over the same table, with ORDER BY (rows shuffled within each append, ties broken by the
source's order) and without it (the source's commit order)."""

import itertools
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scale import examples

from sql_ext.streaming import create_streaming_table, stream_status

WINDOWS = [
    "TUMBLING COUNT(5)",
    "TUMBLING DELTA(v, 6)",
    "SLIDING COUNT(4) TRIGGER COUNT(3)",
    "SLIDING DELTA(v, 5) TRIGGER COUNT(2)",
    "SLIDING COUNT(5) TRIGGER DELTA(v, 4) EMIT INCOMPLETE",
    "TUMBLING PUNCT(v > 10)",
    "TUMBLING PUNCT()",
    "TUMBLING COUNT(3) PARTITION EVICTION TUPLES(5) EMIT EVICTED",
]
# Pane functions, the tuples themselves and partial-aggregate columns: every window's content.
QUERY = ("SELECT k, WINDOW_ID() AS w, WINDOW_EVENT() AS e, ARRAY_SORT(COLLECT_LIST(id)) AS ids, "
         "COUNT(*) AS n, SUM(v) AS total FROM {source} WINDOW {policy} "
         "OVER (PARTITION BY k{order}){tail}")
PARTIALS = ("SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, SUM(v) AS total, MIN(id) AS lo, "
            "MAX(id) AS hi, SUM(id * 2 + 1) AS odd FROM {source} WINDOW {policy} "
            "OVER (PARTITION BY k{order}){tail}")
_names = itertools.count()


def _query(template, source, window, ordered):
    """WINDOW <policy> OVER (PARTITION BY k [ORDER BY o]) [PARTITION EVICTION ...] [EMIT ...]"""
    policy, tail = re.match(r"(.*?)((?: PARTITION EVICTION| EMIT) .*)?$", window).groups()
    return template.format(source=source, policy=policy, order=" ORDER BY o" if ordered else "",
                           tail=tail or "")


def _rows(frame):
    return sorted(tuple(tuple(v) if isinstance(v, list) else v for v in r)
                  for r in frame.collect())


def _append(spark, table, rows, files):
    frame = spark.createDataFrame(rows, "id long, o long, k string, v double")
    # One file keeps the rows as listed; two files split them among two writing tasks.
    frame = frame.coalesce(1) if files == 1 else frame.repartition(files)
    frame.write.format("delta").mode("append").saveAsTable(table)


@st.composite
def cut_stream(draw):
    """Appends of unequal sizes (ids ascending across appends, shuffled within one, o = id
    div 3 so ORDER BY o has ties), each 1 or 2 files; the appends after which a streaming run
    starts; maxFilesPerTrigger of the runs (None: a run is one micro-batch).

    maxFilesPerTrigger comes with one-file appends only: a commit's files split across
    micro-batches arrive in the order of Delta's log, which the query cannot see (docs/compatibility.md); within a micro-batch a commit's files are ordered as batch orders them."""
    max_files = draw(st.sampled_from([None, None, None, 2]))
    ids = itertools.count()
    appends = []
    for _ in range(draw(st.integers(2, 5))):
        rows = [(i, i // 3, draw(st.sampled_from("abc")), float(draw(st.integers(0, 12))))
                for i in itertools.islice(ids, draw(st.integers(1, 30)))]
        files = 1 if max_files else draw(st.sampled_from([1, 1, 2]))
        appends.append((draw(st.permutations(rows)), files))
    runs = sorted(set(draw(st.lists(st.integers(1, len(appends)), max_size=2)))
                  | {len(appends)})
    return appends, runs, max_files


def _stream_cut(spark, tmp_path_factory, appends, runs, max_files, query_over):
    n = next(_names)
    source, sink = f"cut_src_{n}", f"cut_out_{n}"
    checkpoint = str(tmp_path_factory.mktemp("checkpoint"))
    spark.sql(f"CREATE TABLE {source} (id BIGINT, o BIGINT, k STRING, v DOUBLE) USING DELTA")
    written = 0
    for run in runs:
        for rows, files in appends[written:run]:
            _append(spark, source, rows, files)
        written = run
        reader = spark.readStream.format("delta")
        if max_files:
            reader = reader.option("maxFilesPerTrigger", max_files)
        reader.table(source).createOrReplaceTempView(f"cut_view_{n}")
        create_streaming_table(spark, sink, query_over(f"STREAM(cut_view_{n})"),
                               checkpoint=checkpoint).awaitTermination()
    got = _rows(spark.table(sink)) if spark.catalog.tableExists(sink) else []
    return source, sink, got


@pytest.mark.heavy
@pytest.mark.soak
@settings(max_examples=examples(4, 8, "SQL_EXT_CUT_EXAMPLES"), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(window=st.sampled_from(WINDOWS), ordered=st.booleans(), cut=cut_stream())
def test_streaming_equals_batch_however_cut(spark, tmp_path_factory, window, ordered, cut):
    """Each example: one window, with or without ORDER BY, one random cutting. Every streaming
    run costs seconds, so CI draws 8 examples; SQL_EXT_CUT_EXAMPLES=200 by hand."""
    appends, runs, max_files = cut
    template = PARTIALS if window.startswith("SLIDING COUNT(4)") else QUERY
    source, sink, got = _stream_cut(spark, tmp_path_factory, appends, runs, max_files,
                                    lambda stream: _query(template, stream, window, ordered))
    assert got == _rows(spark.sql(_query(template, source, window, ordered)))
    stream = stream_status(spark, sink)
    assert stream["out_of_order_rows"] == 0


# TUMBLING PUNCT() over partial aggregates: without ORDER BY its windows are computed from
# per-file partials (io.sqlext.streaming.input.FilePunctInput), with ORDER BY from the tuples.
PUNCT_PARTIALS = ("SELECT k, WINDOW_ID() AS w, WINDOW_EVENT() AS e, PANE_START() AS s, "
                  "PANE_END() AS t, PANE_TIMING() AS pt, PANE_INDEX() AS i, COUNT(*) AS n, "
                  "SUM(v) AS total, MIN(id) AS lo, MAX(id) AS hi, SUM(id * 2 + 1) AS odd "
                  "FROM {source} WINDOW TUMBLING PUNCT() OVER (PARTITION BY k{order})")


@pytest.mark.heavy
@pytest.mark.soak
@settings(max_examples=examples(3, 6, "SQL_EXT_CUT_EXAMPLES"), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ordered=st.booleans(), cut=cut_stream())
def test_file_punct_partials_equal_batch_however_cut(spark, tmp_path_factory, ordered, cut):
    """PUNCT() windows of partial aggregates (window numbers, events and pane functions too)
    equal the batch query's however the appends (one or two files each) are cut into runs and
    micro-batches."""
    appends, runs, max_files = cut
    query = lambda source: PUNCT_PARTIALS.format(source=source,  # noqa: E731
                                                 order=" ORDER BY o" if ordered else "")
    source, sink, got = _stream_cut(spark, tmp_path_factory, appends, runs, max_files, query)
    assert got == _rows(spark.sql(query(source)))
    assert stream_status(spark, sink)["out_of_order_rows"] == 0


# WATERMARK BY: rows of key 'c' with v > 8 are markers (watermark id - 3), the others tuples
# with an event time near their id, so some arrive late, re-fire their panes or are dropped.
MARKERS = ("SELECT k, WINDOW_ID() AS w, PANE_INDEX() AS i, ARRAY_SORT(COLLECT_LIST(id)) AS ids, "
           "SUM(v) AS total FROM {source} WINDOW TIME_INTERVAL(10, 5, 8) "
           "ON TIMESTAMP_SECONDS(id + CAST(v AS BIGINT) - 6) OVER (PARTITION BY k{order}) "
           "WATERMARK BY IF(k = 'c' AND v > 8, TIMESTAMP_SECONDS(id - 3), NULL)")


@pytest.mark.soak
@settings(max_examples=examples(2, 3, "SQL_EXT_CUT_EXAMPLES"),
          deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ordered=st.booleans(), cut=cut_stream())
def test_watermark_by_markers_stream_as_batch_however_cut(spark, tmp_path_factory, ordered, cut):
    """WATERMARK BY in streaming replays markers between tuples in arrival order, as batch
    does. A last marker closes every pane, so both see every firing; the streaming table keeps
    each pane's last firing (a LATE firing replaces the earlier rows), the batch query lists
    them all."""
    appends, runs, max_files = cut
    closing = ([(10 ** 6, 10 ** 6, "c", 12.0)], 1)
    query = (lambda source: MARKERS.format(source=source, order=" ORDER BY o" if ordered else ""))
    source, sink, got = _stream_cut(spark, tmp_path_factory, appends + [closing],
                                    runs[:-1] + [len(appends) + 1], max_files, query)
    last = {}
    for row in _rows(spark.sql(query(source))):
        if (row[0], row[1]) not in last or last[(row[0], row[1])][2] < row[2]:
            last[(row[0], row[1])] = row
    assert got == sorted(last.values())
    stream = stream_status(spark, sink)
    assert stream["out_of_order_rows"] == 0


def test_a_backlog_of_unequal_appends_in_one_micro_batch(spark, tmp_path_factory):
    """The issue's case: 6 appends of 50, 400, 120, 300, 80 and 200 rows, one AVAILABLE NOW
    run. Spark reads the 400-row file first; the windows must still be the batch query's."""
    start = itertools.accumulate([0, 50, 400, 120, 300, 80])
    appends = [([(i, i, str(i % 3), 1.0) for i in range(s, s + size)], 1)
               for s, size in zip(start, [50, 400, 120, 300, 80, 200])]
    for ordered in (False, True):
        template = ("SELECT k, WINDOW_ID() AS w, MIN(id) AS lo, MAX(id) AS hi FROM {source} "
                    "WINDOW {policy} OVER (PARTITION BY k{order}){tail}")
        source, _, got = _stream_cut(spark, tmp_path_factory, appends, [6], None,
                                     lambda s: _query(template, s, "TUMBLING COUNT(5)", ordered))
        assert len(got) == 228
        assert got == _rows(spark.sql(_query(template, source, "TUMBLING COUNT(5)", ordered)))
        assert got[0] == ("0", 0, 0, 12)  # key '0' holds 0, 3, 6, 9, 12 first


def test_a_backlog_larger_than_a_pack(spark, tmp_path_factory):
    """One append of 9,000 rows in one file: a map task packs each key's tuples into one row
    (PackTuplesExec), at most 4,096 per pack, so key 'a' (6,000 tuples) leaves in several packs
    that the window must put back in order. Some v are NULL (NULLs travel in a pack), and PUNCT
    markers are booleans (packed as objects, not primitives)."""
    rows = [(i, i, "a" if i % 3 else "b", None if i % 7 == 0 else float(i % 13))
            for i in range(9000)]
    for window in ("TUMBLING COUNT(7)", "TUMBLING PUNCT(v > 11)"):
        template = ("SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS total, "
                    "MIN(id) AS lo, MAX(id) AS hi FROM {source} WINDOW {policy} "
                    "OVER (PARTITION BY k{order}){tail}")
        source, _, got = _stream_cut(spark, tmp_path_factory, [(rows, 1)], [1], None,
                                     lambda s: _query(template, s, window, False))
        expected = _rows(spark.sql(_query(template, source, window, False)))
        assert len(got) > 600
        assert got == expected


def test_rows_below_an_earlier_micro_batch_are_counted(spark, tmp_path):
    """ORDER BY cannot reorder into the past: a row below the highest value an earlier
    micro-batch processed is replayed where it arrives and counted; within a micro-batch the
    rows are sorted."""
    spark.sql("CREATE TABLE ooo_src (id BIGINT, o BIGINT, k STRING, v DOUBLE) USING DELTA")
    query = ("SELECT ARRAY_SORT(COLLECT_LIST(id)) AS ids, COLLECT_LIST(o) AS os, "
             "WINDOW_ID() AS w FROM STREAM(ooo_src) WINDOW TUMBLING COUNT(3) OVER (ORDER BY o)")
    for rows in ([(1, 30, "a", 0.0), (2, 10, "a", 0.0), (3, 20, "a", 0.0), (4, 40, "a", 0.0)],
                 [(5, 35, "a", 0.0), (6, 50, "a", 0.0), (7, 5, "a", 0.0)]):
        _append(spark, "ooo_src", rows, 1)
        create_streaming_table(spark, "ooo_out", query,
                               checkpoint=str(tmp_path / "ckpt")).awaitTermination()
    got = sorted((r.w, list(r.ids), list(r.os)) for r in spark.table("ooo_out").collect())
    # Batch 1 sorted: 10, 20, 30 | 40. Batch 2 sorted: 5 (late), 35, 50 after 40.
    assert got == [(0, [1, 2, 3], [10, 20, 30]), (1, [4, 5, 7], [40, 5, 35])]
    stream = stream_status(spark, "ooo_out")
    assert stream["out_of_order_rows"] == 2  # 5 and 35 are below 40


def test_qualified_and_quoted_names(spark, tmp_path):
    """db.table for the source and the streaming table, backquoted names (a reserved word),
    and a checkpoint path with a space and a quote: SQL statements, SHOW STREAMS, resume."""
    spark.sql("CREATE DATABASE IF NOT EXISTS analytics")
    spark.sql("CREATE TABLE analytics.src (id BIGINT, o BIGINT, k STRING, v DOUBLE) USING DELTA")
    spark.sql("CREATE TABLE `analytics`.`order` (id BIGINT, o BIGINT, k STRING, v DOUBLE) "
              "USING DELTA")
    checkpoint = str(tmp_path / "it's a checkpoint").replace("'", "\\'")  # Spark: \'
    for name, source in (("analytics.t", "analytics.src"),
                         ("`analytics`.`select`", "`analytics`.`order`")):
        statement = (f"CREATE STREAMING TABLE {name} CHECKPOINT '{checkpoint}{next(_names)}' "
                     f"AS SELECT k, COUNT(*) AS n FROM STREAM({source}) "
                     "WINDOW TUMBLING COUNT(2) OVER (PARTITION BY k)")
        for rows in ([(1, 1, "a", 0.0), (2, 2, "a", 0.0), (3, 3, "a", 0.0)], [(4, 4, "a", 0.0)]):
            _append(spark, source, rows, 1)
            spark.sql(statement)  # the second run resumes from the checkpoint
        assert [tuple(r) for r in spark.table(name).select("k", "n").collect()] \
            == [("a", 2), ("a", 2)]
    names = {r.name for r in spark.sql("SHOW STREAMS").collect()}
    assert {"analytics.t", "analytics.select"} <= names


def test_bigint_sums_past_2_53_are_exact_in_batch_and_streaming(spark, tmp_path):
    """SLIDING partials add integers as longs on both paths (batch's two stacks, streaming's
    firing partials): sums past 2^53, where doubles round, equal Python's exact sums."""
    big = 2 ** 53
    rows = [(i, i, "a", float(i)) for i in range(8)]
    spark.createDataFrame(rows, "id long, o long, k string, v double") \
        .selectExpr("id", "o", "k", f"{big} + id * 3 AS big").coalesce(1) \
        .write.format("delta").saveAsTable("big_src")
    query = ("SELECT WINDOW_ID() AS w, SUM(big) AS s, MIN(big) AS lo, MAX(big) AS hi, "
             "AVG(big) AS a FROM {source} WINDOW SLIDING COUNT(3) TRIGGER COUNT(1) "
             "OVER (ORDER BY o)")
    create_streaming_table(spark, "big_out", query.format(source="STREAM(big_src)"),
                           checkpoint=str(tmp_path / "ckpt")).awaitTermination()
    values = [big + i * 3 for i in range(8)]
    # WINDOW_ID() numbers every trigger, also the two before the window is first full.
    expected = sorted((w + 2, sum(values[w:w + 3]), values[w], values[w + 2],
                       sum(values[w:w + 3]) / 3) for w in range(6))
    batch = sorted(tuple(r) for r in spark.sql(query.format(source="big_src")).collect())
    streamed = sorted(tuple(r) for r in spark.table("big_out").collect())
    assert [r[:4] for r in batch] == [r[:4] for r in expected]  # exact: no rounding at all
    assert batch == streamed
    assert "WindowAggregate" in spark.sql(query.format(source="big_src"))._jdf \
        .queryExecution().optimizedPlan().toString()  # the incremental batch path ran


def test_partition_eviction_age_is_whole_seconds_on_both_paths(spark):
    """AGE(1.5) acts as AGE(1) in batch replay and on the streaming wall clock: both read the
    one rule, WindowSpec.partitionEvictionPolicy."""
    import json

    from sql_ext.sql.transpile import lower_parts, parse

    jvm = spark.sparkContext._jvm
    spec = jvm.io.sqlext.window.WindowSpec.fromJson(json.dumps(lower_parts(parse(
        "SELECT COUNT(*) FROM t WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k ORDER BY ts) "
        "PARTITION EVICTION AGE(1.5)")[0]).spec))
    assert spec.partitionEvictionPolicy().get().toString() == "Age(1)"
    assert jvm.io.sqlext.streaming.processors.WindowProcessor.ageMs(spec) == 1000


def test_window_spec_contract_between_python_and_scala(spark):
    """Every field the Python rewriter writes is one the JVM reads (it rejects others), and
    every field the JVM reads is written for some window family."""
    import json

    from sql_ext.sql.transpile import lower_parts, parse
    from sql_ext.streaming.plan import partial_aggregates

    read = set(spark.sparkContext._jvm.io.sqlext.window.WindowSpec.JsonFields().mkString(",")
               .split(","))
    written = set()
    for sql in ("SELECT SUM(x) FROM t WINDOW TUMBLING DELTA(x, 2) "
                "OVER (PARTITION BY k ORDER BY ts) "
                "PARTITION EVICTION AGE(3) EMIT EVICTED",
                "SELECT SUM(x) FROM t WINDOW SLIDING TIME(3) TRIGGER COUNT(2) "
                "OVER (ORDER BY ts) EMIT INCOMPLETE",
                "SELECT SUM(x) FROM t WINDOW TIME_INTERVAL(10, 5, 2, 1) ON ts "
                "WATERMARK DELAY 3 IDLE 5 LATE ROWS INTO late_t EMIT EARLY EVERY 2"):
        lowered = lower_parts(parse(sql)[0])
        spark.sparkContext._jvm.io.sqlext.window.WindowSpec.fromJson(json.dumps(lowered.spec))
        written |= set(lowered.spec)
    streaming = lower_parts(parse("SELECT SUM(x) FROM STREAM(t) WINDOW TUMBLING COUNT(3)")[0],
                            streaming=True)
    streaming.spec["aggregates"] = partial_aggregates(streaming, {"x": "int"}, spark)
    written |= set(streaming.spec)
    assert written == read
    with pytest.raises(Exception, match="not read by the JVM extension"):
        spark.sparkContext._jvm.io.sqlext.window.WindowSpec.fromJson(
            json.dumps(dict(streaming.spec, surprise=1)))

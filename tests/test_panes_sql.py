"""TIME_INTERVAL windows through spark.sql, against the pane oracle (tests/oracle_panes.py):
the conformance cases (replay with WATERMARK BY markers) and randomized inputs for the batch
default, WATERMARK DELAY and WATERMARK BY, numeric and timestamp event times."""

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle_panes import pane_firings
from test_oracle_panes import TIME_INTERVAL
from test_tumbling_oracle import SETTINGS

from sql_ext import window_metrics

SELECT = ("SELECT {key} AS p, PANE_START() AS s, PANE_END() AS e, WINDOW_ID() AS w, "
          "PANE_TIMING() AS t, PANE_INDEX() AS i, ARRAY_SORT(COLLECT_LIST(id)) AS ids "
          "FROM panes_input WINDOW {window}")


def _number(value):
    if isinstance(value, datetime.datetime):
        return value.replace(tzinfo=datetime.timezone.utc).timestamp()
    return float(value)


def _shape_sql(rows):
    return sorted((str(r.p), _number(r.s), _number(r.e), r.w, r.t, r.i, tuple(r.ids))
                  for r in rows)


def _shape_oracle(firings):
    return sorted((str(f["partition"]), _number(f["pane_start"]), _number(f["pane_end"]),
                   f["window_id"], f["timing"], f["index"],
                   tuple(sorted(r["id"] for r in f["rows"]))) for f in firings)


@pytest.mark.parametrize("case", TIME_INTERVAL, ids=[c["id"] for c in TIME_INTERVAL])
def test_time_interval_case_through_sql(spark, case):
    window = case["window"]
    attr, key = window["eventTimeAttribute"], window.get("partitionBy")
    rows = []
    for pos, event in enumerate(case["input"]):
        tuple_ = event.get("tuple", {})
        rows.append((pos, tuple_.get("id"), tuple_.get(key) if key else None,
                     float(tuple_[attr]) if attr in tuple_ else None,
                     float(event["watermark"]) if "watermark" in event else None))
    spark.createDataFrame(rows, "pos long, id string, k string, ts double, wm double") \
        .coalesce(1).createOrReplaceTempView("panes_input")
    args = (window["intervalDuration"], window["creationPeriod"], window["discardAge"],
            window["intervalOffset"])
    over = f"OVER ({'PARTITION BY k ' if key else ''}ORDER BY pos)"
    frame = spark.sql(SELECT.format(key="k" if key else "NULL", window=(
        f"TIME_INTERVAL{args} ON ts {over} WATERMARK BY wm")))
    got = frame.collect()
    expected = pane_firings(
        [dict(pos=p, id=i, k=k, ts=t, wm=w) for p, i, k, t, w in rows], *args,
        event_time=lambda r: r["ts"], order_by=lambda r: r["pos"],
        watermark_by=lambda r: r["wm"], partition_by=(lambda r: r["k"]) if key else None)
    assert _shape_sql(got) == _shape_oracle(expected["firings"])
    # The query's metrics count the tuples too late for their pane, as the model does.
    assert window_metrics(frame).get("late_dropped", 0) == expected["dropped"]


@st.composite
def pane_rows(draw, timestamps):
    """Tuples (some with NULL event time) and watermark marker rows, in random seq order."""
    def at(seconds):
        return datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=seconds) \
            if timestamps else float(seconds)
    rows = []
    for i in range(draw(st.integers(0, 30))):
        marker = draw(st.integers(0, 5)) == 0
        seconds = draw(st.one_of(st.none(), st.integers(90, 140)))
        rows.append({"seq": draw(st.integers(0, 10)), "id": i,
                     "k": draw(st.sampled_from(["a", "b", None])),
                     "ts": None if marker or seconds is None else at(seconds),
                     "wm": at(draw(st.integers(95, 150))) if marker else None})
    return rows


def window_input(spark, rows, timestamps, partitioned, mode):
    """Registers `rows` as the view panes_input (markers only with WATERMARK BY); the window's
    OVER and WATERMARK parts for `mode` (default, delay, by), the oracle's arguments for them,
    and the rows kept."""
    if mode != "by":  # markers only exist with WATERMARK BY
        rows = [r for r in rows if r["wm"] is None]
    ts_type = "timestamp" if timestamps else "double"
    spark.createDataFrame([(r["seq"], r["id"], r["k"], r["ts"], r["wm"]) for r in rows],
                          f"seq long, id long, k string, ts {ts_type}, wm {ts_type}") \
        .coalesce(1).createOrReplaceTempView("panes_input")
    partition = "PARTITION BY k " if partitioned else ""
    kwargs = {"partition_by": (lambda r: r["k"]) if partitioned else None}
    if mode == "default":
        clause = f"OVER ({partition})" if partitioned else ""
    elif mode == "delay":
        clause = f"OVER ({partition}ORDER BY seq) WATERMARK DELAY 3"
        kwargs.update(order_by=lambda r: r["seq"], watermark_delay=3)
    else:
        clause = f"OVER ({partition}ORDER BY seq) WATERMARK BY wm"
        kwargs.update(order_by=lambda r: r["seq"], watermark_by=lambda r: r["wm"])
    return clause, kwargs, rows


INTERVALS = st.sampled_from([(10, 5, 15, 0), (10, 10, 0, 3), (4, 7, 2, 1), (6, 2, 0, 0)])


@pytest.mark.soak  # tests/scale.py sizes its examples
@SETTINGS
@given(timestamps=st.booleans(), data=st.data(), interval=INTERVALS,
       partitioned=st.booleans(), mode=st.sampled_from(["default", "delay", "by"]),
       emit=st.sampled_from([None, "final", "early"]))
def test_time_interval_matches_oracle(spark, timestamps, data, interval, partitioned, mode,
                                      emit):
    rows = data.draw(pane_rows(timestamps))
    clause, kwargs, rows = window_input(spark, rows, timestamps, partitioned, mode)
    if emit == "final":
        clause += " EMIT FINAL"
        kwargs.update(emit="final")
    elif emit == "early":
        clause += " EMIT EARLY EVERY 2"
        kwargs.update(emit="early", early_every=2)
    got = spark.sql(SELECT.format(key="k" if partitioned else "NULL",
                                  window=f"TIME_INTERVAL{interval} ON ts {clause}")).collect()
    expected = pane_firings(rows, *interval, event_time=lambda r: r["ts"], **kwargs)
    assert _shape_sql(got) == _shape_oracle(expected["firings"])


@pytest.mark.parametrize("emit, events", [
    ("EMIT FINAL", [(0, "FINAL", "FINAL", 0, 2), (10, "FINAL", "FINAL", 0, 1)]),
    ("EMIT EARLY EVERY 2", [(0, "EARLY", "EARLY", 0, 1), (0, "EARLY", "EARLY", 1, 2),
                            (0, "TRIGGER", "ON_TIME", 2, 2), (10, "EARLY", "EARLY", 0, 1),
                            (10, "TRIGGER", "ON_TIME", 1, 1)])])
def test_emit_final_and_early_name_their_firings(spark, emit, events):
    """EMIT FINAL: one FINAL row per pane. EMIT EARLY: an EARLY row at a pane's first tuple,
    another once the event-time clock is 2 s past it (t=4), then the ON_TIME row."""
    rows = spark.sql(f"""
        SELECT PANE_START() AS s, WINDOW_EVENT() AS e, PANE_TIMING() AS t, PANE_INDEX() AS i,
               COUNT(*) AS n
        FROM VALUES (1, 1), (2, 4), (3, 12) AS v(seq, t)
        WINDOW TIME_INTERVAL(10) ON t OVER (ORDER BY seq) {emit}""")
    assert sorted(tuple(r) for r in rows.collect()) == sorted(events)


@pytest.mark.parametrize("watermark", ["", "OVER (ORDER BY t) WATERMARK DELAY 0"])
def test_window_event_beside_the_event_time(spark, watermark):
    """WINDOW_EVENT() of a pane is 'TRIGGER', in the expansion and in the replay."""
    rows = spark.sql(f"""
        SELECT PANE_START() AS s, WINDOW_EVENT() AS e, COUNT(*) AS n
        FROM VALUES (1), (4), (12) AS v(t) WINDOW TIME_INTERVAL(10) ON t {watermark}""")
    assert sorted(tuple(r) for r in rows.collect()) == [(0, "TRIGGER", 2), (10, "TRIGGER", 1)]

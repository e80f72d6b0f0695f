"""window_state('<streaming table>') (spec/sql.md section 8): what a stream's windows hold now,
read from its checkpoint, through spark.sql and through JDBC, against the pane oracle's open
panes and a count of the tuples each tumbling and sliding partition holds."""

import datetime
import json

import pytest
from oracle_panes import pane_firings
from pyhive import hive
from test_streaming import T0, _run_batches

from sql_ext.streaming import create_streaming_table

BATCHES = [
    [{"id": 0, "k": "a", "ts": 103, "v": 1.0}, {"id": 1, "k": "b", "ts": 107, "v": 2.0}],
    [{"id": 2, "k": "a", "ts": 112, "v": 4.0}, {"id": 3, "k": "b", "ts": 109, "v": 8.0}],
    [{"id": 4, "k": "a", "ts": 119, "v": 16.0}, {"id": 5, "k": "a", "ts": 121, "v": 32.0}],
]
PANES = """SELECT k, PANE_START() AS s, {aggregate} FROM STREAM({{source}})
           WINDOW TIME_INTERVAL(10, 5, 4) ON event_time OVER (PARTITION BY k)
           WATERMARK DELAY 2"""


def _open_panes(batches):
    """The oracle's open panes after the batches (a watermark after each), as window_state
    shows them: (k, pane start s, tuples, sum, complete, fresh, firings)."""
    rows, seen = [], []
    for batch in batches:
        rows += [dict(r, pos=len(rows) + j) for j, r in enumerate(batch)]
        seen += [r["ts"] for r in batch]
        rows.append({"pos": len(rows), "wm": max(seen) - 2})
    result = pane_firings(rows, 10, 5, 4, event_time=lambda r: r.get("ts"),
                          partition_by=lambda r: r.get("k"), order_by=lambda r: r["pos"],
                          watermark_by=lambda r: r.get("wm"), final_watermark=False)
    return sorted((p["partition"], p["window_id"] * 5.0, len(p["rows"]),
                   sum(r["v"] for r in p["rows"]), p["complete"], p["fresh"], p["firings"])
                  for p in result["open"])


def _shown(rows, partials):
    shown = []
    for r in rows:
        state = json.loads(r.state)
        values = json.loads(r.partials) if partials else None
        shown.append((r.partition.k, (r.pane_start - T0).total_seconds(),
                      values["count(*)"] if partials else r.tuples,
                      values["sum(v)"] if partials else None,
                      state["complete"], state["fresh"], state["firings"]))
    return sorted(shown)


@pytest.mark.parametrize("partials", [True, False], ids=["partials", "tuples"])
def test_open_panes_match_the_oracle(spark, tmp_path_factory, partials):
    aggregate = "COUNT(*) AS n, SUM(v) AS total" if partials else "COLLECT_LIST(id) AS ids"
    _run_batches(spark, tmp_path_factory, BATCHES, PANES.format(aggregate=aggregate),
                 sink=f"state_panes_{int(partials)}")
    rows = spark.sql(f"SELECT * FROM window_state('state_panes_{int(partials)}')").collect()
    expected = _open_panes(BATCHES)
    if not partials:
        expected = [(k, s, n, None, c, f, i) for k, s, n, _, c, f, i in expected]
    assert _shown(rows, partials) == expected
    # The SPL watermark: the newest event time (121 s) less the delay. A pane waits for its end
    # (not complete) or its end + discard age (complete); a partition's timer is its panes'
    # earliest (the partials keep one timer per partition, the tuples one per pane).
    assert {(r.watermark - T0).total_seconds() for r in rows} == {119.0}
    waits, timers = {}, {}
    for r in rows:
        wait = (r.pane_end - T0).total_seconds() + (4 if json.loads(r.state)["complete"] else 0)
        waits[r.partition.k] = min(waits.get(r.partition.k, wait), wait)
        timer = (r.next_timer - T0).total_seconds()
        timers[r.partition.k] = min(timers.get(r.partition.k, timer), timer)
    assert timers == pytest.approx(waits, abs=0.002)


def test_tumbling_and_sliding_partitions(spark, tmp_path_factory):
    """Each partition holds the tuples since its last flush (COUNT(3)) or the last 3 (SLIDING
    COUNT(3)), and its window number counts its firings."""
    batches = [[{"id": i, "k": "ab"[i % 2], "ts": 100 + i, "v": 1.0} for i in range(b, b + 4)]
               for b in (0, 4)]
    keys = {k: sum(1 for b in batches for r in b if r["k"] == k) for k in "ab"}  # 4 each
    _run_batches(spark, tmp_path_factory, batches, """
        SELECT k, WINDOW_ID() AS w, COUNT(*) AS n FROM STREAM({source})
        WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k)""", sink="state_tumbling")
    rows = spark.sql("SELECT * FROM window_state('default.state_tumbling')").collect()
    assert sorted((r.partition.k, r.window_id, r.tuples) for r in rows) == \
        sorted((k, n // 3, n % 3) for k, n in keys.items())
    _run_batches(spark, tmp_path_factory, batches, """
        SELECT k, WINDOW_ID() AS w, SUM(v) AS n FROM STREAM({source})
        WINDOW SLIDING COUNT(3) TRIGGER COUNT(2) OVER (PARTITION BY k)""", sink="state_sliding")
    rows = spark.sql("SELECT * FROM window_state('state_sliding')").collect()
    assert sorted((r.partition.k, r.tuples, json.loads(r.state)["full"]) for r in rows) == \
        sorted((k, min(n, 3), n >= 3) for k, n in keys.items())


def test_not_a_streaming_table_is_a_clear_error(spark):
    spark.sql("CREATE TABLE IF NOT EXISTS plain_table (x INT) USING DELTA")
    with pytest.raises(Exception, match="is not a streaming table"):
        spark.sql("SELECT * FROM window_state('plain_table')").collect()


def test_through_jdbc_with_emit_final_and_late_rows(thrift_server):
    """The statements of section 8 from a JDBC client: EMIT FINAL, LATE ROWS INTO and
    window_state()."""
    with hive.connect(host="127.0.0.1", port=thrift_server) as conn:
        cursor = conn.cursor()
        cursor.execute("CREATE OR REPLACE TABLE jdbc_events (k STRING, ts TIMESTAMP) USING DELTA")
        cursor.execute("INSERT INTO jdbc_events VALUES ('a', TIMESTAMP'2020-01-01 00:01:41'), "
                       "('a', TIMESTAMP'2020-01-01 00:02:10'), "
                       "('a', TIMESTAMP'2020-01-01 00:01:43')")
        cursor.execute("""CREATE STREAMING TABLE jdbc_final AS
            SELECT k, PANE_START() AS s, PANE_TIMING() AS t, COUNT(*) AS n
            FROM STREAM(jdbc_events)
            WINDOW TIME_INTERVAL(10) ON ts OVER (PARTITION BY k) WATERMARK DELAY 0
            LATE ROWS INTO jdbc_late EMIT FINAL""")
        cursor.execute("INSERT INTO jdbc_events VALUES ('a', TIMESTAMP'2020-01-01 00:01:45')")
        cursor.execute("REFRESH STREAMING TABLE jdbc_final")
        cursor.execute("SELECT k, CAST(s AS STRING), t, n FROM jdbc_final")
        assert cursor.fetchall() == [("a", "2020-01-01 00:01:40", "FINAL", 2)]
        cursor.execute("SELECT CAST(ts AS STRING), CAST(late_watermark AS STRING) "
                       "FROM jdbc_late")
        assert cursor.fetchall() == [("2020-01-01 00:01:45", "2020-01-01 00:02:10")]
        cursor.execute("SELECT partition.k, window_id, tuples FROM window_state('jdbc_final')")
        assert cursor.fetchall() == [("a", 157783693, None)]

"""Streaming tables in a driver of their own, run as a process by test_exactly_once.py to be
killed and restarted (not a test).

    python stream_driver.py <warehouse> <streams.json>

streams.json lists the streaming tables the driver runs at once: {"name", "source" (a Delta
path), "sink" (the table's location), "checkpoint", "query" (a name of QUERIES), "late" (the
LATE ROWS INTO table of the late_partials query)}. Each reads its source one Delta version per
micro-batch until all available data is processed. With SQL_EXT_DRIVER_EVERY=<seconds> they run
TRIGGER EVERY that long, every available file in each micro-batch, until the process is killed;
with SQL_EXT_DRIVER_BACKLOG set, one AVAILABLE NOW micro-batch takes every file (a REFRESH of a
table that exists). With SQL_EXT_FAULTS set, fault_sinks.py stops each stream it names at a
point of a micro-batch."""

import json
import os
import sys

import sql_ext
from sql_ext.streaming import create_streaming_table
from sql_ext.streaming.lifecycle import start_refresh
from sql_ext.streaming.sink import wrap_sinks

QUERY = """
    SELECT k, PANE_START() AS s, PANE_TIMING() AS t, PANE_INDEX() AS i,
           ARRAY_SORT(COLLECT_LIST(id)) AS ids, SUM(v) AS total
    FROM STREAM(source_stream)
    WINDOW TIME_INTERVAL(10, 5, 15) ON event_time OVER (PARTITION BY k) WATERMARK DELAY 2"""

# WATERMARK BY: rows of key 'c' with v = 6 are markers (watermark id - 3); the other rows have
# event times up to 6 s below their id, so with rows shuffled some are late, re-fire or drop.
MARKERS = """SELECT k, WINDOW_ID() AS w, PANE_INDEX() AS i, ARRAY_SORT(COLLECT_LIST(id)) AS ids,
                    SUM(v) AS total FROM {source}
             WINDOW TIME_INTERVAL(10, 5, 8) ON TIMESTAMP_SECONDS(id + CAST(v AS BIGINT) - 6)
             OVER (PARTITION BY k) WATERMARK BY IF(k = 'c' AND v > 5, TIMESTAMP_SECONDS(id - 3),
                                                    NULL)"""

QUERIES = {
    "panes": QUERY,
    # Partial aggregates: the pane state holds running partials, not tuples.
    "pane_partials": """
        SELECT k, PANE_START() AS s, PANE_TIMING() AS t, PANE_INDEX() AS i, COUNT(*) AS n,
               MIN(id) AS lo, MAX(id) AS hi, SUM(v) AS total
        FROM STREAM(source_stream)
        WINDOW TIME_INTERVAL(10, 5, 15) ON event_time OVER (PARTITION BY k) WATERMARK DELAY 2""",
    # LATE ROWS INTO with discard age 0: tuples below the last watermark are late rows.
    "late_partials": """
        SELECT k, PANE_START() AS s, PANE_TIMING() AS t, PANE_INDEX() AS i, COUNT(*) AS n,
               MIN(id) AS lo, MAX(id) AS hi, SUM(v) AS total
        FROM STREAM(source_stream)
        WINDOW TIME_INTERVAL(10, 5) ON event_time OVER (PARTITION BY k) WATERMARK DELAY 2
        LATE ROWS INTO {late}""",
    "count20": """SELECT COUNT(*) AS n, MIN(id) AS first, MAX(id) AS last, WINDOW_ID() AS w
                  FROM STREAM(source_stream) WINDOW TUMBLING COUNT(20)""",
    # The crash test's queries: ORDER BY within each micro-batch, tuples and partials.
    "ordered_count": """SELECT k, WINDOW_ID() AS w, ARRAY_SORT(COLLECT_LIST(id)) AS ids
                        FROM STREAM(source_stream)
                        WINDOW TUMBLING COUNT(5) OVER (PARTITION BY k ORDER BY id)""",
    "sliding_partials": """SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, SUM(v) AS total,
                                  MIN(id) AS lo, MAX(id) AS hi
                           FROM STREAM(source_stream)
                           WINDOW SLIDING COUNT(6) TRIGGER COUNT(4) OVER (PARTITION BY k)""",
    "markers": MARKERS.format(source="STREAM(source_stream)"),
}


def start(spark, stream: dict, every: str | None, backlog: bool):
    """Starts the streaming table `stream` (its source read one version per micro-batch, unless
    `every` or `backlog`): its query."""
    reader = spark.readStream.format("delta")
    if not every and not backlog:
        reader = reader.option("maxFilesPerTrigger", 1)
    view = f"source_{stream['name']}"
    reader.load(stream["source"]).createOrReplaceTempView(view)
    query = QUERIES[stream["query"]].replace("source_stream", view).format(
        late=stream.get("late", "late_out"))
    if backlog and spark.catalog.tableExists(stream["name"]):  # a REFRESH's one pass
        return start_refresh(spark, stream["name"])
    return create_streaming_table(spark, stream["name"], query, checkpoint=stream["checkpoint"],
                                  location=stream["sink"],
                                  trigger=float(every) if every else "available_now")


if __name__ == "__main__":
    warehouse, streams = sys.argv[1], json.loads(open(sys.argv[2]).read())
    spark = sql_ext.session(warehouse=warehouse)
    spark.sparkContext.setLogLevel("ERROR")
    if os.environ.get("SQL_EXT_FAULTS"):  # stop at points of batches: fault_sinks.py
        import fault_sinks

        wrap_sinks(fault_sinks.pausing)
    every = os.environ.get("SQL_EXT_DRIVER_EVERY")
    queries = [start(spark, stream, every, bool(os.environ.get("SQL_EXT_DRIVER_BACKLOG")))
               for stream in streams]
    for query in queries:
        query.awaitTermination()
    spark.stop()

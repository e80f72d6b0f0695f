"""Query metrics of windowed queries, read from the executed plan."""

from __future__ import annotations

from pyspark.sql import DataFrame

from sql_ext import jvm

NAMES = {
    "numNotWindowed": "not_windowed_rows",
    "numFirings": "firings",
    "numEvictedDropped": "evicted_tuples_dropped",
    "numLateDropped": "late_dropped",
    "peakPartitions": "peak_partitions",
    "numOutputRows": "output_rows",
}


def window_metrics(frame: DataFrame) -> dict:
    """The window operators' metrics of an executed query: not_windowed_rows (NULL DELTA value
    or arrival time), firings, evicted_tuples_dropped (PARTITION EVICTION without EMIT
    EVICTED), late_dropped (TIME_INTERVAL tuples too late for their pane, as SHOW STREAMS'
    column), peak_partitions (alive at once in one task) and output_rows."""
    jvm.require_classic(frame.sparkSession, "sql_ext.window_metrics (and not_windowed_rows)")
    return {NAMES.get(k, k): v for k, v in jvm.window_metrics(frame).items()}


def not_windowed_rows(frame: DataFrame) -> int:
    """How many input rows of an executed windowed query were not windowed. Each task also
    logs its count."""
    return window_metrics(frame).get("not_windowed_rows", 0)

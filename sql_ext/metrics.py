"""Query metrics of windowed queries, read from the executed plan."""

from __future__ import annotations

from pyspark.sql import DataFrame


def not_windowed_rows(frame: DataFrame) -> int:
    """How many input rows of an executed windowed query were not windowed (NULL DELTA value or
    NULL arrival time of a replayed TIME policy). Each task also logs its count."""
    jvm = frame.sparkSession.sparkContext._jvm
    return int(jvm.io.sqlext.execution.WindowMetrics.notWindowedRows(
        frame._jdf.queryExecution()))

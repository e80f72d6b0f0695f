"""Windowed queries in a Python pipeline definition: spark.sql(...) with sql-ext's SQL. A query
over a dataset defines a materialized view (batch windows, recomputed each run); a query over
STREAM(dataset) defines a streaming table, appended as windows fire."""

from pyspark import pipelines as dp
from pyspark.sql import SparkSession

spark = SparkSession.active()
PEAKS = ("SELECT freeway, WINDOW_ID() AS w, MAX(lane_flow) AS peak, COUNT(*) AS n FROM {source} "
         "WINDOW SLIDING COUNT(3) TRIGGER COUNT(1) OVER (PARTITION BY freeway) EMIT INCOMPLETE")


@dp.materialized_view(comment="the peak flow of each freeway's last 3 readings")
def peaks():
    return spark.sql(PEAKS.format(source="readings"))


@dp.table(comment="the same peaks, appended as the readings stream in")
def peaks_streamed():
    return spark.sql(PEAKS.format(source="STREAM(readings)"))

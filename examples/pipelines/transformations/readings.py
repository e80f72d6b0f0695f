"""The traffic readings, as the pipeline's source: a plain Spark streaming table over the JSON
files in data/ (no window: Spark Declarative Pipelines' own CREATE STREAMING TABLE)."""

from pathlib import Path

from pyspark import pipelines as dp
from pyspark.sql import SparkSession

DATA = Path(__file__).resolve().parents[1] / "data"
spark = SparkSession.active()


@dp.table(comment="traffic readings, streamed from data/*.json")
def readings():
    return spark.readStream.format("json") \
        .schema("seq BIGINT, event_time TIMESTAMP, freeway STRING, lane_flow INT") \
        .load(str(DATA))

"""One job, submitted as users submit theirs (not a test; test_deploy.py runs it):

    spark-submit [--master M] deploy_job.py <work folder>

Its driver's JVM runs before sql_ext.configure(builder) adds sql-ext's jars (no --jars, no
--packages). It runs a windowed query, a Python UDAF in a windowed query, a Delta CTAS and a streaming table
over a Delta source, and prints their results as one line `RESULT <json>`: the test compares
the line of every deployment with the local one and with plain Spark. With
SQL_EXT_DEPLOY_KAFKA=<bootstrap>,<topic> (a topic holding the same rows as JSON) it also runs
the windowed query over the topic declared as a table, in batch and as a streaming table: the
Kafka connector's jars reach the executors.
"""

import json
import os
import sys

import numpy as np
from pyspark.sql import SparkSession

import sql_ext
from sql_ext.udaf import reduce_windows

ROWS = 120
WINDOWED = """SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, SUM(v) AS total, py_total(v) AS py
              FROM {source}
              WINDOW TUMBLING COUNT(4) OVER (PARTITION BY k ORDER BY v)"""


@sql_ext.udaf("double")
def py_total(values):
    """Defined in the job: executors get it, and sql_ext's wrapper around it, by value."""
    return reduce_windows(np.add, values)


def start(work: str) -> SparkSession:
    builder = (SparkSession.builder.appName("sql-ext-deploy-job")
               .config("spark.sql.warehouse.dir", f"{work}/warehouse")
               .config("spark.sql.shuffle.partitions", "4"))
    return sql_ext.configure(builder)


def rows(frame) -> list:
    return sorted([list(r) for r in frame.collect()])


def main(work: str) -> dict:
    spark = start(work)
    spark.sparkContext.setLogLevel("ERROR")
    source = spark.range(ROWS).selectExpr("CAST(id % 3 AS STRING) AS k", "CAST(id AS DOUBLE) AS v")
    source.createOrReplaceTempView("numbers")
    result = {"master": spark.sparkContext.master,
              "windowed": rows(spark.sql(WINDOWED.format(source="numbers")))}
    spark.sql(f"CREATE TABLE windows USING DELTA AS {WINDOWED.format(source='numbers')}")
    result["ctas"] = rows(spark.table("windows"))
    result["ctas_format"] = spark.sql("DESCRIBE DETAIL windows").first().format
    # A streaming table over a Delta source written in two appends.
    source.where("v < 60").write.format("delta").saveAsTable("numbers_src")
    source.where("v >= 60").write.format("delta").mode("append").saveAsTable("numbers_src")
    spark.sql("CREATE STREAMING TABLE windows_live TRIGGER AVAILABLE NOW AS "
              + WINDOWED.format(source="STREAM(numbers_src)"))
    result["streaming"] = rows(spark.table("windows_live"))
    if os.environ.get("SQL_EXT_DEPLOY_KAFKA"):
        bootstrap, topic = os.environ["SQL_EXT_DEPLOY_KAFKA"].split(",")
        spark.sql("CREATE TABLE numbers_topic (k STRING, v DOUBLE) USING kafka OPTIONS ("
                  f"'kafka.bootstrap.servers' = '{bootstrap}', 'subscribe' = '{topic}', "
                  "'format' = 'json')")
        result["kafka"] = rows(spark.sql(WINDOWED.format(source="numbers_topic")))
        spark.sql("CREATE STREAMING TABLE topic_live TRIGGER AVAILABLE NOW AS "
                  + WINDOWED.format(source="STREAM(numbers_topic)"))
        result["kafka_streaming"] = rows(spark.table("topic_live"))
    # The independent check: plain Spark's GROUP BY over row numbers gives the same windows.
    result["plain_spark"] = rows(spark.sql("""
        SELECT k, w, COUNT(*), SUM(v), SUM(v) FROM (
            SELECT k, v, CAST(FLOOR((ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) - 1) / 4)
                              AS BIGINT) AS w FROM numbers)
        GROUP BY k, w"""))
    spark.stop()
    return result


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(sys.argv[1])), flush=True)

"""A streaming table over a Kafka topic, run as its own process by test_kafka_exactly_once.py
(not a test): what a user's driver does, by SQL alone.

    python kafka_driver.py <warehouse> <bootstrap> <topic> <sinks folder> [drain]

Declares the topic as a table (once: the catalog keeps it for the next process), then one
streaming table per query of QUERIES, named after it, at <sinks folder>/<name> (TRIGGER EVERY
0.5: the same statements resume them from their checkpoints in a restarted process), and runs
until killed. With `drain`: the same statements, then STOP STREAM and one REFRESH of each,
which reads what is left of the topic."""

import sys

import sql_ext

COLUMNS = "id BIGINT, k STRING, v DOUBLE"
QUERIES = {
    "tumbling": """SELECT k, WINDOW_ID() AS w, ARRAY_SORT(COLLECT_LIST(id)) AS ids
                   FROM {source} WINDOW TUMBLING COUNT(4) OVER (PARTITION BY k)""",
    "sliding_partials": """SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, SUM(v) AS total,
                                  MIN(id) AS lo, MAX(id) AS hi
                           FROM {source}
                           WINDOW SLIDING COUNT(6) TRIGGER COUNT(4) OVER (PARTITION BY k)""",
}


def topic_table(spark, name: str, bootstrap: str, topic: str) -> None:
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name} ({COLUMNS}) USING kafka OPTIONS ("
              f"'kafka.bootstrap.servers' = '{bootstrap}', 'subscribe' = '{topic}', "
              "'format' = 'json')")


if __name__ == "__main__":
    warehouse, bootstrap, topic, sinks = sys.argv[1:5]
    spark = sql_ext.session(warehouse=warehouse)
    spark.sparkContext.setLogLevel("ERROR")
    topic_table(spark, "readings", bootstrap, topic)
    for name, query in QUERIES.items():
        spark.sql(f"CREATE STREAMING TABLE {name} LOCATION '{sinks}/{name}' TRIGGER EVERY 0.5 "
                  "AS " + query.format(source="STREAM(readings)"))
    if sys.argv[5:] == ["drain"]:
        for name in QUERIES:
            spark.sql(f"STOP STREAM {name}")
            spark.sql(f"REFRESH STREAMING TABLE {name}")
    else:
        spark.streams.awaitAnyTermination()
    spark.stop()

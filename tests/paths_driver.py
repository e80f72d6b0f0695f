"""A session whose every path has a space, a quote, `%`, `#` and a non-ASCII letter in it, run
as its own process by test_paths.py (not a test).

    python paths_driver.py <folder>

The test sets SQL_EXT_WAREHOUSE (the warehouse, with the embedded catalog in it) and
SQL_EXT_JAR_CACHE (Delta's jars) to folders under <folder>, and puts a copy of the sql_ext
package there on PYTHONPATH (its extension jar, as a wheel installed there would have it).
Writes source and streaming tables under <folder>, runs the seed examples twice (the second run
replaces their tables), logs two probe errors, and prints what it found as one line:
RESULT <json>.
"""

import json
import sys
from pathlib import Path

import sql_ext
from sql_ext.sql.names import string_literal
from sql_ext.samples import seed_examples

# (id, k, seconds after 2024-01-01, v) per append; after the first the watermark is 111 - 2 =
# 109, so id 5 (at 96: its panes [90, 100) and [95, 105) closed) is late.
APPENDS = [[(1, "a", 100, 1.0), (2, "a", 103, 2.0), (3, "b", 110, 3.0), (4, "b", 111, 4.0)],
           [(5, "a", 96, 5.0), (6, "b", 125, 6.0), (7, "a", 130, 7.0)]]
COUNTS = """SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, SUM(v) AS total FROM {source}
            WINDOW TUMBLING COUNT(2) OVER (PARTITION BY k ORDER BY id)"""
PROBE = "paths_driver probe: another error of the metastore's HiveAlterHandler"
PANES = """SELECT k, PANE_START() AS s, SUM(v) AS total FROM STREAM(src)
           WINDOW TIME_INTERVAL(10, 5) ON event_time OVER (PARTITION BY k) WATERMARK DELAY 2
           LATE ROWS INTO late_rows"""


def rows(frame) -> list:
    return sorted([str(value) for value in row] for row in frame.collect())


def append(spark, batch) -> None:
    values = ", ".join(f"({i}, '{k}', TIMESTAMP'2024-01-01 00:00:00' + "
                       f"MAKE_INTERVAL(0, 0, 0, 0, 0, 0, {s}), {v})" for i, k, s, v in batch)
    spark.sql(f"INSERT INTO src VALUES {values}")


def main(folder: Path) -> dict:
    spark = sql_ext.session()
    spark.sparkContext.setLogLevel("ERROR")  # as `sql-ext run-examples`
    spark.sql("CREATE TABLE src (id BIGINT, k STRING, event_time TIMESTAMP, v DOUBLE) "
              f"USING DELTA LOCATION {string_literal(str(folder / 'source'))}")
    append(spark, APPENDS[0])
    # Given a LOCATION and a CHECKPOINT; then one in the warehouse, at its default checkpoint.
    spark.sql(f"CREATE STREAMING TABLE counts LOCATION {string_literal(str(folder / 'counts'))} "
              f"CHECKPOINT {string_literal(str(folder / 'counts checkpoint'))} AS "
              + COUNTS.format(source="STREAM(src)"))
    spark.sql(f"CREATE STREAMING TABLE panes AS {PANES}")
    append(spark, APPENDS[1])
    spark.sql("REFRESH STREAMING TABLE counts")
    spark.sql("REFRESH STREAMING TABLE panes")
    streams = {s.name: s.asDict() for s in spark.sql("SHOW STREAMS").collect()}
    found = {
        "package": sql_ext.__file__,
        "jars": spark.conf.get("spark.jars"),
        "warehouse": spark.conf.get("spark.sql.warehouse.dir"),
        "counts": rows(spark.table("counts")),
        "counts_batch": rows(spark.sql(COUNTS.format(source="src"))),
        "panes": rows(spark.table("panes")),
        "late_ids": sorted(r.id for r in spark.table("late_rows").collect()),
        "streams": {name: {k: str(s[k]) for k in ("state", "checkpoint", "location",
                                                     "last_error")}
                    for name, s in streams.items()},
    }
    for _ in range(2):  # the second run replaces the tables (CREATE OR REPLACE TABLE)
        found["examples"] = {table: [str(list(r)) for r in result]
                             for table, result in seed_examples.main(spark).items()}
    # The metastore's logger whose benign line the embedded default drops: its other lines stay.
    hive_alter = spark.sparkContext._jvm.org.slf4j.LoggerFactory.getLogger(
        "org.apache.hadoop.hive.metastore.HiveAlterHandler")
    hive_alter.error("Failed to alter table default.probe")
    hive_alter.error(PROBE)
    spark.stop()
    return found


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(Path(sys.argv[1]))), flush=True)

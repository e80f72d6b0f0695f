"""Runs a TUMBLING window through the public SQL surface and returns its firings in the shape
of tests/oracle.py, so tests can compare Spark with the oracle."""

import datetime

from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

SCHEMA = StructType([
    StructField("id", LongType()),
    StructField("k", StringType()),
    StructField("seq", LongType()),
    StructField("v", DoubleType()),
    StructField("ts", TimestampType()),
    StructField("marker", BooleanType()),
])
EPOCH = datetime.datetime(2020, 1, 1)


def make_view(spark, rows, name="events"):
    """A temp view over `rows` (dicts with the SCHEMA's keys) whose scan order is list order."""
    data = [tuple(row.get(f.name) for f in SCHEMA.fields) for row in rows]
    spark.createDataFrame(data, SCHEMA).coalesce(1).createOrReplaceTempView(name)


def sql_firings(spark, policy_sql, *, partitioned, order_by, view="events"):
    """Firings as dicts {partition, window_id, ids, pane_start, pane_end}."""
    over = []
    if partitioned:
        over.append("PARTITION BY k")
    if order_by:
        over.append(f"ORDER BY {order_by}")
    over_sql = f"OVER ({' '.join(over)})" if over else ""
    key = "k" if partitioned else "NULL"
    query = f"""
        SELECT {key} AS k, WINDOW_ID() AS window_id, PANE_START() AS ps, PANE_END() AS pe,
               TRANSFORM(ARRAY_SORT(COLLECT_LIST(STRUCT(id))), x -> x.id) AS ids
        FROM {view}
        WINDOW TUMBLING {policy_sql} {over_sql}"""
    return [
        {"partition": r.k, "window_id": r.window_id, "ids": list(r.ids),
         "pane_start": r.ps, "pane_end": r.pe}
        for r in spark.sql(query).collect()
    ]


def oracle_shape(firings):
    return [
        {"partition": f["partition"], "window_id": f["window_id"],
         "ids": sorted(r["id"] for r in f["rows"]),
         "pane_start": f["pane_start"], "pane_end": f["pane_end"]}
        for f in firings
    ]


def as_multiset(firings):
    """Order across partitions is unspecified; compare firings as a sorted list."""
    return sorted(firings, key=lambda f: (str(f["partition"]), f["window_id"], f["ids"]))

"""A Spark Connect client in its own process, as a notebook or IDE would be: it runs the
windowed SQL surface against `sql-ext connect-server` and prints what it saw as one JSON line.

    python connect_client.py sc://localhost:PORT/;token=... <source table>
"""

import json
import sys

import numpy as np
from pyspark.sql import SparkSession

import sql_ext
from sql_ext.udaf import reduce_windows

url, source = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.remote(url).getOrCreate()
seen = {"session": type(spark).__module__}

WINDOWED = (f"SELECT k, SUM(x) AS s, COUNT(*) AS n, WINDOW_ID() AS w FROM {source} "
            "WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k ORDER BY seq)")
seen["windowed"] = [list(r) for r in spark.sql(WINDOWED).collect()]
seen["parameters"] = [list(r) for r in spark.sql(
    f"SELECT k, SUM(x) AS s FROM {source} WHERE k = :k AND seq < ? "
    "WINDOW TUMBLING COUNT(2) OVER (PARTITION BY k ORDER BY seq)".replace(":k", "?"),
    args=["a", 5]).collect()]


@sql_ext.udaf("double")
def client_sum(values):
    """Defined in the client: registered in its session on the server, vectorised there."""
    return reduce_windows(np.add, values)


seen["udaf"] = [list(r) for r in spark.sql(
    f"SELECT k, client_sum(x) AS s, SUM(x) AS builtin FROM {source} "
    "WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k ORDER BY seq)").collect()]

spark.sql(f"CREATE STREAMING TABLE remote_counts TRIGGER AVAILABLE NOW AS "
          f"SELECT k, COUNT(*) AS n, SUM(x) AS s, WINDOW_ID() AS w FROM STREAM({source}) "
          "WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k ORDER BY seq)")
seen["streamed"] = [list(r) for r in spark.sql(
    "SELECT k, n, s, w FROM remote_counts ORDER BY k, w").collect()]
seen["shown"] = [r["state"] for r in spark.sql("SHOW STREAMS").collect()
                 if r["name"].endswith("remote_counts")]
seen["state_rows"] = spark.sql("SELECT * FROM window_state('remote_counts')").count()
try:
    sql_ext.window_metrics(spark.sql(WINDOWED))
except TypeError as error:
    seen["helper_error"] = str(error)
spark.sql("DROP STREAMING TABLE remote_counts")
seen["dropped"] = not spark.catalog.tableExists("remote_counts")
print("RESULT " + json.dumps(seen), flush=True)

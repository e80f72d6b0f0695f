"""A Spark Connect client that tries things, as a user of a shared server would: each probe is
a Python expression over `spark` (and pyspark.sql.functions as F); it prints one JSON line
mapping each probe to ["ok", rows] or ["error", message].

    python connect_probe.py 'sc://localhost:PORT/;token=...' '{"name": "expression", ...}'
"""

import json
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

url, probes = sys.argv[1], json.loads(sys.argv[2])
seen = {}
try:
    spark = SparkSession.builder.remote(url).getOrCreate()
except Exception as error:  # noqa: BLE001 - reported as the probes' answer
    print("RESULT " + json.dumps({name: ["error", str(error)] for name in probes}))
    sys.exit(0)
for name, expression in probes.items():
    try:
        value = eval(expression, {"spark": spark, "F": F})  # the test's own probes
        rows = value.collect() if hasattr(value, "collect") else value
        seen[name] = ["ok", [list(row) for row in rows] if isinstance(rows, list) else rows]
    except Exception as error:  # noqa: BLE001 - the refusal is what the test reads
        seen[name] = ["error", str(error)]
print("RESULT " + json.dumps(seen, default=str))

"""Translates sensors.spl with sql-ext's SPL translator, runs the translation on sample
readings appended in three commits (each followed by REFRESH STREAMING TABLE, as a stream would
see them) and prints the two streaming tables.

    .venv/bin/python examples/spl/run_translation.py [warehouse folder]
"""

import datetime
import sys
import tempfile
from pathlib import Path

from sql_ext.spl import translate

HERE = Path(__file__).resolve().parent
T0 = datetime.datetime(2024, 1, 1, 8, 0, 0)
# (sensor, level, temperature in Celsius, seconds after T0); a commit each. Level 0 readings
# are dropped by the Filter; the third commit holds a late reading (08:00:20).
COMMITS = [
    [("s1", 3, 20.0, 5), ("s2", 1, 25.5, 8), ("s1", 0, 21.0, 12), ("s1", 4, 22.5, 18)],
    [("s2", 2, 24.0, 35), ("s1", 5, 23.0, 41), ("s2", 2, 26.0, 52), ("s1", 1, 19.5, 64)],
    [("s2", 3, 27.5, 20), ("s1", 2, 20.5, 95), ("s2", 4, 25.0, 101)],
]


def main(spark) -> dict:
    translation = translate((HERE / "sensors.spl").read_text(), "sensors.spl")
    for entry in translation.untranslated:
        print(f"not translated: line {entry.line}: {entry.operator}: {entry.reason}")
    streaming = [s for s in translation.statements if s.kind == "streaming_table"]
    for statement in reversed(translation.statements):  # a fresh start when run again
        if statement.kind == "streaming_table":
            spark.sql(f"DROP STREAMING TABLE IF EXISTS {statement.table}")
        else:
            kind = "VIEW" if statement.kind == "view" else "TABLE"
            spark.sql(f"DROP {kind} IF EXISTS {statement.table}")
    for statement in translation.statements:
        spark.sql(statement.sql)
    source = translation.statements[0].table
    for commit in COMMITS:
        values = ", ".join(
            f"('{s}', {level}, {temp}D, TIMESTAMP '{T0 + datetime.timedelta(seconds=t)}')"
            for s, level, temp, t in commit)
        spark.sql(f"INSERT INTO {source} SELECT /*+ COALESCE(1) */ * FROM VALUES {values}")
        for statement in streaming:
            spark.sql(f"REFRESH STREAMING TABLE {statement.table}")
    results = {}
    for statement in streaming:
        table = spark.table(statement.table)
        columns = [c for c in table.columns if not c.startswith("_")]  # not the upsert key
        rows = table.select(*columns).orderBy(*columns[:2])
        print(f"\n{statement.stream}  (SPL line {statement.line})")
        rows.show(truncate=False)
        results[statement.stream] = rows.collect()
    return results


if __name__ == "__main__":
    from sql_ext.session import session

    warehouse = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="sql-ext-spl-")
    spark = session(warehouse=warehouse)
    spark.sparkContext.setLogLevel("ERROR")
    main(spark)
    spark.stop()

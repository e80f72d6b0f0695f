"""The spec's seed examples as windowed SQL, each written to a Delta table.

Run with `bash python/dev.sh main` (or `sql-ext run-examples`). Sample data: the `data` folder
beside this file (shipped in the wheel).
"""

from pathlib import Path

from sql_ext.sql.names import string_literal

DATA = Path(__file__).resolve().parent / "data"

# name -> (what the seed says, windowed query)
EXAMPLES = {
    "seed_count4_cost": (
        "tumbling, count(4): Sum(cost) over A,B,C,D = 10; E waits for the next window",
        """SELECT WINDOW_ID() AS window, COUNT(*) AS tuples, SUM(cost) AS cost
           FROM orders
           WINDOW TUMBLING COUNT(4) OVER (ORDER BY seq)"""),
    "seed_delta_temperature": (
        "tumbling, delta(temperature, 1.5): 17.6 - 16.0 > 1.5 flushes [16.0, 16.4, 17.1]",
        """SELECT WINDOW_ID() AS window, COLLECT_LIST(temperature) AS temperatures,
                  MIN(temperature) AS low, MAX(temperature) AS high
           FROM temperatures
           WINDOW TUMBLING DELTA(temperature, 1.5) OVER (ORDER BY seq)"""),
    "seed_punct_per_file": (
        "tumbling, punct(): FileSource punctuates the end of each file; one sum per file",
        """SELECT WINDOW_ID() AS window, COUNT(*) AS items, SUM(amount) AS total
           FROM sales
           WINDOW TUMBLING PUNCT() OVER (ORDER BY seq)"""),
    "seed_count3_by_customer": (
        "tumbling, count(3), partitioned by customer: each customer's window fills on its own",
        """SELECT customer, WINDOW_ID() AS window, COLLECT_LIST(id) AS orders,
                  SUM(amount) AS amount
           FROM customer_orders
           WINDOW TUMBLING COUNT(3) OVER (PARTITION BY customer ORDER BY seq)"""),
}


def register_sources(spark) -> None:
    for view, path in (("orders", DATA / "orders.csv"),
                       ("temperatures", DATA / "temperatures.csv"),
                       ("sales", DATA / "sales"),
                       ("customer_orders", DATA / "customer_orders.csv")):
        spark.sql(f"""CREATE OR REPLACE TEMP VIEW {view} USING csv
                      OPTIONS (path {string_literal(str(path))}, header 'true',
                               inferSchema 'true')""")


def main(spark) -> dict:
    """Runs every example into a Delta table of the same name; returns the rows by table."""
    register_sources(spark)
    results = {}
    for table, (doc, query) in EXAMPLES.items():
        spark.sql(f"CREATE OR REPLACE TABLE {table} USING DELTA AS {query}")
        print(f"\n{table}: {doc}")
        frame = spark.table(table).orderBy(*spark.table(table).columns[:2])
        frame.show(truncate=False)
        results[table] = frame.collect()
    return results

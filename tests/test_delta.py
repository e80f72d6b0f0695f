"""Windowed queries as the source of Delta tables: CTAS and INSERT INTO."""


def test_create_table_as_and_insert_into(spark):
    spark.createDataFrame([(i, "A" if i % 2 else "B", float(i)) for i in range(1, 13)],
                          ["seq", "customer", "cost"]).createOrReplaceTempView("delta_orders")
    windowed = ("SELECT customer, WINDOW_ID() AS n, SUM(cost) AS total FROM delta_orders "
                "WINDOW TUMBLING COUNT(3) OVER (PARTITION BY customer ORDER BY seq)")
    spark.sql("DROP TABLE IF EXISTS window_sums")
    spark.sql(f"CREATE TABLE window_sums USING DELTA AS {windowed}")
    assert spark.sql("DESCRIBE DETAIL window_sums").first().format == "delta"
    first = sorted(tuple(r) for r in spark.table("window_sums").collect())
    assert first == [("A", 0, 9.0), ("A", 1, 27.0), ("B", 0, 12.0), ("B", 1, 30.0)]
    spark.sql(f"INSERT INTO window_sums {windowed}")
    assert sorted(tuple(r) for r in spark.table("window_sums").collect()) == sorted(first * 2)

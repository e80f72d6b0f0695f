"""Windowed queries as the source of Delta tables: CTAS and INSERT INTO; the streaming sink's
at-most-once append."""

import pytest


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


def test_a_micro_batch_is_appended_at_most_once(spark, tmp_path):
    """The streaming sink's append (DeltaBatchAppend): a batch id of a stream commits once,
    also when the table's latest version has no checksum file (another writer's commit) and
    the transactions come from Delta's own state; other streams and later batches still write."""
    import json

    from sql_ext.jvm import delta_batch_append

    path = str(tmp_path / "firings")
    rows = spark.range(5).selectExpr("id AS k", "CAST(id AS DOUBLE) AS total")
    rows.limit(0).write.format("delta").save(path)
    assert delta_batch_append(rows, path, "stream-a", 0)
    assert not delta_batch_append(rows, path, "stream-a", 0)  # replayed after a crash
    assert delta_batch_append(rows, path, "stream-b", 0)
    assert delta_batch_append(rows, path, "stream-a", 1)
    # The commit records the batch as Delta's own transaction check reads it.
    log = sorted((tmp_path / "firings" / "_delta_log").glob("*.json"))
    actions = [json.loads(line) for line in log[-1].read_text().splitlines()]
    assert {"appId": "stream-a", "version": 1} == {
        k: v for k, v in next(a["txn"] for a in actions if "txn" in a).items()
        if k in ("appId", "version")}
    (tmp_path / "firings" / "_delta_log" / log[-1].name.replace(".json", ".crc")).unlink()
    assert not delta_batch_append(rows, path, "stream-a", 1)
    assert not delta_batch_append(rows, path, "stream-b", 0)
    assert spark.read.format("delta").load(path).count() == 15
    with pytest.raises(Exception, match="do not fit the table"):
        delta_batch_append(rows.selectExpr("k"), path, "stream-a", 2)

"""What operators watch: `sql-ext thriftserver --ui-port` serves Spark's UI, whose Structured
Streaming tab names each streaming table by its table name, and the streaming tables' metrics in
Prometheus' text format under their names, read over HTTP from a real server while a stream
created through PyHive runs (the run's shared server, tests/shared_servers.py)."""

import re
import time
import urllib.request


def start_counting_stream(cursor, name: str) -> None:
    """A table `readings` of three rows and the running streaming table `name` over it (count
    windows of 2 a key, every second): a stream whose metrics a test reads."""
    cursor.execute("CREATE TABLE readings (k STRING, v DOUBLE) USING DELTA")
    cursor.execute("INSERT INTO readings VALUES ('a', 1.0), ('a', 2.0), ('b', 3.0)")
    cursor.execute(f"CREATE STREAMING TABLE {name} TRIGGER EVERY 1 AS SELECT k, "
                   "WINDOW_ID() AS w, SUM(v) AS total FROM STREAM(readings) "
                   "WINDOW TUMBLING COUNT(2) OVER (PARTITION BY k)")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode()


def test_streaming_tables_by_name_in_the_ui_and_prometheus(jdbc, thrift_ui):
    """On the run's shared Thrift server, started with `--ui-port`: a streaming table of the
    test's own database shows by name in the UI's Structured Streaming tab and in Prometheus'
    metrics (under its database and table names), and the server's log gives the UI's
    address."""
    with jdbc.connect() as conn:
        cursor = conn.cursor()
        start_counting_stream(cursor, "lane_totals")
        try:
            metric = re.compile(rf"^metrics_sql_ext_driver_spark_streaming_{jdbc.database}_"
                                r"lane_totals_(\w+?)_Value\{.*\} (\S+)$", re.M)
            deadline, found = time.monotonic() + 90, {}
            while time.monotonic() < deadline:
                found = dict(metric.findall(
                    _get(f"http://127.0.0.1:{thrift_ui.port}/metrics/prometheus/")))
                if float(found.get("states_rowsTotal", 0)) > 0:
                    break
                time.sleep(1)
            assert float(found.get("states_rowsTotal", 0)) > 0, found
            assert {"inputRate_total", "processingRate_total", "latency",
                    "states_usedBytes"} <= set(found), found
            page = _get(f"http://127.0.0.1:{thrift_ui.port}/StreamingQuery/")
            assert f"{jdbc.database}.lane_totals" in page
        finally:
            cursor.execute("DROP STREAMING TABLE lane_totals")
    log_text = thrift_ui.log.read_text()
    assert re.search(rf"Spark UI on http://\S+:{thrift_ui.port} ", log_text), log_text[-2000:]

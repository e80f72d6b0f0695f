"""What operators watch: `sql-ext thriftserver --ui-port` serves Spark's UI, whose Structured
Streaming tab names each streaming table by its table name, and the streaming tables' metrics in
Prometheus' text format under their names, read over HTTP from a real server while a stream
created through PyHive runs."""

import re
import subprocess
import sys
import time
import urllib.request

from pyhive import hive
from test_catalog import _kill

from sql_ext.server.thrift import free_port, wait_for_port


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode()


def test_streaming_tables_by_name_in_the_ui_and_prometheus(tmp_path):
    port, ui = free_port(), free_port()
    with open(tmp_path / "server.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "sql_ext.cli", "thriftserver", "--port", str(port),
             "--ui-port", str(ui), "--warehouse", str(tmp_path / "warehouse")],
            stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path, start_new_session=True)
    try:
        wait_for_port("127.0.0.1", port, timeout=120)
        with hive.connect(host="127.0.0.1", port=port) as conn:
            cursor = conn.cursor()
            cursor.execute("CREATE TABLE readings (k STRING, v DOUBLE) USING DELTA")
            cursor.execute("INSERT INTO readings VALUES ('a', 1.0), ('a', 2.0), ('b', 3.0)")
            cursor.execute("CREATE STREAMING TABLE lane_totals TRIGGER EVERY 1 AS SELECT k, "
                           "WINDOW_ID() AS w, SUM(v) AS total FROM STREAM(readings) "
                           "WINDOW TUMBLING COUNT(2) OVER (PARTITION BY k)")
            metric = re.compile(r"^metrics_sql_ext_driver_spark_streaming_default_lane_totals_"
                                r"(\w+?)_Value\{.*\} (\S+)$", re.M)
            deadline, found = time.monotonic() + 90, {}
            while time.monotonic() < deadline:
                found = dict(metric.findall(_get(f"http://127.0.0.1:{ui}/metrics/prometheus/")))
                if float(found.get("states_rowsTotal", 0)) > 0:
                    break
                time.sleep(1)
            assert float(found.get("states_rowsTotal", 0)) > 0, found
            assert {"inputRate_total", "processingRate_total", "latency",
                    "states_usedBytes"} <= set(found), found
            page = _get(f"http://127.0.0.1:{ui}/StreamingQuery/")
            assert "default.lane_totals" in page
            cursor.execute("DROP STREAMING TABLE lane_totals")
        log_text = (tmp_path / "server.log").read_text()
        assert re.search(rf"Spark UI on http://\S+:{ui} ", log_text), log_text[-2000:]
    finally:
        _kill(process, port)

"""What operators watch on a server: Spark's UI (its Structured Streaming tab names every
streaming table by its table name) and the streaming tables' metrics in Prometheus' text format
at <ui>/metrics/prometheus/, under the table names (spark.sql.streaming.metricsEnabled is one of
every stream's settings, sql_ext.streaming.sink.STREAM_SETTINGS).

    sql-ext thriftserver --ui-port 4040
    curl -s http://127.0.0.1:4040/metrics/prometheus/ | grep streaming
"""

from __future__ import annotations

import os
import sys

from sql_ext.server.auth import is_loopback

# Metric names start with this instead of the application id, which changes at every start.
NAMESPACE = "sql_ext"


def ui_conf(host: str, ui_port: int | None) -> dict[str, str]:
    """Session settings for Spark's UI on `ui_port` (None: no UI, the default) with a Prometheus
    endpoint. The UI has no sign-in: Spark binds it to SPARK_LOCAL_IP (a loopback server's own
    address, else 127.0.0.1 when unset); set to another address, it says so."""
    if ui_port is None:
        return {}
    if is_loopback(host) and not os.environ.get("SPARK_LOCAL_IP"):
        os.environ["SPARK_LOCAL_IP"] = host  # read by the JVM the session starts
    # Unset, the embedded session sets SPARK_LOCAL_IP to 127.0.0.1 (session.py), whatever
    # address the server itself listens on.
    elif not is_loopback(os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")):
        print(f"sql-ext: WARNING: Spark's UI on port {ui_port} has no sign-in and listens on "
              f"{os.environ['SPARK_LOCAL_IP']}: anyone who reaches it "
              "sees every statement; restrict the port (firewall) or set SPARK_LOCAL_IP",
              file=sys.stderr, flush=True)
    return {"spark.ui.enabled": "true", "spark.ui.port": str(ui_port),
            "spark.metrics.namespace": NAMESPACE,
            "spark.metrics.conf.*.sink.prometheusServlet.class":
                "org.apache.spark.metrics.sink.PrometheusServlet",
            "spark.metrics.conf.*.sink.prometheusServlet.path": "/metrics/prometheus"}

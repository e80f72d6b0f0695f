"""Spark Declarative Pipelines with sql-ext's SQL: the example pipeline (examples/pipelines: a
plain SDP streaming table and flow beside windowed materialized views, a windowed streaming
table and a windowed flow) run by Spark's own pipelines CLI, in the one-command local mode
(`sql-ext pipelines run`) and with `spark-pipelines run --remote` against a
`sql-ext connect-server` process.

The oracles, over the pipeline's own `readings` table (read back from Delta): for the
materialized views and the count windows (materialized or streamed, over one run or two) the
batch query; for the EMIT FINAL panes Spark's own window() aggregation of the readings,
restricted to the panes the watermark closed (all the readings arrive in one micro-batch); for
the plain flow a filter of them. (A sql-ext streaming table over the same readings would be
the pipeline's twin, not an oracle: streaming equals batch is tests/test_stream_order.py's.)"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from sql_ext.logs import HARMLESS_LOG_LINES

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "pipelines"
MAX_FLOW = ("SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end, "
            "MAX(lane_flow) AS flow FROM {readings} "
            "WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)")
EVERY_3 = ("SELECT freeway, WINDOW_ID() AS w, COUNT(*) AS n, AVG(lane_flow) AS avg_flow "
           "FROM {readings} WINDOW TUMBLING COUNT(3) OVER (PARTITION BY freeway ORDER BY seq)")
PER_3 = ("SELECT freeway, WINDOW_ID() AS w, COUNT(*) AS n, MAX(lane_flow) AS max_flow "
         "FROM {readings} WINDOW TUMBLING COUNT(3) OVER (PARTITION BY freeway)")
PANES = ("SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end, "
         "SUM(lane_flow) AS total_flow, COUNT(*) AS readings FROM {readings} "
         "WINDOW TIME_INTERVAL(50, 25) ON event_time OVER (PARTITION BY freeway) "
         "WATERMARK DELAY 10 EMIT FINAL")
PEAKS = ("SELECT freeway, WINDOW_ID() AS w, MAX(lane_flow) AS peak, COUNT(*) AS n FROM {readings} "
         "WINDOW SLIDING COUNT(3) TRIGGER COUNT(1) OVER (PARTITION BY freeway) EMIT INCOMPLETE")
# Spark's own sliding windows over the same readings: the panes the watermark (the latest
# reading less 10 s) closed.
SPARK_PANES = ("SELECT freeway, window.start AS time_start, window.end AS time_end, "
               "SUM(lane_flow) AS total_flow, COUNT(*) AS readings FROM {readings} "
               "GROUP BY freeway, window(event_time, '50 seconds', '25 seconds') "
               "HAVING window.end <= (SELECT MAX(event_time) - INTERVAL 10 SECONDS "
               "FROM {readings})")


def _pipeline_copy(tmp_path: Path) -> Path:
    """The example in a folder of its own, its state (checkpoints) in it: paths with spaces."""
    copy = tmp_path / "pipeline folder"  # a space, as users' folders have
    shutil.copytree(EXAMPLE, copy)
    spec = copy / "spark-pipeline.yml"
    spec.write_text("\n".join(
        f"storage: {(copy / 'pipeline storage').as_uri()}" if line.startswith("storage:")
        else line
        for line in spec.read_text().splitlines()) + "\n")
    return spec


def _rows(frame):
    return sorted(tuple(r) for r in frame.collect())


def _check_datasets(spark, warehouse: Path, tag: str, readings: int = 13):
    def table(name):
        return spark.read.format("delta").load(str(warehouse / name))

    table("readings").createOrReplaceTempView(f"readings_{tag}")
    assert table("readings").count() == readings
    assert _rows(table("max_flow")) == _rows(spark.sql(MAX_FLOW.format(readings=f"readings_{tag}")))
    assert _rows(table("flow_every_3")) == _rows(spark.sql(EVERY_3.format(readings=f"readings_{tag}")))
    assert _rows(table("i80_readings")) == _rows(spark.sql(
        f"SELECT seq, event_time, lane_flow FROM readings_{tag} WHERE freeway = 'I-80'"))
    assert _rows(table("flow_per_3")) == _rows(spark.sql(PER_3.format(readings=f"readings_{tag}")))
    # The Python definitions' spark.sql(...): a materialized view and a streaming table.
    assert _rows(table("peaks")) == _rows(spark.sql(PEAKS.format(readings=f"readings_{tag}")))
    assert _rows(table("peaks_streamed")) == _rows(table("peaks"))
    closed = _rows(spark.sql(SPARK_PANES.format(readings=f"readings_{tag}")))
    assert len(closed) >= 11 and _rows(table("pane_flow")) == closed


def _local(command: str, spec: Path, warehouse: Path, cwd: Path) -> tuple[str, bool]:
    """`sql-ext pipelines <command>` (run, dry-run) of `spec`; its output, and whether it
    failed."""
    # Connect's session and execution managers check their sessions every 30 s; every 100 ms
    # here, so that a check running after the server's context stopped (a warning with a stack
    # trace at the end of a run that completed) shows in every run, not in one of many.
    checks = " ".join(f"--conf spark.connect.{manager}.manager.maintenanceInterval=100ms"
                      for manager in ("session", "execute"))
    env = dict(os.environ, PYSPARK_SUBMIT_ARGS=f"{checks} "
               + os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell"))
    run = subprocess.run(
        [sys.executable, "-m", "sql_ext.cli", "pipelines", "--warehouse", str(warehouse),
         command, "--spec", str(spec)], capture_output=True, text=True, timeout=900, cwd=cwd,
        env=env)
    return run.stdout + run.stderr, run.returncode != 0


def _run_locally(spec: Path, warehouse: Path, cwd: Path):
    output, failed = _local("run", spec, warehouse, cwd)
    assert not failed, output[-8000:]
    assert "Run is COMPLETED" in output
    # Quiet success: no ERROR line, no stack trace, none of the warnings every run printed
    # (sql_ext/logs.py), no INFO lines of Spark's (the console shows WARN and above).
    noise = [line for line in output.splitlines()
             if re.search(r" (ERROR|INFO) [\w$.]+: |^\s+at [\w$.]+\(|^Traceback", line)
             or any(logger.rsplit(".", 1)[1] + ":" in line for logger in HARMLESS_LOG_LINES)]
    assert not noise, "\n".join(noise[:20])


LATER = [{"seq": 13 + i, "event_time": f"2024-01-01T08:{3 + i // 6:02d}:{(i * 10) % 60:02d}",
          "freeway": ("I-80", "US-101")[i % 2], "lane_flow": 100 + 37 * i} for i in range(12)]


def _add_later_readings(spec: Path) -> None:
    """Readings that come after the first run: a second file in the example's data folder."""
    (spec.parent / "data" / "later.json").write_text(
        "\n".join(json.dumps(reading) for reading in LATER) + "\n")


@pytest.mark.heavy
def test_the_example_pipeline_in_one_command(spark, tmp_path):
    """`sql-ext pipelines run`: a local Connect server and Spark's pipelines CLI in one
    command, quiet when it succeeds. (A second run over more readings is the remote test's:
    the same pipeline engine, without starting a second local server.)"""
    spec, warehouse = _pipeline_copy(tmp_path), tmp_path / "warehouse"
    _run_locally(spec, warehouse, tmp_path)
    _check_datasets(spark, warehouse, "local")


@pytest.mark.heavy
def test_the_example_pipeline_against_a_connect_server_twice(spark, tmp_path, connect_server):
    """`spark-pipelines run --remote` against the run's shared `sql-ext connect-server`: the
    datasets land in its warehouse. Run twice: the second run reads only the readings that
    came since, and the windowed streaming tables go on from the window state the first run
    left in the checkpoints (count windows and panes that span both runs)."""
    spec = _pipeline_copy(tmp_path)
    output, failed = _remote("run", spec, connect_server, tmp_path)
    assert not failed, output[-8000:]
    assert "Run is COMPLETED" in output
    _check_datasets(spark, connect_server.warehouse, "remote")
    _add_later_readings(spec)
    output, failed = _remote("run", spec, connect_server, tmp_path)
    assert not failed, output[-8000:]
    assert "Run is COMPLETED" in output
    _check_datasets(spark, connect_server.warehouse, "remote_again", readings=25)


def _remote(command: str, spec: Path, server, cwd: Path) -> tuple[str, bool]:
    """Spark's own `spark-pipelines <command> --remote` against `server` (the shared Connect
    server); its output, and whether it failed. pyspark's client sends a token without TLS only
    to "localhost"."""
    launcher = Path(sys.executable).with_name("spark-pipelines")
    run = subprocess.run(
        [str(launcher), command, "--spec", str(spec), "--remote",
         f"sc://localhost:{server.port}/;token={server.token}"],
        capture_output=True, text=True, timeout=900, cwd=cwd,
        # SPARK_HOME given: pyspark's find-spark-home script breaks on a folder with a space.
        env=dict(os.environ, PYSPARK_PYTHON=sys.executable,
                 SPARK_HOME=str(Path(pyspark.__file__).parent)))
    return run.stdout + run.stderr, run.returncode != 0


def test_a_pipelines_window_errors_speak_of_the_users_query(tmp_path, connect_server):
    """Errors found when the pipeline resolves its flows: an aggregate without partials in a
    streaming window (the input's type is known only then), a misspelt column in a windowed
    materialized view and in a Python definition's streaming window; each reported by the
    pipeline, in the user's terms (no helper column), positioned in the user's statement."""
    spec = _pipeline_copy(tmp_path)
    (spec.parent / "transformations" / "mistakes.sql").write_text(
        "CREATE STREAMING TABLE spread AS SELECT freeway, STDDEV(lane_flow) AS s "
        "FROM STREAM(readings) WINDOW TUMBLING COUNT(3) OVER (PARTITION BY freeway);\n"
        "CREATE MATERIALIZED VIEW misspelt AS\n"
        "SELECT freeway, MAX(lane_flw) AS m FROM readings "
        "WINDOW TUMBLING COUNT(3) OVER (PARTITION BY freeway)")
    (spec.parent / "transformations" / "mistakes.py").write_text(
        "from pyspark import pipelines as dp\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.active()\n\n\n"
        "@dp.table\n"
        "def misspelt_stream():\n"
        "    return spark.sql('SELECT freeway, SUM(lane_flw) AS total FROM STREAM(readings) '\n"
        "                     'WINDOW TUMBLING COUNT(2) OVER (PARTITION BY freeway)')\n")
    output, failed = _remote("dry-run", spec, connect_server, tmp_path)
    assert failed
    errors = output[output.index("Failed to resolve flow"):output.index("Traceback")]
    assert "STDDEV(lane_flow) of INT" in errors and "MATERIALIZED VIEW" in errors, output[-4000:]
    assert "`lane_flw` cannot be resolved" in errors and "(line 3, pos 20)" in errors
    assert errors.count("`lane_flw` cannot be resolved") == 2
    assert "__sx_" not in errors, errors


def test_a_refiring_window_in_a_pipeline_names_emit_final(tmp_path, connect_server):
    """Late tuples would fire a pane again and replace its row; a pipeline only appends."""
    spec = _pipeline_copy(tmp_path)
    (spec.parent / "transformations" / "refiring.sql").write_text(
        "CREATE STREAMING TABLE refiring AS\n"
        "SELECT freeway, PANE_START() AS s, MAX(lane_flow) AS m FROM STREAM(readings)\n"
        "WINDOW TIME_INTERVAL(50, 25) ON event_time OVER (PARTITION BY freeway) "
        "WATERMARK DELAY 10")
    output, failed = _remote("dry-run", spec, connect_server, tmp_path)
    assert failed
    assert "add EMIT FINAL" in output and "(line 3, pos 7)" in output, output[-4000:]

"""dbt on sql-ext, for real: dbt-core 1.11 and dbt-spark run in this process (dbtRunner) against
a real `sql-ext thriftserver` (method: thrift) and on this process's sql-ext session (method:
session). The example project (examples/dbt) builds end to end; streaming models are
incremental and exactly once across dbt runs (equal to the batch query over every row);
--full-refresh starts over with a warning; a changed definition fails naming the change, or is
applied in place; --empty and dbt show start no stream; a continuous stream outlives dbt, is
found running by the next run, and the stream_is_running test sees it stopped."""

import shutil
import time
from pathlib import Path

import pytest
from dbt.cli.main import dbtRunner
from pyhive import hive

from sql_ext.dbt import package_path, run

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dbt"
LANE_COUNTS_BATCH = """
    SELECT freeway, WINDOW_ID() AS window_id, COUNT(*) AS readings, SUM(lane_flow) AS total_flow,
           MIN(event_time) AS first_at, MAX(event_time) AS last_at
    FROM raw.traffic
    WINDOW TUMBLING COUNT({size}) OVER (PARTITION BY freeway ORDER BY event_time)"""
LANE_COLUMNS = "freeway, window_id, readings, total_flow, first_at, last_at"


def _project(tmp_path: Path, port: int | None, monkeypatch, schema: str = "analytics") -> Path:
    """A copy of the example project whose packages.yml names this checkout's dbt package, its
    models in `schema` (tests on the shared server keep to schemas of their own)."""
    project = tmp_path / "traffic"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(
        "target", "logs", "dbt_packages", "package-lock.yml"))
    (project / "packages.yml").write_text(f"packages:\n  - local: {package_path()}\n")
    profiles = project / "profiles.yml"
    profiles.write_text(profiles.read_text().replace("schema: analytics", f"schema: {schema}"))
    if port is not None:
        monkeypatch.setenv("SQL_EXT_THRIFT_PORT", str(port))
    return project


class Dbt:
    """dbt commands on one project and target, with the warnings they logged."""

    def __init__(self, project: Path, target: str, spark=None, raw_schema: str = "raw"):
        self.project, self.target, self.spark, self.warnings = project, target, spark, []
        self.raw_schema = raw_schema  # where the project's source lives (the var raw_schema)

    def __call__(self, *args: str, ok: bool = True):
        flags = ["--project-dir", str(self.project), "--profiles-dir", str(self.project),
                 "--target", self.target, "--vars", f"{{raw_schema: {self.raw_schema}}}"]
        if self.spark is not None:
            result = run([*args, *flags], spark=self.spark)
        else:
            result = dbtRunner(callbacks=[self._keep_warnings]).invoke([*args, *flags])
        if ok:
            assert result.success, f"dbt {' '.join(args)}: {_messages(result)}"
        return result

    def _keep_warnings(self, event) -> None:
        if event.info.level == "warn":
            self.warnings.append(event.info.msg)


def _messages(result) -> str:
    if result.exception is not None:
        return str(result.exception)
    return "\n".join(str(r.message) for r in (result.result or []) if r.message)


def _fetch(cursor, sql: str) -> list:
    cursor.execute(sql)
    return cursor.fetchall()


def _model(project: Path, name: str, text: str) -> None:
    (project / "models" / f"{name}.sql").write_text(text)


LANE_TOTALS = """
{{ config(materialized='table') }}
SELECT freeway, WINDOW_ID() AS w, team_total(lane_flow) AS by_udaf, SUM(lane_flow) AS by_sum
FROM {{ source('raw', 'traffic') }}
WINDOW TUMBLING COUNT(4) OVER (PARTITION BY freeway ORDER BY event_time)
"""


@pytest.mark.heavy
def test_the_example_project_through_thrift(thrift_server, tmp_path, monkeypatch):
    project = _project(tmp_path, thrift_server, monkeypatch)
    # A model calling the UDAF the server was started with (--udafs udafs.team_aggregates).
    _model(project, "lane_totals", LANE_TOTALS)
    dbt = Dbt(project, "thrift")
    dbt("deps")
    dbt("run-operation", "append_traffic", "--args", "{batch: 0}")
    dbt("build")
    dbt("run-operation", "append_traffic", "--args", "{batch: 1}")
    dbt("run-operation", "append_traffic", "--args", "{batch: 2}")
    dbt("build")  # two appends since the last run: one more pass, exactly once
    dbt("run-operation", "sql_ext.show_streams")
    with hive.connect(host="127.0.0.1", port=thrift_server) as conn:
        cursor = conn.cursor()
        batch = sorted(_fetch(cursor, LANE_COUNTS_BATCH.format(size=4)))
        assert len(batch) == 90  # 360 readings, every window full
        assert sorted(_fetch(cursor, f"SELECT {LANE_COLUMNS} FROM analytics.lane_counts")) \
            == batch
        assert sorted(_fetch(cursor, "SELECT * FROM analytics.traffic_flow_incremental")) \
            == sorted(_fetch(cursor, "SELECT * FROM analytics.traffic_flow_batch"))
        # The streaming panes are the batch panes that completed: those ending at or before
        # the watermark (the newest reading minus WATERMARK DELAY 5).
        assert sorted(_fetch(cursor, "SELECT * FROM analytics.traffic_flow")) == sorted(_fetch(
            cursor, "SELECT * FROM analytics.traffic_flow_batch WHERE time_end <= "
                    "(SELECT MAX(event_time) - INTERVAL 5 SECONDS FROM raw.traffic)"))
        # EMIT FINAL: the panes that closed (no discard age: the same ones), once each, FINAL;
        # the readings come in order, so none is late.
        assert sorted(_fetch(cursor, "SELECT freeway, time_start, time_end, flow, readings "
                                     "FROM analytics.traffic_flow_final")) == sorted(_fetch(
            cursor, "SELECT * FROM analytics.traffic_flow_batch WHERE time_end <= "
                    "(SELECT MAX(event_time) - INTERVAL 5 SECONDS FROM raw.traffic)"))
        assert _fetch(cursor, "SELECT DISTINCT timing FROM analytics.traffic_flow_final") \
            == [("FINAL",)]
        assert _fetch(cursor, "SELECT COUNT(*) FROM analytics.traffic_flow_late") == [(0,)]
        # window_state(): traffic_flow's open panes, those not yet past end + discard age.
        assert _fetch(cursor, "SELECT COUNT(*) FROM analytics.traffic_flow_state") == _fetch(
            cursor, "SELECT COUNT(*) FROM analytics.traffic_flow_batch WHERE time_end + "
                    "INTERVAL 1000 SECONDS > (SELECT MAX(event_time) - INTERVAL 5 SECONDS "
                    "FROM raw.traffic)")

        # The UDAF module serves every connection: dbt's model and this PyHive one.
        totals = _fetch(cursor, "SELECT by_udaf, by_sum FROM analytics.lane_totals")
        assert len(totals) == 90 and all(abs(a - b) < 1e-9 for a, b in totals)
        assert sorted(_fetch(cursor, "SELECT k, team_total(x) FROM VALUES ('a', 1.0), "
                                     "('a', 2.5), ('b', 4.0) AS t(k, x) GROUP BY k")) \
            == [("a", 3.5), ("b", 4.0)]

        # --full-refresh: a warning, then the table rebuilt from the whole source.
        dbt("run", "-s", "lane_counts", "--full-refresh")
        assert any("--full-refresh stops the stream" in w for w in dbt.warnings), dbt.warnings
        assert sorted(_fetch(cursor, f"SELECT {LANE_COLUMNS} FROM analytics.lane_counts")) \
            == batch

        # A changed definition fails by default, naming the change ...
        counts = (project / "models" / "lane_counts.sql").read_text()
        _model(project, "lane_counts", counts.replace("COUNT(4)", "COUNT(5)"))
        failed = dbt("run", "-s", "lane_counts", ok=False)
        assert "exists with another definition: the query is" in _messages(failed)
        assert "COUNT(5)" in _messages(failed)
        # ... and with on_configuration_change='apply' goes on from the same checkpoint.
        _model(project, "lane_counts", counts.replace("COUNT(4)", "COUNT(5)").replace(
            "materialized='streaming_table'",
            "materialized='streaming_table', on_configuration_change='apply'"))
        dbt("run", "-s", "lane_counts")
        dbt("run-operation", "append_traffic", "--args", "{batch: 3}")
        dbt("run", "-s", "lane_counts")
        sizes = dict(_fetch(cursor, "SELECT readings, COUNT(*) FROM analytics.lane_counts "
                                    "GROUP BY readings"))
        assert sizes == {4: 90, 5: 24}  # 120 more readings: 40 + 80 in windows of 5

        # --empty and dbt show start no stream.
        _model(project, "fresh_counts", counts)
        dbt("run", "-s", "fresh_counts", "--empty")
        shown = dbt("show", "-s", "fresh_counts", ok=False)
        assert "runs as a streaming table" in _messages(shown)
        names = [row[0] for row in _fetch(cursor, "SHOW STREAMS")]
        assert "analytics.fresh_counts" not in names and "analytics.lane_counts" in names
        assert not _fetch(cursor, "SHOW TABLES IN analytics LIKE 'fresh_counts'")


LIVE_COUNTS = """
{{ config(materialized='streaming_table', trigger=1) }}
SELECT freeway, WINDOW_ID() AS window_id, COUNT(*) AS readings
FROM STREAM({{ source('raw', 'traffic') }})
WINDOW TUMBLING COUNT(4) OVER (PARTITION BY freeway ORDER BY event_time)
"""
LIVE_TESTS = """
version: 2
models:
  - name: live_counts
    data_tests:
      - sql_ext.stream_is_running
      - sql_ext.no_duplicate_window_keys:
          arguments: {columns: [freeway, window_id]}
"""


# WATERMARK ... IDLE: the last panes close while the source is idle.
LIVE_FLOW = """
{{ config(materialized='streaming_table', trigger=1) }}
SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end, COUNT(*) AS readings
FROM STREAM({{ source('raw', 'traffic') }})
WINDOW TIME_INTERVAL(10) ON event_time OVER (PARTITION BY freeway) WATERMARK DELAY 0 IDLE 1
"""


def test_a_continuous_model_outlives_dbt_and_is_found_running(thrift_server, tmp_path,
                                                               monkeypatch):
    project = _project(tmp_path, thrift_server, monkeypatch, schema="analytics_live")
    _model(project, "live_counts", LIVE_COUNTS)
    _model(project, "live_flow", LIVE_FLOW)
    (project / "models" / "live.yml").write_text(LIVE_TESTS)
    dbt = Dbt(project, "thrift", raw_schema="raw_live")  # its own source: runs in any order
    dbt("deps")
    dbt("run-operation", "append_traffic", "--args", "{batch: 0}")
    dbt("run", "-s", "live_counts")
    dbt("test", "-s", "live_counts")
    dbt("run", "-s", "live_counts")  # running already: left alone
    dbt("test", "-s", "live_counts")
    dbt("run-operation", "sql_ext.stop_stream", "--args", "{name: live_counts}")
    stopped = dbt("test", "-s", "live_counts", ok=False)
    assert "stream_is_running" in str([r.node.name for r in stopped.result if r.failures])
    dbt("run", "-s", "live_counts")  # started again
    dbt("test", "-s", "live_counts")

    # IDLE: no reading comes after the append, yet the pane of the last one closes.
    dbt("run", "-s", "live_flow")
    with hive.connect(host="127.0.0.1", port=thrift_server) as conn:
        cursor = conn.cursor()
        last = _fetch(cursor, "SELECT MAX(event_time) FROM raw_live.traffic")[0][0]
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            closed = _fetch(cursor, "SELECT MAX(time_end) FROM analytics_live.live_flow")[0][0]
            if closed is not None and closed > last:
                break
            time.sleep(1)
        assert closed is not None and closed > last, (closed, last)
    # Stopped, so that they do not run on the shared server for the rest of the suite.
    for name in ("live_flow", "live_counts"):
        dbt("run-operation", "sql_ext.stop_stream", "--args", f"{{name: {name}}}")


def test_streaming_models_in_a_session_profile(spark, tmp_path, monkeypatch):
    """method: session: dbt runs on this process's sql-ext session (sql_ext.dbt.run),
    exactly once across runs; a continuous trigger is refused with the reason."""
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    project = _project(tmp_path, None, monkeypatch)
    dbt = Dbt(project, "session", spark=spark)
    try:
        dbt("deps")
        spark.sql("DROP TABLE IF EXISTS raw.traffic")
        dbt("run-operation", "append_traffic", "--args", "{batch: 0}")
        dbt("run", "-s", "lane_counts")
        dbt("run-operation", "append_traffic", "--args", "{batch: 1}")
        dbt("build", "-s", "lane_counts")
        got = spark.sql(f"SELECT {LANE_COLUMNS} FROM analytics.lane_counts").collect()
        assert sorted(got) == sorted(spark.sql(LANE_COUNTS_BATCH.format(size=4)).collect())
        assert len(got) == 60
        _model(project, "live_counts", LIVE_COUNTS)
        refused = dbt("run", "-s", "live_counts", ok=False)
        assert "under method: session the stream lives in dbt's own process" \
            in _messages(refused)
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)


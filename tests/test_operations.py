"""The operator's manual (docs/operations/), checked: the example systemd unit verifies and its
command line is one `sql-ext` accepts; a streaming table backed up and restored resumes from
the backup's offsets and ends exactly as the same query in batch; OPTIMIZE and VACUUM of a
stream's Delta source and of the streaming table itself do what the maintenance page says,
with the stream running or stopped; the example Prometheus rules use only metrics that a real
server exports while a streaming table runs (the run's shared Thrift server), and fire as
their unit tests say under promtool (dev.sh takes it from Debian's prometheus package)."""

import configparser
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from test_monitoring import start_counting_stream

from sql_ext.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
UNIT = ROOT / "examples" / "systemd" / "sql-ext-thriftserver.service"
RULES = ROOT / "examples" / "monitoring" / "sql-ext-alerts.yml"
RULE_TESTS = ROOT / "examples" / "monitoring" / "sql-ext-alerts.test.yml"
SYSTEMD_ANALYZE = "/usr/bin/systemd-analyze"

COUNTS = ("SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, MIN(seq) AS lo, MAX(seq) AS hi "
          "FROM {source} WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k ORDER BY seq)")


# -- the systemd unit ----------------------------------------------------------------------

def _unit_service(text: str) -> dict[str, str]:
    """The [Service] section's settings (a line ending in a backslash continues)."""
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read_string(re.sub(r"\\\n\s*", " ", text))
    return dict(parser["Service"])


def _verify(unit: Path) -> str:
    """What `systemd-analyze verify` of `unit` prints: nothing for a sound unit. It exits 0
    for a misspelt setting or value too (systemd ignores those as it loads the unit), so its
    words are the check."""
    done = subprocess.run([SYSTEMD_ANALYZE, "verify", str(unit)], capture_output=True,
                          text=True, timeout=60)
    output = (done.stdout + done.stderr).strip()
    return output if done.returncode == 0 else f"exit {done.returncode}: {output}"


def test_the_systemd_unit_verifies_and_runs_the_server_it_says(tmp_path):
    """systemd checks the unit as it would load it (a copy whose ExecStart is this
    environment's `sql-ext`, which verify requires to exist): no error and no warning, where a
    copy with a misspelt setting or value gets one of each. Its command line is one the
    `sql-ext` parser accepts, and it keeps what the running page promises: a restart on
    failure only, SIGTERM to stop, secrets from an environment file, a properties file."""
    assert Path(SYSTEMD_ANALYZE).is_file(), "systemd-analyze is part of this machine's image"
    executable = Path(sys.executable).with_name("sql-ext")
    assert executable.is_file(), executable
    text = UNIT.read_text()
    service = _unit_service(text)
    command = shlex.split(service["ExecStart"])
    assert command[0] == "/opt/sql-ext/venv/bin/sql-ext", command[0]
    local = tmp_path / UNIT.name
    # Quoted: the checkout's folder may have a space, where systemd splits a command line.
    local.write_text(text.replace(f"ExecStart={command[0]}", f'ExecStart="{executable}"', 1))
    assert _verify(local) == ""

    broken = tmp_path / "broken" / UNIT.name
    broken.parent.mkdir()
    broken.write_text(local.read_text().replace("Restart=on-failure", "Restart=on-failur")
                      .replace("KillSignal=SIGTERM", "KillSignal=SIGTERM\nKilSignal=SIGINT"))
    found = _verify(broken)
    assert "restart specifier" in found and "Unknown key" in found, found

    args = build_parser().parse_args(command[1:])
    assert args.command == "thriftserver" and args.properties_file and args.ui_port
    assert args.auth == "password" and args.host == "0.0.0.0"
    assert service["Restart"] == "on-failure"
    assert service["KillSignal"] == "SIGTERM" and int(service["TimeoutStopSec"]) >= 30
    assert service["EnvironmentFile"].startswith("/") and service["User"]
    assert service["WorkingDirectory"].startswith("/")


# -- backups, OPTIMIZE and VACUUM ------------------------------------------------------------

def _rows_sql(i0: int, i1: int) -> str:
    return ", ".join(f"({i}, '{'ab'[i % 2]}')" for i in range(i0, i1))


def _insert(spark, table: str, i0: int, i1: int, files: int = 2) -> None:
    """Rows i0..i1 in `files` commits (one file or more each)."""
    bounds = [i0 + (i1 - i0) * j // files for j in range(files + 1)]
    for a, b in zip(bounds, bounds[1:]):
        spark.sql(f"INSERT INTO {table} VALUES {_rows_sql(a, b)}")


def _rows(spark, sql: str) -> list[tuple]:
    return sorted(tuple(row) for row in spark.sql(sql).collect())


def _exactly_batch(spark, table: str, source: str) -> bool:
    """The streaming table holds exactly the batch query's windows over its source: none
    missing, none twice."""
    return _rows(spark, f"SELECT k, w, n, lo, hi FROM {table}") == \
        _rows(spark, COUNTS.format(source=source))


def _until(check, what: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _stream(spark, name: str) -> dict:
    return next(row.asDict() for row in spark.sql("SHOW STREAMS").collect()
                if row.name == f"default.{name}")


def _history(spark, table: str, operation: str) -> list[dict]:
    return [row.operationMetrics for row in spark.sql(f"DESCRIBE HISTORY {table}").collect()
            if row.operation == operation]


def _copy(source: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)


@pytest.fixture
def vacuum_settings(spark):
    """VACUUM ... RETAIN 0 HOURS, which Delta refuses by default (its check keeps 7 days):
    how the tests make a file old enough to go without waiting a week. And VACUUM's listing in
    4 tasks a job, as maintenance.md advises, instead of Spark's 10,000 (about 170,000 tasks,
    50 s, for a table of a few files)."""
    settings = {"spark.databricks.delta.retentionDurationCheck.enabled": "false",
                "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4"}
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    yield
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def test_a_restored_backup_resumes_exactly_once(spark, tmp_path, vacuum_settings):
    """maintenance.md's backup and restore, on a TRIGGER EVERY streaming table over a Delta
    source, with its maintenance along the way:

    - OPTIMIZE of the source and of the streaming table while the stream runs: the source's
      commit only rearranges files (dataChange=false), which the stream skips: no row twice.
    - STOP STREAM, VACUUM RETAIN 0 HOURS of the streaming table, and the backup: a copy of
      the table's folder and of the checkpoint. CREATE with the same definition starts it
      again, and it goes on past the backup.
    - Restore, the catalog entry kept: STOP STREAM, both folders put back, CREATE: the stream
      resumes from the backup's offsets (its last batch the backup's, its state partitions
      the checkpoint's whatever the session's shuffle partitions now say), reads again what
      came after, and the table equals the batch query over every source row.
    - Restore after DROP TABLE (the catalog entry gone, an external table's folders kept): both
      folders put back, CREATE STREAMING TABLE with the same definition: the same.
    """
    source, name = "ops_source", "ops_counts"
    table, checkpoint, backup = tmp_path / "table", tmp_path / "checkpoint", tmp_path / "backup"
    spark.sql(f"CREATE TABLE {source} (seq BIGINT, k STRING) USING DELTA")
    create = (f"CREATE STREAMING TABLE {name} LOCATION '{table}' CHECKPOINT '{checkpoint}' "
              f"TRIGGER EVERY 1 AS " + COUNTS.format(source=f"STREAM({source})"))
    _insert(spark, source, 0, 10)
    spark.sql(create)
    try:
        _until(lambda: _exactly_batch(spark, name, source), "the first windows")
        _insert(spark, source, 10, 16)
        spark.sql(f"OPTIMIZE {source}")
        [compacted] = _history(spark, source, "OPTIMIZE")
        assert int(compacted["numRemovedFiles"]) >= 4, compacted
        _insert(spark, source, 16, 20, files=1)
        _until(lambda: _exactly_batch(spark, name, source), "the windows after OPTIMIZE")
        spark.sql(f"OPTIMIZE {name}")
        assert _history(spark, name, "OPTIMIZE"), "OPTIMIZE of the streaming table did nothing"
        _insert(spark, source, 20, 26, files=1)

        spark.sql(f"STOP STREAM {name}")
        spark.sql(f"VACUUM {name} RETAIN 0 HOURS")
        vacuumed = _history(spark, name, "VACUUM END")
        assert int(vacuumed[0]["numDeletedFiles"]) >= 2, vacuumed
        _copy(table, backup / "table")
        _copy(checkpoint, backup / "checkpoint")
        backed_up = _stream(spark, name)["batch"]
        kept = _rows(spark, f"SELECT * FROM {name}")
        spark.sql(create)  # the same definition: resumes
        _insert(spark, source, 26, 38)
        _until(lambda: _exactly_batch(spark, name, source), "the windows after the backup")
        assert _stream(spark, name)["batch"] > backed_up

        # Restore, the catalog entry kept.
        spark.sql(f"STOP STREAM {name}")
        _copy(backup / "table", table)
        _copy(backup / "checkpoint", checkpoint)
        assert _rows(spark, f"SELECT * FROM {name}") == kept
        assert _stream(spark, name)["batch"] == backed_up
        made_with = spark.conf.get("spark.sql.shuffle.partitions")
        spark.conf.set("spark.sql.shuffle.partitions", str(int(made_with) + 1))
        try:
            spark.sql(create)
            _until(lambda: _exactly_batch(spark, name, source), "the restored stream")
        finally:
            spark.conf.set("spark.sql.shuffle.partitions", made_with)
        state = {p.name for p in (checkpoint / "state" / "0").iterdir() if p.name.isdigit()}
        assert state == {str(i) for i in range(int(made_with))}, state

        # Restore after DROP TABLE, which keeps an external table's folders.
        spark.sql(f"DROP TABLE {name}")
        _copy(backup / "table", table)
        _copy(backup / "checkpoint", checkpoint)
        spark.sql(create)
        _until(lambda: _exactly_batch(spark, name, source), "the stream restored after DROP")
        assert spark.sql(f"SELECT COUNT(*) = COUNT(DISTINCT k, w) FROM {name}").first()[0]
    finally:
        spark.sql(f"DROP STREAMING TABLE IF EXISTS {name}")
        spark.sql(f"DROP TABLE IF EXISTS {source}")


def test_vacuum_of_a_source_under_a_stopped_stream(spark, tmp_path, vacuum_settings):
    """A stopped stream (an AVAILABLE NOW streaming table between two refreshes) has not read
    the source's latest commits. OPTIMIZE of the source meanwhile is harmless: the refresh
    reads those commits' files, still there, and skips OPTIMIZE's. VACUUM after OPTIMIZE
    deletes them: the refresh fails naming a missing file, the stream shows FAILED, and CREATE
    OR REPLACE STREAMING TABLE (a new start over the source as it is) is the way back."""
    source, name = "ops_vacuumed", "ops_vacuumed_counts"
    spark.sql(f"CREATE TABLE {source} (seq BIGINT, k STRING) USING DELTA")
    query = COUNTS.format(source=f"STREAM({source})")
    try:
        _insert(spark, source, 0, 6)
        spark.sql(f"CREATE STREAMING TABLE {name} CHECKPOINT '{tmp_path / 'checkpoint'}' AS "
                  + query)
        assert _exactly_batch(spark, name, source)

        _insert(spark, source, 6, 12)
        spark.sql(f"OPTIMIZE {source}")
        spark.sql(f"REFRESH STREAMING TABLE {name}")
        assert _exactly_batch(spark, name, source)

        _insert(spark, source, 12, 18)
        spark.sql(f"OPTIMIZE {source}")
        spark.sql(f"VACUUM {source} RETAIN 0 HOURS")
        assert int(_history(spark, source, "VACUUM END")[0]["numDeletedFiles"]) >= 2
        with pytest.raises(Exception) as failure:
            spark.sql(f"REFRESH STREAMING TABLE {name}")
        assert re.search(r"FileNotFound|FILE_NOT_EXIST|does not exist", str(failure.value)), \
            str(failure.value)[:3000]
        _until(lambda: _stream(spark, name)["state"] == "FAILED", "the stream to show FAILED")
        assert re.search(r"FileNotFound|FILE_NOT_EXIST|does not exist",
                         _stream(spark, name)["last_error"])
        assert not _exactly_batch(spark, name, source)

        spark.sql(f"CREATE OR REPLACE STREAMING TABLE {name} CHECKPOINT "
                  f"'{tmp_path / 'checkpoint'}' AS " + query)
        assert _exactly_batch(spark, name, source)
    finally:
        spark.sql(f"DROP STREAMING TABLE IF EXISTS {name}")
        spark.sql(f"DROP TABLE IF EXISTS {source}")


# -- the Prometheus rules --------------------------------------------------------------------

# PromQL's words that are not metric names.
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset",
                "bool", "and", "or", "unless", "inf", "nan"}


def _expressions_and_names(rules: dict):
    """(every rule, the names recording rules define)."""
    every = [rule for group in rules["groups"] for rule in group["rules"]]
    return every, {rule["record"] for rule in every if "record" in rule}


def _metric_names(expr: str) -> tuple[set[str], set[str]]:
    """(the metric names an expression reads, the `__name__` patterns it matches)."""
    patterns = set(re.findall(r'__name__\s*=~\s*"([^"]+)"', expr))
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings: label values, regexes
    bare = re.sub(r"\b(on|ignoring|by|without|group_left|group_right)\s*\([^)]*\)", "",
                  bare)  # label lists
    bare = re.sub(r"\{[^}]*\}", "", bare)  # label matchers
    bare = re.sub(r"\[[^\]]*\]", "", bare)  # ranges
    bare = re.sub(r"\b\d+(\.\d+)?([smhdwy]|ms)?\b", "", bare)  # numbers and durations
    names = {m.group(1) for m in re.finditer(r"([A-Za-z_:][\w:]*)\s*(\()?", bare)
             if not m.group(2) and m.group(1).lower() not in PROMQL_WORDS}
    return names, patterns


def test_the_alert_rules_file_has_prometheus_structure():
    """Every group has a name and rules; every rule records a series or is an alert with an
    expression, a duration, a severity and a summary and description."""
    rules = yaml.safe_load(RULES.read_text())
    assert set(rules) == {"groups"} and rules["groups"]
    alerts = set()
    for group in rules["groups"]:
        assert set(group) == {"name", "rules"} and group["rules"], group
        for rule in group["rules"]:
            if "record" in rule:
                assert set(rule) == {"record", "expr"}, rule
                assert re.fullmatch(r"sql_ext:[a-z_]+", rule["record"]), rule["record"]
                continue
            assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule
            assert re.fullmatch(r"\d+[smh]", rule["for"]), rule
            assert rule["labels"]["severity"] in ("critical", "warning"), rule
            assert {"summary", "description"} <= set(rule["annotations"]), rule
            assert "{{ $labels.stream }}" in rule["annotations"]["summary"], rule
            alerts.add(rule["alert"])
    assert {"SqlExtStreamStuck", "SqlExtStreamGone", "SqlExtStreamStateGrowing",
            "SqlExtStreamLatencyRising"} <= alerts, alerts
    # The reader of names that the next test relies on, on a made-up expression.
    assert _metric_names('avg_over_time(a:b[5m] offset 1d) > on(job) 2 * c_total{x="y"} '
                         'unless {__name__=~"d_.+"}') == ({"a:b", "c_total"}, {"d_.+"})


def test_the_alert_rules_read_metrics_a_server_exports(jdbc, thrift_ui):
    """While a streaming table runs on the run's shared Thrift server (--ui-port): every name
    the rules read is a recording rule's or one the server's /metrics/prometheus/ exports, and
    every `__name__` pattern matches that stream's series and gives its `stream` label as the
    rules' label_replace takes it (<db>_<table>)."""
    rules = yaml.safe_load(RULES.read_text())
    every, recorded = _expressions_and_names(rules)
    with jdbc.connect() as conn:
        cursor = conn.cursor()
        start_counting_stream(cursor, "ops_alerts")
        try:
            stream = f"{jdbc.database}_ops_alerts"
            url = f"http://127.0.0.1:{thrift_ui.port}/metrics/prometheus/"
            exported: set[str] = set()

            def scraped() -> bool:
                with urllib.request.urlopen(url, timeout=30) as response:
                    text = response.read().decode()
                exported.clear()
                exported.update(re.findall(r"^([A-Za-z_:][\w:]*)[{ ]", text, re.M))
                return any(stream in name for name in exported)
            _until(scraped, "the stream's metrics")
        finally:
            cursor.execute("DROP STREAMING TABLE ops_alerts")
    ours = {name for name in exported if f"_streaming_{stream}_" in name}
    assert len(ours) >= 6, ours
    for rule in every:
        names, patterns = _metric_names(rule["expr"])
        unknown = names - recorded - exported
        assert not unknown, f"{rule.get('record') or rule['alert']} reads {unknown}"
        for pattern in patterns:
            matched = [n for n in ours if re.fullmatch(pattern, n)]
            assert len(matched) == 1, (pattern, sorted(ours))
            extract = re.findall(r'"__name__",\s*"([^"]+)"', rule["expr"])
            assert extract and re.fullmatch(extract[0], matched[0]).group(1) == stream
    read = set().union(*(_metric_names(rule["expr"])[0] for rule in every))
    assert recorded <= read, f"recorded and never read: {recorded - read}"


def test_the_alert_rules_fire_as_their_unit_tests_say():
    """promtool (Prometheus' own rule checker) accepts the rules and
    runs their unit tests (examples/monitoring/sql-ext-alerts.test.yml): each alert fires for
    the series that should fire it, and not for the others."""
    fetched = ROOT / ".tools" / "prometheus" / "usr" / "bin" / "promtool"
    promtool = str(fetched) if fetched.is_file() else shutil.which("promtool")
    assert promtool, f"no promtool at {fetched}: `bash python/dev.sh test` fetches it"
    checked = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run([promtool, "test", "rules", RULE_TESTS.name], capture_output=True,
                            text=True, timeout=120, cwd=RULE_TESTS.parent)
    assert tested.returncode == 0, tested.stdout + tested.stderr

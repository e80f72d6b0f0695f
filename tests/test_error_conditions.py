"""sql-ext's own error conditions: one file (sql_ext/sql/error-conditions.json) that the Python
side and the jar read; each error a client meets carries its condition and SQLSTATE through
PySpark (getCondition, getSqlState) and JDBC (the SQLSTATE of the Thrift status), with
positions in Spark's convention (line 1-based, pos 0-based)."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException, ParseException

import sql_ext
from sql_ext.sql.errors import CONDITIONS, WindowSqlError

ROOT = Path(__file__).resolve().parents[1]
JAR = ROOT / "sql_ext" / "jars" / "sql-ext.jar"


def test_every_condition_is_complete_and_every_one_is_raised_somewhere():
    for name, info in CONDITIONS.items():
        assert re.fullmatch(r"SQL_EXT_[A-Z_]+", name), name
        assert re.fullmatch(r"[0-9A-Z]{5}", info["sqlState"]), name
        assert info["message"] and info["meaning"] and info["fix"], name
    # Every SQL_EXT_* literal of the code is a condition defined here, or a setting (on the
    # settings page) or one of the extension's SQL functions; every condition is raised
    # somewhere.
    used = set()
    for folder, suffix in (("jvm/src/main", ".scala"), ("sql_ext", ".py")):
        for path in (ROOT / folder).rglob(f"*{suffix}"):
            used |= set(re.findall(r'(?:"|\\n)(SQL_EXT_[A-Z_]+)', path.read_text()))
    settings = (ROOT / "docs" / "reference" / "settings.md").read_text()
    others = {name for name in used if f"`{name}`" in settings}
    others |= {"SQL_EXT_WINDOW", "SQL_EXT_ARRIVAL", "SQL_EXT_ARRIVAL_FILE"}
    assert sorted(used - others - set(CONDITIONS)) == []
    assert sorted(set(CONDITIONS) - used) == []


def test_the_jar_carries_the_same_file():
    with zipfile.ZipFile(JAR) as jar:
        carried = jar.read("io/sqlext/error-conditions.json").decode()
    assert carried == (ROOT / "sql_ext" / "sql" / "error-conditions.json").read_text()


def test_python_errors_carry_their_condition_and_spark_s_positions():
    sql = "SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(0)"
    with pytest.raises(WindowSqlError) as error:
        sql_ext.transpile(sql)
    pos = sql.index("COUNT(0)") + len("COUNT(")  # at the count
    assert error.value.condition == "SQL_EXT_INVALID_WINDOW"
    assert error.value.sql_state == "42000"
    assert (error.value.line, error.value.pos, error.value.column) == (1, pos, pos + 1)
    assert str(error.value) == (f"[SQL_EXT_INVALID_WINDOW] COUNT(0): the count must be at "
                                f"least 1 SQLSTATE: 42000 (line 1, pos {pos})")
    with pytest.raises(WindowSqlError) as error:
        sql_ext.transpile("SELECT SUM(v) FROM t WINDOW TUMBLNG COUNT(3)")
    assert error.value.condition == "SQL_EXT_WINDOW_SYNTAX" and "did you mean" in str(error.value)
    done = subprocess.run([sys.executable, "-m", "sql_ext.cli", "transpile", sql],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert "[SQL_EXT_INVALID_WINDOW]" in done.stderr and f"(line 1, pos {pos})" in done.stderr


@pytest.fixture(scope="module")
def numbers(spark):
    spark.range(10).selectExpr("id AS v", "id AS seq").createOrReplaceTempView("cond_numbers")
    return "cond_numbers"


CASES = [
    # (statement, exception type, condition, SQLSTATE, part the position points at)
    ("SELECT SUM(v) FROM cond_numbers WINDOW TUMBLING COUNT(0)", ParseException,
     "SQL_EXT_INVALID_WINDOW", "42000", "0)"),
    ("SELECT SUM(v) FROM cond_numbers\nWINDOW TUMBLNG COUNT(3)", ParseException,
     "SQL_EXT_WINDOW_SYNTAX", "42601", "TUMBLNG"),
    ("SELECT SUM(v) FROM STREAM(cond_numbers) WINDOW TUMBLING COUNT(5)", ParseException,
     "SQL_EXT_UNSUPPORTED_WINDOW", "0A000", None),
    ("STOP STREAM no_such_streaming_table", AnalysisException,
     "SQL_EXT_STREAMING_TABLE", "55000", None),
    ("SELECT * FROM window_state('cond_numbers')", AnalysisException,
     "SQL_EXT_WRONG_TABLE_KIND", "42809", None),
]


@pytest.mark.parametrize("sql,kind,condition,state,part", CASES, ids=[c[2] for c in CASES])
def test_pyspark_catches_the_condition_and_sqlstate(spark, numbers, sql, kind, condition,
                                                     state, part):
    with pytest.raises(kind) as error:
        spark.sql(sql).collect()
    assert error.value.getCondition() == condition
    assert error.value.getSqlState() == state
    assert error.value.getMessageParameters()["message"]
    text = str(error.value)
    assert f"[{condition}]" in text and f"SQLSTATE: {state}" in text
    assert "_LEGACY_ERROR" not in text and "Traceback" not in text
    if part:
        before = sql[:sql.index(part)]
        line, pos = before.count("\n") + 1, len(before.split("\n")[-1])
        assert f"(line {line}, pos {pos})" in text


def test_a_missing_parameter_is_spark_s_own_condition(spark, numbers):
    with pytest.raises(AnalysisException) as error:
        spark.sql("SELECT SUM(v) FROM cond_numbers WHERE v > :low WINDOW TUMBLING COUNT(3)",
                  args={"high": 1}).collect()
    assert error.value.getCondition() == "UNBOUND_SQL_PARAMETER"
    assert error.value.getSqlState() == "42P02"


def test_jdbc_clients_read_the_sqlstate(jdbc):
    """Through the Thrift server (PyHive): the status of the failed statement carries the
    condition's SQLSTATE and its message."""
    from pyhive.exc import OperationalError

    with jdbc.connect() as conn:
        cursor = conn.cursor()
        cursor.execute("CREATE TABLE nums AS SELECT id AS v FROM range(5)")
        for sql, condition, state in [
                ("SELECT SUM(v) FROM nums WINDOW TUMBLING COUNT(0)", "SQL_EXT_INVALID_WINDOW",
                 "42000"),
                ("STOP STREAM no_such_streaming_table", "SQL_EXT_STREAMING_TABLE", "55000")]:
            with pytest.raises(OperationalError) as error:
                cursor.execute(sql)
            status = error.value.args[0].status
            assert status.sqlState == state, status
            assert f"[{condition}]" in status.errorMessage

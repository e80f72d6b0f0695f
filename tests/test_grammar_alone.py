"""The grammar stands alone: in a Python with sqlglot and Lark and nothing else of sql-ext's
dependencies (no pyspark, py4j, pandas or pyarrow), `import sql_ext`, the SQL layer,
`sql-ext transpile`, `sql-ext spl` and `sql-ext --version` work, and what needs Spark says so
when used."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from venvs import linked_venv

import sql_ext

ROOT = Path(__file__).resolve().parents[1]
WINDOWED = "SELECT SUM(v) AS total FROM t WINDOW TUMBLING COUNT(2) OVER (ORDER BY v)"


@pytest.fixture(scope="module")
def sqlglot_only(tmp_path_factory):
    """A venv holding sqlglot and Lark (linked from this run's), and an environment that finds
    the checkout's sql_ext and nothing of this run's venv."""
    folder = tmp_path_factory.mktemp("grammar")
    python = linked_venv(folder / "venv", ("sqlglot", "lark"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYSPARK_PYTHON", "SPARK_HOME")}
    env["PYTHONPATH"] = str(ROOT)
    return python, env, folder


def _run(sqlglot_only, *args: str) -> subprocess.CompletedProcess:
    python, env, folder = sqlglot_only
    return subprocess.run([str(python), *args], capture_output=True, text=True, env=env,
                          cwd=folder, timeout=120)


def test_the_venv_has_sqlglot_and_no_spark(sqlglot_only):
    for module in ("pyspark", "py4j", "pandas", "pyarrow"):
        assert _run(sqlglot_only, "-c", f"import {module}").returncode != 0, module
    assert _run(sqlglot_only, "-c", "import sqlglot").returncode == 0


def test_transpile_and_version_without_spark(sqlglot_only):
    done = _run(sqlglot_only, "-m", "sql_ext.cli", "transpile", WINDOWED)
    assert done.returncode == 0, done.stderr[-3000:]
    # The same lowering as in this run's full environment.
    assert done.stdout.strip() == sql_ext.transpile(WINDOWED).strip()
    assert "SQL_EXT_WINDOW(" in done.stdout
    version = _run(sqlglot_only, "-m", "sql_ext.cli", "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"sql-ext {sql_ext.__version__}"
    # A mistake is still reported as the grammar's error, with its place.
    wrong = _run(sqlglot_only, "-m", "sql_ext.cli", "transpile",
                 "SELECT SUM(v) FROM t WINDOW TUMBLING COUNT(0)")
    assert wrong.returncode != 0 and "COUNT" in wrong.stderr and "Traceback" not in wrong.stderr


def test_spl_translation_without_spark(sqlglot_only):
    _, _, folder = sqlglot_only
    app = folder / "app.spl"
    app.write_text("""composite Main { graph
        stream<rstring k, int32 v> In = Beacon() {}
        stream<rstring k, int32 top> Top = Aggregate(In) {
          window In: tumbling, count(3), partitioned; param partitionBy: k;
          output Top: top = Max(v); } }""")
    done = _run(sqlglot_only, "-m", "sql_ext.cli", "spl", str(app))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k)" in done.stdout
    assert "not translated:" in done.stderr and "Beacon" in done.stderr


def test_what_needs_spark_says_so(sqlglot_only):
    probe = ("import sys, sql_ext, sql_ext.sql.transpile\n"
             "assert 'pyspark' not in sys.modules\n"
             "print(sql_ext.__version__)\n"
             "try:\n"
             "    sql_ext.session()\n"
             "except ModuleNotFoundError as e:\n"
             "    print('REFUSED', e)\n")
    done = _run(sqlglot_only, "-c", probe)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == sql_ext.__version__
    assert "REFUSED sql_ext.session needs Spark" in done.stdout
    assert "pyspark" in done.stdout and "sqlglot" in done.stdout


def test_sql_ext_in_this_run_is_the_whole_package():
    """With Spark installed, the package offers everything (the fallback is only for a Python
    without Spark)."""
    assert callable(sql_ext.session) and callable(sql_ext.udaf)
    assert sys.modules["sql_ext.session"].session is sql_ext.session

"""The contract between the Python package and the JVM extension, checked both ways: both read
the one definition (sql_ext/sql/contract.json, copied into the jar), each side uses it rather
than its own spelling, every window-spec field Python writes changes what the JVM reads, SHOW
STREAMS has the contract's columns, and a stream failure is shortened by one rule."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from sql_ext.sql import contract
from sql_ext.sql.transpile import lower_parts, parse, transpile

ROOT = Path(__file__).resolve().parents[1]
HELPER = re.compile(r"__sx_\w+")

WINDOWS = [
    "SELECT k, SUM(x) AS s, WINDOW_ID() AS w, PANE_START() AS a, PANE_END() AS b "
    "FROM t WINDOW TUMBLING DELTA(x, 2) OVER (PARTITION BY k ORDER BY ts) "
    "PARTITION EVICTION AGE(3) EMIT EVICTED",
    "SELECT SUM(x) FROM t WINDOW SLIDING TIME(3) TRIGGER DELTA(y, 2) OVER (ORDER BY ts) "
    "EMIT INCOMPLETE",
    "SELECT SUM(x), WINDOW_EVENT() AS e FROM t WINDOW TUMBLING PUNCT(x > 3)",
    "SELECT SUM(x) FROM t WINDOW TUMBLING PUNCT() OVER (PARTITION BY k, j)",
    "SELECT SUM(x) FROM t WINDOW TUMBLING TIME(5) OVER (ORDER BY ts)",
    "SELECT SUM(x), PANE_TIMING() AS t, PANE_INDEX() AS i FROM t "
    "WINDOW TIME_INTERVAL(10, 5, 2, 1) ON ts WATERMARK DELAY 3 IDLE 5 LATE ROWS INTO late_t "
    "EMIT EARLY EVERY 2",
    "SELECT SUM(x) FROM t WINDOW TIME_INTERVAL(10) ON ts WATERMARK BY wm",
]


def test_both_sides_read_the_one_contract(spark):
    jvm_side = json.loads(spark.sparkContext._jvm.io.sqlext.Contract.json())
    python_side = json.loads((ROOT / "sql_ext" / "sql" / "contract.json").read_text())
    assert jvm_side == python_side
    assert {k: v for k, v in jvm_side.items() if k != "about"} == contract.as_json()


def test_the_lowering_names_helper_columns_from_the_contract():
    """Every helper column in lowered SQL is one the contract defines (or Python's own: the
    source's alias, aggregate inputs, batched UDAFs)."""
    known = set(contract.INPUT_COLUMNS.values()) | set(contract.PANE_FUNCTION_COLUMNS.values()) \
        | {contract.GROUP_COLUMN, contract.SOURCE_ALIAS}
    for sql in WINDOWS:
        for name in set(HELPER.findall(transpile(sql))):
            assert name in known or contract.is_partition_column(name), (name, sql)


def _literals(path: Path, pattern: str) -> list[str]:
    """Code (not docstrings or comments) of `path` that matches `pattern`."""
    if path.suffix == ".py":
        tree = ast.parse(path.read_text())
        docs = {id(node.body[0].value) for node in ast.walk(tree)
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                and node.body and isinstance(node.body[0], ast.Expr)}
        return [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docs and re.search(pattern, repr(node.value))]
    return [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
            for n, line in enumerate(path.read_text().splitlines(), 1)
            if re.search(pattern, line) and not line.lstrip().startswith(("*", "//", "/*"))]


def test_neither_side_spells_a_contract_name_itself():
    """The names the contract defines appear in no source file but the contract's own readers
    (docstrings and comments aside): a side that spells one itself would drift alone."""
    names = sorted(set(contract.INPUT_COLUMNS.values()) | set(contract.PANE_FUNCTION_COLUMNS
                                                              .values())
                   | {contract.GROUP_COLUMN}, key=len, reverse=True)
    quoted = r"""["'](%s)\d*["']""" % "|".join(map(re.escape, names))
    numbered = r"""__sx_[pa](\$|\{|\d|["'])"""
    readers = {ROOT / "sql_ext" / "sql" / "contract.py",
               ROOT / "jvm" / "src" / "main" / "scala" / "io" / "sqlext" / "Contract.scala"}
    found = []
    for path in list((ROOT / "sql_ext").rglob("*.py")) \
            + list((ROOT / "jvm" / "src" / "main").rglob("*.scala")):
        if path not in readers:
            found += _literals(path, quoted) + _literals(path, numbered)
    assert found == []


def _mutated(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        return value + "_changed"
    if isinstance(value, list):
        return [] if value else ["window_id"]
    raise AssertionError(f"a spec field of an unexpected type: {value!r}")


def test_the_jvm_reads_every_spec_field_python_writes(spark):
    """For each field of each lowered spec: another value changes the WindowSpec the JVM
    parses (or is refused by it), so the field is read, not only listed."""
    window_spec = spark.sparkContext._jvm.io.sqlext.window.WindowSpec
    checked = set()
    for sql in WINDOWS:
        spec = lower_parts(parse(sql)[0]).spec
        read = window_spec.fromJson(json.dumps(spec)).toString()
        for field, value in spec.items():
            changed = dict(spec, **{field: _mutated(value)})
            try:
                other = window_spec.fromJson(json.dumps(changed)).toString()
            except Exception:  # noqa: BLE001 - refused: read, and checked
                other = None
            assert other != read, f"{field} is written but changes nothing the JVM reads"
            checked.add(field)
    assert checked == set(window_spec.JsonFields().mkString(",").split(",")) - {"aggregates"}


def test_show_streams_has_the_contracts_columns(spark):
    from sql_ext.streaming import show_streams

    assert spark.sql("SHOW STREAMS").columns == list(contract.STREAM_COLUMNS)
    assert all(tuple(row) == contract.STREAM_COLUMNS for row in show_streams(spark))


@pytest.mark.parametrize("message", [
    "StreamingQueryException: boom\n\tat a.b(C.java:1)\nCaused by: java.io.IOException: disk",
    "[STREAM_FAILED] Query terminated\n  org.apache.spark.SparkArithmeticException: "
    "[ARITHMETIC_OVERFLOW] long overflow\nCaused by: py4j.Py4JException: x\n" + "y" * 5000,
    "one line only",
])
def test_a_failure_is_shortened_by_one_rule_on_both_sides(spark, message):
    from sql_ext.streaming import short_error

    jvm_short = spark.sparkContext._jvm.io.sqlext.streaming.catalog.StreamCatalog.shortError(message)
    assert jvm_short == short_error(message)
    assert len(jvm_short) <= contract.SHORT_ERROR_LIMIT + 4

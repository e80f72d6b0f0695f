"""The rewriter, SQL in and SQL out (no Spark): fixture pairs and the whole window grammar."""

from pathlib import Path

import pytest
import sqlglot

import sql_ext
from sql_ext.sql.dialect import SplWindow, SqlExt
from sql_ext.sql.window_model import validate

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rewrite.sql"


def _pairs():
    text = "\n".join(line for line in FIXTURES.read_text().splitlines()
                     if not line.startswith("-- ") or line == "-- =>")
    for block in text.strip().split("\n\n"):
        source, expected = block.split("\n-- =>\n")
        yield source.strip(), expected.strip()


@pytest.mark.parametrize("source,expected", list(_pairs()))
def test_rewrite_fixture(source, expected):
    assert sql_ext.transpile(source) == expected


GRAMMAR = [
    "TUMBLING COUNT(4)",
    "TUMBLING DELTA(ts, 60) OVER (PARTITION BY a, b ORDER BY ts)",
    "TUMBLING TIME(INTERVAL '1' HOUR) OVER (ORDER BY ts) PARTITION EVICTION AGE(30) EMIT EVICTED",
    "TUMBLING PUNCT() OVER (PARTITION BY k) PARTITION EVICTION TUPLES(100)",
    "SLIDING COUNT(1000) TRIGGER COUNT(1) OVER (PARTITION BY k ORDER BY seq) EMIT INCOMPLETE",
    "SLIDING TIME(10) TRIGGER DELTA(x, 2) PARTITION EVICTION COUNT(5) EMIT INCOMPLETE EMIT EVICTED",
    "TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)",
    "TIME_INTERVAL(duration => 3600, period => 1200, discard => 21600, offset => 0) ON ts",
    "TIME_INTERVAL(INTERVAL 50 SECONDS) ON ts OVER (ORDER BY arrival) WATERMARK DELAY 5",
    "time_interval(10, 5) on ts watermark by wm",
]


@pytest.mark.parametrize("window", GRAMMAR)
def test_whole_grammar_parses_and_validates(window):
    select = sqlglot.parse_one(f"SELECT COUNT(*) FROM t WINDOW {window} GROUP BY g", read=SqlExt)
    node = select.args["sx_window"]
    assert isinstance(node, SplWindow)
    assert select.args["group"] is not None
    model = validate(node)
    assert model.kind == window.split()[0].split("(")[0].upper()


def test_interval_defaults_and_offset_modulo():
    select = sqlglot.parse_one("SELECT 1 FROM t WINDOW TIME_INTERVAL(3600) ON ts", read=SqlExt)
    interval = validate(select.args["sx_window"]).interval
    assert (interval.duration, interval.period, interval.discard, interval.offset) == \
        (3600, 3600, 0, 0)
    select = sqlglot.parse_one("SELECT 1 FROM t WINDOW TIME_INTERVAL(10, 4, 0, 9) ON ts",
                               read=SqlExt)
    assert validate(select.args["sx_window"]).interval.offset == 1


def test_event_time_call_before_over_is_not_a_window_function():
    """ON f(ts) OVER (PARTITION BY k): the OVER belongs to the SPL window, not to f."""
    select = sqlglot.parse_one("SELECT 1 FROM t WINDOW TIME_INTERVAL(10) ON "
                               "TIMESTAMP_SECONDS(ts - 6) OVER (PARTITION BY k ORDER BY o)",
                               read=SqlExt)
    model = validate(select.args["sx_window"])
    assert model.event_time.sql("spark") == "TIMESTAMP_SECONDS(ts - 6)"
    assert [p.sql() for p in model.partition_by] == ["k"] and model.order_by.sql() == "o"


def test_windowed_query_inside_cte_and_subquery():
    sql = ("WITH w AS (SELECT SUM(x) AS s FROM t WINDOW TUMBLING COUNT(2)) "
           "SELECT * FROM w WHERE s IN (SELECT SUM(y) FROM u WINDOW TUMBLING COUNT(3))")
    out = sql_ext.transpile(sql)
    assert out.count("SQL_EXT_WINDOW(") == 2 and "WINDOW TUMBLING" not in out


def test_plain_sql_is_untouched():
    sql = "SELECT a, SUM(b) OVER w FROM t WINDOW w AS (ORDER BY a)"
    assert sql_ext.transpile(sql) == sql

"""Bad input through the rewriter's JVM-facing door (bridge.answer, what the parser of every
client reaches): mutated valid statements and generated window clauses get a rewrite or a
positioned error in SQL's words, never an internal error, a sqlglot class name or one of the
rewrite's helper names. Pure Python (no Spark): thousands of examples in seconds.
SQL_EXT_FUZZ_EXAMPLES raises the count by hand; CI runs a fixed (derandomized) set."""

import os
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sql_ext.server.callback import answer
from sql_ext.sql.dialect import SqlExt
from sql_ext.sql.errors import CONDITIONS

FIXTURES = Path(__file__).parent / "fixtures" / "rewrite.sql"

def _inputs(text: str) -> list[str]:
    """The windowed statements of the rewrite fixtures (the line before each "-- =>")."""
    lines = text.splitlines()
    return [lines[i - 1] for i, line in enumerate(lines) if line.strip() == "-- =>"]


CORPUS = _inputs(FIXTURES.read_text()) + [
    "SELECT freeway, PANE_START() AS s, MAX(lane_flow) AS flow FROM traffic "
    "WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway) "
    "WATERMARK DELAY 5",
    "SELECT k, PANE_START(), COUNT(*) FROM t WINDOW TIME_INTERVAL(60, 15) ON ts "
    "OVER (ORDER BY seq) WATERMARK BY wm",
    "SELECT k, AVG(x) FROM t WINDOW SLIDING TIME(10) TRIGGER COUNT(2) "
    "OVER (PARTITION BY k ORDER BY ts)",
    "CREATE STREAMING TABLE a.b CHECKPOINT '/c' TRIGGER EVERY 10 AS SELECT k, COUNT(*) "
    "FROM STREAM(s) WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k)",
    "ALTER STREAMING TABLE a.b TBLPROPERTIES ('x' = 'y') AS SELECT k, COUNT(*) FROM STREAM(s) "
    "WINDOW TUMBLING DELTA(ts, 60) OVER (PARTITION BY k ORDER BY ts)",
]
VOCABULARY = ["WINDOW", "TUMBLING", "SLIDING", "TIME_INTERVAL", "COUNT", "DELTA", "TIME", "PUNCT",
              "OVER", "(", ")", ",", "PARTITION", "BY", "ORDER", "TRIGGER", "EVICTION", "AGE",
              "EMIT", "INCOMPLETE", "EVICTED", "WATERMARK", "ON", "SELECT", "FROM", "GROUP",
              "0", "-1", "1.5", "'x'", "NULL", "INTERVAL", "AS", "STREAM", "PANE_START()",
              "WINDOW_ID()", "x", "*", "+", "DELAY", "AND", "TABLE", "STREAMING", "EVERY", ";"]
# What a user must never read in an error: our internals or sqlglot's.
LEAKS = re.compile(r"internal error|Required keyword|<class|__sx|sql_ext_window|Traceback")
EXAMPLES = int(os.environ.get("SQL_EXT_FUZZ_EXAMPLES", "600"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="SQL_EXT_FUZZ_EXAMPLES"
                not in os.environ, suppress_health_check=[HealthCheck.too_slow])


def _tokens(sql: str) -> list[str]:
    return [f"'{t.text}'" if t.token_type.name == "STRING" else t.text
            for t in SqlExt().tokenize(sql)]


def _check(sql: str) -> str:
    """The answer's kind, after checking that an error is positioned and plainly worded."""
    reply = answer(sql)
    kind = reply.split("\n", 1)[0]
    assert kind in ("PASS", "SQL", "COMMAND", "ERROR"), reply
    if kind == "ERROR":
        _, condition, line, pos, message = reply.split("\n", 4)
        assert condition in CONDITIONS and condition != "SQL_EXT_INTERNAL_ERROR", reply
        assert int(line) >= 1 and int(pos) >= 0 and message.strip(), reply
        assert not LEAKS.search(message), f"{sql}\n-> {message}"
    return kind


MUTATION = st.tuples(st.sampled_from(["delete", "insert", "replace"]),
                     st.integers(min_value=0, max_value=200), st.sampled_from(VOCABULARY))


@FUZZ
@given(st.sampled_from(CORPUS), st.lists(MUTATION, min_size=1, max_size=4))
def test_mutated_statements_get_a_rewrite_or_a_plain_positioned_error(sql, mutations):
    tokens = _tokens(sql)
    for op, where, word in mutations:
        where %= max(1, len(tokens) + (op == "insert"))
        if op == "delete" and tokens:
            del tokens[where]
        elif op == "insert":
            tokens.insert(where, word)
        elif tokens:
            tokens[where] = word
    _check(" ".join(tokens) or "SELECT")


NUMBER = st.sampled_from(["0", "1", "3", "-2", "2.5", "1000", "NULL", "'x'", "INTERVAL 1 MINUTE",
                          "INTERVAL '2' HOUR", ""])
POLICY = st.one_of(
    st.builds(lambda n: f"COUNT({n})", NUMBER),
    st.builds(lambda n: f"DELTA(ts, {n})", NUMBER),
    st.builds(lambda n: f"DELTA({n})", NUMBER),
    st.builds(lambda n: f"TIME({n})", NUMBER),
    st.sampled_from(["PUNCT()", "PUNCT(x > 1)", "PUNCT", "COUNT", "AGE(1)"]))
OVER = st.sampled_from(["", "OVER (PARTITION BY k)", "OVER (ORDER BY ts)",
                        "OVER (PARTITION BY k, LOWER(j) ORDER BY seq)", "OVER ()",
                        "OVER (ORDER BY ts DESC)", "OVER (PARTITION BY)", "OVER (ORDER BY)"])
TAIL = st.lists(st.sampled_from(["EMIT INCOMPLETE", "EMIT EVICTED", "WATERMARK DELAY 5",
                                 "WATERMARK BY wm", "PARTITION EVICTION AGE(60)",
                                 "PARTITION EVICTION COUNT(2)", "PARTITION EVICTION TUPLES(9)",
                                 "PARTITION EVICTION", "EMIT"]), max_size=3)
WINDOW = st.one_of(
    st.builds(lambda p, o, t: f"TUMBLING {p} {o} {' '.join(t)}", POLICY, OVER, TAIL),
    st.builds(lambda p, q, o, t: f"SLIDING {p} TRIGGER {q} {o} {' '.join(t)}",
              POLICY, POLICY, OVER, TAIL),
    st.builds(lambda a, b, c, d, o, t: f"TIME_INTERVAL({a}, {b}, {c}, {d}) ON ts {o} "
                                       f"{' '.join(t)}", NUMBER, NUMBER, NUMBER, NUMBER,
              OVER, TAIL))
SELECT = st.sampled_from(["k, COUNT(*) AS n", "SUM(x)", "k, PANE_START(), MAX(x)",
                          "WINDOW_ID(), AVG(x)", "k, x", "*", "PANE_INDEX()"])
SOURCE = st.sampled_from(["t", "STREAM(t)", "(SELECT * FROM t) AS s", ""])


@FUZZ
@given(SELECT, SOURCE, WINDOW, st.booleans())
def test_generated_window_clauses_get_a_rewrite_or_a_plain_positioned_error(
        columns, source, window, streaming):
    query = f"SELECT {columns} {'FROM ' + source if source else ''} WINDOW {window}"
    kind = _check(f"CREATE STREAMING TABLE out AS {query}" if streaming else query)
    assert kind in ("SQL", "COMMAND", "ERROR")


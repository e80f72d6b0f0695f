"""Every invalid window is a clear error naming the offending part (sql.md section 6)."""


import pytest
from pyspark.errors import AnalysisException, ParseException

import sql_ext


@pytest.fixture(scope="module")
def readings(spark):
    spark.sql("""SELECT id AS seq, CAST(id AS STRING) AS name, CAST(id AS DOUBLE) AS v,
                        TIMESTAMP_SECONDS(id) AS ts, IF(id % 4 = 0, NULL, CAST(id AS DOUBLE)) AS g
                 FROM range(0, 20)""").createOrReplaceTempView("readings")


# (windowed SQL, expected message, the offending part: the error must point at its start)
SYNTAX_ERRORS = [
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(0)",
     "COUNT(0): the count must be at least 1", "0)"),
    ("SELECT SUM(v) FROM readings\nWINDOW TUMBLING COUNT(-2)",
     "COUNT(-2): the count must be at least 1", "-2"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(2.5)",
     "COUNT(2.5): the count must be a whole number", "2.5"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING TIME(0) OVER (ORDER BY ts)",
     "TIME(0): the duration must be > 0", "0)"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING TIME(5)",
     "a batch TIME policy replays time from the arrival order, so it needs OVER (ORDER BY",
     "TUMBLING"),
    ("SELECT SUM(v) FROM readings WINDOW SLIDING PUNCT() TRIGGER COUNT(1)",
     "PUNCT is a TUMBLING policy only", "PUNCT"),
    ("SELECT SUM(v) FROM readings WINDOW SLIDING COUNT(5)",
     "a SLIDING window needs TRIGGER <policy>", "SLIDING"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(5) WATERMARK DELAY 5",
     "WATERMARK applies to TIME_INTERVAL windows only, not to TUMBLING", "WATERMARK"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(10) ON ts PARTITION EVICTION COUNT(3)",
     "PARTITION EVICTION does not apply to TIME_INTERVAL", "COUNT(3)"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(10) ON ts EMIT EVICTED",
     "EMIT EVICTED does not apply to TIME_INTERVAL", "EVICTED"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(0) ON ts",
     "TIME_INTERVAL duration must be > 0", "0)"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(10, -1) ON ts",
     "TIME_INTERVAL period must be > 0", "-1"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(10, 5, -1) ON ts",
     "TIME_INTERVAL discard age must be >= 0", "-1"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(duration => 10, offset => 10) ON ts",
     "TIME_INTERVAL offset must be in [0, duration)", "offset =>"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(3) EMIT FINAL",
     "EMIT FINAL applies to TIME_INTERVAL windows only, not to TUMBLING", "FINAL"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(10) ON ts EMIT FINAL EMIT EARLY EVERY 2",
     "EMIT FINAL and EMIT EARLY exclude each other", "EARLY"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(5) ON ts EMIT EARLY EVERY 0",
     "EMIT EARLY EVERY must be a positive duration", "0"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(10) ON ts EMIT EARLY 2",
     "EMIT EARLY must be followed by EVERY <duration>", "2"),
    ("SELECT SUM(v) FROM readings WINDOW SLIDING COUNT(3) TRIGGER COUNT(1) LATE ROWS INTO x",
     "LATE ROWS INTO applies to TIME_INTERVAL windows only, not to SLIDING", "LATE"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(5) ON ts WATERMARK DELAY 1 IDLE 0",
     "WATERMARK IDLE must be a positive duration", "0"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(3) EMIT INCOMPLETE",
     "EMIT INCOMPLETE applies to SLIDING windows", "INCOMPLETE"),
    ("SELECT SUM(v) FROM readings WINDOW SLIDING COUNT(3) TRIGGER COUNT(1) EMIT EVICTED",
     "EMIT EVICTED needs PARTITION EVICTION", "EVICTED"),
    ("SELECT SUM(v) FROM readings WINDOW SLIDING COUNT(3) TRIGGER PUNCT()",
     "PUNCT cannot be a SLIDING trigger", "PUNCT"),
    ("SELECT SUM(v) FROM readings WINDOW SLIDING COUNT(0) TRIGGER COUNT(1)",
     "COUNT(0): the count must be at least 1", "0)"),
    ("SELECT SUM(v) FROM readings WINDOW SLIDING COUNT(3) TRIGGER TIME(1)",
     "a batch TIME policy replays time from the arrival order", "SLIDING"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(3) PARTITION EVICTION AGE(5)",
     "a batch TIME policy replays time from the arrival order", "TUMBLING"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(3) PARTITION EVICTION TUPLES(0)",
     "the limit must be at least 1", "0)"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(3",
     "expected ) to close COUNT(...)", "3"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING ROWS(3)",
     "expected a TUMBLING window policy (COUNT, DELTA, TIME, PUNCT), found ROWS", "ROWS"),
]


# Misspelt window words: sql-ext's error with the nearest word, at the misspelling, through
# transpile and spark.sql (not Spark's bare "Syntax error at or near 'WINDOW'").
MISSPELLINGS = [
    ("SELECT SUM(v) FROM readings WINDOW TUMBLNG COUNT(3)", "did you mean TUMBLING?", "TUMBLNG"),
    ("SELECT SUM(v) FROM readings WINDOW SLIDNG COUNT(3) TRIGGER COUNT(1)",
     "did you mean SLIDING?", "SLIDNG"),
    ("SELECT SUM(v) FROM readings\nWINDOW TIME_INTERVALL(10) ON ts",
     "did you mean TIME_INTERVAL?", "TIME_INTERVALL"),
    ("SELECT SUM(v) FROM readings WINDW TUMBLING COUNT(3)", "did you mean WINDOW TUMBLING?",
     "WINDW"),
    ("SELECT SUM(v) FROM readings WINDOW SLIDING COUNT(3) TRIGER COUNT(1)",
     "did you mean TRIGGER?", "TRIGER"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING CONT(3)",
     "found CONT: did you mean COUNT?", "CONT"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(3) OVR (PARTITION BY name)",
     "did you mean OVER?", "OVR"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(3) PARTITON EVICTION COUNT(2)",
     "did you mean PARTITION?", "PARTITON"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(3) PARTITION EVICTON COUNT(2)",
     "did you mean EVICTION?", "EVICTON"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(10) ON ts WATERMAK DELAY 5",
     "did you mean WATERMARK?", "WATERMAK"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(10) ON ts WATERMARK DELAYY 5",
     "did you mean DELAY?", "DELAYY"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(10) ON ts EMIT FINL",
     "did you mean FINAL?", "FINL"),
    ("SELECT PANE_STRAT() AS s, SUM(v) FROM readings WINDOW TIME_INTERVAL(10) ON ts",
     "PANE_STRAT() is not a pane function: did you mean PANE_START()?", "PANE_STRAT"),
]
SYNTAX_ERRORS += MISSPELLINGS


def test_text_that_is_not_a_window_clause_keeps_spark_s_own_meaning(spark, readings):
    """Words far from every window keyword are not misspellings: a named window, Spark's
    window() function, a function of any name with arguments."""
    for sql in ("SELECT name, SUM(v) OVER w AS s FROM readings WINDOW w AS (PARTITION BY name)",
                "SELECT name, SUM(v) OVER tumble AS s FROM readings "
                "WINDOW tumble AS (PARTITION BY name)",
                "SELECT window.start, COUNT(*) FROM readings GROUP BY window(ts, '5 seconds')"):
        assert sql_ext.transpile(sql) == sql
        assert spark.sql(sql).count() > 0
    with pytest.raises(ParseException) as error:  # not ours at all: Spark's error, unchanged
        spark.sql("SELEC 1")
    assert "PARSE_SYNTAX_ERROR" in str(error.value) and "did you mean" not in str(error.value)


def _position(sql, part):
    """1-based (line, column) of the first occurrence of `part`."""
    before = sql[:sql.index(part)]
    return before.count("\n") + 1, len(before.split("\n")[-1]) + 1


@pytest.mark.parametrize("sql,message,part", SYNTAX_ERRORS,
                         ids=[m[:40] for _, m, _ in SYNTAX_ERRORS])
def test_window_errors_name_part_line_and_column(spark, readings, sql, message, part):
    line, column = _position(sql, part)
    with pytest.raises(sql_ext.WindowSqlError) as error:
        sql_ext.transpile(sql)
    assert message in error.value.message
    assert (error.value.line, error.value.column) == (line, column)
    with pytest.raises(ParseException) as spark_error:
        spark.sql(sql)
    assert message in str(spark_error.value)
    assert f"(line {line}, pos {column - 1})" in str(spark_error.value)


@pytest.mark.parametrize("sql,message", [
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING DELTA(name, 1)",
     "DELTA(name, 1): the DELTA expression must be numeric or a timestamp, but it is string"),
    ("SELECT SUM(v) FROM readings WINDOW TIME_INTERVAL(10) ON name",
     "the ON expression is the event time, a timestamp or a number of seconds, but it is string"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING TIME(5) OVER (ORDER BY seq)",
     "OVER (ORDER BY ...) must name a timestamp, but it is bigint"),
    ("SELECT name, SUM(v) FROM readings WINDOW TUMBLING COUNT(3)", "MISSING_AGGREGATION"),
    ("SELECT SUM(nope) FROM readings WINDOW TUMBLING COUNT(3)", "nope"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(3) OVER (PARTITION BY nope)", "nope"),
])
def test_type_and_column_errors(spark, readings, sql, message):
    with pytest.raises(AnalysisException) as error:
        spark.sql(sql).collect()
    assert message in str(error.value)


@pytest.mark.parametrize("sql,name", [
    ("SELECT name, SUM(nope) FROM readings WINDOW TUMBLING COUNT(3) OVER (PARTITION BY name)",
     "nope"),
    ("SELECT nope, SUM(v) FROM readings WINDOW TUMBLING COUNT(3) OVER (PARTITION BY name)",
     "nope"),
    ("SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(3) OVER (PARTITION BY name\n"
     "  ORDER BY nope)", "nope"),
    ("SELECT SUM(v) FROM missing_table WINDOW TUMBLING COUNT(3)", "missing_table"),
])
def test_analysis_errors_speak_of_the_users_query(spark, readings, sql, name):
    """No helper column (__sx_*) among the suggestions, no internal plan, and the pointer in
    the statement the user wrote, at the name."""
    with pytest.raises(AnalysisException) as error:
        spark.sql(sql).collect()
    text = str(error.value)
    assert "__sx" not in text and "WindowAssign" not in text and "SQL_EXT_WINDOW" not in text
    assert f"`{name}`" in text and "== SQL ==" in text and sql.splitlines()[-1] in text
    line = sql[:sql.index(name)].count("\n") + 1
    column = sql.index(name) - (sql[:sql.index(name)].rfind("\n") + 1)
    assert f"(line {line}, pos {column})" in text


def test_a_batch_query_over_a_stream_points_to_streaming_tables(spark, readings):
    for sql in ["SELECT SUM(v) FROM STREAM(readings) WINDOW TUMBLING COUNT(5)",
                "SELECT SUM(v) FROM STREAM(readings) WINDOW TIME_INTERVAL(10) ON ts"]:
        with pytest.raises(ParseException, match="runs as a streaming table: CREATE STREAMING"):
            spark.sql(sql)


def test_plain_sql_errors_stay_sparks_own(spark):
    with pytest.raises(ParseException, match="PARSE_SYNTAX_ERROR"):
        spark.sql("SELEC 1")


def test_null_delta_rows_are_counted_not_lost(spark, readings):
    frame = spark.sql("SELECT WINDOW_ID() AS w, COUNT(*) AS n FROM readings "
                      "WINDOW TUMBLING DELTA(g, 3) OVER (ORDER BY seq)")
    rows = frame.collect()
    assert sum(r.n for r in rows) + 3 <= 15  # 5 NULL g values never enter a window
    assert sql_ext.not_windowed_rows(frame) == 5


class _HungRewriter:
    """A rewriter that never answers statements holding HANG (until released), and answers
    the rest as sql_ext does: a Python callback stuck in user code or a deadlock."""

    def __init__(self):
        import threading

        self.release = threading.Event()

    def rewrite(self, sql_text, session_udafs, in_pipeline):
        from sql_ext.server.callback import answer

        if "HANG" in sql_text:
            self.release.wait(120)
        return answer(sql_text)

    def execute(self, sql_text, jsession, statement_id):
        return '{"error": "not used"}'

    class Java:
        implements = ["io.sqlext.rewriter.SqlRewriter"]


def test_a_hung_rewrite_fails_its_statement_in_time_and_the_session_goes_on(spark, readings):
    import time

    from sql_ext.server import callback

    hung = _HungRewriter()
    registry = spark.sparkContext._jvm.io.sqlext.rewriter.SqlRewriterRegistry
    registry.register(hung)
    spark.conf.set("spark.sql_ext.rewriter.timeout", "2s")
    try:
        started = time.monotonic()
        with pytest.raises(ParseException, match=r"the sql_ext rewriter did not answer within "
                                                 r"2000 ms; the statement was not run \(the bound "
                                                 r"is the session setting spark.sql_ext.rewriter"):
            spark.sql("SELECT SUM(v) AS HANG FROM readings WINDOW TUMBLING COUNT(5)")
        waited = time.monotonic() - started
        assert 2 <= waited < 30
        # The stuck callback still holds its thread; the next statements do not wait for it.
        started = time.monotonic()
        rows = spark.sql("SELECT SUM(v) AS s FROM readings WINDOW TUMBLING COUNT(5) "
                         "OVER (ORDER BY seq)").collect()
        assert sorted(row.s for row in rows) == [10.0, 35.0, 60.0, 85.0]
        assert spark.sql("SELECT COUNT(*) AS n FROM readings").first().n == 20
        assert time.monotonic() - started < 30
    finally:
        hung.release.set()
        spark.conf.unset("spark.sql_ext.rewriter.timeout")
        callback.register(spark)


def test_a_stream_failure_names_the_error_inside_its_wrappers():
    """A micro-batch that fails inside the Python function that writes it (here Spark's own
    ARITHMETIC_OVERFLOW) is wrapped twice (STREAM_FAILED, FOREACH_BATCH_USER_FUNCTION_ERROR);
    the short error keeps the inner error, which names the problem."""
    from sql_ext.streaming.runs import short_error

    inner = ("pyspark.errors.exceptions.captured.ArithmeticException: [ARITHMETIC_OVERFLOW] "
             "overflow. SQLSTATE: 22003")
    failure = "\n".join([
        "StreamingQueryException: [STREAM_FAILED] Query [id = 1] terminated with exception: "
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function. "
        "Return Message: Traceback (most recent call last):",
        '  File "streaming.py", line 295, in write_batch', inner, "\tat org.apache.spark.X",
        "Caused by: py4j.Py4JException: An exception was raised by the Python Proxy. Return "
        "Message: Traceback (most recent call last):", '  File "streaming.py"', inner])
    short = short_error(failure)
    assert short.splitlines()[0].startswith("StreamingQueryException: [STREAM_FAILED]")
    assert short.splitlines()[-1] == inner and short.count("ARITHMETIC_OVERFLOW") == 1
    assert short_error("[X] plain failure\nCaused by: y: z") == "[X] plain failure\nCaused by: y: z"


def test_stream_of_a_query_is_refused_by_name():
    """STREAM(...) takes a name; a query in it was once refused with an empty message."""
    from sql_ext.sql.errors import UnsupportedWindowError
    from sql_ext.sql.transpile import transpile

    with pytest.raises(UnsupportedWindowError, match=r"STREAM\(\.\.\.\) reads a table or a "
                       r"streaming view by its name, not a query"):
        transpile("SELECT COUNT(*) AS n FROM STREAM((SELECT * FROM readings)) "
                  "WINDOW TUMBLING COUNT(2)")

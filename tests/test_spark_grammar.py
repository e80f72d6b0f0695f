"""Spark's own grammar stays Spark's (spec/sql.md section 10): a statement without the
extension's clauses parses exactly as Spark's parser parses it, declarative-pipeline statements
included; windowed statements keep the origin Spark's parser would give them; and
`spark.sql(text, args=...)` binds parameters in windowed queries as in any other.

The oracle is Spark's own parser (a bare SparkSqlParser, no extension in front of it) and, for
parameters, the same query with its values written in.
"""

import re

import pytest
from pyspark.errors import ParseException

# Every form of Spark Declarative Pipelines' SQL, and Spark statements near the extension's.
SPARKS_OWN = [
    "CREATE STREAMING TABLE st AS SELECT k, seq, x FROM STREAM(src)",
    "CREATE STREAMING TABLE st AS SELECT * FROM STREAM src",
    "CREATE STREAMING TABLE IF NOT EXISTS st AS SELECT * FROM STREAM(src)",
    "CREATE STREAMING TABLE st",
    "CREATE STREAMING TABLE st (k STRING, x INT)",
    "CREATE STREAMING TABLE st (k STRING, x INT) PARTITIONED BY (k) COMMENT 'c' "
    "TBLPROPERTIES ('a' = 'b') AS SELECT k, x FROM STREAM(src)",
    "CREATE STREAMING TABLE st USING delta LOCATION '/x' AS SELECT * FROM STREAM(src)",
    "CREATE STREAMING TABLE st AS SELECT k FROM STREAM(src) WHERE",
    "CREATE OR REPLACE STREAMING TABLE st AS SELECT k FROM STREAM(src)",
    "CREATE OR REFRESH STREAMING TABLE st AS SELECT * FROM STREAM(src)",
    "CREATE FLOW f AS INSERT INTO st BY NAME SELECT * FROM STREAM(src)",
    "CREATE FLOW f AS INSERT INTO st BY NAME SELECT * FROM STREAM(src) WHERE k > :p",
    "CREATE MATERIALIZED VIEW mv AS SELECT k, count(*) AS n FROM src GROUP BY k",
    "CREATE MATERIALIZED VIEW mv (k, n) COMMENT 'c' AS SELECT k, count(*) FROM src GROUP BY k",
    "CREATE MATERIALIZED VIEW IF NOT EXISTS mv (k, n) AS SELECT 1, 2",
    "CREATE TEMPORARY VIEW v AS SELECT * FROM STREAM(src)",
    "CREATE VIEW v AS SELECT * FROM src",
    "SELECT k, sum(x) OVER w FROM src WINDOW w AS (PARTITION BY k ORDER BY seq)",
    "SELECT k, sum(x) OVER w AS s FROM src WINDOW w AS (ORDER BY seq ROWS 2 PRECEDING)",
    "SELECT * FROM STREAM(src)",
    "SELECT 1 window",
    "  -- a comment\n /* and another */ SELECT k FROM src",
    "SET spark.sql.shuffle.partitions = 2",
    "USE default",
    "REFRESH TABLE src",
    "DROP MATERIALIZED VIEW mv",
    "SHOW TABLES",
]


def _parse(parser, text):
    """The plan and where it starts, or the error Spark's parser raised."""
    try:
        plan = parser.parsePlan(text)
        start = plan.origin().startIndex()
        # Expression ids count up per parse: #14 in one is #15 in the next.
        return re.sub(r"#\d+", "#", plan.toString()), \
            start.get() if start.isDefined() else None
    except Exception as error:  # noqa: BLE001 - the error is the outcome compared
        return "error", str(error).split("\n\tat ")[0].split("JVM stacktrace")[0]


@pytest.mark.parametrize("text", SPARKS_OWN)
def test_a_statement_spark_parses_is_parsed_as_spark_parses_it(spark, text):
    sessions_parser = spark._jsparkSession.sessionState().sqlParser()
    sparks_parser = spark._jvm.org.apache.spark.sql.execution.SparkSqlParser()
    assert _parse(sessions_parser, text) == _parse(sparks_parser, text)


def test_sparks_streaming_table_runs_as_spark_runs_it(spark):
    """Outside a pipeline Spark refuses its own CREATE STREAMING TABLE; with the extension it
    still does, with Spark's error (not a windowed-query error of sql-ext)."""
    spark.range(3).selectExpr("id AS k").write.mode("overwrite").saveAsTable("grammar_src")
    with pytest.raises(Exception, match="CREATE_PIPELINE_DATASET_QUERY_EXECUTION"):
        spark.sql("CREATE STREAMING TABLE grammar_st AS SELECT k FROM STREAM(grammar_src)")
    assert not spark.catalog.tableExists("grammar_st")


WINDOWED = "SELECT k, SUM(x) AS s FROM src WINDOW TUMBLING COUNT(2) OVER (PARTITION BY k)"


@pytest.mark.parametrize("lead", ["", "\n\n", "  -- a comment\n /* and another */ "])
def test_a_windowed_statement_starts_where_the_user_wrote_it(spark, lead):
    """Declarative pipelines cut the text of each statement they define (a CREATE) at its
    plan's start index: where the CREATE is, as Spark's parser says."""
    spark.createDataFrame([("a", 1.0)], "k string, x double").createOrReplaceTempView("src")
    parser = spark._jsparkSession.sessionState().sqlParser()
    for statement in ("CREATE MATERIALIZED VIEW mv AS " + WINDOWED,
                      "CREATE TEMPORARY VIEW v AS " + WINDOWED):
        text = lead + statement
        assert parser.parsePlan(text).origin().startIndex().get() == len(lead)


@pytest.fixture(scope="module")
def readings(spark):
    rows = [("a", i, float(i)) for i in range(8)] + [("b", i, 10.0 + i) for i in range(5)]
    spark.createDataFrame(rows, "k string, seq int, x double") \
        .write.mode("overwrite").saveAsTable("param_readings")
    return "param_readings"


QUERY = ("SELECT k, SUM(x) * {m} AS s, WINDOW_ID() AS w FROM param_readings WHERE k = {k} "
         "WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k ORDER BY seq) HAVING SUM(x) > {h}")


@pytest.mark.parametrize("markers, args", [
    ({"m": ":m", "k": ":k", "h": ":h"}, {"m": 2, "k": "a", "h": 2}),
    ({"m": "?", "k": "?", "h": "?"}, [2, "a", 2]),
    ({"m": ":m", "k": ":k", "h": ":m"}, {"m": 2, "k": "b"}),
])
def test_parameters_in_a_windowed_query(spark, readings, markers, args):
    values = args if isinstance(args, dict) else dict(zip("mkh", args))
    literal = {name: repr(values[marker[1:]] if marker.startswith(":") else values[name])
               for name, marker in markers.items()}
    expected = spark.sql(QUERY.format(**literal)).collect()
    assert expected, "the oracle query selects rows"
    assert spark.sql(QUERY.format(**markers), args=args).collect() == expected


def test_sparks_own_parameterized_queries_still_bind(spark, readings):
    """Delta's parser (which sql-ext's wraps) drops the values; sql-ext hands them on."""
    named = "SELECT count(*) FROM param_readings WHERE k = :k AND seq < :n"
    assert spark.sql(named, args={"k": "a", "n": 5}).first()[0] == 5
    assert spark.sql("SELECT count(*) FROM param_readings WHERE k = ? AND seq < ?",
                     args=["b", 2]).first()[0] == 2


def test_a_missing_parameter_is_named_where_it_is(spark, readings):
    with pytest.raises(ParseException, match=r"UNBOUND_SQL_PARAMETER.*parameter :k"):
        spark.sql(QUERY.format(m=":m", k=":k", h="0"), args={"m": 1})
    with pytest.raises(ParseException, match=r"UNBOUND_SQL_PARAMETER.*positional parameter 2"):
        spark.sql(QUERY.format(m="?", k="?", h="0"), args=[1])


def test_streaming_statements_take_no_parameters(spark, readings):
    with pytest.raises(ParseException, match="streaming-table statements take no parameters"):
        spark.sql("CREATE STREAMING TABLE p_st AS SELECT k, COUNT(*) AS n "
                  "FROM STREAM(param_readings) WHERE k = :k WINDOW TUMBLING COUNT(2)",
                  args={"k": "a"})

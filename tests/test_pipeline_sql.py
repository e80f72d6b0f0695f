"""The rewrite of a declarative pipeline's windowed streaming tables and flows (without a
pipeline: tests/test_pipelines.py runs them). The statement stays Spark's: the user's text up to
the query as written, so Spark's own parser makes Spark's own plan of it, starting where the
user's statement starts; only the windowed query is lowered. What a pipeline cannot run is an
error at the place that causes it."""

import pytest

from sql_ext.sql.errors import WindowSqlError
from sql_ext.sql.pipeline import dataset_statement

QUERY = ("SELECT freeway, WINDOW_ID() AS w, COUNT(*) AS n, MAX(lane_flow * 2) AS m "
         "FROM STREAM(readings) WINDOW TUMBLING COUNT(3) OVER (PARTITION BY freeway)")
HEADERS = ["CREATE STREAMING TABLE st AS ", "CREATE MATERIALIZED VIEW mv COMMENT 'batch' AS ",
           "CREATE STREAMING TABLE db.st (freeway STRING, w BIGINT, n BIGINT, m INT) "
           "COMMENT 'as we go' TBLPROPERTIES ('a' = 'b') AS\n",
           "CREATE FLOW f COMMENT 'flow' AS INSERT INTO st BY NAME "]
LEADS = ["", "  -- a comment\n /* and another */ "]


@pytest.mark.parametrize("header", HEADERS)
@pytest.mark.parametrize("lead", LEADS)
def test_the_statement_stays_sparks(spark, header, lead):
    query = QUERY.replace("STREAM(readings)", "readings") if "VIEW" in header else QUERY
    text = dataset_statement(lead + header + query)
    assert text.startswith(lead + header)
    assert "sql_ext_pipeline_window(table(" in text.lower()
    assert ("STREAM(readings)" in text) == ("STREAM" in query)
    plan = spark._jvm.org.apache.spark.sql.execution.SparkSqlParser().parsePlan(text)
    kind = {"FLOW": "CreateFlowCommand", "MATERIALIZED": "CreateMaterializedViewAsSelect",
            "STREAMING": "CreateStreamingTableAsSelect"}[header.split()[1]]
    assert plan.getClass().getSimpleName() == kind
    assert plan.origin().startIndex().get() == len(lead)


def test_other_statements_are_not_pipeline_datasets():
    assert dataset_statement("CREATE STREAMING TABLE st AS SELECT * FROM STREAM(readings)") \
        is None  # no window: Spark's own
    # A window below the top SELECT of a materialized view is lowered where it is.
    assert dataset_statement("CREATE MATERIALIZED VIEW mv AS SELECT * FROM ("
                             + QUERY.replace("STREAM(readings)", "readings") + ")") is None
    assert dataset_statement("SELECT 1") is None


def _error(query: str, header: str = "CREATE STREAMING TABLE st AS\n") -> WindowSqlError:
    with pytest.raises(WindowSqlError) as raised:
        dataset_statement(header + query)
    return raised.value


SOURCE = "FROM STREAM(readings) WINDOW "


@pytest.mark.parametrize("query, says", [
    ("SELECT SUM(x) AS s " + SOURCE + "TIME_INTERVAL(50, 25) ON ts WATERMARK DELAY 10",
     "add EMIT FINAL"),
    ("SELECT SUM(x) AS s " + SOURCE + "TIME_INTERVAL(50) ON ts WATERMARK DELAY 1 "
     "EMIT EARLY EVERY 5", "add EMIT FINAL"),
    ("SELECT SUM(x) AS s " + SOURCE + "TUMBLING TIME(5)", "wall clock"),
    ("SELECT SUM(x) AS s " + SOURCE + "TUMBLING COUNT(2) OVER (PARTITION BY k) "
     "PARTITION EVICTION AGE(5)", "wall clock"),
    ("SELECT SUM(x) AS s " + SOURCE + "TIME_INTERVAL(50) ON ts WATERMARK DELAY 1 IDLE 5 "
     "EMIT FINAL", "wall clock"),
    ("SELECT SUM(x) AS s " + SOURCE + "TIME_INTERVAL(50) ON ts WATERMARK DELAY 1 "
     "LATE ROWS INTO late EMIT FINAL", "LATE ROWS INTO"),
    ("SELECT COUNT(DISTINCT x) AS s " + SOURCE + "TUMBLING COUNT(2)", "no DISTINCT"),
    ("SELECT g, SUM(x) AS s " + SOURCE + "TUMBLING COUNT(2) GROUP BY g", "no GROUP BY"),
    ("SELECT SUM(x) AS s " + SOURCE + "TUMBLING COUNT(2) ORDER BY s", "ORDER BY"),
    ("SELECT k, SUM(x) AS s " + SOURCE + "TUMBLING COUNT(2) OVER (PARTITION BY g)",
     "k: read outside an aggregate"),
])
def test_what_a_pipeline_cannot_run_is_named_at_its_window(query, says):
    error = _error(query)
    assert says in error.message
    assert (error.line, error.column) == (2, query.index("WINDOW ") + len("WINDOW ") + 1)


def test_a_streaming_table_reads_a_stream():
    assert "FROM STREAM(<dataset or table>)" in _error(
        "SELECT SUM(x) AS s FROM readings WINDOW TUMBLING COUNT(2)").message


def test_trigger_and_checkpoint_are_the_pipelines():
    for clause in ("TRIGGER EVERY 5", "CHECKPOINT '/tmp/c'"):
        error = _error("SELECT SUM(x) AS s " + SOURCE + "TUMBLING COUNT(2)",
                       f"CREATE STREAMING TABLE st {clause} AS ")
        assert "runs its streaming tables itself" in error.message
        assert (error.line, error.column) == (1, len("CREATE STREAMING TABLE st ") + 1)

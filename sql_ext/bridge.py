"""The one py4j bridge, both ways.

JVM to Python: registers the Python rewriter with the JVM's RewritingParser, which calls
`rewrite` only for statements Spark's own parser rejected (or parsed as its own CREATE
STREAMING TABLE), and `execute` when it runs a streaming statement. The answer protocol is
documented on io.sqlext.parser.SqlRewriter.

Python to JVM: every call into the extension's Scala objects goes through the functions below,
so the border between the two languages is this one file.
"""

from __future__ import annotations

import json
import logging

from pyspark import SparkContext
from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from sql_ext.dialect import has_window_clause
from sql_ext.errors import WindowSqlError
from sql_ext.rewrite import rewrite

log = logging.getLogger("sql_ext")


def answer(sql: str) -> str:
    """The JVM-facing answer for one statement text."""
    from sql_ext import statements  # the statements run streams, which call this module

    try:
        statement = statements.statement_of(sql)
        if statement is not None:
            return "COMMAND\n" + statements.kind_of(statement)
        if not has_window_clause(sql):
            return "PASS"
        return "SQL\n" + rewrite(sql)
    except WindowSqlError as error:
        return f"ERROR\n{error.line}\n{max(error.column - 1, 0)}\n{error.message}"
    except Exception as error:
        log.exception("sql_ext rewriter failed")
        return f"ERROR\n1\n0\ninternal error in the sql_ext rewriter: {error!r}"


class _Rewriter:
    def rewrite(self, sql_text: str) -> str:
        return answer(sql_text)

    def execute(self, sql_text: str, jsession) -> str:
        from sql_ext import statements

        spark = SparkSession(SparkContext._active_spark_context, jsession)
        return statements.answer_execute(sql_text, spark)

    class Java:
        implements = ["io.sqlext.parser.SqlRewriter"]


_registered: dict[int, _Rewriter] = {}


def register(spark: SparkSession) -> None:
    """Makes `spark.sql` (and a Thrift server in this process) accept windowed SQL."""
    sc = spark.sparkContext
    gateway = sc._gateway
    ensure_callback_server_started(gateway)
    rewriter = _registered.setdefault(id(gateway), _Rewriter())
    try:
        registry = gateway.jvm.io.sqlext.parser.SqlRewriterRegistry
        registry.register(rewriter)
    except Exception as error:  # py4j reports a missing class as a generic error
        raise RuntimeError(
            "the sql_ext extension jar is not on this session's classpath: build the session "
            "with sql_ext.session() or sql_ext.configure(builder)") from error


def _jvm(spark: SparkSession):
    return spark.sparkContext._jvm


def partial_aggregate_kinds(spark: SparkSession, facts: list[dict]) -> str | None:
    """PartialAggregates' decision (shared with the batch rule) for the aggregates `facts`."""
    return _jvm(spark).io.sqlext.aggregate.PartialAggregates.kindsJson(json.dumps(facts))


def stream_firings(spark: SparkSession, tuples: DataFrame, spec: dict, checkpoint: str,
                   late_location: str | None = None) -> DataFrame:
    """The stream of firings of the window `spec` over the stream `tuples`; with LATE ROWS
    INTO, its late rows go to files of the table at `late_location` (None: a plan for the
    firings' columns only, never run)."""
    return DataFrame(_jvm(spark).io.sqlext.streaming.StreamingWindows.firings(
        tuples._jdf, json.dumps(spec), checkpoint, late_location), spark)


def late_rows_schema(tuples: DataFrame) -> StructType:
    """LATE ROWS INTO: the late table's columns for a streaming window over `tuples`."""
    return StructType.fromJson(json.loads(_jvm(tuples.sparkSession)
                                          .io.sqlext.streaming.StreamingWindows
                                          .lateRowsSchema(tuples._jdf)))


def commit_late_rows(spark: SparkSession, checkpoint: str, app_id: str, batch_id: int,
                     discard: bool = False) -> int:
    """io.sqlext.streaming.LateRowFiles.commit: the late rows that micro-batch `batch_id` of
    the stream at `checkpoint` wrote, committed to their table as batch `batch_id` of `app_id`
    at most once (or deleted, `discard`); how many rows it committed."""
    return int(_jvm(spark).io.sqlext.streaming.LateRowFiles.commit(
        spark._jsparkSession, checkpoint, app_id, batch_id, app_id, discard))


def share_function(spark: SparkSession, name: str, function) -> None:
    """Makes a registered Python UDF (its JVM UserDefinedPythonFunction) callable in every
    session the process creates from now on: the Thrift server's JDBC sessions."""
    _jvm(spark).io.sqlext.analysis.ProcessFunctions.share(name, function)


def stream_catalog(spark: SparkSession):
    """io.sqlext.streaming.StreamCatalog: streaming tables' catalog properties, running
    queries by table (so DROP TABLE stops them), failures recorded."""
    return _jvm(spark).io.sqlext.streaming.StreamCatalog


def stream_progress(spark: SparkSession):
    """io.sqlext.streaming.StreamProgress: per-query totals, drop counters, state curves."""
    return _jvm(spark).io.sqlext.streaming.StreamProgress


def delta_batch_append(rows: DataFrame, path: str, app_id: str, batch_id: int) -> bool:
    """io.sqlext.streaming.DeltaBatchAppend: `rows` appended to the Delta table at `path` as
    batch `batch_id` of `app_id`, at most once; whether it wrote."""
    return bool(_jvm(rows.sparkSession).io.sqlext.streaming.DeltaBatchAppend.append(
        rows._jdf, path, app_id, batch_id, app_id))


def java_map(spark: SparkSession, values: dict):
    """A java.util.HashMap of `values` (None values stay null)."""
    result = _jvm(spark).java.util.HashMap()
    for key, value in values.items():
        result.put(key, value)
    return result


def path_exists(spark: SparkSession, path: str) -> bool:
    """Whether a file or directory exists, through Hadoop's file system."""
    hadoop_path = _jvm(spark).org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()) \
        .exists(hadoop_path)


def delete_path(spark: SparkSession, path: str) -> bool:
    """Deletes a directory tree through Hadoop's file system (local or remote)."""
    jvm = _jvm(spark)
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return fs.delete(hadoop_path, True)


def drop_log_lines(spark: SparkSession, logger: str, pattern: str) -> None:
    """Log4j in the driver JVM: the lines of `logger` whose message matches `pattern` (a Java
    regex, the whole message) are dropped, as Spark's own default configuration drops a benign
    Thrift message; the logger's other lines stay, at the root's level (`setLogLevel` still
    governs it). A logger the log configuration names already is left as configured."""
    jvm = _jvm(spark)
    log4j = jvm.org.apache.logging.log4j
    context = log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    if config.getLoggerConfig(logger).getName() == logger:
        return
    result = log4j.core.Filter.Result
    lines = log4j.core.config.LoggerConfig(logger, None, True)  # level None: the parent's
    lines.addFilter(log4j.core.filter.RegexFilter.createFilter(
        pattern, None, False, result.DENY, result.NEUTRAL))
    config.addLogger(logger, lines)
    context.updateLoggers()

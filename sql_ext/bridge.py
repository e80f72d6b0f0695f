"""The one py4j bridge: registers the Python rewriter with the JVM's RewritingParser.

The JVM calls `rewrite` only for statements Spark's own parser rejected (or parsed as its own
CREATE STREAMING TABLE), and `execute` when it runs a streaming statement. The answer protocol
is documented on io.sqlext.parser.SqlRewriter.
"""

from __future__ import annotations

import logging

from pyspark import SparkContext
from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import SparkSession

from sql_ext import statements
from sql_ext.dialect import has_window_clause
from sql_ext.errors import WindowSqlError
from sql_ext.rewrite import rewrite

log = logging.getLogger("sql_ext")


def answer(sql: str) -> str:
    """The JVM-facing answer for one statement text."""
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

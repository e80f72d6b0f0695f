"""The JVM's calls into Python (a py4j callback, the channel PySpark's foreachBatch uses).

RewritingParser asks `rewrite` about a statement only when Spark's own parser rejected it
(a statement Spark parses stays Spark's); StreamStatementCommand calls `execute` when
it runs a streaming statement, with the session of the client. The answer protocol is
documented on io.sqlext.rewriter.SqlRewriter.
"""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession

from sql_ext import jvm
from sql_ext.sql import pipeline, udaf_names
from sql_ext.sql.dialect import has_window_clause
from sql_ext.sql.errors import WindowSqlError
from sql_ext.sql.statements import kind_of, statement_of
from sql_ext.sql.transpile import leading_text, named_positional_parameters, transpile
from sql_ext.streaming import statements

log = logging.getLogger("sql_ext")


def answer(sql: str, in_pipeline: bool = False) -> str:
    """The JVM-facing answer for one statement text; `in_pipeline`: a declarative pipeline is
    registering it."""
    try:
        if in_pipeline:
            dataset = pipeline.dataset_statement(sql) or pipeline.query(sql)
            if dataset is not None:
                return "SQL\n" + dataset
        statement = statement_of(sql)
        if statement is not None:
            return "COMMAND\n" + kind_of(statement)
        if not has_window_clause(sql):
            return "PASS"
        named = named_positional_parameters(sql)
        try:
            lowered = transpile(named, comments=False)
        except WindowSqlError:
            if named != sql:
                transpile(sql)  # the same error, positioned in the text the user wrote
            raise
        return "SQL\n" + leading_text(sql) + lowered
    except WindowSqlError as error:
        return f"ERROR\n{error.condition}\n{error.line}\n{error.pos}\n{error.message}"
    except Exception as error:
        log.exception("sql_ext rewriter failed")
        return f"ERROR\nSQL_EXT_INTERNAL_ERROR\n1\n0\n{type(error).__name__}: {error}"


class _Rewriter:
    def rewrite(self, sql_text: str, session_udafs: str, in_pipeline: bool) -> str:
        with udaf_names.of_session(session_udafs.split(",")):
            return answer(sql_text, in_pipeline)

    def execute(self, sql_text: str, jsession, statement_id: str | None) -> str:
        return statements.answer_execute(sql_text, jvm.session_of(jsession), statement_id)

    class Java:
        implements = ["io.sqlext.rewriter.SqlRewriter"]


_registered: dict[int, _Rewriter] = {}


def register(spark: SparkSession) -> None:
    """Makes `spark.sql` (and a Thrift server in this process) accept windowed SQL."""
    rewriter = _registered.setdefault(jvm.gateway_id(spark), _Rewriter())
    jvm.register_rewriter(spark, rewriter)

package io.sqlext.rewriter

import org.apache.spark.sql.SparkSession

/**
 * The Python side of the grammar. py4j implements this interface with a Python object (the
 * channel PySpark's foreachBatch uses). The answer is one of
 *   "SQL\n<rewritten statement>"   the text was windowed SQL, here it is in plain Spark SQL
 *   "PASS"                         not ours: report Spark's own parse error
 *   "ERROR\n<condition>\n<line>\n<pos>\n<message>"   windowed SQL with a mistake at (line,
 *                                  0-based pos), of one of sql-ext's error conditions
 *   "COMMAND\n<CREATE|SHOW|STOP>"  a streaming statement, run later through `execute`
 * `sessionUdafs` names (comma-separated) the Python UDAFs registered in the statement's session,
 * as a Spark Connect client registers them, beside those of the rewriter's own process;
 * `inPipeline` says a declarative pipeline is registering the statement (its windowed
 * streaming tables and flows are lowered to a plan the pipeline runs).
 * `execute` runs a streaming statement on the client's session and answers JSON:
 * {"rows": [[...], ...]} or {"error": "<message>", "condition": "<SQL_EXT_...>"}.
 * `statementId` is the Thrift server's id of the statement (null elsewhere): a wait in Python
 * asks CancelledStatements whether it ended.
 */
trait SqlRewriter {
  def rewrite(sqlText: String, sessionUdafs: String, inPipeline: Boolean): String
  def execute(sqlText: String, session: SparkSession, statementId: String): String
}

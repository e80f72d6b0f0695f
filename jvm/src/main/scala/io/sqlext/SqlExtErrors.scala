package io.sqlext

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.catalyst.trees.Origin
import org.apache.spark.sql.catalyst.util.MathUtils

/** Errors in Spark's own exception types, so every client (PySpark, JDBC) reports them plainly. */
object SqlExtErrors {

  /** A message-only error class of Spark's: '<message>'. */
  val MessageClass = "_LEGACY_ERROR_TEMP_3100"

  def analysis(message: String): AnalysisException =
    new AnalysisException(MessageClass, Map("message" -> message))

  /** A syntax error at 1-based `line` and 0-based `column` of `command`. */
  def parse(command: String, message: String, line: Int, column: Int): ParseException = {
    val origin = Origin(line = Some(line), startPosition = Some(column))
    new ParseException(Some(command), origin, "_LEGACY_ERROR_TEMP_0064", Map("msg" -> message))
  }

  /** Spark's ARITHMETIC_OVERFLOW of a BIGINT sum under ANSI, as its Sum raises it: thrown by
   *  Spark's own exact addition (its error class and message builders are not public). */
  def longOverflow(): ArithmeticException = {
    MathUtils.addExact(Long.MaxValue, 1L)
    new ArithmeticException("long overflow") // not reached: addExact threw Spark's error
  }
}

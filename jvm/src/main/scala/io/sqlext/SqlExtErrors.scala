package io.sqlext

import scala.jdk.CollectionConverters._
import scala.util.matching.Regex

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.catalyst.trees.Origin
import org.apache.spark.sql.catalyst.util.MathUtils
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * sql-ext's errors as Spark 4 makes its own: each has a condition named `SQL_EXT_*` with a
 * SQLSTATE and a message template, from the error-conditions.json the jar carries (defined
 * once in the Python package, sql_ext/sql/error-conditions.json, which the Python side reads
 * too). They are Spark's exception types (AnalysisException, ParseException), so PySpark's
 * `getCondition()`/`getSqlState()` and a JDBC client's SQLSTATE carry them, and every client
 * reports them as it reports Spark's.
 */
object SqlExtErrors {

  private case class Condition(template: String, sqlState: String)

  private val conditions: Map[String, Condition] = {
    val in = getClass.getResourceAsStream("/io/sqlext/error-conditions.json")
    require(in != null, "io/sqlext/error-conditions.json is missing from the sql-ext jar")
    val text = try new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8)
      finally in.close()
    implicit val formats: Formats = DefaultFormats
    JsonMethods.parse(text) match {
      case JObject(fields) => fields.map { case (name, info) =>
        name -> Condition((info \ "message").extract[Seq[String]].mkString(" "),
          (info \ "sqlState").extract[String])
      }.toMap
      case other => throw new IllegalStateException(s"error-conditions.json: $other")
    }
  }

  private def condition(name: String): Condition =
    conditions.getOrElse(name, throw new IllegalArgumentException(
      s"$name is not one of sql-ext's error conditions (error-conditions.json)"))

  /** Whether `name` is one of sql-ext's conditions (not Spark's). */
  def isOwn(name: String): Boolean = conditions.contains(name)

  def sqlState(name: String): String = condition(name).sqlState

  def template(name: String): String = condition(name).template

  /** The message as Spark formats its own: "[CONDITION] <filled template> SQLSTATE: <state>". */
  def message(name: String, parameters: Map[String, String]): String = {
    val filled = "<([a-zA-Z0-9_-]+)>".r.replaceAllIn(template(name), found =>
      Regex.quoteReplacement(parameters.getOrElse(found.group(1), found.matched)))
    s"[$name] $filled SQLSTATE: ${sqlState(name)}"
  }

  /** An error found while analysing or running a statement. */
  def analysis(name: String, message: String): AnalysisException =
    new SqlExtAnalysisException(name, Map("message" -> message))

  /** An error in the text of `command` at 1-based `line` and 0-based `pos` (Spark's
   *  convention): clients show the statement with a pointer at it. */
  def parse(name: String, command: String, message: String, line: Int, pos: Int)
      : ParseException = new SqlExtParseException(name, command, Map("message" -> message),
    Origin(line = Some(line), startPosition = Some(pos)))

  /** Spark's ARITHMETIC_OVERFLOW of a BIGINT sum under ANSI, as its Sum raises it: thrown by
   *  Spark's own exact addition (its error class and message builders are not public). */
  def longOverflow(): ArithmeticException = {
    MathUtils.addExact(Long.MaxValue, 1L)
    new ArithmeticException("long overflow") // not reached: addExact threw Spark's error
  }

  /**
   * A ParseException of one of sql-ext's conditions. Spark builds a ParseException's message from
   * its own conditions only, so the message is made here (SqlExtErrors.message) and handed over
   * through a message-only legacy condition, which Spark prints as it is; the condition, its
   * SQLSTATE and parameters are sql-ext's.
   */
  final class SqlExtParseException(name: String, command: String, parameters: Map[String, String],
      origin: Origin)
    extends ParseException(Some(command), origin, "_LEGACY_ERROR_TEMP_0064",
      Map("msg" -> SqlExtErrors.message(name, parameters))) {
    override def getCondition: String = name
    override def getSqlState: String = SqlExtErrors.sqlState(name)
    override def getMessageParameters: java.util.Map[String, String] = parameters.asJava
    override def getDefaultMessageTemplate: String = SqlExtErrors.template(name)
  }

  /**
   * An AnalysisException of one of sql-ext's conditions (Spark takes its SQLSTATE and template
   * from here). It keeps no query context when the analyzer positions it: PySpark logs an error
   * that has one with its getMessage(), which looks the condition up among Spark's own only and
   * would fail; the position stays in the message ("line 1 pos 14").
   */
  final class SqlExtAnalysisException(name: String, parameters: Map[String, String])
    extends AnalysisException(name, SqlExtErrors.sqlState(name), SqlExtErrors.template(name),
      parameters, None, Some(SqlExtErrors.message(name, parameters))) {
    override def withPosition(origin: Origin): AnalysisException = {
      val positioned = copy(line = origin.line, startPosition = origin.startPosition)
      positioned.setStackTrace(getStackTrace)
      positioned
    }
  }
}

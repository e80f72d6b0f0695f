package io.sqlext.parser

import scala.jdk.CollectionConverters._

import io.sqlext.SqlExtErrors
import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.catalyst.trees.Origin

/**
 * Spark's analysis errors for the rewritten text of a windowed statement, said in the user's
 * terms: the same error condition and parameters without the rewrite's helper columns
 * (`__sx_*`), without the internal plan, and positioned in the text the user wrote (where the
 * unresolved name first occurs), not in the rewritten one. It is raised while parsing, so it is
 * a ParseException (what Spark raises while parsing, whoever wraps the parser); clients show the
 * user's statement with a pointer at the name.
 */
object WindowedErrors {
  private val Helper = "`?__sx_\\w+`?"

  def forUser(error: AnalysisException, userText: String): ParseException =
    Option(error.getCondition) match {
      case Some(condition) if condition.nonEmpty =>
        val parameters = error.getMessageParameters.asScala.map { case (k, v) => k -> clean(v) }
        val named = Seq("objectName", "relationName", "expression").flatMap(parameters.get)
          .headOption
        val origin = named.flatMap(locate(userText, _))
          .getOrElse(Origin(line = Some(1), startPosition = Some(0)))
        if (SqlExtErrors.isOwn(condition)) {
          SqlExtErrors.parse(condition, userText, parameters.getOrElse("message", ""),
            origin.line.getOrElse(1), origin.startPosition.getOrElse(0))
        } else new ParseException(Some(userText), origin, condition, parameters.toMap)
      case _ => SqlExtErrors.parse("SQL_EXT_INVALID_WINDOW",
        userText, clean(error.getSimpleMessage), 1, 0)
    }

  /** Drops helper columns from lists ("[`k`, `__sx_p0`]" -> "[`k`]"). */
  def clean(text: String): String =
    text.replaceAll(s",\\s*$Helper", "").replaceAll(s"$Helper,\\s*", "")

  /** (line, column) of the first whole-word occurrence of a (possibly quoted, qualified)
   *  name's last part in the user's text. */
  def locate(text: String, name: String): Option[Origin] = {
    val last = name.split("\\.").last.replace("`", "").replace("\"", "")
    if (last.isEmpty) return None
    val found = s"(?i)(?<![\\w`])`?${java.util.regex.Pattern.quote(last)}`?(?![\\w`])".r
      .findFirstMatchIn(text)
    found.map { m =>
      val before = text.substring(0, m.start)
      Origin(line = Some(before.count(_ == '\n') + 1),
        startPosition = Some(m.start - (before.lastIndexOf('\n') + 1)))
    }
  }
}

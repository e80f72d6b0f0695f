package io.sqlext.commands

import io.sqlext.Contract
import io.sqlext.SqlExtErrors
import io.sqlext.rewriter.SqlRewriterRegistry
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types._
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * A streaming statement of sql.md section 5 (CREATE, SHOW, STOP, REFRESH, DROP). Streams are
 * run by the Python side (foreachBatch and the Delta MERGE live there), so running the command
 * hands the statement and the client's own session back to the rewriter. A statement that
 * returns when its stream's pass ends (TRIGGER AVAILABLE NOW, REFRESH) waits for it here, in
 * its own thread, where a cancel or a timeout reaches it (AwaitedStreams).
 */
case class StreamStatementCommand(kind: String, sqlText: String) extends LeafRunnableCommand {

  override val output: Seq[Attribute] =
    if (kind == "SHOW") StreamStatementCommand.ShowColumns.map(f =>
      AttributeReference(f.name, f.dataType, nullable = true)())
    else Nil

  override def run(session: SparkSession): Seq[Row] = {
    CancelledStatements.watch(session.sparkContext)  // before this statement can be cancelled
    val statementId = CancelledStatements.idOf(session)
    val answer = JsonMethods.parse(SqlRewriterRegistry.execute(sqlText, session, statementId,
      () => CancelledStatements.interrupted(statementId)))
    answer \ "await" match {
      case JString(token) => AwaitedStreams.await(token, session,
        if (kind == "REFRESH") "REFRESH STREAMING TABLE" else "CREATE STREAMING TABLE")
      case _ =>
    }
    (answer \ "error", answer \ "rows") match {
      case (JString(message), _) => throw SqlExtErrors.analysis(
        answer \ "condition" match {
          case JString(condition) => condition
          case _ => "SQL_EXT_STREAMING_TABLE"
        }, message)
      case (_, JArray(rows)) => rows.map {
        case JArray(values) => Row.fromSeq(values.zip(output).map { case (v, a) =>
          StreamStatementCommand.value(v, a.dataType) })
        case other => throw SqlExtErrors.analysis("SQL_EXT_INTERNAL_ERROR",
          s"malformed row from the rewriter: $other")
      }
      case _ => throw SqlExtErrors.analysis("SQL_EXT_INTERNAL_ERROR",
        s"malformed answer from the rewriter: $answer")
    }
  }
}

object StreamStatementCommand {
  /** The type of each SHOW STREAMS column that is not a string. */
  private val CountColumns = Set("batch", "rows_in", "rows_out", "state_rows", "state_bytes",
    "late_dropped", "not_windowed", "out_of_order_rows", "undecodable_messages")

  /** The columns of SHOW STREAMS, in the contract's order (Contract.ShowStreamsColumns). */
  val ShowColumns: Seq[StructField] = Contract.ShowStreamsColumns.map { name =>
    StructField(name, if (CountColumns(name)) LongType else StringType)
  }

  private def value(json: JValue, dataType: DataType): Any = (json, dataType) match {
    case (JNull | JNothing, _) => null
    case (JBool(b), BooleanType) => b
    case (JInt(i), LongType) => i.toLong
    case (JLong(l), LongType) => l
    case (JDouble(d), LongType) => d.toLong
    case (JString(s), StringType) => s
    case (other, StringType) => JsonMethods.compact(JsonMethods.render(other))
    case (other, _) => throw SqlExtErrors.analysis("SQL_EXT_INTERNAL_ERROR",
      s"unexpected $other for a $dataType column")
  }
}

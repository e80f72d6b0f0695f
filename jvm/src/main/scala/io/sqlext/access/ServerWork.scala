package io.sqlext.access

import scala.util.Try

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.SQLExecution
import org.apache.spark.sql.streaming.{DataStreamWriter, StreamingQuery}

/**
 * Work the server does for a statement the checks judged already, which the checks do not
 * judge again:
 *
 *  - what a judged command that writes data analyses while it runs, on its own thread: Spark's
 *    CTAS writing its new table's files, Delta reading its log and rewriting a table's files,
 *    a MERGE reading its source. Such analyses run inside the command's execution (Spark's SQL
 *    execution id is set on the thread), whose plan the checks tagged as they passed it. Only
 *    the commands of `TrustedRuns` are tagged: they run Spark's or Delta's code over what was
 *    judged, never SQL text of the user's (EXECUTE IMMEDIATE's statement, a SQL script's, a
 *    streaming statement's query are judged when they are analysed);
 *  - a streaming table's stream, started by sql-ext once its statement was judged
 *    (`startStream`), and window_state()'s read of a checkpoint ([[ServerRead]]).
 */
object ServerWork {
  private val JudgedFor = TreeNodeTag[String]("sql_ext.access.judged_for")

  /** Marks the commands of `plan` that write or rewrite data by Spark's or Delta's own code
   *  (`TrustedRuns`) as judged for `user`: what they analyse as they run is theirs. Any other
   *  statement's analyses as it runs are judged when they come: sql-ext's streaming statements
   *  plan the user's query then, EXPLAIN analyses its query then, a SQL function its body. */
  private[access] def judged(plan: LogicalPlan, user: String): Unit =
    plan.foreach { node =>
      if (TrustedRuns(node.getClass.getSimpleName) && node.resolved) {
        node.setTagValue(JudgedFor, user)
      }
    }

  /** Commands whose runs analyse only plans the checks judged with them, or Spark's and
   *  Delta's own reads and writes of the tables they judged: a CTAS's write of its new table's
   *  files, Delta's MERGE, UPDATE and DELETE reading the files they rewrite, OPTIMIZE's and a
   *  clone's reads, a constraint's check of the rows there are. */
  private val TrustedRuns = Set(
    "CreateDataSourceTableAsSelectCommand", "CreateHiveTableAsSelectCommand",
    "OptimizedCreateHiveTableAsSelectCommand", "SaveAsV1TableCommand",
    "InsertIntoHadoopFsRelationCommand", "InsertIntoHiveTable", "InsertIntoDataSourceCommand",
    "InsertIntoDataSourceDirCommand", "InsertIntoHiveDirCommand", "SaveIntoDataSourceCommand",
    "CreateTableAsSelect", "ReplaceTableAsSelect", "AppendData", "OverwriteByExpression",
    "OverwritePartitionsDynamic", "CacheTable", "CacheTableAsSelect", "LoadDataCommand",
    "TruncateTableCommand",
    "CreateDeltaTableCommand", "WriteIntoDelta", "MergeIntoCommand", "DeleteCommand",
    "UpdateCommand", "OptimizeTableCommand", "VacuumTableCommand", "RestoreTableCommand",
    "ConvertToDeltaCommand", "DeltaReorgTableCommand", "DeltaGenerateCommand",
    "TruncateDeltaTableCommand", "CloneTableCommand", "AlterTableAddConstraintDeltaCommand",
    "AlterTableChangeColumnDeltaCommand", "AlterTableSetPropertiesDeltaCommand",
    "AlterTableAddColumnsDeltaCommand", "AlterTableDropColumnsDeltaCommand")

  /** Whether this thread runs, for `user`, a statement the checks passed (the plan of the SQL
   *  execution it is in, or of that execution's root, is tagged for them). */
  private[access] def runningJudged(session: SparkSession, user: String): Boolean = {
    val context = session.sparkContext
    Seq(SQLExecution.EXECUTION_ID_KEY, SQLExecution.EXECUTION_ROOT_ID_KEY)
      .flatMap(key => Option(context.getLocalProperty(key))).distinct
      .flatMap(id => Try(id.toLong).toOption).exists { id =>
        // The execution's plan as given (a judged command's node, run as its own execution);
        // not its analysed plan, which a command made by Spark's code while it runs has not
        // yet, and whose analysis may be the one under way.
        Option(SQLExecution.getQueryExecution(id))
          .exists(_.logical.getTagValue(JudgedFor).contains(user))
      }
  }

  /** A stream's source `name` (a table or a view, as SQL names it): a streaming view as it
   *  is, a table read as a stream, with its rule's filter and masks. Its whole width is not the
   *  user's result: the stream's query over it is judged as sql-ext plans it (the columns the
   *  window reads, its tables and paths). A name of files (delta.`/path`) is judged first. */
  def streamSource(session: SparkSession, name: String): DataFrame = {
    AccessChecks.parsed(session, UnresolvedRelation(
      session.sessionState.sqlParser.parseMultipartIdentifier(name)))
    ServerRead.asServer {
      Try(session.table(name)).toOption.filter(_.isStreaming)
        .getOrElse(session.readStream.table(name))
    }
  }

  /** Starts the stream `writer` writes: its checkpoint is the streaming table's own (judged
   *  as the statement's CHECKPOINT, or the server's default place for it), its query was
   *  judged as the statement was planned. */
  def startStream(writer: DataStreamWriter[_]): StreamingQuery =
    ServerRead.asServer(writer.start())
}

package io.sqlext.access

import scala.util.Try

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.SQLExecution
import org.apache.spark.sql.streaming.{DataStreamWriter, StreamingQuery}

/**
 * Work the server does for a statement the checks judged already, which the checks do not
 * judge again:
 *
 *  - what a judged statement analyses while it runs, on its own thread: Spark's CTAS writing
 *    its new table's files, Delta reading its log and rewriting a table's files, a MERGE
 *    reading its source. Such analyses run inside the statement's execution (Spark's SQL
 *    execution id is set on the thread), whose plan the checks tagged as they passed it. A
 *    statement's own analysis never runs inside an execution: statements a user's text holds
 *    (EXECUTE IMMEDIATE, a SQL script's) are analysed before theirs starts, and judged;
 *  - a streaming table's stream, started by sql-ext once its statement was judged
 *    (`startStream`), and window_state()'s read of a checkpoint ([[ServerRead]]).
 */
object ServerWork {
  private val JudgedFor = TreeNodeTag[String]("sql_ext.access.judged_for")

  /** Marks every node of `plan` as judged for `user`: what runs as part of it is theirs. A
   *  statement that holds a plan it analyses only as it runs (EXPLAIN's, DESCRIBE QUERY's) is
   *  not marked: that analysis is judged when it comes. */
  private[access] def judged(plan: LogicalPlan, user: String): Unit =
    if (PlanWalk.nodes(plan).forall(_.resolved)) plan.foreach(_.setTagValue(JudgedFor, user))

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

  /** Starts the stream `writer` writes: its checkpoint is the streaming table's own (judged
   *  as the statement's CHECKPOINT, or the server's default place for it), its query was
   *  judged as the statement was planned. */
  def startStream(writer: DataStreamWriter[_]): StreamingQuery =
    ServerRead.asServer(writer.start())
}

package io.sqlext.commands

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.sql.SparkSession

/**
 * The Thrift server's statements that a client cancelled or whose time ran out, by statement
 * id, for the statements that wait on a stream (AwaitedStreams). The server cancels a
 * statement's Spark jobs and, when the statement runs in the background, interrupts its thread;
 * a statement run in the client's thread, or one waiting on a stream that runs in its own
 * session, is told only by the server's listener events. Those event classes are private to
 * Spark's Thrift server package, so they are recognised by name: the first field of each is
 * the statement id. The listener bus delivers them late when the server is busy (seconds, on
 * two loaded cores), so the interrupt of a statement's thread, which the server sends before
 * the event, counts at once (`interrupted`); the event then says which of the two it was.
 */
object CancelledStatements {
  private val Events = Map(
    "SparkListenerThriftServerOperationCanceled" -> "cancelled",
    "SparkListenerThriftServerOperationTimeout" -> "stopped by the statement timeout")
  // statement id -> (why, when): kept for an hour, a bound far above any statement's wait.
  private val ended = new ConcurrentHashMap[String, (String, Long)]()
  private val KeptMillis = 3600 * 1000L
  private val watched = java.util.Collections.newSetFromMap(
    new java.util.WeakHashMap[SparkContext, java.lang.Boolean])

  private val Interrupted = "cancelled or stopped by the statement timeout"

  /** Why the statement `statementId` ended early ("cancelled", ...), if it did. */
  def why(statementId: String): Option[String] = Option(ended.get(statementId)).map(_._1)

  /** The server interrupted the thread of the statement `statementId`: it was cancelled or
   *  timed out, and its event may not have come yet. */
  def interrupted(statementId: String): Unit = if (statementId != null) {
    ended.putIfAbsent(statementId, (Interrupted, System.currentTimeMillis()))
  }

  /** `why` for Python: null while the statement goes on. */
  def whyOrNull(statementId: String): String = why(statementId).orNull

  /** The id of the statement this thread runs (null outside a Thrift server's statement): the
   *  server runs each statement in the job group of its id. */
  def idOf(session: SparkSession): String =
    session.sparkContext.getLocalProperty("spark.jobGroup.id")

  /** Listens to `context`'s events (once per context). */
  def watch(context: SparkContext): Unit = watched.synchronized {
    if (watched.add(context)) context.addSparkListener(Listener)
  }

  private object Listener extends SparkListener {
    override def onOtherEvent(event: SparkListenerEvent): Unit =
      Events.get(event.getClass.getSimpleName).foreach { why =>
        event match {
          case fields: Product if fields.productArity > 0 =>
            val now = System.currentTimeMillis()
            ended.put(fields.productElement(0).toString, (why, now))  // says which
            ended.entrySet().removeIf(_.getValue._2 < now - KeptMillis)
          case _ =>
        }
      }
  }
}

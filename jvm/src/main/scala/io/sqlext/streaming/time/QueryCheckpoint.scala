package io.sqlext.streaming.time

import java.util.{Collections, WeakHashMap}

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.StreamingQueryListener
import org.apache.spark.sql.streaming.StreamingQueryListener.{QueryProgressEvent,
  QueryStartedEvent, QueryTerminatedEvent}

/**
 * The checkpoint of the streaming query a task belongs to, for windows whose query sql-ext did
 * not start (a declarative pipeline's flow: the pipeline chooses the checkpoint after the plan
 * is made). Spark posts QueryStartedEvent to a session's listeners synchronously on the
 * query's own thread, before its first batch: there the listener sets a local property, which
 * every job of the query, and so every task, carries.
 */
object QueryCheckpoint {
  val Property = "spark.sql_ext.checkpoint"

  private val watched = Collections.synchronizedSet(
    Collections.newSetFromMap(new WeakHashMap[SparkSession, java.lang.Boolean]()))

  /** Makes the queries `session` starts carry their checkpoint (once per session). */
  def watch(session: SparkSession): Unit =
    if (watched.add(session)) session.streams.addListener(new Listener(session))

  private class Listener(session: SparkSession) extends StreamingQueryListener {
    override def onQueryStarted(event: QueryStartedEvent): Unit =
      session.streams.get(event.id) match {
        case query: StreamingQueryWrapper =>
          // The folder Spark reads the offset log from, as a Path names it (its string, made
          // a Path again by the tasks, is the same folder: spaces and percent signs included).
          val root = query.streamingQuery.offsetLog.metadataPath.getParent.toString
          session.sparkContext.setLocalProperty(Property, root)
        case _ =>
      }
    override def onQueryProgress(event: QueryProgressEvent): Unit = ()
    override def onQueryTerminated(event: QueryTerminatedEvent): Unit = ()
  }
}

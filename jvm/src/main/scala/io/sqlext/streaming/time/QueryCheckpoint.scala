package io.sqlext.streaming.time

import java.net.URI
import java.util.{Collections, WeakHashMap}

import org.apache.hadoop.fs.Path
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
          // A URI (a space is %20); tasks build paths from the plain form.
          val root = new Path(new URI(query.streamingQuery.resolvedCheckpointRoot)).toString
          session.sparkContext.setLocalProperty(Property, root)
        case _ =>
      }
    override def onQueryProgress(event: QueryProgressEvent): Unit = ()
    override def onQueryTerminated(event: QueryTerminatedEvent): Unit = ()
  }
}

package io.sqlext.streaming.catalog

import java.util.concurrent.ConcurrentHashMap

import io.sqlext.streaming.time.{BatchWatermark, IdleClock}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.streaming.StreamingQueryListener
import org.apache.spark.sql.streaming.StreamingQueryListener._
import org.slf4j.LoggerFactory

/**
 * Progress of the streaming tables: each micro-batch is logged (rows in, watermark, state rows
 * and bytes) and added to per-query totals that SHOW STREAMS reads. A JVM listener, because
 * PySpark's classic listener wrapper fails on query-start events in this Spark version.
 */
object StreamProgress {
  private val log = LoggerFactory.getLogger("io.sqlext.streaming")
  private val MaxCurve = 10000

  final class Totals {
    @volatile var rowsIn = 0L
    /** (batch id, state rows) per micro-batch, the newest MaxCurve of them. */
    val stateCurve = new java.util.ArrayDeque[Array[Long]]()
  }

  private val totals = new ConcurrentHashMap[String, Totals]()
  private val watched = java.util.Collections.synchronizedSet(
    java.util.Collections.newSetFromMap(new java.util.WeakHashMap[SparkSession, java.lang.Boolean]))

  /** Listens to the queries of `session` (each session has its own query manager); once. */
  def watch(session: SparkSession): Unit =
    if (watched.add(session)) session.streams.addListener(Listener)

  private val dropCounters = new ConcurrentHashMap[String, StreamCounters]()

  /** The drop counters of the streaming table checkpointed at `checkpoint` (its runs in this
   *  process add up), registered with the session's SparkContext the first time. */
  def counters(session: SparkSession, checkpoint: String): StreamCounters =
    dropCounters.computeIfAbsent(BatchWatermark.qualified(session, checkpoint), cp =>
      new StreamCounters(session.sparkContext.longAccumulator(s"sql_ext late tuples $cp"),
        session.sparkContext.longAccumulator(s"sql_ext NULL event times $cp"),
        session.sparkContext.longAccumulator(s"sql_ext out-of-order rows $cp"),
        session.sparkContext.longAccumulator(s"sql_ext undecodable messages $cp")))

  /** (late tuples dropped, tuples without event time, rows out of ORDER BY order, undecodable
   *  Kafka messages) of a streaming table, for py4j. */
  def dropped(session: SparkSession, checkpoint: String): Array[Long] = {
    val c = counters(session, checkpoint)
    Array(c.lateDropped.value, c.notWindowed.value, c.outOfOrder.value, c.undecodable.value)
  }

  def rowsIn(queryId: String): Long = Option(totals.get(queryId)).map(_.rowsIn).getOrElse(0L)

  /** The state-size curve as [batch, rows, batch, rows, ...] (flat, for py4j). */
  def stateCurve(queryId: String): Array[Long] = Option(totals.get(queryId)) match {
    case Some(t) => t.stateCurve.synchronized(t.stateCurve.toArray(Array.empty[Array[Long]]))
      .flatten
    case None => Array.empty
  }

  private object Listener extends StreamingQueryListener {
    override def onQueryStarted(event: QueryStartedEvent): Unit = ()
    override def onQueryTerminated(event: QueryTerminatedEvent): Unit =
      RunningStreams.terminated(event.id.toString, event.exception)

    override def onQueryProgress(event: QueryProgressEvent): Unit = {
      val p = event.progress
      val t = totals.computeIfAbsent(p.id.toString, _ => new Totals)
      val stateRows = p.stateOperators.map(_.numRowsTotal).sum
      val stateBytes = p.stateOperators.map(_.memoryUsedBytes).sum
      t.rowsIn += p.numInputRows
      // WATERMARK IDLE: the idle clock learns when data last came (the end of its micro-batch:
      // a trigger's start can be long before its sources are read), and its event time.
      p.sources.find(_.description.startsWith(IdleClock.Name)).foreach { clock =>
        val end = java.time.Instant.parse(p.timestamp).toEpochMilli +
          Option(p.durationMs.get("triggerExecution")).map(_.longValue).getOrElse(0L)
        IdleClock.progress(clock.description, p.sources.filterNot(_ eq clock)
          .map(_.numInputRows).sum, end,
          Option(p.eventTime.get("max")).map(java.time.Instant.parse(_).toEpochMilli))
      }
      t.stateCurve.synchronized {
        t.stateCurve.addLast(Array(p.batchId, stateRows))
        if (t.stateCurve.size > MaxCurve) t.stateCurve.removeFirst()
      }
      log.info(s"sql_ext stream ${p.name} batch ${p.batchId}: ${p.numInputRows} rows in " +
        s"(${p.processedRowsPerSecond.round} rows/s), watermark " +
        s"${Option(p.eventTime.get("watermark")).getOrElse("-")}, state $stateRows rows " +
        s"($stateBytes bytes)")
    }
  }
}

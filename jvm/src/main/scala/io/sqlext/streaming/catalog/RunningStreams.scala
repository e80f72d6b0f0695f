package io.sqlext.streaming.catalog

import java.time.Instant
import java.time.temporal.ChronoUnit
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.{DropTablePreEvent, ExternalCatalogEvent,
  ExternalCatalogEventListener, ExternalCatalogWithListener}
import org.apache.spark.sql.streaming.StreamingQuery
import org.slf4j.LoggerFactory

/**
 * The one registry of the streaming tables this process runs: the latest run of each table,
 * running or ended, by "db.table" (lower case). Python starts and stops the streams and reads
 * their runs here (sql_ext.streaming.runs); the JVM needs the same registry for what happens
 * outside Python's calls: a DROP TABLE from any session (JDBC, dbt, PySpark) stops its stream
 * first, and a stream that dies records its failure in the catalog. Safe under concurrent
 * callers: every change is one atomic map operation.
 */
object RunningStreams {
  private val log = LoggerFactory.getLogger("io.sqlext.streaming")

  /** A run of a streaming table: its query, where the table's files are, and this process's
   *  totals (rows written add up over the runs of one stream, its `streamId`). */
  final class Run(val session: SparkSession, val db: String, val table: String,
      val streamId: String, val query: StreamingQuery, @volatile var location: String) {
    private val written = new AtomicLong()
    /** Rows written into the table by this process's runs of the stream. */
    def rowsOut: Long = written.get
    def wrote(rows: Long): Unit = written.addAndGet(rows)
    /** (late, not windowed, out of order) as last logged: a log line only when they grow. */
    @volatile var loggedDrops: Array[Long] = Array(0L, 0L, 0L, 0L)
    def key: String = RunningStreams.key(db, table)
    def isActive: Boolean = query.isActive
  }

  private val runs = new ConcurrentHashMap[String, Run]()
  private val listening = java.util.Collections.synchronizedSet(
    java.util.Collections.newSetFromMap(
      new java.util.WeakHashMap[ExternalCatalogWithListener, java.lang.Boolean]))

  def key(db: String, table: String): String = s"$db.$table".toLowerCase(java.util.Locale.ROOT)

  /** Records `query` as the run of db.table (the previous run's totals carry over when it ran
   *  the same stream), and listens for DROP TABLE on the catalog. */
  def started(session: SparkSession, db: String, table: String, streamId: String,
      location: String, query: StreamingQuery): Run = {
    val catalog = session.sharedState.externalCatalog
    if (listening.add(catalog)) catalog.addListener(DropStopsStream)
    val run = new Run(session, db, table, streamId, query, location)
    val previous = runs.put(run.key, run)
    if (previous != null && previous.streamId == streamId) {
      run.wrote(previous.rowsOut)
      run.loggedDrops = previous.loggedDrops
    }
    run
  }

  /** The latest run of db.table in this process (running or ended), or null. */
  def run(db: String, table: String): Run = runs.get(key(db, table))

  /** The run of db.table while its query is active, or null. */
  def active(db: String, table: String): Run =
    Option(run(db, table)).filter(_.isActive).orNull

  /** Adds a micro-batch's rows written to the run of db.table. */
  def wrote(db: String, table: String, rows: Long): Unit =
    Option(run(db, table)).foreach(_.wrote(rows))

  /** Records the drop figures (late, not windowed, out of order) now logged for db.table's
   *  run; the figures logged before. */
  def swapLoggedDrops(db: String, table: String, late: Long, notWindowed: Long,
      outOfOrder: Long, undecodable: Long): Array[Long] = {
    val now = Array(late, notWindowed, outOfOrder, undecodable)
    Option(run(db, table)) match {
      case Some(r) =>
        val before = r.loggedDrops
        r.loggedDrops = now
        before
      case None => now
    }
  }

  /** Called by the progress listener when any query ends: a stream that died records its
   *  error in the catalog, so SHOW STREAMS of any later process shows it FAILED. */
  def terminated(queryId: String, error: Option[String]): Unit = error.foreach { message =>
    runs.values.asScala.find(_.query.id.toString == queryId).foreach { r =>
      log.error(s"sql_ext stream ${r.db}.${r.table} failed: $message")
      try {
        if (r.session.sharedState.externalCatalog.tableExists(r.db, r.table)) {
          StreamCatalog.update(r.session, r.db, r.table, Map(
            StreamCatalog.StateKey -> "FAILED",
            StreamCatalog.ErrorKey -> StreamCatalog.shortError(message),
            StreamCatalog.ErrorTimeKey ->
              Instant.now().truncatedTo(ChronoUnit.SECONDS).toString).asJava)
        }
      } catch {
        case e: Exception => log.warn(s"could not record the failure of ${r.db}.${r.table}", e)
      }
    }
  }

  /** How long a stop waits for the micro-batch in flight to end (sql_ext.streaming.runner). */
  val StopWaitMillis = 3000L

  /** Stops `query` between two micro-batches when one ends within `waitMillis`; else in the
   *  middle of one, which the next start then redoes (its Delta commit is exactly-once). */
  def stopBetweenBatches(query: StreamingQuery, waitMillis: Long): Unit = {
    val deadline = System.nanoTime() + waitMillis * 1000000L
    while (query.isActive && query.status.isTriggerActive && System.nanoTime() < deadline) {
      Thread.sleep(50)
    }
    query.stop()
  }

  /** DROP TABLE of a streaming table, from any session: its stream stops before the drop. */
  private object DropStopsStream extends ExternalCatalogEventListener {
    override def onEvent(event: ExternalCatalogEvent): Unit = event match {
      case DropTablePreEvent(db, table) =>
        Option(runs.remove(key(db, table))).filter(_.isActive).foreach { r =>
          log.info(s"sql_ext stream $db.$table stops: its table is dropped")
          r.query.stop()
        }
      case _ =>
    }
  }
}

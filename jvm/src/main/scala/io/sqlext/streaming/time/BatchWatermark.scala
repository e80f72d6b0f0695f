package io.sqlext.streaming.time

import java.util.concurrent.ConcurrentHashMap

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.TaskContext
import org.apache.spark.sql.SparkSession

import scala.io.Source

/**
 * The event-time watermark of the running micro-batch, read in a task before the shuffle.
 *
 * Spark hands the batch's watermark to its stateful operators only, after the shuffle; tasks
 * before it see the batch id (a local property of every job of the batch) and nothing else.
 * The watermark Spark evicts with in batch b is the `batchWatermarkMs` of the offset log entry
 * `offsets/b`, written before the batch runs and read back when a restart re-runs it, so it is
 * the same value in every attempt. Knowing it before the shuffle lets late tuples be dropped
 * there and the others be combined into pane partials where they are read.
 */
object BatchWatermark {
  /** MicroBatchExecution.BATCH_ID_KEY and StreamExecution.QUERY_ID_KEY: local properties every
   *  job of a micro-batch carries. */
  private val BatchIdProperty = "streaming.sql.batchId"
  private val QueryIdProperty = "sql.streaming.queryId"
  /** Watermarks read, by query id (new with a new checkpoint, as when one is deleted and the
   *  stream started again from scratch) and offset log entry. */
  private val seen = new ConcurrentHashMap[String, java.lang.Long]()

  /** The checkpoint of a query sql-ext did not start, found when its tasks run
   *  ([[QueryCheckpoint]]). */
  val QueryOwn = ""

  /** The checkpoint folder as Spark resolves it (qualified), for tasks to find offsets/ in. */
  def qualified(session: SparkSession, checkpoint: String): String = {
    if (checkpoint.isEmpty) return QueryOwn
    val path = new Path(checkpoint)
    path.getFileSystem(session.sessionState.newHadoopConf()).makeQualified(path).toString
  }

  /** The watermark (ms) of the micro-batch the calling task belongs to; `hadoopConf`: the
   *  session's, to reach the checkpoint's file system. */
  def current(checkpoint: String, hadoopConf: Configuration): Long = {
    val root = if (checkpoint == QueryOwn) property(QueryCheckpoint.Property) else checkpoint
    val entry = s"$root/offsets/${property(BatchIdProperty)}"
    if (seen.size > 1000) seen.clear() // one entry per batch and stream: keep it small
    seen.computeIfAbsent(s"${property(QueryIdProperty)} $entry",
      _ => java.lang.Long.valueOf(read(entry, hadoopConf)))
  }

  /** The id of the micro-batch the calling task belongs to. */
  def batchId(): Long = property(BatchIdProperty).toLong

  private def property(name: String): String = Option(TaskContext.get())
    .flatMap(c => Option(c.getLocalProperty(name)))
    .getOrElse(throw new IllegalStateException("sql_ext: a streaming TIME_INTERVAL window " +
      s"runs only inside a micro-batch of its streaming table (no $name in this task)"))

  /** The watermark (ms) of the checkpoint's latest offset log entry, 0 without one (driver). */
  def latest(checkpoint: String): Long = {
    val conf = SparkSession.getActiveSession.map(_.sessionState.newHadoopConf())
      .getOrElse(new Configuration())
    val offsets = new Path(checkpoint, "offsets")
    val fs = offsets.getFileSystem(conf)
    if (!fs.exists(offsets)) return 0L
    val batches = fs.listStatus(offsets).map(_.getPath.getName).filter(_.forall(_.isDigit))
    if (batches.isEmpty) 0L else read(s"$checkpoint/offsets/${batches.map(_.toLong).max}", conf)
  }

  /** Offset log format v1: "v1", then the batch metadata as JSON, then one line per source. */
  private def read(entry: String, hadoopConf: Configuration): Long = {
    val path = new Path(entry)
    val in = path.getFileSystem(hadoopConf).open(path)
    try {
      val lines = Source.fromInputStream(in, "UTF-8").getLines().take(2).toList
      require(lines.length == 2 && lines.head.startsWith("v"), s"unexpected offset log $entry")
      new ObjectMapper().readTree(lines(1)).path("batchWatermarkMs").asLong(0L)
    } finally in.close()
  }
}

package io.sqlext.streaming.delta

import java.lang.ref.WeakReference
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import io.sqlext.streaming.time.BatchWatermark
import org.apache.hadoop.fs.Path
import org.apache.hadoop.mapreduce.{Job, TaskAttemptID, TaskID, TaskType}
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl
import org.apache.spark.TaskContext
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.delta.{DeltaLog, DeltaOperations}
import org.apache.spark.sql.delta.actions.{AddFile, SetTransaction}
import org.apache.spark.sql.execution.datasources.OutputWriterFactory
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.streaming.OutputMode
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.{CollectionAccumulator, SerializableConfiguration}

import scala.jdk.CollectionConverters._

/** A Parquet file of late rows a task wrote into the late table's folder, not committed yet. */
final case class StagedLateFile(batch: Long, partition: Int, name: String, bytes: Long,
    rows: Long)

/**
 * LATE ROWS INTO in streaming: the late rows of a micro-batch are written where they are found
 * (before the shuffle, or in the WATERMARK BY processor), straight into the late table's folder
 * as Parquet files, the way Delta's own writers write; the driver then commits the files of
 * the batch's successful tasks in one Delta commit that records the batch
 * ([[LateRowFiles.commit]]). Late rows thus never travel with the firings: no shuffle, no sort,
 * no pass through the window's state, no second read of the micro-batch's rows.
 *
 * Exactly once: a task attempt writes a file of its own name and reports it through an
 * accumulator, which Spark merges for successful attempts only; a partition reported twice (a
 * stage run again) is committed once; files of failed attempts, or of a batch that a restart
 * finds committed, are never in the log (deleted here when known, else left to VACUUM, as
 * Delta's own failed writes are). The commit's SetTransaction makes a replayed batch a no-op.
 */
final class LateRowFiles private (
    val location: String,
    val schema: StructType,
    factory: OutputWriterFactory,
    writeConf: Broadcast[SerializableConfiguration],
    val staged: CollectionAccumulator[StagedLateFile]) extends Serializable {

  /** Executor: a writer of the calling task's late rows ([[LateRowFiles.TaskFile]]). */
  def forTask(): LateRowFiles.TaskFile = new LateRowFiles.TaskFile(this, TaskContext.get(),
    BatchWatermark.batchId())

  /** `rows` (of `schema`) as one Parquet file of micro-batch `batch`, written by attempt
   *  `attemptNumber` of task `partition`, reported for the driver's commit. */
  private def write(rows: Iterator[InternalRow], batch: Long, partition: Int,
      attemptNumber: Int): Unit = {
    val attempt = new TaskAttemptID(new TaskID("sx-late", batch.toInt, TaskType.MAP, partition),
      attemptNumber)
    val context = new TaskAttemptContextImpl(writeConf.value.value, attempt)
    val name = f"part-$partition%05d-${UUID.randomUUID()}-c000" +
      factory.getFileExtension(context)
    val path = new Path(location, name)
    val writer = factory.newInstance(path.toString, schema, context)
    var count = 0L
    try rows.foreach { row =>
      writer.write(row)
      count += 1
    } finally writer.close()
    val bytes = path.getFileSystem(context.getConfiguration).getFileStatus(path).getLen
    staged.add(StagedLateFile(batch, partition, name, bytes, count))
  }
}

object LateRowFiles extends Logging {
  private val Chunk = 4096
  private val End = new Array[InternalRow](0)

  /**
   * The late rows of one task, written to their file on a thread of their own while the task
   * goes on (a side output: the task's own rows need not wait for Parquet's encoding); the
   * file opens with the first late row. `finish()`, at the end of the task, waits for the file
   * and reports it; a task that fails stops the thread (its file is never committed).
   */
  final class TaskFile private[LateRowFiles] (files: LateRowFiles, task: TaskContext,
      batch: Long) {
    private val queue = new java.util.concurrent.LinkedBlockingQueue[Array[InternalRow]]()
    private var chunk = new Array[InternalRow](Chunk)
    private var filled = 0
    private var thread: Thread = _
    @volatile private var failure: Throwable = _

    def add(row: InternalRow): Unit = {
      chunk(filled) = row
      filled += 1
      if (filled == Chunk) flush()
    }

    def finish(): Unit = {
      if (filled > 0) flush()
      if (thread != null) {
        queue.put(End)
        thread.join()
        if (failure != null) throw failure
      }
    }

    private def flush(): Unit = {
      if (thread == null) start()
      queue.put(java.util.Arrays.copyOf(chunk, filled))
      chunk = new Array[InternalRow](Chunk)
      filled = 0
    }

    private def start(): Unit = {
      val (partition, attempt) = (task.partitionId(), task.attemptNumber())
      thread = new Thread(s"sql_ext late rows, batch $batch task $partition") {
        override def run(): Unit = try {
          files.write(Iterator.continually(queue.take()).takeWhile(_ ne End).flatMap(_.iterator),
            batch, partition, attempt)
        } catch { case e: Throwable => failure = e }
      }
      thread.setDaemon(true)
      thread.start()
      task.addTaskCompletionListener[Unit](_ => if (thread.isAlive) thread.interrupt())
    }
  }

  /** The late row writers of the running streams, by qualified checkpoint. Weakly: a running
   *  stream's plan holds its writer; once the stream is gone, so is the writer (with its
   *  broadcast configuration), however many streams a long-lived server starts. */
  private val streams = new ConcurrentHashMap[String, WeakReference[LateRowFiles]]()

  /** Driver, when a stream with LATE ROWS INTO is planned: the writer of its late rows
   *  (`schema`) into the Delta table at `location`. */
  def forStream(session: SparkSession, checkpoint: String, location: String, schema: StructType)
      : LateRowFiles = {
    val job = Job.getInstance(session.sessionState.newHadoopConf())
    val factory = new ParquetFileFormat().prepareWrite(session, job, Map.empty, schema)
    val table = new Path(location)
    val files = new LateRowFiles(
      table.getFileSystem(job.getConfiguration).makeQualified(table).toString, schema, factory,
      session.sparkContext.broadcast(new SerializableConfiguration(job.getConfiguration)),
      session.sparkContext.collectionAccumulator[StagedLateFile](s"sql_ext late rows $location"))
    streams.values().removeIf(_.get == null)
    streams.put(BatchWatermark.qualified(session, checkpoint), new WeakReference(files))
    files
  }

  /** Driver, after micro-batch `batchId` of the stream checkpointed at `checkpoint` computed:
   *  its late rows committed to their table as batch `batchId` of `appId` (once: nothing if the
   *  table has it), or only deleted with `discard` (benchmarks' noop sink). The rows committed. */
  def commit(session: SparkSession, checkpoint: String, appId: String, batchId: Long,
      queryId: String, discard: Boolean): Long = {
    val files = Option(streams.get(BatchWatermark.qualified(session, checkpoint)))
      .map(_.get).orNull
    if (files == null) throw new IllegalStateException(s"sql_ext: no late rows writer for the " +
      s"stream checkpointed at $checkpoint")
    val reported = files.staged.value.asScala.toSeq
    files.staged.reset() // micro-batches run one after the other
    val (ours, stale) = reported.partition(_.batch == batchId)
    // One file per partition: a partition reported twice ran twice (same rows).
    val chosen = ours.groupBy(_.partition).values.map(_.head).toSeq.sortBy(_.partition)
    val table = new Path(files.location)
    val fs = table.getFileSystem(session.sessionState.newHadoopConf())
    def delete(unused: Seq[StagedLateFile]): Unit =
      unused.foreach(f => fs.delete(new Path(table, f.name), false))
    delete(stale ++ ours.diff(chosen))
    if (discard) delete(chosen)
    if (discard || chosen.isEmpty) return 0L
    val log = DeltaLog.forTable(session, table)
    val txn = log.startTransaction(None)
    if (DeltaBatchAppend.committedBatch(session, log, txn.snapshot, appId) >= batchId) {
      delete(chosen) // a batch replayed after a restart: its late rows are in the table
      return 0L
    }
    val now = System.currentTimeMillis()
    val adds = chosen.map(f => AddFile(path = f.name, partitionValues = Map.empty, size = f.bytes,
      modificationTime = now, dataChange = true, stats = s"""{"numRecords":${f.rows}}"""))
    txn.commit(adds :+ SetTransaction(appId, batchId, Some(now)),
      DeltaOperations.StreamingUpdate(OutputMode.Append(), queryId, batchId, None))
    logInfo(s"sql_ext: late rows of batch $batchId: ${adds.length} files committed to $table")
    chosen.map(_.rows).sum
  }
}

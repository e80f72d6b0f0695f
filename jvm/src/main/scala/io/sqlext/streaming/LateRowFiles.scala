package io.sqlext.streaming

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

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

  /** Executor: `rows` (of `schema`) as one Parquet file of the running micro-batch, reported
   *  for the driver's commit; nothing without rows. */
  def write(rows: Iterator[InternalRow]): Unit = if (rows.hasNext) {
    val task = TaskContext.get()
    val batch = BatchWatermark.batchId()
    val attempt = new TaskAttemptID(new TaskID("sx-late", batch.toInt, TaskType.MAP,
      task.partitionId()), task.attemptNumber())
    val context = new TaskAttemptContextImpl(writeConf.value.value, attempt)
    val name = f"part-${task.partitionId()}%05d-${UUID.randomUUID()}-c000" +
      factory.getFileExtension(context)
    val path = new Path(location, name)
    val writer = factory.newInstance(path.toString, schema, context)
    var count = 0L
    try rows.foreach { row =>
      writer.write(row)
      count += 1
    } finally writer.close()
    val bytes = path.getFileSystem(context.getConfiguration).getFileStatus(path).getLen
    staged.add(StagedLateFile(batch, task.partitionId(), name, bytes, count))
  }
}

object LateRowFiles extends Logging {
  /** The late row writers of the running streams, by qualified checkpoint. */
  private val streams = new ConcurrentHashMap[String, LateRowFiles]()

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
    streams.put(BatchWatermark.qualified(session, checkpoint), files)
    files
  }

  /** Driver, after micro-batch `batchId` of the stream checkpointed at `checkpoint` computed:
   *  its late rows committed to their table as batch `batchId` of `appId` (once: nothing if the
   *  table has it), or only deleted with `discard` (benchmarks' noop sink). The rows committed. */
  def commit(session: SparkSession, checkpoint: String, appId: String, batchId: Long,
      queryId: String, discard: Boolean): Long = {
    val files = streams.get(BatchWatermark.qualified(session, checkpoint))
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
    if (chosen.isEmpty) return 0L
    val log = DeltaLog.forTable(session, table)
    val txn = log.startTransaction(None)
    if (discard || DeltaBatchAppend.committedBatch(session, log, txn.snapshot, appId) >= batchId) {
      delete(chosen)
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

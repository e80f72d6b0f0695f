package io.sqlext.streaming.time

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.connector.read.streaming.{MicroBatchStream, Offset}
import org.apache.spark.sql.types.{StructType, TimestampType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import scala.jdk.CollectionConverters._

/**
 * WATERMARK DELAY d IDLE t (spec/sql.md section 8): when the stream's sources bring no rows for t
 * of wall-clock time, its event time keeps passing. A source of its own: each trigger while the
 * others are idle it offers one row whose event time is the last data's highest event time plus the
 * wall-clock time since that data came. The row goes through Spark's watermark, which moves as if
 * event time kept passing, and is then dropped ([[io.sqlext.streaming.StreamingWindows]]); panes
 * complete and close by their usual event-time timers. Its offset is that event time (ms), recorded
 * in the offset log before the micro-batch runs, so a batch replayed after a restart sees the same
 * row.
 *
 * The last data's time (the end of the micro-batch that brought it) and highest event time come
 * from the query's progress ([[io.sqlext.streaming.catalog.StreamProgress]]); after a restart,
 * until data comes, from the checkpoint's last watermark (plus the delay) and the time the stream
 * started.
 */
class IdleClockSource extends TableProvider {
  override def inferSchema(options: CaseInsensitiveStringMap): StructType = IdleClock.Schema

  override def getTable(schema: StructType, partitioning: Array[Transform],
      properties: java.util.Map[String, String]): Table = new IdleClockTable(properties.asScala
    .toMap)
}

private class IdleClockTable(options: Map[String, String]) extends Table with SupportsRead {
  override def name(): String = "sql_ext_idle_clock"
  override def schema(): StructType = IdleClock.Schema
  override def capabilities(): java.util.Set[TableCapability] =
    java.util.EnumSet.of(TableCapability.MICRO_BATCH_READ)

  override def newScanBuilder(o: CaseInsensitiveStringMap): ScanBuilder = () => new Scan {
    override def readSchema(): StructType = IdleClock.Schema
    override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream =
      new IdleClockStream(options("idleMs").toLong, options("delayMs").toLong,
        options("checkpoint"))
  }
}

private final case class IdleOffset(eventMs: Long) extends Offset {
  override def json(): String = eventMs.toString
}

private final case class IdleRow(eventMs: Long) extends InputPartition

private class IdleClockStream(idleMs: Long, delayMs: Long, checkpoint: String)
    extends MicroBatchStream {
  private val id = UUID.randomUUID().toString
  /** When data last came (wall clock, ms) and its highest event time (ms). */
  @volatile private var lastData: (Long, Long) = {
    val watermark = BatchWatermark.latest(checkpoint)
    (System.currentTimeMillis(), if (watermark > 0) watermark + delayMs else Long.MinValue)
  }
  @volatile private var offered = Long.MinValue
  IdleClock.streams.put(id, this)

  def sawData(wallMs: Long, eventMaxMs: Long): Unit =
    lastData = (wallMs, math.max(eventMaxMs, lastData._2))

  override def latestOffset(): Offset = {
    val (at, eventMax) = lastData
    val idle = System.currentTimeMillis() - at
    if (eventMax != Long.MinValue && idle >= idleMs) offered = math.max(offered, eventMax + idle)
    IdleOffset(offered)
  }

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val (from, to) = (IdleClock.ms(start), IdleClock.ms(end))
    if (to > from) Array(IdleRow(to)) else Array.empty
  }

  override def createReaderFactory(): PartitionReaderFactory = IdleClock.Readers
  override def initialOffset(): Offset = IdleOffset(Long.MinValue)
  override def deserializeOffset(json: String): Offset = IdleOffset(json.trim.toLong)
  override def commit(end: Offset): Unit = offered = math.max(offered, IdleClock.ms(end))
  override def stop(): Unit = IdleClock.streams.remove(id)
  /** The progress names a source by this: how
   *  [[io.sqlext.streaming.catalog.StreamProgress]] finds the clock. */
  override def toString: String = s"${IdleClock.Name}[$id]"
}

object IdleClock {
  val Name = "sql_ext_idle_clock"
  /** True on the clock's rows in the window's input: [[io.sqlext.streaming.input.PaneInput]]
   *  drops them. */
  val BeatColumn = "__sx_beat"
  val Schema: StructType = new StructType().add("event_time", TimestampType, nullable = false)
  private[time] val streams = new ConcurrentHashMap[String, IdleClockStream]()

  private[time] def ms(offset: Offset): Long = offset match {
    case IdleOffset(v) => v
    case other => other.json().trim.toLong
  }

  /** A micro-batch's progress: data rows (from the other sources) at `wallMs`, the batch's
   *  highest event time; `source` the clock's description in the progress. */
  def progress(source: String, dataRows: Long, wallMs: Long, eventMaxMs: Option[Long]): Unit =
    if (dataRows > 0 && source.startsWith(Name + "[")) {
      Option(streams.get(source.stripPrefix(Name + "[").stripSuffix("]"))).foreach { s =>
        eventMaxMs.foreach(s.sawData(wallMs, _))
      }
    }

  private[time] object Readers extends PartitionReaderFactory {
    override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
      new PartitionReader[InternalRow] {
        private var done = false
        override def next(): Boolean = { val more = !done; done = true; more }
        override def get(): InternalRow =
          InternalRow(partition.asInstanceOf[IdleRow].eventMs * 1000L)
        override def close(): Unit = ()
      }
  }
}

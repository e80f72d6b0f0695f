package io.sqlext.replay

import io.sqlext.window._
import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.execution.metric.SQLMetric

import scala.collection.mutable

/**
 * Replays one task's tuples, already in arrival order, through a TUMBLING or SLIDING state
 * machine and yields every tuple of every firing tagged with the firing's columns. In keyed
 * mode keys arrive one after another, each replayed alone; in global mode (PUNCT(expr) markers,
 * PARTITION EVICTION) one window sees all keys interleaved in arrival order.
 *
 * `late`: given, the replay hands on no firings but calls it with every tuple a TIME_INTERVAL
 * window drops as late, its event time and the watermark that dropped it (µs): the rows of
 * LATE ROWS INTO ([[io.sqlext.execution.LateRowsWriter]]).
 */
final class WindowReplay(spec: WindowSpec, layout: ReplayLayout, metrics: ReplayMetrics,
    late: Option[(UnsafeRow, Long, Long) => Unit] = None) extends Logging {

  private type Window = ReplayableWindow[UnsafeRow, UnsafeRow]

  private val keyOf = layout.keyProjection
  private val keyOrdering = layout.keyOrdering
  private val joiner = layout.outputJoiner
  private val metaProjection = layout.metaProjection
  private val toUnsafe = layout.unsafeInput
  /** WATERMARK DELAY in µs: after each tuple the watermark is the highest event time less it. */
  private val watermarkDelay: Option[Long] = spec.family match {
    case Family.TimeInterval(Watermark.Delay(seconds)) => Some(Micros.of(seconds))
    case _ => None
  }
  private val pending = mutable.Queue.empty[Firing[UnsafeRow, UnsafeRow]]
  private val emit: Firing[UnsafeRow, UnsafeRow] => Unit =
    if (late.isDefined) _ => () else f => { pending.enqueue(f); metrics.firings += 1 }
  private var skipped = 0L
  private var evicted = 0L
  /** Before the first file: file ranks are >= -1 (-1 for rows from no file). */
  private val NoFile = Long.MinValue

  def run(input: Iterator[InternalRow]): Iterator[InternalRow] = new Iterator[InternalRow] {
    private var window: Window = _
    private var currentKey: UnsafeRow = _
    // The rank of the file being replayed (sql_ext_arrival_file()), for PUNCT().
    private var currentFile = NoFile
    private var clockEnd = 0L
    private var firing: Firing[UnsafeRow, UnsafeRow] = _
    private var meta: UnsafeRow = _
    private var position = 0
    private var finished = false
    private var maxEventTime = Long.MinValue
    private var peak = 0

    override def hasNext: Boolean = {
      while ((firing == null || position >= firing.tuples.length) && !advance()) {}
      firing != null && position < firing.tuples.length
    }

    override def next(): InternalRow = {
      if (!hasNext) throw new NoSuchElementException
      val row = joiner.join(firing.tuples(position), meta)
      position += 1
      row
    }

    /** Takes the next pending firing, replaying input until there is one; false if none yet. */
    private def advance(): Boolean = {
      if (pending.nonEmpty) {
        firing = pending.dequeue()
        meta = metaProjection(metaRow(firing))
        position = 0
        true
      } else if (finished) {
        firing = null
        true
      } else {
        if (input.hasNext) consume(input.next()) else finish()
        false
      }
    }

    private def consume(row: InternalRow): Unit = {
      if (layout.notWindowable(row)) { skipped += 1; metrics.notWindowed += 1; return }
      val clock = layout.clock(row)
      if (spec.replaysGlobally) {
        if (window == null) { window = newWindow(row); clockEnd = layout.clockEnd(row) }
        if (spec.isPanes) { replayPanes(row); return }
        if (spec.timeBased) window.advanceClock(clock)(emit)
        if (layout.isMarker(row)) window.punctuate(clock)(emit)
        else window.insert(keyOf(row).copy(), copyOf(row), clock)(emit)
        peak = math.max(peak, window.partitionCount)
        return
      }
      val key = keyOf(row)
      if (currentKey == null || key != currentKey) {
        endOfKey()
        currentKey = key.copy()
        window = newWindow(row)
        currentFile = NoFile
        clockEnd = layout.clockEnd(row)
      }
      if (spec.timeBased) window.advanceClock(clock)(emit)
      if (spec.isFilePunct) {
        val file = row.getLong(layout.fileOrdinal)
        if (currentFile != NoFile && file != currentFile) window.punctuate(clock)(emit)
        currentFile = file
      }
      window.insert(currentKey, copyOf(row), clock)(emit)
    }

    /** TIME_INTERVAL: a WATERMARK BY marker row, or a tuple followed by its DELAY watermark;
     *  then early firings (EMIT EARLY), whose clock is the highest event time so far. */
    private def replayPanes(row: InternalRow): Unit = layout.watermarkMarker(row) match {
      case Some(watermark) => window.advanceClock(watermark)(emit)
      case None =>
        maxEventTime = math.max(maxEventTime, layout.eventTime(row))
        window.insert(keyOf(row).copy(), copyOf(row), maxEventTime)(emit)
        peak = math.max(peak, window.partitionCount)
        watermarkDelay.foreach(delay => window.advanceClock(maxEventTime - delay)(emit))
        window match {
          case panes: TimeIntervalWindow[UnsafeRow, UnsafeRow] @unchecked =>
            panes.earlyClock(maxEventTime)(emit)
          case _ =>
        }
    }

    /** A key's input ended: its last file ends with a punctuation, and the clock runs out. */
    private def endOfKey(): Unit = if (window != null && currentKey != null) {
      if (spec.isFilePunct) window.punctuate(clockEnd)(emit)
      if (spec.timeBased) window.advanceClock(clockEnd)(emit)
      evicted += window.evictedTuples
      window.discard(currentKey)
    }

    private def finish(): Unit = {
      if (spec.replaysGlobally && window != null) {
        if (spec.timeBased) window.advanceClock(clockEnd)(emit)
        evicted += window.evictedTuples
        window match {
          case panes: TimeIntervalWindow[_, _] =>
            panes.advanceClock(Long.MaxValue)(emit) // the end of a batch: watermark +infinity
            metrics.lateDropped += panes.droppedLate
            if (panes.droppedLate > 0) logWarning(s"sql_ext window ${spec.policyText}: " +
              s"${panes.droppedLate} tuples older than watermark - discard age were dropped")
          case _ =>
        }
      } else endOfKey()
      finished = true
      // Keys replayed one after another hold one partition at a time.
      metrics.sawPartitions(if (spec.replaysGlobally) peak else if (window != null) 1 else 0)
      metrics.evictedDropped += evicted
      if (skipped > 0) {
        logWarning(s"sql_ext window ${spec.policyText}: $skipped rows were not windowed " +
          "because their DELTA value or arrival time is NULL")
      }
      if (evicted > 0) {
        logWarning(s"sql_ext window ${spec.policyText}: PARTITION EVICTION dropped $evicted " +
          "tuples of evicted partitions (EMIT EVICTED would fire them)")
      }
    }
  }

  private def newWindow(firstRow: InternalRow): Window = {
    val origin = layout.clockStart(firstRow)
    val eviction = layout.partitionEviction
    if (spec.isPanes) {
      val panes = new TimeIntervalWindow[UnsafeRow, UnsafeRow](layout.paneSpec,
        r => layout.eventTime(r), keyOrdering, spec.paneEmit)
      late.foreach(keep => panes.onLate = (_, tuple, time, watermark) => keep(tuple, time,
        watermark))
      panes
    } else {
      Windows.of[UnsafeRow, UnsafeRow](spec, layout.deltaValues[UnsafeRow](
        r => layout.deltaValue(r), r => layout.triggerValue(r)), keyOrdering, origin, eviction)
    }
  }

  private def copyOf(row: InternalRow): UnsafeRow = row match {
    case unsafe: UnsafeRow => unsafe.copy()
    case other => toUnsafe(other).copy()
  }

  private def metaRow(f: Firing[UnsafeRow, UnsafeRow]): InternalRow =
    new GenericInternalRow(layout.metaValues(f.windowId, f.event, f.paneIndex,
      layout.arrivalValue(f.tuples.head), layout.arrivalValue(f.tuples.last), f.timing))
}

/** The operator's metrics a replay updates. */
final case class ReplayMetrics(notWindowed: SQLMetric, firings: SQLMetric,
    evictedDropped: SQLMetric, peakPartitions: SQLMetric, lateDropped: SQLMetric) {

  /** Partitions alive at once: bounded by PARTITION EVICTION, not by the input. */
  def sawPartitions(count: Int): Unit =
    if (count > peakPartitions.value) peakPartitions.set(count.toLong)
}

object ReplayMetrics {
  def create(sparkContext: org.apache.spark.SparkContext): Map[String, SQLMetric] = {
    import org.apache.spark.sql.execution.metric.SQLMetrics.createMetric
    Map(
      "numNotWindowed" -> createMetric(sparkContext,
        "rows not windowed (NULL delta value or arrival time)"),
      "numFirings" -> createMetric(sparkContext, "window firings"),
      "numEvictedDropped" -> createMetric(sparkContext,
        "tuples of evicted partitions dropped (no EMIT EVICTED)"),
      "peakPartitions" -> createMetric(sparkContext, "partitions alive at once (peak per task)"),
      "numLateDropped" -> createMetric(sparkContext,
        "late tuples dropped (older than watermark - discard age)"))
  }

  def of(metric: String => SQLMetric): ReplayMetrics = ReplayMetrics(metric("numNotWindowed"),
    metric("numFirings"), metric("numEvictedDropped"), metric("peakPartitions"),
    metric("numLateDropped"))
}

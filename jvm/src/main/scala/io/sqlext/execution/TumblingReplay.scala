package io.sqlext.execution

import io.sqlext.window.{Flush, TumblingPolicy, TumblingWindow, WindowSpec}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.unsafe.types.UTF8String

import scala.collection.mutable

/**
 * Replays one task's tuples, already in arrival order, through [[TumblingWindow]] and yields
 * every tuple of every flush tagged with its firing. Keys arrive one after another unless the
 * policy is PUNCT(expr), whose markers flush all partitions of one global replay.
 */
final class TumblingReplay(
    spec: WindowSpec,
    layout: ReplayLayout,
    notWindowed: SQLMetric,
    firings: SQLMetric) extends Logging {

  private type Window = TumblingWindow[UnsafeRow, UnsafeRow]

  private val keyOf = layout.keyProjection
  private val keyOrdering = layout.keyOrdering
  private val joiner = layout.outputJoiner
  private val metaProjection = layout.metaProjection
  private val toUnsafe = layout.unsafeInput
  private val pending = mutable.Queue.empty[Flush[UnsafeRow, UnsafeRow]]
  private var skipped = 0L

  private def newWindow(firstRow: InternalRow): Window = {
    val policy = spec.policy match {
      case "count" => TumblingPolicy.Count(spec.count)
      case "delta" => TumblingPolicy.Delta(layout.deltaThreshold)
      case "time" =>
        val origin = firstRow.getLong(layout.clockStartOrdinal)
        TumblingPolicy.Time(origin, math.round(spec.seconds * 1e6).max(1L))
      case "punct" | "punct_expr" => TumblingPolicy.Punct
    }
    new TumblingWindow[UnsafeRow, UnsafeRow](policy, r => layout.deltaValue(r), keyOrdering)
  }

  private val emit: Flush[UnsafeRow, UnsafeRow] => Unit = f => { pending.enqueue(f); firings += 1 }

  def run(input: Iterator[InternalRow]): Iterator[InternalRow] = new Iterator[InternalRow] {
    private var window: Window = _
    private var currentKey: UnsafeRow = _
    private var currentFile: UTF8String = _
    private var clockEnd = 0L
    private var flush: Flush[UnsafeRow, UnsafeRow] = _
    private var meta: UnsafeRow = _
    private var position = 0
    private var finished = false

    override def hasNext: Boolean = {
      while ((flush == null || position >= flush.tuples.length) && !advance()) {}
      flush != null && position < flush.tuples.length
    }

    override def next(): InternalRow = {
      if (!hasNext) throw new NoSuchElementException
      val row = joiner.join(flush.tuples(position), meta)
      position += 1
      row
    }

    /** Takes the next pending flush, replaying input until there is one; false if none yet. */
    private def advance(): Boolean = {
      if (pending.nonEmpty) {
        flush = pending.dequeue()
        meta = metaProjection(metaRow(flush))
        position = 0
        true
      } else if (finished) {
        flush = null
        true
      } else {
        if (input.hasNext) consume(input.next()) else { endOfPartition(); endOfInput() }
        false
      }
    }

    private def consume(row: InternalRow): Unit = {
      if (layout.notWindowable(row)) { skipped += 1; notWindowed += 1; return }
      if (spec.policy == "punct_expr") {
        if (window == null) window = newWindow(row)
        if (!row.isNullAt(layout.punctOrdinal) && row.getBoolean(layout.punctOrdinal)) {
          window.punctuate()(emit)
        } else {
          window.insert(keyOf(row).copy(), copyOf(row))(emit)
        }
        return
      }
      val key = keyOf(row)
      if (currentKey == null || key != currentKey) {
        endOfPartition()
        currentKey = key.copy()
        window = newWindow(row)
        currentFile = null
        if (spec.policy == "time") clockEnd = row.getLong(layout.clockEndOrdinal)
      }
      spec.policy match {
        case "time" => window.advanceClock(row.getLong(layout.orderOrdinal))(emit)
        case "punct" =>
          val file = row.getUTF8String(layout.fileOrdinal)
          if (currentFile != null && file != currentFile) window.punctuate()(emit)
          currentFile = file.clone()
        case _ =>
      }
      window.insert(currentKey, copyOf(row))(emit)
    }

    /** A key's input ended: its last file ends with a punctuation, and the clock runs out. */
    private def endOfPartition(): Unit = if (window != null && currentKey != null) {
      spec.policy match {
        case "punct" => window.punctuate()(emit)
        case "time" => window.advanceClock(clockEnd)(emit)
        case _ =>
      }
      window.discard(currentKey)
    }

    private def endOfInput(): Unit = {
      finished = true
      if (skipped > 0) {
        logWarning(s"sql_ext window ${spec.policyText}: $skipped rows were not windowed " +
          "because their DELTA value or arrival time is NULL")
      }
    }
  }

  private def copyOf(row: InternalRow): UnsafeRow = row match {
    case unsafe: UnsafeRow => unsafe.copy()
    case other => toUnsafe(other).copy()
  }

  private def metaRow(f: Flush[UnsafeRow, UnsafeRow]): InternalRow = {
    val values = layout.meta.map(_.name).map {
      case WindowSpec.FireColumn | "__sx_wid" => f.windowId
      case "__sx_pstart" => layout.arrivalValue(f.tuples.head)
      case "__sx_pend" => layout.arrivalValue(f.tuples.last)
      case "__sx_timing" => UTF8String.fromString("ON_TIME")
      case "__sx_pidx" => 0L
      case "__sx_event" => UTF8String.fromString("FLUSH")
    }
    new GenericInternalRow(values.toArray[Any])
  }
}

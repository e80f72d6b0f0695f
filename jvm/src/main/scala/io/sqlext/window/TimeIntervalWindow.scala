package io.sqlext.window

import scala.collection.mutable

/**
 * Pane geometry of TIME_INTERVAL(duration, period, discard, offset), all in one integral time
 * unit (microseconds): panes [N*period + offset, N*period + offset + duration).
 */
final case class PaneSpec(duration: Long, period: Long, discard: Long, offset: Long) {
  require(duration > 0 && period > 0 && discard >= 0, s"invalid panes $this")

  def start(n: Long): Long = n * period + offset
  def end(n: Long): Long = start(n) + duration

  /** N of every pane containing `time` (none when it falls in a gap, period > duration). */
  def panesOf(time: Long): Iterator[Long] = {
    val last = Math.floorDiv(time - offset, period)
    val first = Math.floorDiv(time - offset - duration, period) + 1
    Iterator.range(0, (last - first + 1).toInt).map(first + _)
  }
}

/**
 * The event-time window of semantics.md section 6: panes are created lazily by their first
 * tuple, complete when the watermark reaches their end, trigger each partition updated since its
 * last trigger (first ON_TIME, then LATE re-firings with indexes 1, 2, ...), and close at end +
 * discard age. Tuples older than watermark - discard age are dropped and counted. Watermarks
 * arrive through `advanceClock` and only ever move forward.
 */
final class TimeIntervalWindow[K, T](
    panes: PaneSpec,
    eventTimeOf: T => Long,
    keyOrder: Ordering[K]) extends ReplayableWindow[K, T] {

  private final class Pane {
    var complete = false
    val partitions = mutable.HashMap.empty[K, mutable.ArrayBuffer[T]]
    val fresh = mutable.HashSet.empty[K]
    val firings = mutable.HashMap.empty[K, Long]
  }

  private val open = mutable.TreeMap.empty[Long, Pane]
  private var watermark = Long.MinValue
  private var late = 0L

  def currentWatermark: Long = watermark
  def openPanes: Int = open.size

  /** Tuples dropped because they were older than watermark - discard age. */
  def droppedLate: Long = late

  override def partitionCount: Int = open.valuesIterator.map(_.partitions.size).sum
  override def evictedTuples: Long = 0L

  override def insert(key: K, tuple: T, clock: Long)(emit: Firing[K, T] => Unit): Unit = {
    val time = eventTimeOf(tuple)
    if (watermark != Long.MinValue && time < watermark - panes.discard) { late += 1; return }
    panes.panesOf(time).foreach { n =>
      val pane = open.getOrElseUpdate(n, new Pane)
      pane.partitions.getOrElseUpdate(key, mutable.ArrayBuffer.empty[T]) += tuple
      pane.fresh += key
    }
  }

  override def punctuate(clock: Long)(emit: Firing[K, T] => Unit): Unit = ()

  /** A watermark: ignored unless it advances; then complete, trigger and close panes. */
  override def advanceClock(now: Long)(emit: Firing[K, T] => Unit): Unit = if (now > watermark) {
    watermark = now
    val closed = mutable.ArrayBuffer.empty[Long]
    open.foreach { case (n, pane) =>
      if (!pane.complete && now >= panes.end(n)) pane.complete = true
      if (pane.complete && pane.fresh.nonEmpty) {
        pane.fresh.toSeq.sorted(keyOrder).foreach { key =>
          val index = pane.firings.getOrElse(key, 0L)
          pane.firings(key) = index + 1
          emit(Firing(key, n, pane.partitions(key).toIndexedSeq, Firing.Trigger, index))
        }
        pane.fresh.clear()
      }
      if (pane.complete && now - panes.discard >= panes.end(n)) closed += n
    }
    closed.foreach(open.remove)
  }

  override def discard(key: K): Unit = ()
}

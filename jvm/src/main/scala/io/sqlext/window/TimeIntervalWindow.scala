package io.sqlext.window

import scala.collection.mutable

/**
 * The event-time window of semantics.md section 6 in batch replay: panes are created lazily by
 * their first tuple and each partition of a pane follows [[PaneRule]] (complete at W >= end,
 * fire when updated, first ON_TIME, then LATE with indexes 1, 2, ...; close at end + discard).
 * Tuples the rule calls late are dropped and counted. Watermarks arrive through `advanceClock`
 * and only ever move forward.
 */
final class TimeIntervalWindow[K, T](
    panes: PaneSpec,
    eventTimeOf: T => Long,
    keyOrder: Ordering[K]) extends ReplayableWindow[K, T] {

  private val rule = PaneRule(panes)

  /** One partition of one pane: its tuples and its place in the rule. */
  private final class Part(var state: PaneState) {
    val tuples = mutable.ArrayBuffer.empty[T]
  }

  private val open = mutable.TreeMap.empty[Long, mutable.HashMap[K, Part]]
  private var watermark = Long.MinValue
  private var late = 0L

  def currentWatermark: Long = watermark
  def openPanes: Int = open.size

  /** Tuples dropped because they were older than watermark - discard age. */
  def droppedLate: Long = late

  override def partitionCount: Int = open.valuesIterator.map(_.size).sum
  override def evictedTuples: Long = 0L

  override def insert(key: K, tuple: T, clock: Long)(emit: Firing[K, T] => Unit): Unit = {
    val time = eventTimeOf(tuple)
    if (rule.isLate(time, watermark)) { late += 1; return }
    panes.panesOf(time).foreach { n =>
      val part = open.getOrElseUpdate(n, mutable.HashMap.empty[K, Part])
        .getOrElseUpdate(key, new Part(PaneState.Created))
      part.state = part.state.added
      part.tuples += tuple
    }
  }

  override def punctuate(clock: Long)(emit: Firing[K, T] => Unit): Unit = ()

  /** A watermark: ignored unless it advances; then every open pane takes one step. */
  override def advanceClock(now: Long)(emit: Firing[K, T] => Unit): Unit = if (now > watermark) {
    watermark = now
    val closed = mutable.ArrayBuffer.empty[Long]
    open.foreach { case (n, parts) =>
      val fired = mutable.ArrayBuffer.empty[(K, Long, IndexedSeq[T])]
      parts.filterInPlace { (key, part) =>
        val step = rule.advance(n, part.state, now)
        step.fired.foreach(index => fired += ((key, index, part.tuples.toIndexedSeq)))
        step.next.foreach(part.state = _)
        step.next.isDefined
      }
      // Partitions of a pane fire in key order: the replay's output order is deterministic.
      fired.sortBy(_._1)(keyOrder).foreach { case (key, index, tuples) =>
        emit(Firing(key, n, tuples, Firing.Trigger, index))
      }
      if (parts.isEmpty) closed += n
    }
    closed.foreach(open.remove)
  }

  override def discard(key: K): Unit = ()

  /** Streaming: every open partition of every pane, to keep between micro-batches. */
  def openParts: Iterator[(Long, K, PaneState, IndexedSeq[T])] = open.iterator.flatMap {
    case (n, parts) => parts.iterator.map { case (key, part) =>
      (n, key, part.state, part.tuples.toIndexedSeq)
    }
  }

  /** Streaming: puts back a partition `openParts` gave, and the watermark and late count. */
  def restore(n: Long, key: K, state: PaneState, tuples: Iterable[T]): Unit = {
    val part = new Part(state)
    part.tuples ++= tuples
    open.getOrElseUpdate(n, mutable.HashMap.empty[K, Part])(key) = part
  }

  def restoreClock(savedWatermark: Long, savedLate: Long): Unit = {
    watermark = savedWatermark
    late = savedLate
  }
}

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
    keyOrder: Ordering[K],
    emitPanes: PaneEmit = PaneEmit.Updates) extends ReplayableWindow[K, T] {

  private val rule = PaneRule(panes, emitPanes)
  /** EMIT EARLY: the lowest clock at which some open pane may fire early. */
  private var nextEarly = Long.MaxValue

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

  /** `clock`: the window's clock (EMIT EARLY), when the tuple arrives. */
  override def insert(key: K, tuple: T, clock: Long)(emit: Firing[K, T] => Unit): Unit = {
    val time = eventTimeOf(tuple)
    if (rule.isLate(time, watermark)) { late += 1; onLate(key, tuple, time, watermark); return }
    panes.panesOf(time).foreach { n =>
      val part = open.getOrElseUpdate(n, mutable.HashMap.empty[K, Part])
        .getOrElseUpdate(key, new Part(rule.created(clock)))
      part.state = part.state.added
      part.tuples += tuple
      nextEarly = math.min(nextEarly, part.state.earlyAt)
    }
  }

  /** Called with each tuple dropped as late, its event time and the watermark that dropped it
   *  (LATE ROWS INTO keeps them). */
  var onLate: (K, T, Long, Long) => Unit = (_, _, _, _) => ()

  /** EMIT EARLY: the clock is at `clock`; incomplete panes that may fire early do, in pane
   *  order, then key order. */
  def earlyClock(clock: Long)(emit: Firing[K, T] => Unit): Unit = if (clock >= nextEarly) {
    nextEarly = Long.MaxValue
    open.foreach { case (n, parts) =>
      val fired = mutable.ArrayBuffer.empty[(K, PaneFiring, IndexedSeq[T])]
      parts.foreach { case (key, part) =>
        rule.early(n, part.state, clock, watermark).foreach { case (firing, after) =>
          part.state = after
          fired += ((key, firing, part.tuples.toIndexedSeq))
        }
        if (part.state.fresh) nextEarly = math.min(nextEarly, part.state.earlyAt)
      }
      fired.sortBy(_._1)(keyOrder).foreach { case (key, firing, tuples) =>
        emit(Firing(key, n, tuples, firing.event, firing.index, firing.timing))
      }
    }
  }

  override def punctuate(clock: Long)(emit: Firing[K, T] => Unit): Unit = ()

  /** A watermark: ignored unless it advances; then every open pane takes one step. */
  override def advanceClock(now: Long)(emit: Firing[K, T] => Unit): Unit = if (now > watermark) {
    watermark = now
    val closed = mutable.ArrayBuffer.empty[Long]
    open.foreach { case (n, parts) =>
      val fired = mutable.ArrayBuffer.empty[(K, PaneFiring, IndexedSeq[T])]
      parts.filterInPlace { (key, part) =>
        val step = rule.advance(n, part.state, now)
        step.fired.foreach(firing => fired += ((key, firing, part.tuples.toIndexedSeq)))
        step.next.foreach(part.state = _)
        step.next.isDefined
      }
      // Partitions of a pane fire in key order: the replay's output order is deterministic.
      fired.sortBy(_._1)(keyOrder).foreach { case (key, firing, tuples) =>
        emit(Firing(key, n, tuples, firing.event, firing.index, firing.timing))
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
    if (state.fresh) nextEarly = math.min(nextEarly, state.earlyAt)
  }

  def restoreClock(savedWatermark: Long, savedLate: Long): Unit = {
    watermark = savedWatermark
    late = savedLate
  }
}

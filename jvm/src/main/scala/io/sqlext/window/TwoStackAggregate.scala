package io.sqlext.window

import io.sqlext.aggregate.{AggregateLayout, Partials}

import scala.collection.mutable

/**
 * A tuple as the aggregating path keeps it: only the aggregate inputs (each as its
 * [[io.sqlext.aggregate.PartialAggregate]] reads it, with a NULL mask), the arrival value for
 * PANE_START/PANE_END, and the DELTA attributes.
 */
final case class CompactTuple(
    inputs: Array[Long],
    nulls: Array[Boolean],
    arrival: Any,
    evictValue: Double,
    triggerValue: Double)

/**
 * FIFO aggregation with two stacks: `back` takes insertions with a running partial, `front`
 * serves evictions from the oldest end with suffix partials. Merging partials is associative,
 * so a window with FIFO eviction pays amortised O(1) per insert, evict and query instead of
 * re-reading the window at every trigger. Removing from the middle (DELTA eviction after values
 * went backwards) rebuilds from the remaining tuples.
 */
final class TwoStackAggregate(layout: AggregateLayout) {
  private val front = mutable.ArrayBuffer.empty[Partials] // suffix partials, oldest last
  private val frontTuples = mutable.ArrayBuffer.empty[CompactTuple]
  private val backTuples = mutable.ArrayBuffer.empty[CompactTuple]
  private var back: Partials = layout.empty

  private def of(t: CompactTuple): Partials = TwoStackAggregate.of(layout, t)

  def push(t: CompactTuple): Unit = {
    backTuples += t
    back = layout.merge(back, of(t))
  }

  def popOldest(): Unit = {
    if (frontTuples.isEmpty) {
      // Move the back stack over, newest first, so the oldest ends on top.
      var acc = layout.empty
      var i = backTuples.length - 1
      while (i >= 0) {
        acc = layout.merge(of(backTuples(i)), acc)
        front += acc
        frontTuples += backTuples(i)
        i -= 1
      }
      backTuples.clear()
      back = layout.empty
    }
    front.remove(front.length - 1)
    frontTuples.remove(frontTuples.length - 1)
  }

  def rebuild(tuples: Iterable[CompactTuple]): Unit = {
    front.clear(); frontTuples.clear(); backTuples.clear(); back = layout.empty
    tuples.foreach(push)
  }

  /** The partials of the window's tuples. */
  def current: Partials = if (front.isEmpty) back else layout.merge(front.last, back)
}

object TwoStackAggregate {

  /** The partials of one tuple. */
  def of(layout: AggregateLayout, t: CompactTuple): Partials = {
    val p = layout.empty
    var i = 0
    while (i < layout.size) {
      if (!t.nulls(i)) layout.add(p, i, t.inputs(i))
      i += 1
    }
    p
  }

  /** The partials of `tuples` in arrival order (a firing of evicted tuples). */
  def over(layout: AggregateLayout, tuples: Iterable[CompactTuple]): Partials = {
    val p = layout.empty
    tuples.foreach(t => layout.mergeInto(p, of(layout, t)))
    p
  }
}

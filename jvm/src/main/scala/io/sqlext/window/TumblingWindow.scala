package io.sqlext.window

import scala.collection.mutable

/** How a tumbling window decides that it is full (semantics.md section 2). */
sealed trait TumblingPolicy

object TumblingPolicy {

  /** count(n): flush when a partition holds n tuples, the new one included. */
  final case class Count(n: Long) extends TumblingPolicy {
    require(n >= 1, s"COUNT($n): the count must be at least 1")
  }

  /** delta(attr, d): flush before inserting a tuple whose value exceeds the oldest by > d. */
  final case class Delta(d: Double) extends TumblingPolicy

  /** time(t): window-wide ticks every `period` clock units from `origin`. */
  final case class Time(origin: Long, period: Long) extends TumblingPolicy {
    require(period > 0, s"TIME: the period must be positive, got $period")
  }

  /** punct(): flush every partition on a window punctuation. */
  case object Punct extends TumblingPolicy
}

/**
 * The SPL tumbling window of semantics.md sections 2, 4 and 5, free of Spark types so that
 * batch and streaming drive the same rules. Partitions are independent; a count, time or punct
 * flush removes the partition (it reappears with its next tuple), and `windowId` counts the
 * firings of each key.
 *
 * @param valueOf the delta attribute of a tuple (only read by the Delta policy)
 * @param keyOrder order in which one event fires several partitions
 */
final class TumblingWindow[K, T](
    policy: TumblingPolicy,
    valueOf: T => Double,
    keyOrder: Ordering[K],
    partitionEviction: Option[PartitionEvictionPolicy] = None,
    emitEvicted: Boolean = false) extends CheckpointedWindow[K, T] {
  import TumblingPolicy._

  private val store = new PartitionStore[K, T](keyOrder, partitionEviction, emitEvicted)
  private var nextTick: Long = policy match {
    case Time(origin, period) => origin + period
    case _ => Long.MaxValue
  }

  override def partitionCount: Int = store.partitionCount

  /** Tuples of evicted partitions that were dropped (no EMIT EVICTED). */
  override def evictedTuples: Long = store.evictedTuples

  override def insert(key: K, tuple: T, clock: Long)(emit: Firing[K, T] => Unit): Unit = {
    store.checkAge(clock, emit)
    policy match {
      case Count(n) =>
        if (store.append(key, tuple, clock, emit) >= n) flush(key, emit)
      case Delta(d) =>
        val tuples = store.tuples(key)
        // Compared with the OLDEST tuple, strictly; a smaller value never tumbles.
        if (tuples.nonEmpty && valueOf(tuple) - valueOf(tuples.head) > d) {
          store.fire(key, Firing.Flush, emit, keep = true)
        }
        store.append(key, tuple, clock, emit)
      case Time(_, _) | Punct =>
        store.append(key, tuple, clock, emit)
    }
  }

  /** A window punctuation: flushes every partition holding tuples, in key order. */
  override def punctuate(clock: Long)(emit: Firing[K, T] => Unit): Unit = {
    store.checkAge(clock, emit)
    store.keysInOrder.foreach(k => flush(k, emit))
  }

  /**
   * Moves the clock of a TIME window to `now`: every tick at or before `now` fires, so a tuple
   * arriving exactly on a tick joins the next window. Ticks over an empty window produce no
   * firing, so the clock jumps over them instead of looping.
   */
  override def advanceClock(now: Long)(emit: Firing[K, T] => Unit): Unit = policy match {
    case Time(origin, period) =>
      while (now >= nextTick) {
        store.checkAge(nextTick, emit)
        store.keysInOrder.foreach(k => flush(k, emit))
        nextTick = if (store.partitionCount == 0) {
          origin + (Math.floorDiv(now - origin, period) + 1) * period
        } else nextTick + period
      }
    case _ =>
  }

  override def save(key: K): PartitionState[T] =
    PartitionState(store.snapshot(key, copy = true).toIndexedSeq, store.firings(key),
      lastInsert = store.lastInsert(key))

  override def restore(key: K, state: PartitionState[T]): Unit =
    store.restore(key, state.tuples, state.firings, state.lastInsert)

  override def nextTickAt: Long = nextTick

  override def holds(key: K): Boolean = store.contains(key)

  override def recencyOrder: Seq[K] = store.recencyOrder

  /** Forgets a partition without firing it (batch: its input ended before the window filled). */
  override def discard(key: K): Unit = store.discard(key)

  private def flush(key: K, emit: Firing[K, T] => Unit): Unit =
    store.fire(key, Firing.Flush, emit, keep = false)
}

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

/** One flush of one partition: the tuples in arrival order and the partition's flush number. */
final case class Flush[K, T](key: K, windowId: Long, tuples: scala.collection.IndexedSeq[T])

/**
 * The SPL tumbling window of semantics.md sections 2 and 4, free of Spark types so that batch and
 * streaming drive the same rules. Partitions are independent; a flush removes the partition (it
 * reappears with its next tuple), and `windowId` counts the flushes of each key.
 *
 * @param valueOf the delta attribute of a tuple (only read by the Delta policy)
 * @param keyOrder order in which one punctuation or tick flushes several partitions
 */
final class TumblingWindow[K, T](
    policy: TumblingPolicy,
    valueOf: T => Double,
    keyOrder: Ordering[K]) {
  import TumblingPolicy._

  private val partitions = mutable.LinkedHashMap.empty[K, mutable.ArrayBuffer[T]]
  private val flushCounts = mutable.HashMap.empty[K, Long]
  private var nextTick: Long = policy match {
    case Time(origin, period) => origin + period
    case _ => Long.MaxValue
  }

  def partitionCount: Int = partitions.size

  // Batch replays feed one key after another: remembering the last partition skips a hash
  // lookup per tuple. Invalidated whenever a partition is removed.
  private var lastKey: AnyRef = _
  private var lastBuffer: mutable.ArrayBuffer[T] = _

  private def buffer(key: K): mutable.ArrayBuffer[T] = {
    if (lastBuffer == null || !(lastKey eq key.asInstanceOf[AnyRef])) {
      lastBuffer = partitions.getOrElseUpdate(key, mutable.ArrayBuffer.empty[T])
      lastKey = key.asInstanceOf[AnyRef]
    }
    lastBuffer
  }

  private def remove(key: K): Option[mutable.ArrayBuffer[T]] = {
    lastBuffer = null
    lastKey = null
    partitions.remove(key)
  }

  /** Inserts one tuple into partition `key`, emitting the flush it causes, if any. */
  def insert(key: K, tuple: T)(emit: Flush[K, T] => Unit): Unit = policy match {
    case Count(n) =>
      val tuples = buffer(key)
      tuples += tuple
      if (tuples.length >= n) flush(key, emit)
    case Delta(d) =>
      val tuples = buffer(key)
      // Compared with the OLDEST tuple, strictly; a smaller value never tumbles.
      if (tuples.nonEmpty && valueOf(tuple) - valueOf(tuples.head) > d) {
        flush(key, emit)
        buffer(key) += tuple
      } else {
        tuples += tuple
      }
    case Time(_, _) | Punct =>
      buffer(key) += tuple
  }

  /** A window punctuation: flushes every partition holding tuples, in key order. */
  def punctuate()(emit: Flush[K, T] => Unit): Unit = flushAll(emit)

  /**
   * Moves the clock of a TIME window to `now`: every tick at or before `now` fires, so a tuple
   * arriving exactly on a tick joins the next window. Ticks over an empty window produce no
   * flush, so the clock jumps over them instead of looping.
   */
  def advanceClock(now: Long)(emit: Flush[K, T] => Unit): Unit = policy match {
    case Time(origin, period) if now >= nextTick =>
      flushAll(emit)
      nextTick = origin + (Math.floorDiv(now - origin, period) + 1) * period
    case _ =>
  }

  /** Forgets a partition without firing it (batch: its input ended before the window filled). */
  def discard(key: K): Unit = {
    remove(key)
    flushCounts.remove(key)
  }

  private def flushAll(emit: Flush[K, T] => Unit): Unit = {
    val keys = partitions.keys.toSeq.sorted(keyOrder)
    keys.foreach(k => flush(k, emit))
  }

  private def flush(key: K, emit: Flush[K, T] => Unit): Unit = {
    val tuples = remove(key).getOrElse(mutable.ArrayBuffer.empty[T])
    if (tuples.nonEmpty) {
      val id = flushCounts.getOrElse(key, 0L)
      flushCounts(key) = id + 1
      emit(Flush(key, id, tuples))
    }
  }
}

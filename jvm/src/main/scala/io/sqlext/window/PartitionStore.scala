package io.sqlext.window

import scala.collection.mutable

/**
 * Partitions of one window: tuple buffers in arrival order, per-key firing numbers, the
 * window-wide tuple total and, with PARTITION EVICTION, recency and victim eviction. Shared by
 * the tumbling and sliding state machines.
 */
final class PartitionStore[K, T](
    keyOrder: Ordering[K],
    eviction: Option[PartitionEvictionPolicy],
    emitEvicted: Boolean) {

  private val partitions = mutable.LinkedHashMap.empty[K, mutable.ArrayDeque[T]]
  private val firingCounts = mutable.HashMap.empty[K, Long]
  private val recency = eviction.map(new PartitionRecency[K](_))
  private var total = 0L
  private var dropped = 0L
  /** Called with the key of every partition that eviction removes (its policy state goes). */
  var onEvicted: K => Unit = _ => ()
  /** Follows every change of the buffers (the incremental aggregates). */
  var listener: Option[StoreListener[K, T]] = None

  // Batch replays feed one key after another: remembering the last partition skips a hash
  // lookup per tuple. Invalidated whenever a partition is removed.
  private var lastKey: AnyRef = _
  private var lastBuffer: mutable.ArrayDeque[T] = _

  def partitionCount: Int = partitions.size
  def totalTuples: Long = total
  def evictedTuples: Long = dropped
  def contains(key: K): Boolean = partitions.contains(key)
  def size(key: K): Int = partitions.get(key).map(_.length).getOrElse(0)
  def keysInOrder: Seq[K] = partitions.keys.toSeq.sorted(keyOrder)

  /** The buffer of `key`, created empty if absent. */
  def tuples(key: K): mutable.ArrayDeque[T] = {
    if (lastBuffer == null || !(lastKey eq key.asInstanceOf[AnyRef])) {
      lastBuffer = partitions.getOrElseUpdate(key, mutable.ArrayDeque.empty[T])
      lastKey = key.asInstanceOf[AnyRef]
    }
    lastBuffer
  }

  /** Appends a tuple, then runs the count-type partition eviction checks; the partition's
   *  size afterwards, or 0 when eviction took it. */
  def append(key: K, tuple: T, clock: Long, emit: Firing[K, T] => Unit): Int = {
    val buffer = tuples(key)
    buffer.append(tuple)
    total += 1
    if (listener.isDefined) listener.get.appended(key, tuple)
    if (recency.isEmpty) return buffer.length
    val r = recency.get
    r.touched(key, Micros.secondOf(clock))
    evict(r.overLimit(partitions.size, total, size), emit)
    if (lastBuffer eq buffer) buffer.length else size(key)
  }

  /** A tuple left a partition (sliding eviction); the partition may be removed when empty. */
  def removeOldest(key: K, removeIfEmpty: Boolean): T = {
    val buffer = tuples(key)
    val tuple = buffer.removeHead()
    total -= 1
    listener.foreach(_.removedOldest(key))
    if (removeIfEmpty && buffer.isEmpty) remove(key)
    tuple
  }

  def removeWhere(key: K)(evicts: T => Boolean): Int = {
    val buffer = tuples(key)
    val before = buffer.length
    buffer.filterInPlace(t => !evicts(t))
    total -= before - buffer.length
    if (buffer.length != before) listener.foreach(_.filtered(key, buffer))
    before - buffer.length
  }

  /** The age check, before a tuple, a punctuation or a tick at `clock`. */
  def checkAge(clock: Long, emit: Firing[K, T] => Unit): Unit =
    if (recency.isDefined) evict(recency.get.aged(Micros.secondOf(clock)), emit)

  /** Fires the partition's content (a copy for sliding triggers, the buffer when it goes). */
  def fire(key: K, event: String, emit: Firing[K, T] => Unit, keep: Boolean): Unit = {
    val content = if (keep) partitions.get(key).map(_.clone()) else remove(key)
    content.filter(_.nonEmpty).foreach { tuples =>
      if (keep) {
        total -= tuples.length
        partitions(key).clear()
        listener.foreach(_.filtered(key, Nil))
      }
      emit(Firing(key, nextId(key), tuples, event))
    }
  }

  /** A sliding trigger: the current content, which stays (a copy, or the live buffer for
   *  callers that read it before the next change). */
  def snapshot(key: K, copy: Boolean): scala.collection.IndexedSeq[T] =
    partitions.get(key).map(b => if (copy) b.toIndexedSeq else b).getOrElse(IndexedSeq.empty)

  /** Firings of `key` so far (its next window number). */
  def firings(key: K): Long = firingCounts.getOrElse(key, 0L)

  /** Streaming: puts back a partition saved after an earlier micro-batch; with `lastInsert`
   *  it becomes the most recently inserted into (restore least recent first). */
  def restore(key: K, saved: Iterable[T], firings: Long, lastInsert: Option[Long]): Unit = {
    if (saved.nonEmpty || (lastInsert.isDefined && recency.isDefined)) {
      val buffer = tuples(key)
      buffer ++= saved
      total += saved.size
      saved.foreach(t => listener.foreach(_.appended(key, t)))
    }
    for (r <- recency; second <- lastInsert) r.touched(key, second)
    if (firings > 0) firingCounts(key) = firings
  }

  /** The second of the key's last insertion, while it is in the recency order. */
  def lastInsert(key: K): Option[Long] = recency.flatMap(_.secondOf(key))

  def recencyOrder: Seq[K] = recency.map(_.order).getOrElse(Nil)

  def nextId(key: K): Long = {
    val id = firingCounts.getOrElse(key, 0L)
    firingCounts(key) = id + 1
    id
  }

  /** Batch: the key's input ended; forget it entirely. */
  def discard(key: K): Unit = {
    remove(key)
    firingCounts.remove(key)
  }

  def remove(key: K): Option[mutable.ArrayDeque[T]] = {
    lastBuffer = null
    lastKey = null
    recency.foreach(_.forget(key))
    val removed = partitions.remove(key)
    removed.foreach(b => total -= b.length)
    if (removed.isDefined) listener.foreach(_.removed(key))
    removed
  }

  private def evict(victims: Seq[K], emit: Firing[K, T] => Unit): Unit = {
    victims.sorted(keyOrder).foreach { key =>
      remove(key).filter(_.nonEmpty).foreach { tuples =>
        if (emitEvicted) emit(Firing(key, nextId(key), tuples, Firing.Evicted))
        else dropped += tuples.length
      }
      onEvicted(key)
    }
  }
}

/** Observes a [[PartitionStore]]'s buffers. */
trait StoreListener[K, T] {
  def appended(key: K, tuple: T): Unit
  def removedOldest(key: K): Unit
  def filtered(key: K, remaining: Iterable[T]): Unit
  def removed(key: K): Unit
}

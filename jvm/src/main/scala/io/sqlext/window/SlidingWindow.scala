package io.sqlext.window

import scala.collection.mutable

/** Sliding eviction and trigger policies (semantics.md section 3). Times in clock units. */
sealed trait SlidingPolicy

object SlidingPolicy {
  final case class Count(n: Long) extends SlidingPolicy {
    require(n >= 1, s"COUNT($n): the count must be at least 1")
  }
  final case class Delta(d: Double) extends SlidingPolicy
  final case class Time(size: Long) extends SlidingPolicy
}

/**
 * The SPL sliding window: the per-tuple order of operations of semantics.md 3.1 (a DELTA
 * trigger sees the window before the new tuple; a COUNT trigger after), initialFull per
 * eviction policy, and the Aggregate rule that a trigger before the partition is initially full
 * produces nothing unless `emitIncomplete`. `windowId` numbers every non-empty trigger of a
 * key, output or not.
 *
 * @param evictValueOf the DELTA eviction attribute; @param triggerValueOf the DELTA trigger's
 * @param tickOrigin first TIME trigger tick is tickOrigin + trigger size
 * @param copyOnTrigger false: a trigger hands over the live buffer, for a caller that reads
 *   it at once (the incremental aggregates), instead of a copy of the window
 */
final class SlidingWindow[K, T](
    eviction: SlidingPolicy,
    trigger: SlidingPolicy,
    evictValueOf: T => Double,
    triggerValueOf: T => Double,
    keyOrder: Ordering[K],
    tickOrigin: Long = 0L,
    emitIncomplete: Boolean = false,
    partitionEviction: Option[PartitionEvictionPolicy] = None,
    emitEvicted: Boolean = false,
    copyOnTrigger: Boolean = true) extends CheckpointedWindow[K, T] {
  import SlidingPolicy._

  private val store = new PartitionStore[K, T](keyOrder, partitionEviction, emitEvicted)
  private val full = mutable.HashSet.empty[K]
  private val counters = mutable.HashMap.empty[K, Long]
  private val references = mutable.HashMap.empty[K, Double]
  /** Time eviction: the clock at which each stored tuple was inserted, per partition. */
  private val stamps = mutable.HashMap.empty[K, mutable.ArrayDeque[Long]]
  private var nextTick: Long = trigger match {
    case Time(size) => tickOrigin + size
    case _ => Long.MaxValue
  }
  store.onEvicted = key => { full.remove(key); counters.remove(key); references.remove(key)
    stamps.remove(key) }

  override def partitionCount: Int = store.partitionCount

  def listen(listener: StoreListener[K, T]): Unit = store.listener = Some(listener)
  override def evictedTuples: Long = store.evictedTuples

  override def insert(key: K, tuple: T, clock: Long)(emit: Firing[K, T] => Unit): Unit = {
    advanceClock(clock)(emit)
    store.checkAge(clock, emit)
    trigger match {
      case Delta(d) =>
        val value = triggerValueOf(tuple)
        references.get(key) match {
          case Some(reference) if value - reference > d =>
            fireTrigger(key, emit)
            references(key) = value
          case Some(_) =>
          case None => references(key) = value
        }
      case _ =>
    }
    eviction match {
      case Count(n) =>
        if (store.size(key) >= n) store.removeOldest(key, removeIfEmpty = false)
      case Delta(d) =>
        val value = evictValueOf(tuple)
        // A full scan: tuples can leave from the middle once values go backwards (the
        // reference's window-wide "monotonic" front scan gives the same result per partition).
        if (store.contains(key) && store.removeWhere(key)(t => value - evictValueOf(t) > d) > 0) {
          full.add(key)
        }
      case Time(_) =>
        full.add(key) // time-evicted windows count as full from before their first tuple
    }
    store.append(key, tuple, clock, emit)
    if (!store.contains(key)) return // partition eviction took the partition just inserted into
    eviction match {
      case Count(n) if store.size(key) >= n => full.add(key)
      case Time(_) => stamps.getOrElseUpdate(key, mutable.ArrayDeque.empty[Long]).append(clock)
      case _ =>
    }
    trigger match {
      case Count(m) =>
        val count = counters.getOrElse(key, 0L) + 1
        if (count >= m) { counters(key) = 0L; fireTrigger(key, emit) }
        else counters(key) = count
      case _ =>
    }
  }

  override def punctuate(clock: Long)(emit: Firing[K, T] => Unit): Unit = ()

  /**
   * Timers up to `now`, in time order: a tuple leaves a TIME(s) window once now - stamp > s;
   * a TIME trigger ticks at every multiple of its size after the origin, after the evictions
   * due before it.
   */
  override def advanceClock(now: Long)(emit: Firing[K, T] => Unit): Unit = {
    while (now >= nextTick) {
      evictExpired(nextTick)
      store.checkAge(nextTick, emit)
      store.keysInOrder.foreach(k => fireTrigger(k, emit))
      val Time(size) = trigger
      nextTick = if (store.partitionCount == 0) {
        tickOrigin + (Math.floorDiv(now - tickOrigin, size) + 1) * size
      } else nextTick + size
    }
    evictExpired(now)
  }

  private def evictExpired(now: Long): Unit = eviction match {
    case Time(size) =>
      for (key <- stamps.keys.toSeq) {
        val keyStamps = stamps(key)
        while (keyStamps.nonEmpty && now - keyStamps.head > size) {
          keyStamps.removeHead()
          store.removeOldest(key, removeIfEmpty = true)
        }
        if (keyStamps.isEmpty) stamps.remove(key)
      }
    case _ =>
  }

  /** An empty trigger fires nothing and takes no window number. */
  private def fireTrigger(key: K, emit: Firing[K, T] => Unit): Unit = if (store.size(key) > 0) {
    val id = store.nextId(key)
    if (full.contains(key) || emitIncomplete) {
      emit(Firing(key, id, store.snapshot(key, copyOnTrigger), Firing.Trigger))
    }
  }

  override def save(key: K): PartitionState[T] = PartitionState(
    store.snapshot(key, copy = true).toIndexedSeq, store.firings(key), full.contains(key),
    counters.getOrElse(key, 0L), references.get(key),
    stamps.get(key).map(_.toIndexedSeq).getOrElse(IndexedSeq.empty), store.lastInsert(key))

  override def restore(key: K, state: PartitionState[T]): Unit = {
    store.restore(key, state.tuples, state.firings, state.lastInsert)
    if (state.full) full.add(key)
    if (state.counter > 0) counters(key) = state.counter
    state.reference.foreach(references(key) = _)
    if (state.stamps.nonEmpty) stamps(key) = mutable.ArrayDeque.from(state.stamps)
  }

  override def nextTickAt: Long = nextTick

  override def holds(key: K): Boolean = store.contains(key)

  override def recencyOrder: Seq[K] = store.recencyOrder

  /** Batch: the key's input ended; forget it entirely. */
  override def discard(key: K): Unit = {
    store.discard(key)
    full.remove(key); counters.remove(key); references.remove(key); stamps.remove(key)
  }
}

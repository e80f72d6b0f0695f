package io.sqlext.window

/**
 * One firing of one partition: the tuples in arrival order, the key's window number (for
 * TIME_INTERVAL panes: N of the pane start N*period+offset), what caused it: "FLUSH"
 * (tumbling), "TRIGGER" (sliding, panes), "EVICTED" (EMIT EVICTED), "EARLY" or "FINAL" (panes
 * under EMIT EARLY / EMIT FINAL), and for panes the firing's index (0, 1, 2, ...) and timing
 * ([[PaneFiring]]: ON_TIME, LATE, EARLY or FINAL; ON_TIME for tumbling and sliding firings).
 */
final case class Firing[K, T](
    key: K,
    windowId: Long,
    tuples: scala.collection.IndexedSeq[T],
    event: String,
    paneIndex: Long = 0L,
    timing: String = PaneFiring.OnTime)

object Firing {
  val Flush = "FLUSH"
  val Trigger = "TRIGGER"
  val Evicted = "EVICTED"
}

/**
 * What a batch replay or a streaming processor drives. `clock` is the arrival time in the
 * window's clock unit (microseconds in batch replay), used by TIME policies and AGE eviction.
 * Every method reports only firings that produce output (non-empty, and for sliding windows
 * initially full unless EMIT INCOMPLETE).
 */
trait ReplayableWindow[K, T] {
  def insert(key: K, tuple: T, clock: Long)(emit: Firing[K, T] => Unit): Unit

  /** A window punctuation (PUNCT policies). */
  def punctuate(clock: Long)(emit: Firing[K, T] => Unit): Unit

  /** Time passes: timers due at or before `now` fire (TIME policies). */
  def advanceClock(now: Long)(emit: Firing[K, T] => Unit): Unit

  def partitionCount: Int

  /** Batch: the key's input ended; forget its partition without firing it. */
  def discard(key: K): Unit

  /** Tuples of evicted partitions that were dropped (no EMIT EVICTED). */
  def evictedTuples: Long
}

/** A TUMBLING or SLIDING window whose partitions can be kept between streaming micro-batches
 *  (semantics.md section 8). */
trait CheckpointedWindow[K, T] extends ReplayableWindow[K, T] {

  /** Streaming: the state of one partition, to keep between micro-batches. */
  def save(key: K): PartitionState[T]

  /** Streaming: puts back a partition saved by `save` (into a window without it). */
  def restore(key: K, state: PartitionState[T]): Unit

  /** The next TIME tick (clock units), Long.MaxValue without TIME policies. */
  def nextTickAt: Long

  /** The partition is in the window (it may be empty), not only a window number. */
  def holds(key: K): Boolean

  /** PARTITION EVICTION: the partitions, least recently inserted into first. */
  def recencyOrder: Seq[K]
}

/**
 * One partition of a TUMBLING or SLIDING window between two micro-batches: its tuples in
 * arrival order and its policy state (semantics.md section 8: window contents, counters,
 * delta references and initial-full flags survive a checkpoint).
 *
 * @param firings the partition's window number so far
 * @param full SLIDING: the partition has been initially full
 * @param counter SLIDING COUNT trigger: tuples since the last trigger
 * @param reference SLIDING DELTA trigger: the value of the last trigger
 * @param stamps SLIDING TIME eviction: the clock of each tuple's insertion
 * @param lastInsert PARTITION EVICTION: the second of the partition's last insertion, when it
 *   is in the recency order (restore partitions least recent first to rebuild that order)
 */
final case class PartitionState[T](
    tuples: IndexedSeq[T],
    firings: Long,
    full: Boolean = false,
    counter: Long = 0L,
    reference: Option[Double] = None,
    stamps: IndexedSeq[Long] = IndexedSeq.empty,
    lastInsert: Option[Long] = None)

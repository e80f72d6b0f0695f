package io.sqlext.window

/** How a window reads a tuple's DELTA values (numbers as they are, timestamps in µs), and
 *  whether each is a timestamp (its threshold is then seconds, compared in µs). */
final case class DeltaValues[T](
    evict: T => Double,
    evictIsTimestamp: Boolean,
    trigger: T => Double,
    triggerIsTimestamp: Boolean)

/**
 * The one construction of TUMBLING and SLIDING windows from their spec, for batch replay and
 * both streaming processors: the same policies, thresholds and periods whichever drives them.
 */
object Windows {

  /** A DELTA threshold in the units its values are read in. */
  def threshold(d: Double, isTimestamp: Boolean): Double = if (isTimestamp) d * 1e6 else d

  /** `origin`: the tick before the first TIME tick (clock units, µs). */
  def of[K, T](spec: WindowSpec, values: DeltaValues[T], keyOrder: Ordering[K], origin: Long,
      eviction: Option[PartitionEvictionPolicy]): CheckpointedWindow[K, T] = spec.family match {
    case Family.Tumbling(policy) =>
      val flush = policy match {
        case Policy.Count(n) => TumblingPolicy.Count(n)
        case Policy.Delta(d) => TumblingPolicy.Delta(threshold(d, values.evictIsTimestamp))
        case Policy.Time(seconds) => TumblingPolicy.Time(origin, Micros.period(seconds))
        case Policy.FilePunct | Policy.MarkerPunct => TumblingPolicy.Punct
      }
      new TumblingWindow[K, T](flush, values.evict, keyOrder, eviction, spec.emitEvicted)
    case Family.Sliding(_, _) => sliding(spec, values, keyOrder, origin, eviction)
    case Family.TimeInterval(_) =>
      throw new IllegalArgumentException("a TIME_INTERVAL window is a TimeIntervalWindow")
  }

  /** A SLIDING window; `copyOnTrigger = false` for a reader that only aggregates firings. */
  def sliding[K, T](spec: WindowSpec, values: DeltaValues[T], keyOrder: Ordering[K],
      origin: Long, eviction: Option[PartitionEvictionPolicy],
      copyOnTrigger: Boolean = true): SlidingWindow[K, T] = spec.family match {
    case Family.Sliding(evict, trigger) =>
      new SlidingWindow[K, T](slidingPolicy(evict, values.evictIsTimestamp),
        slidingPolicy(trigger, values.triggerIsTimestamp), values.evict, values.trigger,
        keyOrder, origin, spec.emitIncomplete, eviction, spec.emitEvicted, copyOnTrigger)
    case other => throw new IllegalArgumentException(s"not a SLIDING window: $other")
  }

  private def slidingPolicy(policy: Policy, isTimestamp: Boolean): SlidingPolicy = policy match {
    case Policy.Count(n) => SlidingPolicy.Count(n)
    case Policy.Delta(d) => SlidingPolicy.Delta(threshold(d, isTimestamp))
    case Policy.Time(seconds) => SlidingPolicy.Time(Micros.period(seconds))
    case Policy.FilePunct | Policy.MarkerPunct =>
      throw new IllegalArgumentException("SLIDING windows have no PUNCT policy")
  }
}

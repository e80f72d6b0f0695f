package io.sqlext.window

import scala.collection.mutable

/** Aggregates the operator computes itself, incrementally, for SLIDING windows. */
sealed trait AggregateKind

object AggregateKind {
  case object Sum extends AggregateKind
  case object Count extends AggregateKind // COUNT(expr): non-NULL values; COUNT(*) counts 1s
  case object Avg extends AggregateKind
  case object Min extends AggregateKind
  case object Max extends AggregateKind

  def apply(name: String): AggregateKind = name match {
    case "sum" => Sum
    case "count" => Count
    case "avg" => Avg
    case "min" => Min
    case "max" => Max
  }
}

/**
 * A tuple as the aggregating path keeps it: only the aggregate inputs (NaN-free doubles, or
 * longs for integer inputs, with a NULL mask), the arrival value for PANE_START/PANE_END, and
 * the DELTA attributes.
 */
final case class CompactTuple(
    values: Array[Double],
    nulls: Array[Boolean],
    arrival: Any,
    evictValue: Double,
    triggerValue: Double,
    longs: Array[Long] = null)

/**
 * The partial state of all of a query's aggregates over a set of tuples: for each aggregate an
 * accumulator (a long for integer inputs: SUM, MIN, MAX and AVG's sum are exact, as the
 * streaming partials are; a double otherwise) and a count of the non-NULL inputs. `merge` is
 * associative, so windows with FIFO eviction keep partials in two stacks (amortised O(1) per
 * insert, evict and query) instead of re-reading the window at every trigger.
 */
final class Partial(val acc: Array[Double], val n: Array[Long], val exact: Array[Long])

/** @param integral per aggregate: its input is an integer type (accumulated in `exact`) */
final class AggregateLayout(val kinds: Array[AggregateKind], val integral: Array[Boolean])
    extends Serializable {

  def this(kinds: Array[AggregateKind]) = this(kinds, new Array[Boolean](kinds.length))

  private val anyIntegral = integral.contains(true)

  def empty: Partial = {
    val acc = kinds.map {
      case AggregateKind.Min => Double.PositiveInfinity
      case AggregateKind.Max => Double.NegativeInfinity
      case _ => 0.0
    }
    // Firings merge partials per tuple: no long accumulators unless an input is an integer.
    val exact = if (!anyIntegral) null else kinds.map {
      case AggregateKind.Min => Long.MaxValue
      case AggregateKind.Max => Long.MinValue
      case _ => 0L
    }
    new Partial(acc, new Array[Long](kinds.length), exact)
  }

  def of(t: CompactTuple): Partial = {
    val p = empty
    var i = 0
    while (i < kinds.length) {
      if (!t.nulls(i)) {
        if (integral(i)) p.exact(i) = t.longs(i) else p.acc(i) = t.values(i)
        p.n(i) = 1
      }
      i += 1
    }
    p
  }

  def merge(a: Partial, b: Partial): Partial = {
    val out = empty
    var i = 0
    while (i < kinds.length) {
      if (integral(i)) out.exact(i) = kinds(i) match {
        case AggregateKind.Min => math.min(a.exact(i), b.exact(i))
        case AggregateKind.Max => math.max(a.exact(i), b.exact(i))
        case _ => a.exact(i) + b.exact(i)
      } else out.acc(i) = kinds(i) match {
        case AggregateKind.Min => math.min(a.acc(i), b.acc(i))
        case AggregateKind.Max => math.max(a.acc(i), b.acc(i))
        case _ => a.acc(i) + b.acc(i)
      }
      out.n(i) = a.n(i) + b.n(i)
      i += 1
    }
    out
  }

  /** Final values, a Long (COUNT; SUM, MIN, MAX of integers) or a Double; None stands for SQL
   *  NULL (no non-NULL input; COUNT is never NULL). */
  def result(p: Partial): Array[Option[Any]] = kinds.indices.map { i =>
    kinds(i) match {
      case AggregateKind.Count => Some(p.n(i))
      case _ if p.n(i) == 0 => None
      case AggregateKind.Avg if integral(i) => Some(p.exact(i).toDouble / p.n(i))
      case AggregateKind.Avg => Some(p.acc(i) / p.n(i))
      case _ if integral(i) => Some(p.exact(i))
      case _ => Some(p.acc(i))
    }
  }.toArray
}

/**
 * FIFO aggregation with two stacks: `back` takes insertions with a running partial, `front`
 * serves evictions from the oldest end with suffix partials. Removing from the middle (DELTA
 * eviction after values went backwards) rebuilds from the remaining tuples.
 */
final class TwoStackAggregate(layout: AggregateLayout) {
  private val front = mutable.ArrayBuffer.empty[Partial] // suffix partials, oldest last
  private val frontTuples = mutable.ArrayBuffer.empty[CompactTuple]
  private val backTuples = mutable.ArrayBuffer.empty[CompactTuple]
  private var back: Partial = layout.empty

  def push(t: CompactTuple): Unit = {
    backTuples += t
    back = layout.merge(back, layout.of(t))
  }

  def popOldest(): Unit = {
    if (frontTuples.isEmpty) {
      // Move the back stack over, newest first, so the oldest ends on top.
      var acc = layout.empty
      var i = backTuples.length - 1
      while (i >= 0) {
        acc = layout.merge(layout.of(backTuples(i)), acc)
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

  def current: Partial = if (front.isEmpty) back else layout.merge(front.last, back)
}

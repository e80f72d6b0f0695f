package io.sqlext.aggregate

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{DataType, StructField}

/** The partials of a query's aggregates over some tuples: per aggregate an accumulator, the
 *  upper half of an exact sum, and a count of non-NULL inputs ([[PartialAggregate]]). */
final class Partials(val acc: Array[Long], val high: Array[Long], val n: Array[Long]) {
  def this(size: Int) = this(new Array[Long](size), new Array[Long](size), new Array[Long](size))
  def copy(): Partials = new Partials(acc.clone(), high.clone(), n.clone())
}

/**
 * A query's aggregates, the vector form of [[PartialAggregate]] that every path uses: batch
 * SLIDING windows merge partials in two stacks ([[TwoStackAggregate]]), streaming firings
 * compute them in one pass over their tuples ([[over]]), streaming panes and map tasks keep them
 * in rows ([[partialValues]], [[partialsOf]]). Merging is associative, and keeps the older
 * partial first, so MIN and MAX ties resolve as Spark's do over tuples in arrival order.
 */
final class AggregateLayout(val aggregates: Array[PartialAggregate]) extends Serializable {

  def size: Int = aggregates.length

  private val widths = aggregates.map(_.partialTypes.length)

  def empty: Partials = new Partials(size)

  /** Adds a non-NULL input `x` ([[PartialAggregate.read]]) of aggregate `i` to `p`. */
  def add(p: Partials, i: Int, x: Long): Unit = {
    aggregates(i).add(p, i, x)
    p.n(i) += 1
  }

  /** The partials of `older` and `newer` tuples together, as a new value. */
  def merge(older: Partials, newer: Partials): Partials = {
    val out = older.copy()
    mergeInto(out, newer)
    out
  }

  /** Merges the partials of `newer` tuples into `into`, in place. */
  def mergeInto(into: Partials, newer: Partials): Unit = {
    var i = 0
    while (i < size) {
      if (newer.n(i) > 0) {
        if (into.n(i) == 0) {
          into.acc(i) = newer.acc(i)
          into.high(i) = newer.high(i)
        } else aggregates(i).combine(into, newer, i)
        into.n(i) += newer.n(i)
      }
      i += 1
    }
  }

  /** The aggregates' values, each in Spark's result type ([[PartialAggregate.resultType]]). */
  def results(p: Partials): Array[Any] = {
    val out = new Array[Any](size)
    var i = 0
    while (i < size) { out(i) = aggregates(i).result(p, i); i += 1 }
    out
  }

  def resultTypes: Seq[DataType] = aggregates.toSeq.map(_.resultType)

  /** The aggregates' values over tuples in Spark's internal form, in arrival order, reading
   *  aggregate i's input at `columns(i)` (-1: COUNT(*)). One pass per aggregate. */
  def over(tuples: scala.collection.IndexedSeq[InternalRow], columns: Array[Int]): Array[Any] = {
    val p = empty
    var i = 0
    while (i < size) {
      val a = aggregates(i)
      val c = columns(i)
      if (c < 0) p.n(i) = tuples.length
      else {
        var j = 0
        while (j < tuples.length) {
          val t = tuples(j)
          if (!t.isNullAt(c)) { a.add(p, i, a.read(t, c)); p.n(i) += 1 }
          j += 1
        }
      }
      i += 1
    }
    results(p)
  }

  /** The columns a row of partials takes: `name(j)` for its j-th column (AVG takes two). */
  def partialFields(name: Int => String): Seq[StructField] = aggregates.toSeq
    .flatMap(_.partialTypes).zipWithIndex.map { case (t, j) => StructField(name(j), t) }

  /** Partials as the values of those columns. */
  def partialValues(p: Partials): Seq[Any] =
    aggregates.indices.flatMap(i => aggregates(i).partialValues(p, i))

  /** Partials held in `values` from `first` on, as [[partialValues]] wrote them. */
  def partialsOf(values: Int => Any, first: Int): Partials = {
    val p = empty
    var at = first
    var i = 0
    while (i < size) {
      aggregates(i).load(values, at, p, i)
      at += widths(i)
      i += 1
    }
    p
  }
}

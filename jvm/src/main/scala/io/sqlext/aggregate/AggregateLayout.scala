package io.sqlext.aggregate

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{DataType, StructField}

/** The partials of a query's aggregates over some tuples: per aggregate an accumulator and a
 *  count of non-NULL inputs ([[PartialAggregate]]). */
final class Partials(val acc: Array[Long], val n: Array[Long])

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

  def empty: Partials = new Partials(new Array[Long](size), new Array[Long](size))

  /** Adds a non-NULL input `x` ([[PartialAggregate.read]]) of aggregate `i` to `p`. */
  def add(p: Partials, i: Int, x: Long): Unit = {
    p.acc(i) = aggregates(i).step(p.acc(i), p.n(i), x)
    p.n(i) += 1
  }

  /** The partials of `older` and `newer` tuples together, as a new value. */
  def merge(older: Partials, newer: Partials): Partials = {
    val out = new Partials(older.acc.clone(), older.n.clone())
    mergeInto(out, newer)
    out
  }

  /** Merges the partials of `newer` tuples into `into`, in place. */
  def mergeInto(into: Partials, newer: Partials): Unit = {
    var i = 0
    while (i < size) {
      if (newer.n(i) > 0) {
        into.acc(i) = if (into.n(i) == 0) newer.acc(i)
          else aggregates(i).combine(into.acc(i), newer.acc(i))
        into.n(i) += newer.n(i)
      }
      i += 1
    }
  }

  /** The aggregates' values, each in Spark's result type ([[PartialAggregate.resultType]]). */
  def results(p: Partials): Array[Any] = {
    val out = new Array[Any](size)
    var i = 0
    while (i < size) { out(i) = aggregates(i).result(p.acc(i), p.n(i)); i += 1 }
    out
  }

  def resultTypes: Seq[DataType] = aggregates.toSeq.map(_.resultType)

  /** The aggregates' values over tuples in Spark's internal form, in arrival order, reading
   *  aggregate i's input at `columns(i)` (-1: COUNT(*)). One pass per aggregate. */
  def over(tuples: scala.collection.IndexedSeq[InternalRow], columns: Array[Int]): Array[Any] = {
    val out = new Array[Any](size)
    var i = 0
    while (i < size) {
      val a = aggregates(i)
      val c = columns(i)
      var acc = 0L
      var n = 0L
      if (c < 0) n = tuples.length
      else {
        var j = 0
        while (j < tuples.length) {
          val t = tuples(j)
          if (!t.isNullAt(c)) { acc = a.step(acc, n, a.read(t, c)); n += 1 }
          j += 1
        }
      }
      out(i) = a.result(acc, n)
      i += 1
    }
    out
  }

  /** The columns a row of partials takes: `name(j)` for its j-th column (AVG takes two). */
  def partialFields(name: Int => String): Seq[StructField] = aggregates.toSeq
    .flatMap(_.partialTypes).zipWithIndex.map { case (t, j) => StructField(name(j), t) }

  /** Partials as the values of those columns. */
  def partialValues(p: Partials): Seq[Any] =
    aggregates.indices.flatMap(i => aggregates(i).partialValues(p.acc(i), p.n(i)))

  /** Partials held in `values` from `first` on, as [[partialValues]] wrote them. */
  def partialsOf(values: Int => Any, first: Int): Partials = {
    val p = empty
    var at = first
    var i = 0
    while (i < size) {
      p.acc(i) = aggregates(i).partialAcc(values, at)
      p.n(i) = aggregates(i).partialCount(values, at)
      at += widths(i)
      i += 1
    }
    p
  }
}

package io.sqlext.streaming.input

import io.sqlext.Contract
import io.sqlext.aggregate.{AggregateLayout, PartialAggregates, Partials}
import io.sqlext.window.WindowSpec
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._

/**
 * A firing reduced to one row: its partition key, firing columns and the value of each
 * aggregate of the spec (__sx_a0, __sx_a1, ...), in Spark's result type, which the query reads
 * as its aggregates' values. Spares the streaming query from handing every tuple of every
 * firing (a sliding window's tuples many times over) to an aggregation. The arithmetic is the
 * batch path's ([[AggregateLayout]]); map tasks and panes keep partials in rows between
 * ([[partialSchema]]), and the session's ANSI setting decides integer SUM overflow, as for
 * Spark's own SUM (read here, on the driver, when the stream's plan is made).
 */
final class FiringPartials(spec: WindowSpec, input: StructType)
    extends Serializable {
  private val columns: Array[Int] = spec.aggregates.map { case (_, c) =>
    if (c == "*") -1 else input.fieldIndex(c)
  }.toArray

  private val layout = new AggregateLayout(spec.aggregates.zip(columns).map {
    case ((function, column), c) =>
      PartialAggregates.of(function, Option.when(c >= 0)(input(c).dataType), distinct = false,
        filtered = false, ansi = SQLConf.get.ansiEnabled).getOrElse(throw new IllegalArgumentException(
        s"no partial aggregate $function($column) over ${input.simpleString}"))
  }.toArray)

  /** The aggregates' values a firing hands on, each in Spark's result type. */
  def schema: Seq[StructField] = layout.resultTypes.zipWithIndex.map { case (t, i) =>
    StructField(Contract.aggregateColumn(i), t, nullable = true)
  }

  /** The columns of partials in a row (a map task's per pane or file, a pane's state). Their
   *  names and types are those earlier builds wrote, one per partial, so checkpoints resume. */
  def partialSchema: Seq[StructField] = layout.partialFields(j => Contract.aggregateColumn(j))

  /** The aggregates' values over a firing's tuples in Spark's internal form, in arrival order
   *  (the TUMBLING and SLIDING processors'). */
  def over(tuples: scala.collection.IndexedSeq[InternalRow]): Seq[Any] =
    layout.over(tuples, columns).toSeq

  /** Partials before any tuple. */
  def empty: Partials = layout.empty

  /** Adds one tuple (an external Row of `input`) to the partials `p`, in place. */
  def add(p: Partials, tuple: Row): Unit = {
    var i = 0
    while (i < columns.length) {
      val c = columns(i)
      if (c < 0) p.n(i) += 1
      else if (!tuple.isNullAt(c)) layout.add(p, i, layout.aggregates(i).readValue(tuple.get(c)))
      i += 1
    }
  }

  /** Merges the partials held in `from` from index `first` on (as [[partialValues]] wrote them)
   *  into `p`, in place; `p` holds the earlier tuples. */
  def merge(p: Partials, from: Row, first: Int): Unit =
    layout.mergeInto(p, layout.partialsOf(i => from.get(i), first))

  /** Partials as the values of [[partialSchema]]'s columns. */
  def partialValues(p: Partials): Seq[Any] = layout.partialValues(p)

  /** Partials held in `values` from `first` on. */
  def partialsOf(values: Int => Any, first: Int): Partials = layout.partialsOf(values, first)

  /** The aggregates' values of partials. */
  def results(p: Partials): Seq[Any] = layout.results(p).toSeq
}

object FiringPartials {
  def enabled(spec: WindowSpec): Boolean = spec.aggregates.nonEmpty
}

package io.sqlext.streaming.input

import io.sqlext.aggregate.Partials
import org.apache.spark.sql.Row
import org.apache.spark.sql.types.{LongType, StructField, StructType}

import scala.collection.mutable

/**
 * A map task's partial aggregates per partition key and a long (a pane number, a file's rank),
 * before the shuffle ([[PaneInput]], [[FilePunctInput]]); the rows that cross it are the key
 * columns, the long, then the partials of [[FiringPartials.partialSchema]].
 *
 * @param keyCount the leading columns of each input row that are its partition key
 */
final class PartialsByKey(partials: FiringPartials, keyCount: Int) {

  private val open = mutable.HashMap.empty[Any, mutable.LongMap[Partials]]

  /** The partials of `row`'s key, by the long. */
  def of(row: Row): mutable.LongMap[Partials] = {
    val key: Any = if (keyCount == 1) row.get(0) else Row.fromSeq(row.toSeq.take(keyCount))
    open.getOrElseUpdate(key, mutable.LongMap.empty[Partials])
  }

  /** Adds `row` to the partials at `n` of a key's `byLong` (from [[of]]). */
  def add(byLong: mutable.LongMap[Partials], n: Long, row: Row): Unit =
    partials.add(byLong.getOrElseUpdate(n, partials.empty), row)

  /** One row per key and long. */
  def rows: Iterator[Row] = open.iterator.flatMap { case (key, byLong) =>
    val keyValues = if (keyCount == 1) Seq(key) else key.asInstanceOf[Row].toSeq
    byLong.iterator.map { case (n, p) =>
      Row.fromSeq((keyValues :+ n) ++ partials.partialValues(p))
    }
  }
}

object PartialsByKey {

  /** The rows' schema: `keys` of `input`, the long named `column`, then the partials. */
  def schema(input: StructType, keys: Seq[String], column: String,
      partials: FiringPartials): StructType =
    StructType(keys.map(c => input(c)) ++
      (StructField(column, LongType, nullable = false) +: partials.partialSchema))
}

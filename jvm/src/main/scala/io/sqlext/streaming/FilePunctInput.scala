package io.sqlext.streaming

import io.sqlext.window.{Family, Policy, WindowSpec}
import org.apache.spark.sql.{DataFrame, Encoders, Row}
import org.apache.spark.sql.types._

import scala.collection.mutable

/**
 * TUMBLING PUNCT() with partial aggregates and no ORDER BY, before the shuffle: the tuples of
 * one map task combined per (partition key, file). Without ORDER BY a micro-batch's tuples go
 * in in arrival order, which puts a file's tuples together and the files in rank order
 * ([[io.sqlext.expressions.ArrivalSequence]]); every file end punctuates and the micro-batch
 * ends with one ([[FileEnds]]). So each window of a partition is exactly that partition's
 * tuples of one file, and the window holds nothing between micro-batches: its firing is the
 * merge of the partials of that file (one per map task that read a split of it), and the
 * shuffle carries a row per key, file and task instead of every tuple.
 */
object FilePunctInput {

  /** Whether the window's firings can be computed from per-file partials (else the tuples go
   *  to [[WindowProcessor]], as every other TUMBLING and SLIDING window's). */
  def applies(spec: WindowSpec, input: StructType): Boolean =
    spec.family == Family.Tumbling(Policy.FilePunct) && FiringPartials.enabled(spec) &&
      spec.partitionEvictionPolicy.isEmpty && !spec.usesClock &&
      input.fieldNames.contains(WindowSpec.FileColumn) &&
      !input.fieldNames.contains(WindowSpec.OrderColumn)

  /** Key columns, the file's rank (__sx_file), then the partials of [[FiringPartials]] over the
   *  map task's tuples of that key and file. */
  def combined(tuples: DataFrame, spec: WindowSpec): DataFrame = {
    val keys = spec.partitionColumns
    val read = spec.aggregates.map(_._2).filter(_ != "*").distinct.filterNot(keys.contains)
    val narrow = tuples.select((keys ++ read :+ WindowSpec.FileColumn).distinct
      .map(c => tuples.col(s"`$c`")): _*)
    val schema = narrow.schema
    val partials = new FiringPartials(spec, schema, Nil)
    val output = StructType(keys.map(c => schema(c)) ++
      (StructField(WindowSpec.FileColumn, LongType, nullable = false) +: partials.schema))
    val keyCount = keys.length
    val file = schema.fieldIndex(WindowSpec.FileColumn)
    narrow.mapPartitions { rows: Iterator[Row] =>
      // Partition key -> file rank -> partials.
      val open = mutable.HashMap.empty[Any, mutable.LongMap[Array[Any]]]
      rows.foreach { row =>
        val key: Any = if (keyCount == 1) row.get(0)
          else Row.fromSeq(row.toSeq.take(keyCount)) // (none: the whole window's)
        val byFile = open.getOrElseUpdate(key, mutable.LongMap.empty[Array[Any]])
        partials.add(byFile.getOrElseUpdate(row.getLong(file), partials.empty), row)
      }
      open.iterator.flatMap { case (key, byFile) =>
        val keyValues = if (keyCount == 1) Seq(key) else key.asInstanceOf[Row].toSeq
        byFile.iterator.map { case (rank, values) => Row.fromSeq((keyValues :+ rank) ++ values) }
      }
    }(Encoders.row(output)).toDF()
  }
}

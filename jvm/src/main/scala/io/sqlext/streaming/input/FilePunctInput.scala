package io.sqlext.streaming.input

import io.sqlext.window.{Family, Policy, WindowSpec}
import org.apache.spark.sql.{DataFrame, Encoders, Row}
import org.apache.spark.sql.types._

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
   *  to [[io.sqlext.streaming.processors.WindowProcessor]], as every other TUMBLING and
   *  SLIDING window's). */
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
    val partials = new FiringPartials(spec, schema)
    val output = PartialsByKey.schema(schema, keys, WindowSpec.FileColumn, partials)
    val keyCount = keys.length
    val file = schema.fieldIndex(WindowSpec.FileColumn)
    narrow.mapPartitions { rows: Iterator[Row] =>
      val open = new PartialsByKey(partials, keyCount) // (no key: the whole window's)
      rows.foreach(row => open.add(open.of(row), row.getLong(file), row))
      open.rows
    }(Encoders.row(output)).toDF()
  }
}

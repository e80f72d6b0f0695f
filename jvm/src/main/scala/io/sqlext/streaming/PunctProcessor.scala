package io.sqlext.streaming

import io.sqlext.window._
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._

import scala.collection.mutable.ArrayBuffer

/**
 * TUMBLING PUNCT(expr) and PUNCT() under `transformWithState`. A punctuation flushes every
 * partition at once (semantics.md section 5), so one state machine sees all partitions in
 * arrival order (one grouping key for the whole window, as the batch engine replays it
 * globally). PUNCT(expr): a marker row is a punctuation. PUNCT(): the end of each input file
 * is one; Spark reads a file whole within one micro-batch, so a file ends where the next
 * begins and at the end of its micro-batch. State: one map entry per partition, its tuples and
 * window number.
 */
class PunctProcessor(input: StructType, partitionSchema: StructType, metaNames: Seq[String])
    extends StatefulProcessor[Row, Row, Row] {

  @transient private var partitions: MapState[Row, Row] = _

  private val seqIndex = input.fieldIndex(WindowSpec.SeqColumn)
  private val markerIndex = input.fieldNames.indexOf(WindowSpec.PunctColumn)
  private val fileIndex = input.fieldNames.indexOf(WindowSpec.FileColumn)
  private val orderIndex = input.fieldNames.indexOf(WindowSpec.OrderColumn)
  /** Unpartitioned: the one partition's key is the constant grouping key. */
  private val keyIndexes = partitionSchema.fieldNames.filter(input.fieldNames.contains)
    .map(input.fieldIndex)
  private def keyOf(row: Row): Row =
    if (keyIndexes.isEmpty) Row(0) else Row.fromSeq(keyIndexes.map(row.get))

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    partitions = getHandle.getMapState[Row, Row]("partitions", Encoders.row(partitionSchema),
      Encoders.row(PunctProcessor.partitionState(input)), TTLConfig.NONE)
  }

  override def handleInputRows(key: Row, rows: Iterator[Row], timers: TimerValues)
      : Iterator[Row] = {
    val out = ArrayBuffer.empty[Row]
    val emit = WindowProcessor.emitter(out, metaNames, orderIndex)
    val window = new TumblingWindow[Row, Row](TumblingPolicy.Punct, _ => 0.0,
      Ordering.by[Row, String](_.toString))
    val keys = scala.collection.mutable.LinkedHashSet.empty[Row]
    partitions.iterator().foreach { case (k, saved) =>
      window.restore(k, PartitionState(saved.getSeq[Row](0).toIndexedSeq, saved.getLong(1)))
      keys += k
    }
    var file: Any = null
    rows.toArray.sortBy(_.getLong(seqIndex)).foreach { row =>
      if (markerIndex >= 0 && row.getBoolean(markerIndex)) window.punctuate(0L)(emit)
      else {
        if (fileIndex >= 0) {
          if (file != null && row.get(fileIndex) != file) window.punctuate(0L)(emit)
          file = row.get(fileIndex)
        }
        val k = keyOf(row)
        keys += k
        window.insert(k, row, 0L)(emit)
      }
    }
    if (file != null) window.punctuate(0L)(emit) // the batch's last file ended
    keys.foreach { k =>
      val state = window.save(k)
      partitions.updateValue(k, Row(state.tuples, state.firings))
    }
    out.iterator
  }
}

object PunctProcessor {
  def partitionState(input: StructType): StructType = new StructType()
    .add("tuples", ArrayType(input, containsNull = false), nullable = false)
    .add("firings", LongType, nullable = false)
}

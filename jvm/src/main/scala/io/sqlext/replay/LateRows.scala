package io.sqlext.replay

import io.sqlext.window.PaneSpec
import org.apache.spark.sql.types._

/**
 * The rows of a LATE ROWS INTO table (spec/sql.md section 8), in batch replay and streaming
 * alike: every column of the source row, then the tuple's event time, the watermark that
 * dropped it and the panes it would have joined (none for a tuple in a gap between panes).
 */
object LateRows {
  val EventTime = "late_event_time"
  val Watermark = "late_watermark"
  val Panes = "late_panes"
  /** Streaming: the column that carries a late row past the pane processor. */
  val Column = "__sx_late"

  /** Source columns (helper columns left out), then the three late columns. Times take the
   *  type of PANE_START(): `boundType`. Nullable all through: Delta refuses NOT NULL nested in
   *  an array. */
  def schema(input: StructType, eventType: DataType, boundType: DataType): StructType =
    StructType(sourceFields(input))
      .add(EventTime, eventType)
      .add(Watermark, boundType)
      .add(Panes, ArrayType(new StructType().add("start", boundType).add("end", boundType)))

  /** The columns of the source row: every column that is not a helper (`__sx_...`). */
  def sourceFields(input: StructType): Seq[StructField] =
    input.fields.toSeq.filterNot(_.name.startsWith("__sx_"))

  /** (start, end) in µs of every pane a tuple at `time` (µs) would have joined. */
  def panesOf(panes: PaneSpec, time: Long): Seq[(Long, Long)] =
    panes.panesOf(time).map(n => (panes.start(n), panes.end(n))).toSeq
}

package io.sqlext.streaming.processors

import io.sqlext.streaming.input.FiringPartials
import io.sqlext.window.{Firing, WindowSpec}
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types.StructType

/**
 * One partition of a TUMBLING PUNCT() window with partial aggregates and no ORDER BY under
 * `transformWithState`, fed per-file partials ([[io.sqlext.streaming.input.FilePunctInput]]): each
 * file of the micro-batch that holds tuples of the partition is one window, fired in file order
 * with the partition's next window numbers, as [[WindowProcessor]] fires it from the tuples. The
 * state is WindowProcessor's, so a checkpoint written by either resumes under the other: the policy
 * row (the window number; the rest stays at a punctuated window's values) and the held-tuple
 * variables, which stay empty (a micro-batch ends with a punctuation).
 *
 * @param input the window's tuples (the held-tuple variables' schema, as WindowProcessor's)
 * @param partialsFrom the index of the first partial in a combined row (after key and file)
 */
class FilePunctProcessor(spec: WindowSpec, input: StructType, metaNames: Seq[String],
    partialsFrom: Int) extends StatefulProcessor[Row, Row, Row] {

  @transient private var policy: ValueState[Row] = _
  private val partials = new FiringPartials(spec, input)
  private val keyed = spec.partitionColumns.nonEmpty
  private val fileIndex = partialsFrom - 1

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    // Declared as WindowProcessor declares them, never holding anything here.
    getHandle.getValueState[Array[Byte]]("held", Encoders.BINARY, TTLConfig.NONE)
    getHandle.getListState[Row]("tuples", Encoders.row(input), TTLConfig.NONE)
    policy = getHandle.getValueState[Row]("policy", Encoders.row(WindowProcessor.PolicySchema),
      TTLConfig.NONE)
  }

  override def handleInputRows(key: Row, rows: Iterator[Row], timers: TimerValues)
      : Iterator[Row] = {
    val byFile = rows.toArray.sortBy(_.getLong(fileIndex))
    val before = if (policy.exists()) policy.get().getLong(0) else 0L
    val out = Array.newBuilder[Row]
    var windowId = before
    var i = 0
    while (i < byFile.length) {
      val file = byFile(i).getLong(fileIndex)
      val values = partials.empty
      while (i < byFile.length && byFile(i).getLong(fileIndex) == file) {
        partials.merge(values, byFile(i), partialsFrom)
        i += 1
      }
      out += Row.fromSeq((if (keyed) key.toSeq else Nil) ++ meta(windowId) ++
        partials.results(values))
      windowId += 1
    }
    policy.update(WindowProcessor.policyRow(windowId, full = false, counter = 0L,
      reference = None, nextTick = Long.MaxValue, stamps = Nil,
      touchedMs = timers.getCurrentProcessingTimeInMs()))
    out.result().iterator
  }

  /** A flush's column values; without ORDER BY a window has no PANE_START or PANE_END. */
  private def meta(windowId: Long): Seq[Any] =
    WindowProcessor.metaValues(metaNames, windowId, Firing.Flush, null, null)
}

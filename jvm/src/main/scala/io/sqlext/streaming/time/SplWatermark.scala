package io.sqlext.streaming.time

import io.sqlext.window.PaneSpec

/**
 * SPL's watermark W (µs) and Spark's (ms) for a streaming TIME_INTERVAL window
 * (architecture.md section 3): Spark's runs at W - discard age, less 1 ms, because Spark drops
 * tuples at or below its watermark and SPL only those strictly below W - discard age. The
 * pane rule itself ([[io.sqlext.window.PaneRule]]) only ever sees W.
 */
final case class SplWatermark(panes: PaneSpec) {

  /** W under Spark's watermark `sparkMs`. Before Spark's first watermark (0) there is none. */
  def of(sparkMs: Long): Long =
    if (sparkMs <= 0) Long.MinValue else (sparkMs + SplWatermark.BoundaryMs) * 1000L + panes.discard

  /** W of the micro-batch the calling task belongs to ([[BatchWatermark]]). */
  def ofBatch(checkpoint: String, hadoopConf: org.apache.hadoop.conf.Configuration): Long =
    of(BatchWatermark.current(checkpoint, hadoopConf))

  /** The event-time timer (Spark's watermark, ms) at which W reaches `splMicros`, and at least
   *  the next one after `sparkMs`: a timer fires once Spark's watermark reaches it. */
  def timerAt(splMicros: Long, sparkMs: Long): Long = math.max(
    Math.floorDiv(splMicros - panes.discard + 999L, 1000L) - SplWatermark.BoundaryMs, sparkMs + 1)
}

object SplWatermark {
  val BoundaryMs = 1L

  /** Spark's watermark delay for SPL's (WATERMARK delay and discard age, seconds). */
  def delayMs(watermarkDelay: Double, discard: Double): Long =
    math.round((watermarkDelay + discard) * 1000) + BoundaryMs
}

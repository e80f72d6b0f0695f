package io.sqlext.window

/** Seconds as the SQL surface writes them, in the one integral unit of every clock, event time
 *  and pane bound (microseconds). The one conversion, so batch and streaming round alike. */
object Micros {
  def of(seconds: Double): Long = math.round(seconds * 1e6)

  /** A period or duration: at least 1 µs, so that a clock can step by it. */
  def period(seconds: Double): Long = of(seconds).max(1L)

  /** The whole second a clock reading falls in (PARTITION EVICTION AGE counts these). */
  def secondOf(micros: Long): Long = Math.floorDiv(micros, 1000000L)
}

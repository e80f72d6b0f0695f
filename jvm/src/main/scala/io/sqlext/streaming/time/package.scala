package io.sqlext.streaming

/**
 * Event and processing time of a streaming window: the running micro-batch's watermark, read
 * before the shuffle (`BatchWatermark`), SPL's watermark under Spark's (`SplWatermark`), the
 * batch's drop point as an expression (`LateDropPoint`), and the idle clock of WATERMARK ... IDLE
 * (`IdleClock`, `IdleClockSource`).
 *
 * May import: `window` and Spark.
 * Nothing else of `streaming`: every other package of it may import this one.
 */
package object time

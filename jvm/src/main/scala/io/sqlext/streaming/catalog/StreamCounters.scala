package io.sqlext.streaming.catalog

import org.apache.spark.util.LongAccumulator

/** What a streaming table drops or cannot put in order, counted on the executors and read by
 *  SHOW STREAMS. */
final class StreamCounters(val lateDropped: LongAccumulator, val notWindowed: LongAccumulator,
    val outOfOrder: LongAccumulator) extends Serializable

package io.sqlext.streaming.catalog

import org.apache.spark.util.LongAccumulator

/** What a streaming table drops or cannot put in order, counted on the executors and read by
 *  SHOW STREAMS: late tuples, tuples without an event time, rows out of ORDER BY order, and
 *  messages of a Kafka topic table whose value does not decode. */
final class StreamCounters(val lateDropped: LongAccumulator, val notWindowed: LongAccumulator,
    val outOfOrder: LongAccumulator, val undecodable: LongAccumulator) extends Serializable

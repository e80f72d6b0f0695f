package io.sqlext.streaming

/**
 * What reaches the processors, and in what form: a TIME_INTERVAL window's tuples decided before
 * the shuffle (`PaneInput`), per-file partials of TUMBLING PUNCT() (`FilePunctInput`), a map
 * task's partials per key (`PartialsByKey`) and the partial-aggregate rows that cross the
 * shuffle and leave a firing (`FiringPartials`), a key's tuples packed and read in place
 * (`PackedTuples`, `PackedRow`, sorted by `LongKeySort`), a micro-batch in arrival order
 * (`MicroBatchOrder`), the ends of input files (`FileEnds`) and rows between Spark's internal form
 * and Rows (`ExternalRows`).
 *
 * May import: [[io.sqlext.streaming.time]], [[io.sqlext.streaming.delta]] (late-row files),
 * [[io.sqlext.streaming.catalog]] (the drop counters), `replay`, `window`, `aggregate`,
 * `plans.logical`, `org.apache.spark.sql.sqlext` (a Column of its own expression, a DataFrame
 * of its own plan) and Spark.
 * Never the processors, which read what it makes.
 */
package object input

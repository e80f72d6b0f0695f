package io.sqlext.streaming

/**
 * What a stream writes to Delta tables: a micro-batch's firings appended once per batch
 * (`DeltaBatchAppend`) and the late rows of LATE ROWS INTO, written by tasks and committed by the
 * driver (`LateRowFiles`, `StagedLateFile`).
 *
 * May import: [[io.sqlext.streaming.time]], Delta and Spark.
 */
package object delta

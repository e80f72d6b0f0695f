package io.sqlext

/**
 * What analysis resolves for the extension: the internal table functions the rewriter lowers
 * windowed queries to (`WindowTableFunction`; `PipelineWindowFunction` with its rule
 * `ResolvePipelineWindows`, for declarative pipelines; both registered through
 * `GeneratedTableFunction`), Kafka topic tables (`KafkaTables`), the Python UDAFs that every
 * session of the process shares (`ProcessFunctions`), and a server's statement timeout as a
 * ceiling (`TimeoutCeiling`).
 *
 * May import: `parser` (analysis errors in the user's terms), `streaming` (a pipeline's
 * streaming window), [[io.sqlext.streaming.time]] (the pipeline's checkpoint), `kafka`,
 * `plans.logical`, `window`, `org.apache.spark.sql.sqlext` and Spark.
 */
package object analysis

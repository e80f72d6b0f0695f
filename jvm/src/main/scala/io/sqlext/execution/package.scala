package io.sqlext

/**
 * The physical plan: the Spark plan nodes of the extension (`WindowAssignExec`,
 * `WindowAggregateExec`, `PackTuplesExec`, which micro-batches plan too), the strategy that
 * plans them from the logical nodes (`WindowStrategy`), and what only these nodes use: their
 * input distribution and ordering (`WindowInputRequirements`), the reading of their metrics
 * (`WindowMetrics`, called by `sql_ext.metrics`) and batch LATE ROWS INTO (`LateRowsWriter`).
 * The engines the nodes run live in [[io.sqlext.replay]].
 *
 * May import: `replay`, `window`, `aggregate`, `plans.logical`, `expressions` and Spark.
 * Never `streaming` or `commands`.
 */
package object execution

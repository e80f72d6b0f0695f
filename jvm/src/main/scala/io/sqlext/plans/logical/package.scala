package io.sqlext.plans

/**
 * The extension's logical plan nodes: `WindowAssign`, what the table function
 * `sql_ext_window(TABLE(...), spec)` becomes (each tuple tagged with the firings it takes part
 * in); `WindowAggregate`, a SLIDING window that computes its aggregates itself (the optimizer
 * rule `IncrementalWindowAggregate` puts it in); and `PackTuples`, a map task's tuples packed
 * per key for a streaming window. The physical nodes of `execution` run them.
 *
 * May import: `window`, `aggregate` and Spark.
 */
package object logical

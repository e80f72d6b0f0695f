package io.sqlext

/**
 * The replay engines and rules that batch and streaming share: the arrival order of a window's
 * tuples (`ArrivalOrder`; `RankArrival`, the physical rule that gives `sql_ext_arrival()` its
 * split ranks in batch queries and micro-batches alike), where the helper columns sit and how
 * they are read (`ReplayLayout`), the packed form of a key's tuples (`PackFormat`, written by
 * `execution.PackTuplesExec`, read by `streaming.input`), the rows of LATE ROWS INTO
 * (`LateRows`), and the engines that drive the state machines of [[io.sqlext.window]] over a
 * task's rows (`WindowReplay` with its `ReplayMetrics`, `AggregateReplay`, `GlobalCountReplay`,
 * `PaneExpansion`). Engines and rules, not plan nodes: the batch operators of
 * [[io.sqlext.execution]] and the streaming processors call them.
 *
 * May import: `window`, `aggregate`, `expressions` and Spark.
 * Never `execution`, `streaming` or `commands`.
 */
package object replay

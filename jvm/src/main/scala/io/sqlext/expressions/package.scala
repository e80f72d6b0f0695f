package io.sqlext

/**
 * The extension's own Catalyst expressions: `sql_ext_arrival()` and `sql_ext_arrival_file()`, a
 * row's place in its source's order (`ArrivalSequence`, over the split ranks of a scan that
 * `SplitRanks` holds), and the expressions that count the rows a generated plan leaves out
 * (`CountedNotNull`, `CountedDecoded`; each task's count is logged by `TaskRejections`).
 *
 * May import: Spark only.
 */
package object expressions

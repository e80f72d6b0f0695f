package io

/**
 * The extension's entry point and what every package shares. `SqlExtExtensions`
 * (`spark.sql.extensions=io.sqlext.SqlExtExtensions`) only wires: it puts the parser, the
 * analysis rules and table functions, the functions, the optimizer rules and the planner
 * strategy into each session. Below every package sit `Contract`, what the JVM and the Python
 * package spell alike (read from the contract.json the jar carries), and `SqlExtErrors`, errors
 * in Spark's own exception types.
 *
 * May import: `access`, `parser`, `analysis`, `optimizer`, `execution`, `expressions`, `replay`, `kafka`,
 * `streaming.catalog` and Spark, all for the wiring.
 * Every package may import `Contract` and `SqlExtErrors`, which import no package of the
 * extension; no package imports `SqlExtExtensions`.
 */
package object sqlext

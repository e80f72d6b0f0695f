package io.sqlext.analysis

import io.sqlext.plans.logical.WindowAssign
import io.sqlext.window.WindowSpec

/**
 * `sql_ext_window(TABLE(<tuples>), '<spec json>')`: the hook the rewriter lowers a windowed query
 * to. Spark resolves the TABLE argument before calling the builder, so the node is built over a
 * resolved child.
 */
object WindowTableFunction {
  val Name = "sql_ext_window"

  val registration = GeneratedTableFunction.registration(Name,
    "_FUNC_(TABLE(query), spec) - SPL window firings of the query's tuples (internal).") {
    (spec, child) => WindowAssign.create(WindowSpec.fromJson(spec), child)
  }
}

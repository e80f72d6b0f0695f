package io.sqlext

/**
 * Partial aggregates, the one arithmetic of every path that keeps them (batch SLIDING windows,
 * streaming firings and panes): which aggregates have partials (`PartialAggregates`, the one
 * decision that the optimizer and, through py4j, the Python rewriter ask), each aggregate's
 * rules, those of Spark's built-in aggregate of the same name (`PartialAggregate`), and a
 * query's aggregates as one vector of partials (`AggregateLayout`, `Partials`).
 *
 * May import: Spark only.
 * It sits below [[io.sqlext.window]], whose two-stack aggregate merges its partials.
 */
package object aggregate

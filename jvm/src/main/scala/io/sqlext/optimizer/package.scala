package io.sqlext

/**
 * The extension's optimizer rules: `ExpandPanes`, a TIME_INTERVAL window without a watermark
 * written as Spark's own Filter(Expand), fully code-generated; and
 * `IncrementalWindowAggregate`, which hands a SLIDING window's aggregation to the window
 * operator (`WindowAggregate`) when every aggregate has partials.
 *
 * May import: `plans.logical`, `window`, `aggregate`, `expressions` and Spark.
 */
package object optimizer

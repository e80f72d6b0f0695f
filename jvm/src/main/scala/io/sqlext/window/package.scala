package io.sqlext

/**
 * The windows as pure state machines, one rule set for batch and streaming: the window of a
 * query as the rewriter lowered it (`WindowSpec`), parsed once into sealed types (`Family`,
 * `Policy`, `Watermark`); the TUMBLING, SLIDING and TIME_INTERVAL windows (`TumblingWindow`,
 * `SlidingWindow`, `TimeIntervalWindow`, built by `Windows.of`) over their partitions
 * (`PartitionStore`, `PartitionEviction`); a pane's rule (`PaneRule`); a firing (`Firing`); the
 * two stacks of a sliding window's partial aggregates (`TwoStackAggregate`); and the one unit
 * of time (`Micros`). No Spark: the machines are plain Scala over any key and tuple type, so
 * that the replay engines of batch queries and the streaming processors drive the same ones.
 *
 * May import: `aggregate` (the partials the two stacks merge).
 */
package object window

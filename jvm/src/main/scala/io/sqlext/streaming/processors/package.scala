package io.sqlext.streaming

/**
 * The `StatefulProcessor`s that run a streaming window under `transformWithState`, one per way
 * of running it: a partition of a TUMBLING or SLIDING window (`WindowProcessor`), the whole
 * window as one state machine when its events act across partitions (`WholeWindowProcessor`),
 * TUMBLING PUNCT() from per-file partials (`FilePunctProcessor`), a TIME_INTERVAL pane from its
 * tuples (`PaneProcessor`) or partials (`PanePartialsProcessor`), and TIME_INTERVAL with
 * WATERMARK BY markers (`MarkerPaneProcessor`). Their state layouts are what checkpoints hold.
 *
 * May import: [[io.sqlext.streaming.input]], [[io.sqlext.streaming.time]],
 * [[io.sqlext.streaming.catalog]] (the drop counters), [[io.sqlext.streaming.delta]] (late-row
 * files), `replay`, `window`, `aggregate` and Spark.
 */
package object processors

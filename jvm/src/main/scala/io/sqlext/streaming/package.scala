package io.sqlext

/**
 * Windowed streaming tables under Spark's `transformWithState`. The root holds the entry
 * points: `StreamingWindows`, which Python calls to plan a streaming window (its input, its
 * processor, the firings' columns), and `LocalCheckpointFiles`, the checkpoint file manager a
 * streaming table's session uses (its name is configuration, `spark.sql.streaming.
 * checkpointFileManagerClass`, that users may set too: it stays here). The rest is split by role,
 * each package importing only those before it in this list:
 *
 *  - [[io.sqlext.streaming.time]]: event and processing time (the batch's watermark, SPL's
 *    watermark, the drop point, the idle clock);
 *  - [[io.sqlext.streaming.delta]]: writes to Delta tables (a micro-batch's firings, late rows);
 *  - [[io.sqlext.streaming.catalog]]: the stream catalog and what SHOW STREAMS and
 *    `window_state()` read;
 *  - [[io.sqlext.streaming.input]]: what map tasks hand on and processors read;
 *  - [[io.sqlext.streaming.processors]]: the `StatefulProcessor`s;
 *  - the root, which wires them.
 *
 * Each package's own documentation says which of `replay`, `window`, `aggregate` and
 * `plans.logical` it may import; none imports `execution` (the batch plan nodes) or `commands`.
 *
 * May import: [[io.sqlext.streaming.time]], [[io.sqlext.streaming.delta]],
 * [[io.sqlext.streaming.catalog]], [[io.sqlext.streaming.input]],
 * [[io.sqlext.streaming.processors]], `replay`, `window`, `aggregate`, `plans.logical` and Spark.
 */
package object streaming

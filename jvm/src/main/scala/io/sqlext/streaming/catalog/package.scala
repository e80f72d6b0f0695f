package io.sqlext.streaming

/**
 * Streaming tables as the catalog and their readers see them: definitions and recorded state in
 * the catalog (`StreamCatalog`), the one registry of the streams this process runs
 * (`RunningStreams`: Python reads it too), per-query progress and the drop
 * counters that SHOW STREAMS reads (`StreamProgress`, `StreamCounters`, the counters the map tasks
 * and processors add to), and the `window_state()` table function over a checkpoint's state
 * (`WindowState`).
 *
 * May import: [[io.sqlext.streaming.time]], `replay` (the packed format), `window`,
 * `aggregate`, `access` (whether a user may read the stream's table) and Spark.
 */
package object catalog

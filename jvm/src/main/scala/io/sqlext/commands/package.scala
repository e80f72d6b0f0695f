package io.sqlext

/**
 * Logical commands the parser returns: `StreamStatementCommand`, a streaming statement (CREATE,
 * SHOW, STOP, REFRESH, DROP) that hands its text back to the Python rewriter when it runs, and
 * waits for the stream of one that returns when its pass ends (`AwaitedStreams`), stopping it
 * when the statement is cancelled or times out (`CancelledStatements`).
 *
 * May import: [[io.sqlext.rewriter]] (the rewriter's registry), `streaming.catalog` (the
 * registry of runs and its short errors) and Spark.
 * Never `parser`, which returns these commands.
 */
package object commands

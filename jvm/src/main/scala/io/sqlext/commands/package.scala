package io.sqlext

/**
 * Logical commands the parser returns: `StreamStatementCommand`, a streaming statement (CREATE,
 * SHOW, STOP, REFRESH, DROP) that hands its text back to the Python rewriter when it runs.
 *
 * May import: `parser` (the rewriter's registry), `SqlExtErrors` and Spark.
 */
package object commands

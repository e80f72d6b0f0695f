package io.sqlext

/**
 * The session's parser: `RewritingParser` lets Spark's parser try first, hands what it rejects
 * to the Python rewriter ([[io.sqlext.rewriter]]) and parses the plain Spark SQL that comes
 * back, or returns a streaming statement as a command (`commands.StreamStatementCommand`).
 * Beside it, the binding of `spark.sql(text, args)`'s values into a rewritten statement
 * (`ParameterBinding`) and Spark's analysis errors said in the user's terms (`WindowedErrors`,
 * which `analysis` uses too).
 *
 * Each parsed statement's file queries pass the access checks' first look (`access`).
 *
 * May import: [[io.sqlext.rewriter]], `commands`, `access` and Spark.
 */
package object parser

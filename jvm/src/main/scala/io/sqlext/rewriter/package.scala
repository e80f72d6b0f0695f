package io.sqlext

/**
 * The JVM's one channel to the Python rewriter: the interface that py4j implements with a
 * Python object (`SqlRewriter`, whose doc holds the answers' protocol) and the process-wide
 * registry that Python registers it with and that the JVM calls it through
 * (`SqlRewriterRegistry`, which bounds each rewrite in time). Python names both by their class
 * names (sql_ext/jvm.py, sql_ext/server/callback.py).
 *
 * May import: Spark only.
 * A package of its own below `parser`, which asks it to rewrite a statement, and `commands`,
 * which asks it to run one: so the parser returns a command and the command reaches Python
 * without the two importing each other.
 */
package object rewriter

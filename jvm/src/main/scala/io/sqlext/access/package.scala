package io.sqlext

/**
 * Least privilege on a shared server: who a session's client is (`SessionUsers`: the Thrift
 * server's record of the signed-in user, or a session copied for that user's stream), what the
 * server's operator configured (`AccessPolicy`: admins, the roots where paths may point), and
 * the check every statement of a user who is not an admin passes (`AccessChecks`): no call into
 * the JVM or the operating system by name, no jars, files or class-based functions, only the
 * settings of an allow-list, and no file path outside the roots; and what a connection sets
 * as its session opens, before any statement (`ThriftCallGuard`): only that allow-list. With an
 * access rules file (`AccessRules`), the tables each statement needs (`TableAccess`) and those
 * SHOW TABLES (`HideUnreadableTables`) and the JDBC metadata calls (`MetadataFilter`) list are
 * the ones the rules give the user.
 * Admins, and a server without sign-in (whose one user is its operator), are not checked.
 *
 * Spark Connect's clients are told apart by their tokens (`ConnectGuard`, Connect's gRPC
 * interceptor), which also refuses what never reaches a plan: settings through the config API,
 * client code, the catalog API's listings.
 *
 * May import: Spark, `org.apache.spark.sql.sqlext` (a plan marked analysed), the Hive service
 * classes of Spark's Thrift server and Thrift's, Spark Connect's protocol and its (shaded)
 * gRPC.
 */
package object access

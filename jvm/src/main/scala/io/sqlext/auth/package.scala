package io.sqlext

/**
 * Sign-in to the Thrift server: `PasswordFileAuthenticator`, HiveServer2's CUSTOM
 * authentication against the file of salted password hashes that `sql-ext passwd` writes.
 * HiveServer2 builds it by its class name (sql_ext/server/auth.py names it).
 *
 * May import: Hive's authentication interface and the JDK only.
 * It stands apart from every other package, and none imports it.
 */
package object auth

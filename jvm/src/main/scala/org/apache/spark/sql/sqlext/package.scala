package org.apache.spark.sql

/**
 * The extension's few calls into Spark's `private[sql]` API, which only code in Spark's SQL
 * package may make (Delta's helpers live there for the same reason): a Column of the
 * extension's own Catalyst expression (`CatalystColumns`), a DataFrame of its own logical
 * plan (`CatalystFrames`) and a plan marked analysed (`CatalystPlans`). Thin objects, so that what leans on Spark's internals is in one
 * place.
 *
 * May import: Spark only.
 * Nothing of `io.sqlext`: every package of the extension may import this one.
 */
package object sqlext

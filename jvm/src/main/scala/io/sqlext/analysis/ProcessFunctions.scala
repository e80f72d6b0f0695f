package io.sqlext.analysis

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}
import org.apache.spark.sql.execution.python.UserDefinedPythonFunction

/**
 * Python UDAFs for every session of the process. `spark.udf.register` reaches one session; a
 * Thrift server opens a new session per JDBC connection, whose functions come from the
 * extensions. A function shared here is injected into the extensions once by name, with a
 * builder that reads the latest definition, so every session created afterwards (every JDBC
 * and dbt connection) resolves it, and a redefinition replaces it everywhere.
 */
object ProcessFunctions {
  @volatile private var extensions: Option[SparkSessionExtensions] = None
  private val latest = new ConcurrentHashMap[String, UserDefinedPythonFunction]()

  /** Called by SqlExtExtensions: the extensions every later session of the process applies. */
  def remember(wired: SparkSessionExtensions): Unit = extensions = Some(wired)

  /** Makes `function` callable as `name` in the sessions created from now on. */
  def share(name: String, function: UserDefinedPythonFunction): Unit = {
    val key = name.toLowerCase(java.util.Locale.ROOT)
    if (latest.put(key, function) == null) {
      val info = new ExpressionInfo(classOf[UserDefinedPythonFunction].getCanonicalName, name)
      extensions.foreach(_.injectFunction(
        (FunctionIdentifier(name), info, (args: Seq[Expression]) => latest.get(key).builder(args))))
    }
  }
}

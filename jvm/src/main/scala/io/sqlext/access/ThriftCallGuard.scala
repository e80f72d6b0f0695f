package io.sqlext.access

import scala.jdk.CollectionConverters._

import org.apache.hive.service.auth.TSetIpAddressProcessor
import org.apache.hive.service.cli.thrift.ThriftBinaryCLIService
import org.apache.hive.service.rpc.thrift.{TCLIService, TOpenSessionResp, TStatus, TStatusCode}
import org.apache.hive.service.server.HiveServer2
import org.apache.thrift.{ProcessFunction, TBaseProcessor, TProcessor, TProcessorFactory}
import org.apache.thrift.server.TServer
import org.apache.thrift.transport.TTransport

/**
 * The calls of the binary Thrift service that sql-ext guards before HiveServer2 answers them:
 * OpenSession (what a connection may set as its session opens, below) and the JDBC metadata
 * calls that list tables and columns (`MetadataFilter`: only the tables a user may read).
 *
 * What a client's connection may set as its session opens. HiveServer2 applies the
 * connection's configuration before the session runs a statement, so before `AccessChecks` sees
 * anything: `set:hiveconf:K` and `set:hivevar:K` (and `set:K`) become the session's Spark
 * settings, `set:system:K` a system property of the server's JVM (where the authenticator finds
 * its password file), `set:metaconf:K` a setting of the metastore client, and a key without a
 * prefix the session's Hive configuration. For a signed-in user who is not an admin, each key
 * must be a setting of the allow-list (`AllowedSettings`, bare or under `set:`, `set:hiveconf:`
 * or `set:hivevar:`), `use:database`, or the fetch size Hive's JDBC driver sends; otherwise the
 * session is refused under the rule 'settings', before HiveServer2 applies any of it.
 *
 * The binary Thrift service builds a processor per connection; `install` wraps the factory
 * that builds them, so that each one's OpenSession call passes `refusal` first. The launcher
 * opens sign-in only after `install` (sql_ext/server/auth.py): no session opens unguarded.
 */
object ThriftCallGuard {

  /** Hive JDBC (beeline) sends the result set's fetch size with every connection. */
  private val ClientProtocol = Set("hive.server2.thrift.resultset.default.fetch.size")

  /** Guards every session `server`'s binary Thrift service opens from now on. Users are
   *  checked only on the binary transport (HTTP has no processor to wrap): with the checks on,
   *  a server without it is an error. */
  def install(server: HiveServer2): Unit = {
    val services = server.getServices.asScala.collect { case t: ThriftBinaryCLIService => t }
    if (AccessPolicy.enforced && services.isEmpty) {
      throw new IllegalStateException("sql-ext checks signed-in users on the binary Thrift " +
        "transport only (hive.server2.transport.mode=binary)")
    }
    val serverField = classOf[ThriftBinaryCLIService].getDeclaredField("server")
    serverField.setAccessible(true)
    val factoryField = classOf[TServer].getDeclaredField("processorFactory_")
    factoryField.setAccessible(true)
    services.foreach { service =>
      val tserver = serverField.get(service).asInstanceOf[TServer]
      require(tserver != null, "the Thrift server has not been initialized")
      factoryField.get(tserver) match {
        case _: GuardedFactory =>
        case factory: TProcessorFactory => factoryField.set(tserver, new GuardedFactory(factory))
      }
    }
  }

  /** Why a session of `user` must not open with `configuration`, if it must not. */
  def refusal(user: String, configuration: java.util.Map[String, String]): Option[String] =
    if (!AccessPolicy.enforced || !AccessPolicy.checks(user) || configuration == null) None
    else configuration.asScala.keys.toSeq.sorted.find(!allowed(_)).map { key =>
      AccessChecks.message(user, "settings", s"the connection sets $key: a session may set " +
        s"only ${AllowedSettings.names.mkString(", ")}")
    }

  private def allowed(key: String): Boolean = key == "use:database" || {
    // The setting a key names: after `set:` and its `hiveconf:` or `hivevar:`; a bare key as it
    // is (it reaches only the session's Hive configuration; dbt-spark sends the allowed
    // spark.sql.ansi.enabled so). Any other prefix (system:, metaconf:, env:) stays and fails.
    val name = if (!key.startsWith("set:")) key else {
      val variable = key.stripPrefix("set:").trim
      Seq("hiveconf:", "hivevar:").collectFirst {
        case prefix if variable.startsWith(prefix) => variable.stripPrefix(prefix)
      }.getOrElse(variable)
    }
    !name.contains(":") && (AllowedSettings(name) || ClientProtocol(name.trim))
  }

  /** Each connection's processor's own table of calls (a private field of Thrift's). */
  private lazy val ProcessMap = {
    val field = classOf[TBaseProcessor[_]].getDeclaredField("processMap")
    field.setAccessible(true)
    field
  }

  private class GuardedFactory(inner: TProcessorFactory) extends TProcessorFactory(null) {
    override def getProcessor(transport: TTransport): TProcessor = {
      val processor = inner.getProcessor(transport)
      processor match {
        case base: TBaseProcessor[_] =>
          val calls = ProcessMap.get(base)
            .asInstanceOf[java.util.Map[String, ProcessFunction[_, _]]]
          calls.put("OpenSession", new GuardedOpenSession)
          calls.put("GetTables", new MetadataFilter.GuardedGetTables)
          calls.put("GetColumns", new MetadataFilter.GuardedGetColumns)
          processor
        case other => // fail closed: a processor whose sessions could not be guarded
          throw new IllegalStateException(s"cannot guard the sessions of ${other.getClass}")
      }
    }
  }

  private class GuardedOpenSession
      extends TCLIService.Processor.OpenSession[TCLIService.Iface] {
    override def getResult(iface: TCLIService.Iface,
        args: TCLIService.OpenSession_args): TCLIService.OpenSession_result = {
      val request = args.getReq
      // The signed-in user (the SASL sign-in of this connection), not a name the client sends.
      val user = Option(TSetIpAddressProcessor.getUserName).getOrElse("")
      refusal(user, request.getConfiguration) match {
        case Some(message) =>
          val status = new TStatus(TStatusCode.ERROR_STATUS)
          status.setErrorMessage(message)
          val result = new TCLIService.OpenSession_result()
          result.setSuccess(new TOpenSessionResp(status, request.getClient_protocol))
          result
        case None => super.getResult(iface, args)
      }
    }
  }
}

package io.sqlext.access

import java.util.concurrent.CopyOnWriteArrayList

import scala.jdk.CollectionConverters._

import org.apache.hive.service.cli.CLIService
import org.apache.hive.service.cli.SessionHandle
import org.apache.hive.service.server.HiveServer2
import org.apache.spark.sql.{SQLContext, SparkSession}

/**
 * Who sent a session's statements. A Thrift server's client session: the user the server
 * signed in, read from the server's own records each time (the session manager's session for
 * the handle whose SQL context is this session), so no setting and no statement can change it.
 * A session that sql-ext copies for a user's stream (`inherit`) keeps that user; one for a
 * streaming table's stream started for another (`runAs`) is its owner's. Any other session
 * (the server's own, a stream's) has no user.
 */
object SessionUsers {
  private val servers = new CopyOnWriteArrayList[HiveServer2]()
  private val copies = java.util.Collections.synchronizedMap(
    new java.util.WeakHashMap[SparkSession, String]())

  /** A Thrift server whose client sessions are looked up from now on. */
  def register(server: HiveServer2): Unit = servers.addIfAbsent(server)

  @volatile private var connect = false

  /** Spark Connect's sessions are looked up from now on (their users: `ConnectGuard`). */
  def registerConnect(): Unit = connect = true

  /** `copy` runs `parent`'s statements for the same user (a stream's own session). */
  def inherit(parent: SparkSession, copy: SparkSession): Unit =
    userOf(parent).foreach(copies.put(copy, _))

  /** `copy` runs a streaming table's stream as its owner `user` (a REFRESH, a stream resumed
   *  as the server starts): its reads are the owner's, whoever starts it. Called by sql-ext's
   *  Python in the server's own process, never from SQL. */
  def runAs(copy: SparkSession, user: String): Unit =
    // A table made outside sign-in is owned by the server's operating-system user: the
    // operator's, whose streams run unchecked as the server's own.
    if (user != copy.sparkContext.sparkUser) copies.put(copy, user)

  /** The user of `session`: Some(name) for a client's session, else None. */
  def userOf(session: SparkSession): Option[String] =
    Option(copies.get(session)).orElse(clientUser(session)).orElse(connectUser(session))

  /** The user of a Spark Connect client's session: the user_id of its key in Connect's
   *  session manager (SparkConnectService.sessionManager's private `sessionStore`, read by
   *  reflection), which ConnectGuard holds to the user of the client's token. */
  private def connectUser(session: SparkSession): Option[String] =
    if (!connect || !ConnectGuard.identifies) None else {
      def call(target: AnyRef, name: String): AnyRef = target.getClass.getMethod(name).invoke(target)
      val service = Class.forName("org.apache.spark.sql.connect.service.SparkConnectService$")
        .getField("MODULE$").get(null)
      val manager = call(service, "sessionManager")
      val field = manager.getClass.getDeclaredField("sessionStore")
      field.setAccessible(true)
      field.get(manager).asInstanceOf[java.util.Map[AnyRef, AnyRef]].values.asScala
        .collectFirst { case holder if call(holder, "session") eq session =>
          String.valueOf(call(holder, "userId"))
        }
    }

  /** For Python: the user's name, or null. */
  def userOrNull(session: SparkSession): String = userOf(session).orNull

  private def clientUser(session: SparkSession): Option[String] =
    servers.asScala.iterator.flatMap { server =>
      server.getServices.asScala.collectFirst { case cli: CLIService => cli }.flatMap { cli =>
        val manager = cli.getSessionManager
        contexts(manager.getOperationManager).collectFirst {
          case (handle, context) if sessionOf(context) eq session =>
            // A session closing meanwhile: a user with no name, whom every check applies to.
            scala.util.Try(manager.getSession(handle).getUserName).toOption.flatMap(Option(_))
              .getOrElse("")
        }
      }
    }.nextOption()

  /** The Spark SQL operation manager's client sessions: its `sessionToContexts` (a member of
   *  a class private to Spark's Thrift server package, read by reflection), whose values are
   *  the sessions (SQL contexts before Spark 4). */
  private def contexts(operations: AnyRef): Iterator[(SessionHandle, AnyRef)] = {
    val map = operations.getClass.getMethod("sessionToContexts").invoke(operations)
      .asInstanceOf[java.util.Map[SessionHandle, AnyRef]]
    map.asScala.iterator
  }

  private def sessionOf(context: AnyRef): AnyRef = context match {
    case c: SQLContext => c.sparkSession
    case other => other
  }
}

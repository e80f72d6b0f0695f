package io.sqlext.rewriter

import java.util.concurrent.{Executors, ThreadFactory, TimeoutException}

import org.apache.spark.network.util.JavaUtils
import org.apache.spark.sql.SparkSession

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._

/** The process-wide rewriter, registered by `sql_ext` once per session. */
object SqlRewriterRegistry {
  @volatile private var current: Option[SqlRewriter] = None

  /** py4j has no call timeout; a hung Python callback must not hang its statement (and a
   *  JDBC server thread) forever. A session setting, so a server can choose its bound. */
  val TimeoutConf = "spark.sql_ext.rewriter.timeout"
  private val DefaultTimeout = "60s"

  def timeoutOf(session: SparkSession): FiniteDuration =
    JavaUtils.timeStringAsMs(
      session.sessionState.conf.getConfString(TimeoutConf, DefaultTimeout)).millis

  private lazy val pool = ExecutionContext.fromExecutorService(
    Executors.newCachedThreadPool(new ThreadFactory {
      override def newThread(r: Runnable): Thread = {
        val t = new Thread(r, "sql-ext-rewriter")
        t.setDaemon(true)
        t
      }
    }))

  def register(rewriter: SqlRewriter): Unit = current = Option(rewriter)

  def unregister(): Unit = current = None

  def isRegistered: Boolean = current.isDefined

  /** Runs a streaming statement: Python plans and starts or stops its stream, and ALTER waits
   *  there for the new query's first micro-batch.
   *
   *  Python's calls back into the JVM run on the thread that called Python. A cancel of the
   *  statement interrupts the statement's thread, and an interrupted thread fails the
   *  metastore's calls ("Connection closed by unknown interrupt"): a stream stopped and its
   *  definition left half changed. So Python runs from a thread of its own (a new thread: it
   *  inherits the statement's job group and scheduler pool), which no cancel interrupts; Python
   *  learns of a cancel from CancelledStatements and ends its work whole. The statement's thread
   *  waits for that answer and keeps its interrupt for what comes after (AwaitedStreams);
   *  `interrupted` runs as the interrupt arrives, so that Python learns of it at once (the
   *  server's own cancel event comes on the listener bus, seconds late on a busy server). */
  def execute(sqlText: String, session: SparkSession, statementId: String,
      interrupted: () => Unit = () => ()): String =
    current match {
      case Some(rewriter) =>
        var answer: Either[Throwable, String] = null
        val worker = new Thread(() => answer =
          try Right(rewriter.execute(sqlText, session, statementId))
          catch { case failure: Throwable => Left(failure) }, "sql-ext-statement")
        worker.setDaemon(true)
        worker.start()
        var wasInterrupted = false
        while (worker.isAlive) {
          try worker.join()
          catch {
            case _: InterruptedException =>
              if (!wasInterrupted) interrupted()
              wasInterrupted = true
          }
        }
        if (wasInterrupted) Thread.currentThread().interrupt()
        answer.fold(failure => throw failure, identity)
      case None => """{"error": "the sql_ext rewriter is not registered in this process", """ +
        """"condition": "SQL_EXT_REWRITER_NOT_REGISTERED"}"""
    }

  /** Asks the rewriter, bounded in time; None when no rewriter is registered. A rewrite
   *  that does not answer in time leaves its pool thread waiting on Python and the statement
   *  fails; the session (and the server thread) go on. */
  def rewrite(sqlText: String, sessionUdafs: String, inPipeline: Boolean,
      timeout: FiniteDuration): Option[String] = current.map { rewriter =>
      try Await.result(Future(rewriter.rewrite(sqlText, sessionUdafs, inPipeline))(pool),
        timeout)
      catch {
        case _: TimeoutException =>
          "ERROR\nSQL_EXT_REWRITER_TIMEOUT\n1\n0\n" +
            s"the sql_ext rewriter did not answer within ${timeout.toMillis} ms; " +
            s"the statement was not run (the bound is the session setting $TimeoutConf)"
      }
  }
}

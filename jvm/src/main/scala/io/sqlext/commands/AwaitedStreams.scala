package io.sqlext.commands

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import io.sqlext.SqlExtErrors
import io.sqlext.streaming.catalog.{RunningStreams, StreamCatalog}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryException}
import org.slf4j.LoggerFactory

/**
 * The streams a statement waits for: CREATE STREAMING TABLE ... TRIGGER AVAILABLE NOW and
 * REFRESH STREAMING TABLE return when their pass has written what the source held. Python
 * starts the pass and hands its query over here; the statement's own thread waits for it, so
 * that what ends a statement (a JDBC cancel, the statement timeout, an interrupt) also stops its
 * stream, between two micro-batches when it can. A stream stopped so keeps its checkpoint: the
 * next REFRESH continues where it stopped, and nothing committed is written twice.
 */
object AwaitedStreams {
  private val log = LoggerFactory.getLogger("io.sqlext.streaming")
  private val handed = new ConcurrentHashMap[String, StreamingQuery]()
  // Statements waiting on each pass: a second CREATE of the same table joins the pass that
  // runs, and a cancel of one of them must not cut the pass the other waits for.
  private val waiting = new ConcurrentHashMap[UUID, Integer]()

  /** Hands `query` over to the statement that runs it; the token the statement waits on. */
  def handOver(query: StreamingQuery): String = {
    val token = UUID.randomUUID().toString
    waiting.merge(query.id, 1, (a: Integer, b: Integer) => a + b)
    handed.put(token, query)
    token
  }

  /** Waits until the stream handed over under `token` ends: its failure is the statement's
   *  error; a cancel or timeout of the statement (CancelledStatements) or an interrupt of its
   *  thread stops the stream and ends the statement with an error saying so. */
  def await(token: String, session: SparkSession, statement: String): Unit = {
    val query = handed.remove(token)
    if (query == null) throw SqlExtErrors.analysis("SQL_EXT_INTERNAL_ERROR",
      s"no stream was handed over as $token")
    val statementId = Option(CancelledStatements.idOf(session))
    try {
      while (!query.awaitTermination(PollMillis)) {
        statementId.flatMap(CancelledStatements.why).foreach { why =>
          stop(query, statement, why)
        }
      }
    } catch {
      case _: InterruptedException => stop(query, statement, "interrupted")
      case failure: StreamingQueryException =>
        throw SqlExtErrors.analysis("SQL_EXT_STREAM_FAILED", StreamCatalog.shortError(
          s"${failure.getClass.getSimpleName}: ${failure.getMessage}"))
    } finally {
      waiting.computeIfPresent(query.id, (_: UUID, n: Integer) => if (n > 1) n - 1 else null)
    }
  }

  private def stop(query: StreamingQuery, statement: String, why: String): Nothing = {
    if (waiting.getOrDefault(query.id, 1) > 1) {
      throw SqlExtErrors.analysis("SQL_EXT_STREAM_INTERRUPTED",
        s"$statement was $why; its stream's pass goes on for " +
        "another statement that waits for it")
    }
    log.warn(s"sql_ext $statement was $why: stopping its stream ${query.name}")
    RunningStreams.stopBetweenBatches(query, RunningStreams.StopWaitMillis)
    throw SqlExtErrors.analysis("SQL_EXT_STREAM_INTERRUPTED",
      s"$statement was $why: its stream stopped, and its checkpoint " +
      "keeps what it committed (REFRESH STREAMING TABLE continues from there)")
  }

  private val PollMillis = 200L
}

package io.sqlext.expressions

import org.apache.spark.sql.execution.datasources.PartitionedFile

/**
 * The source order of one scan's splits, ranked on the driver: files by modification time, then
 * path; a file's splits by offset, numbered on from the splits of earlier files.
 * [[ArrivalSequence]] reads a split's rank in its task.
 */
final class SplitRanks private (files: Map[String, SplitRanks.File]) extends Serializable {
  private def of(url: String): SplitRanks.File = files.getOrElse(url, throw new IllegalStateException(
    if (files.isEmpty) s"sql_ext_arrival(): the scan of $url was not ranked: sql-ext's planning " +
      "rule did not see it (is the extension's jar on the classpath of this session?)"
    else s"sql_ext_arrival(): $url is not among the files its scan was planned with"))

  /** The rank of a file among the scan's files. */
  def file(url: String): Long = of(url).rank

  /** The rank of the split at `start` of a file among all splits of the scan. */
  def split(url: String, start: Long): Long = {
    val file = of(url)
    val index = java.util.Arrays.binarySearch(file.starts, start)
    if (index < 0) throw new IllegalStateException(
      s"sql_ext_arrival(): no split of $url starts at $start in the plan of its scan")
    file.firstSplit + index
  }

  def size: Int = files.size
}

object SplitRanks {
  private final case class File(rank: Long, firstSplit: Long, starts: Array[Long])

  /** No scan was ranked (a source without files, or a plan the rule did not see). */
  val Unplanned = new SplitRanks(Map.empty)

  def of(splits: Seq[PartitionedFile]): SplitRanks = {
    val byFile = splits.groupBy(_.urlEncodedPath).toSeq.map { case (url, parts) =>
      (parts.head.modificationTime, url, parts.map(_.start).distinct.sorted.toArray)
    }.sortBy { case (time, url, _) => (time, url) }
    var firstSplit = 0L
    val files = byFile.zipWithIndex.map { case ((_, url, starts), rank) =>
      val file = File(rank.toLong, firstSplit, starts)
      firstSplit += starts.length
      url -> file
    }.toMap
    if (firstSplit > ArrivalSequence.MaxSplits) throw new IllegalArgumentException(
      s"sql_ext_arrival(): a scan of $firstSplit splits (at most ${ArrivalSequence.MaxSplits})")
    new SplitRanks(files)
  }
}

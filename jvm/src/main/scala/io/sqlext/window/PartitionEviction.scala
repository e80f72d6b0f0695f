package io.sqlext.window

import scala.collection.mutable

/** PARTITION EVICTION policies (semantics.md section 5). */
sealed trait PartitionEvictionPolicy

object PartitionEvictionPolicy {
  /** partitionAge(s): partitions not inserted into for more than s whole seconds. */
  final case class Age(seconds: Long) extends PartitionEvictionPolicy
  /** partitionCount(n): at most n partitions. */
  final case class Count(n: Long) extends PartitionEvictionPolicy
  /** tupleCount(n): at most n tuples in all partitions together. */
  final case class Tuples(n: Long) extends PartitionEvictionPolicy
}

/**
 * Least-recently-inserted order of partitions with their last insertion second, and victim
 * selection. The window calls `touched` after each insertion and `forget` when it removes a
 * partition; flushes and evictions do not refresh recency.
 */
final class PartitionRecency[K](policy: PartitionEvictionPolicy) {
  import PartitionEvictionPolicy._

  private val lastInsert = mutable.LinkedHashMap.empty[K, Long]

  def touched(key: K, second: Long): Unit = {
    lastInsert.remove(key)
    lastInsert.put(key, second)
  }

  def forget(key: K): Unit = lastInsert.remove(key)

  def secondOf(key: K): Option[Long] = lastInsert.get(key)

  /** Keys, least recently inserted into first. */
  def order: Seq[K] = lastInsert.keys.toSeq

  /** Victims of an age check at `nowSecond` (before a tuple, punctuation or tick). */
  def aged(nowSecond: Long): Seq[K] = policy match {
    case Age(s) if lastInsert.headOption.exists(_._2 + s < nowSecond) =>
      lastInsert.iterator.takeWhile(_._2 <= nowSecond - s).map(_._1).toSeq
    case _ => Nil
  }

  /** Victims of the count checks after an insertion, given partition sizes and the total. */
  def overLimit(partitions: Int, totalTuples: Long, sizeOf: K => Int): Seq[K] = policy match {
    case Count(n) if partitions > n => lastInsert.keysIterator.take((partitions - n).toInt).toSeq
    case Tuples(n) if totalTuples > n =>
      // Walk from the least recent: leading empty partitions plus the first non-empty one, and
      // again while the total is still over the limit.
      val victims = mutable.ArrayBuffer.empty[K]
      var total = totalTuples
      val it = lastInsert.keysIterator
      while (total > n && it.hasNext) {
        val key = it.next()
        victims += key
        total -= sizeOf(key)
      }
      victims.toSeq
    case _ => Nil
  }
}

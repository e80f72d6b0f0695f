package io.sqlext.streaming.input

import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

class LongKeySortSuite extends AnyFunSuite {
  /** The oracle: Scala's stable sort of the row numbers by their keys. */
  private def expected(keys: Array[Array[Long]], n: Int): Seq[Int] =
    (0 until n).sortBy(i => keys.map(_(i)).toSeq)(Ordering.Implicits.seqOrdering[Seq, Long])

  test("rows in order are left as they are") {
    assert(LongKeySort.order(Array(Array(1L, 2L, 2L, 5L)), 4).toSeq == Seq(0, 1, 2, 3))
  }

  test("runs merge stably: ties keep their first-come order") {
    val keys = Array(Array(5L, 7L, 1L, 7L, 2L, 5L))
    assert(LongKeySort.order(keys, 6).toSeq == Seq(2, 4, 0, 5, 1, 3))
  }

  test("no rows, one row") {
    assert(LongKeySort.order(Array(Array.empty[Long]), 0).isEmpty)
    assert(LongKeySort.order(Array(Array(3L)), 1).toSeq == Seq(0))
  }

  test("random runs, one and two keys, against a stable sort") {
    val random = new Random(7)
    for (n <- Seq(2, 3, 10, 257, 5000); keyCount <- Seq(1, 2); runs <- Seq(1, 3, 12, n)) {
      // Ordered runs of random values with ties, as a micro-batch's packs are.
      val keys = Array.fill(keyCount)(new Array[Long](n))
      val bounds = (0 +: Seq.fill(runs - 1)(random.nextInt(n)).sorted :+ n).distinct
      bounds.sliding(2).foreach { case Seq(lo, hi) =>
        keys.foreach { column =>
          val values = Array.fill(hi - lo)(random.nextInt(20).toLong - 10).sorted
          System.arraycopy(values, 0, column, lo, hi - lo)
        }
        case _ =>
      }
      assert(LongKeySort.order(keys, n).toSeq == expected(keys, n), s"n=$n keys=$keyCount")
    }
  }
}

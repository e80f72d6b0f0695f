package io.sqlext.window

import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable.ArrayBuffer

/** The sliding rules of semantics.md section 3 and the partition eviction of section 5. */
class SlidingWindowSuite extends AnyFunSuite {

  private type T = (String, Double)

  private def sliding(eviction: SlidingPolicy, trigger: SlidingPolicy, incomplete: Boolean = false,
      partitionEviction: Option[PartitionEvictionPolicy] = None, emitEvicted: Boolean = false) =
    new SlidingWindow[String, T](eviction, trigger, _._2, _._2, Ordering.String,
      emitIncomplete = incomplete, partitionEviction = partitionEviction,
      emitEvicted = emitEvicted)

  private def feed(w: ReplayableWindow[String, T], tuples: Seq[(String, Double)],
      clock: T => Long = _ => 0L): Seq[(String, Long, Seq[Double], String)] = {
    val out = ArrayBuffer.empty[(String, Long, Seq[Double], String)]
    tuples.foreach(t => w.insert(t._1, t, clock(t))(f =>
      out += ((f.key, f.windowId, f.tuples.map(_._2).toSeq, f.event))))
    out.toSeq
  }

  private val ages = (0 to 6).map(i => "k" -> i.toDouble)

  test("count(5) trigger count(2): triggers before initialFull produce nothing by default") {
    val got = feed(sliding(SlidingPolicy.Count(5), SlidingPolicy.Count(2)), ages)
    assert(got == Seq(("k", 2L, Seq(1.0, 2.0, 3.0, 4.0, 5.0), "TRIGGER")))
  }

  test("EMIT INCOMPLETE also fires the early triggers") {
    val got = feed(sliding(SlidingPolicy.Count(5), SlidingPolicy.Count(2), incomplete = true),
      ages)
    assert(got.map(_._3) == Seq(Seq(0.0, 1.0), Seq(0.0, 1.0, 2.0, 3.0),
      Seq(1.0, 2.0, 3.0, 4.0, 5.0)))
  }

  test("a delta trigger sees the window before the new tuple; delta eviction is strict") {
    // delta(age, 2) eviction, delta(age, 0) trigger (test_win_S_Dage2_Dage0 shape)
    val got = feed(sliding(SlidingPolicy.Delta(2), SlidingPolicy.Delta(0), incomplete = true),
      Seq(0.0, 1.0, 2.0, 3.0).map("k" -> _))
    assert(got.map(_._3) == Seq(Seq(0.0), Seq(0.0, 1.0), Seq(0.0, 1.0, 2.0)))
  }

  test("delta eviction marks the window full at its first eviction and evicts from the middle") {
    val w = sliding(SlidingPolicy.Delta(2), SlidingPolicy.Count(1))
    val got = feed(w, Seq(5.0, 1.0, 6.0, 4.0, 8.0).map("k" -> _))
    // 6 evicts 1 (6-1 > 2) from the middle: first eviction, full from then on
    assert(got.map(_._3) == Seq(Seq(5.0, 6.0), Seq(5.0, 6.0, 4.0), Seq(6.0, 8.0)))
  }

  test("time eviction is full from the start and drops tuples once now - stamp > size") {
    val w = sliding(SlidingPolicy.Time(10), SlidingPolicy.Count(2))
    val got = feed(w, Seq(0.0, 3.0, 12.0, 14.0).map("k" -> _), _._2.toLong)
    assert(got.map(_._3) == Seq(Seq(0.0, 3.0), Seq(12.0, 14.0)))
  }

  test("partition count eviction removes the least recently inserted, EMIT EVICTED fires it") {
    val w = new TumblingWindow[String, T](TumblingPolicy.Count(3), _._2, Ordering.String,
      Some(PartitionEvictionPolicy.Count(2)), emitEvicted = true)
    val got = feed(w, Seq("K1" -> 1.0, "K2" -> 2.0, "K3" -> 3.0, "K2" -> 4.0, "K1" -> 5.0))
    assert(got == Seq(("K1", 0L, Seq(1.0), "EVICTED"), ("K3", 0L, Seq(3.0), "EVICTED")))
  }

  test("tuple count eviction (WindowTest12): partition 0 goes when i13 arrives") {
    val w = new TumblingWindow[String, T](TumblingPolicy.Count(4), _._2, Ordering.String,
      Some(PartitionEvictionPolicy.Tuples(5)), emitEvicted = true)
    val keys = Seq(0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1)
    val got = feed(w, keys.zipWithIndex.map { case (k, i) => k.toString -> i.toDouble })
    // key 0 flushed once (i0..i3), so its eviction is its firing number 1
    assert(got.filter(_._4 == "EVICTED") == Seq(("0", 1L, Seq(8.0, 10.0, 12.0), "EVICTED")))
    assert(w.partitionCount == 1)
  }
}

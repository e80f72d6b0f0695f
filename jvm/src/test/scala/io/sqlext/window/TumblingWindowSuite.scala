package io.sqlext.window

import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable.ArrayBuffer

/** The tumbling rules of semantics.md section 2, on plain (key, value) tuples. */
class TumblingWindowSuite extends AnyFunSuite {

  private type T = (String, Double)

  private def run(policy: TumblingPolicy)(drive: (TumblingWindow[String, T],
      Firing[String, T] => Unit) => Unit): Seq[(String, Long, Seq[Double])] = {
    val out = ArrayBuffer.empty[(String, Long, Seq[Double])]
    val window = new TumblingWindow[String, T](policy, _._2, Ordering.String)
    drive(window, f => out += ((f.key, f.windowId, f.tuples.map(_._2).toSeq)))
    out.toSeq
  }

  private def insertAll(w: TumblingWindow[String, T], emit: Firing[String, T] => Unit,
      tuples: (String, Double)*): Unit = tuples.foreach(t => w.insert(t._1, t, 0L)(emit))

  test("count(n) flushes on the n-th tuple, including it, and counts flushes per key") {
    val got = run(TumblingPolicy.Count(2)) { (w, emit) =>
      insertAll(w, emit, "a" -> 1, "b" -> 2, "a" -> 3, "a" -> 4, "a" -> 5, "a" -> 6)
    }
    assert(got == Seq(("a", 0L, Seq(1.0, 3.0)), ("a", 1L, Seq(4.0, 5.0))))
  }

  test("count(n) leftovers never fire and the partition is removed after a flush") {
    val w = new TumblingWindow[String, T](TumblingPolicy.Count(3), _._2, Ordering.String)
    val out = ArrayBuffer.empty[Firing[String, T]]
    Seq("a" -> 1.0, "a" -> 2.0, "a" -> 3.0).foreach(t => w.insert(t._1, t, 0L)(out += _))
    assert(out.size == 1 && w.partitionCount == 0)
    w.insert("a", "a" -> 4.0, 0L)(out += _)
    assert(w.partitionCount == 1 && out.size == 1)
  }

  test("count(0) is rejected") {
    intercept[IllegalArgumentException](TumblingPolicy.Count(0))
  }

  test("delta compares with the oldest tuple, strictly, before inserting") {
    val got = run(TumblingPolicy.Delta(1.5)) { (w, emit) =>
      insertAll(w, emit, "k" -> 16.0, "k" -> 16.4, "k" -> 17.1, "k" -> 17.5, "k" -> 17.6)
    }
    assert(got == Seq(("k", 0L, Seq(16.0, 16.4, 17.1, 17.5))))
  }

  test("delta: oldest, not minimum; decreasing values never tumble") {
    val got = run(TumblingPolicy.Delta(1.5)) { (w, emit) =>
      insertAll(w, emit, "k" -> 16.4, "k" -> 16.0, "k" -> 17.1, "k" -> 17.6, "k" -> 3.0)
    }
    assert(got.isEmpty)
  }

  test("time ticks fire every partition in key order; a tuple on a tick joins the next") {
    val got = run(TumblingPolicy.Time(origin = 0, period = 5)) { (w, emit) =>
      Seq(("b", 1L), ("a", 2L), ("a", 5L), ("b", 23L)).foreach { case (k, t) =>
        w.advanceClock(t)(emit)
        w.insert(k, k -> t.toDouble, t)(emit)
      }
      w.advanceClock(30)(emit)
    }
    assert(got == Seq(("a", 0L, Seq(2.0)), ("b", 0L, Seq(1.0)), ("a", 1L, Seq(5.0)),
      ("b", 1L, Seq(23.0))))
  }

  test("punct flushes every non-empty partition once; an empty window flushes nothing") {
    val got = run(TumblingPolicy.Punct) { (w, emit) =>
      insertAll(w, emit, "z" -> 1, "a" -> 2)
      w.punctuate(0L)(emit)
      w.punctuate(0L)(emit)
      insertAll(w, emit, "z" -> 3)
      w.punctuate(0L)(emit)
    }
    assert(got == Seq(("a", 0L, Seq(2.0)), ("z", 0L, Seq(1.0)), ("z", 1L, Seq(3.0))))
  }
}

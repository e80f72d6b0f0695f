package io.sqlext.window

import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable.ArrayBuffer

/** The timeInterval rules of semantics.md section 6 (times in plain units here). */
class TimeIntervalWindowSuite extends AnyFunSuite {

  private type T = (String, Long)

  test("panes are [N*P + O, N*P + O + D): overlapping, gaps, negative N") {
    assert(PaneSpec(10, 5, 0, 0).panesOf(7).toSeq == Seq(0L, 1L))
    assert(PaneSpec(10, 5, 0, 0).panesOf(10).toSeq == Seq(1L, 2L)) // right-open
    assert(PaneSpec(4, 7, 0, 1).panesOf(6).isEmpty) // in the gap [5, 8)
    assert(PaneSpec(10, 10, 0, 3).panesOf(-1).toSeq == Seq(-1L))
  }

  private def run(feed: (TimeIntervalWindow[String, T], Firing[String, T] => Unit) => Unit) = {
    val out = ArrayBuffer.empty[(Long, Long, Seq[String])]
    val window = new TimeIntervalWindow[String, T](PaneSpec(10, 5, 15, 0), _._2, Ordering.String)
    feed(window, f => out += ((f.windowId, f.paneIndex, f.tuples.map(_._1).toSeq)))
    (window, out.toSeq)
  }

  test("late tuples re-fire their panes at the next advancing watermark, with index 1") {
    val (_, got) = run { (w, emit) =>
      Seq("a" -> 103L, "b" -> 107L).foreach(t => w.insert("k", t, 0)(emit))
      w.advanceClock(110)(emit)
      w.insert("k", "late" -> 104L, 0)(emit)
      w.advanceClock(110)(emit) // not an advance: ignored
      w.advanceClock(111)(emit)
    }
    assert(got == Seq((19L, 0L, Seq("a")), (20L, 0L, Seq("a", "b")),
      (19L, 1L, Seq("a", "late")), (20L, 1L, Seq("a", "b", "late"))))
  }

  test("tuples older than watermark - discard are dropped; panes close at end + discard") {
    val (window, got) = run { (w, emit) =>
      w.insert("k", "a" -> 112L, 0)(emit)
      w.advanceClock(130)(emit)
      w.insert("k", "old" -> 114L, 0)(emit)
      w.insert("k", "edge" -> 115L, 0)(emit)
      w.advanceClock(131)(emit)
    }
    assert(window.droppedLate == 1)
    assert(got.map(_._3).contains(Seq("a", "edge")))
    assert(window.openPanes == 2) // [105,115) closed at 130; [110,120) and [115,125) stay
  }
}

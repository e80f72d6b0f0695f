package io.sqlext.window

import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

/** The pane rule alone (semantics.md section 6), in plain time units, against the rule as the
 *  spec states it, and pane membership against its definition. */
class PaneRuleSuite extends AnyFunSuite {
  private val panes = PaneSpec(duration = 10, period = 5, discard = 15, offset = 0)
  private val rule = PaneRule(panes)

  test("a pane completes at W >= end and fires ON_TIME (index 0) if it holds tuples") {
    val before = rule.advance(2, PaneState.Created, 14) // pane 2 is [10, 20)
    assert(before == PaneStep(None, Some(PaneState.Created)))
    val at = rule.advance(2, PaneState.Created, 20)
    assert(at == PaneStep(Some(PaneFiring(0L, "ON_TIME")),
      Some(PaneState(complete = true, fresh = false, 1L))))
  }

  test("a complete pane re-fires LATE (1, 2, ...) only at advances after tuples joined it") {
    val fired = PaneState(complete = true, fresh = false, firings = 1)
    assert(rule.advance(2, fired, 25) == PaneStep(None, Some(fired)))
    assert(rule.advance(2, fired.added, 25).fired.contains(PaneFiring(1L, "LATE")))
    val twice = rule.advance(2, fired.added, 25).next.get
    assert(rule.advance(2, twice.added, 26).fired.contains(PaneFiring(2L, "LATE")))
  }

  test("a pane closes at W >= end + discard, firing first if updated") {
    val fresh = PaneState(complete = true, fresh = true, firings = 1)
    assert(rule.advance(2, fresh, 35) == PaneStep(Some(PaneFiring(1L, "LATE")), None))
    assert(rule.advance(2, PaneState.Created, 34).next.isDefined)
    // A watermark that jumps past end + discard completes, fires and closes at once.
    assert(rule.advance(2, PaneState.Created, 1000) ==
      PaneStep(Some(PaneFiring(0L, "ON_TIME")), None))
  }

  test("tuples strictly below W - discard are late; none before the first watermark") {
    assert(rule.isLate(14, 30) && !rule.isLate(15, 30))
    assert(!rule.isLate(Long.MinValue + 1, Long.MinValue))
    assert(rule.advance(2, PaneState.Created, Long.MinValue).fired.isEmpty)
  }

  test("nextChange is the lowest watermark above W at which advance changes the pane") {
    val random = new Random(7)
    val states = for (c <- Seq(false, true); f <- Seq(false, true); k <- Seq(0L, 1L, 3L))
      yield PaneState(c, f, k)
    (0 until 2000).foreach { _ =>
      val n = random.nextInt(6).toLong
      val w = random.nextInt(60).toLong - 5
      val state = states(random.nextInt(states.size))
      // Only states the rule can reach under W: a complete pane has W >= end.
      if (!state.complete || w >= panes.end(n)) {
        val next = rule.nextChange(n, state, w)
        assert(next > w)
        (w + 1 until next).foreach(v => assert(rule.advance(n, state, v) ==
          PaneStep(None, Some(state)), s"pane $n $state changed at $v < $next"))
        assert(rule.advance(n, state, next) != PaneStep(None, Some(state)), s"$n $state $next")
      }
    }
  }

  test("EMIT FINAL: one FINAL firing when the pane closes, none before") {
    val finals = PaneRule(panes, PaneEmit.Final) // pane 2 is [10, 20), discard 15
    assert(finals.advance(2, PaneState.Created, 20) == PaneStep(None, Some(PaneState.Created)))
    assert(finals.advance(2, PaneState.Created, 34).fired.isEmpty)
    assert(finals.advance(2, PaneState.Created, 35) ==
      PaneStep(Some(PaneFiring(0L, "FINAL")), None))
    assert(finals.nextChange(2, PaneState.Created, 20) == 35)
  }

  test("EMIT EARLY: fresh incomplete panes fire early at once, then once per period, then " +
      "ON_TIME") {
    val early = PaneRule(panes, PaneEmit.Early(5))
    val created = early.created(106)
    assert(created.earlyAt == 106 && early.early(2, created, 105, 0).isEmpty)
    val (first, after) = early.early(2, created, 106, 0).get
    assert(first == PaneFiring(0L, "EARLY") && after.earlyAt == 111 && !after.fresh)
    assert(early.early(2, after, 200, 0).isEmpty) // nothing new since
    assert(early.early(2, after.added, 110, 0).isEmpty && early.early(2, after.added, 111, 0).isDefined)
    assert(early.early(2, after.added, 111, 20).isEmpty) // the watermark reached its end
    // Completion fires ON_TIME even without new tuples: it replaces the early row.
    val step = early.advance(2, after, 20)
    assert(step.fired.contains(PaneFiring(1L, "ON_TIME")))
    assert(early.early(2, step.next.get.added, 1000, 20).isEmpty) // complete: no more early firings
    assert(early.advance(2, step.next.get.added, 21).fired.contains(PaneFiring(2L, "LATE")))
  }

  test("panesOf is every N with start(N) <= t < end(N): overlaps, gaps, offsets, negatives") {
    val random = new Random(11)
    (0 until 300).foreach { _ =>
      val geometry = PaneSpec(1 + random.nextInt(20), 1 + random.nextInt(12), 0,
        random.nextInt(30) - 15)
      val t = random.nextInt(400).toLong - 200
      val expected = (-500L to 500L).filter(n => geometry.start(n) <= t && t < geometry.end(n))
      assert(geometry.panesOf(t).toSeq == expected, s"$geometry at $t")
      assert(expected.size <= geometry.copies)
      expected.lastOption.foreach(n => assert(geometry.lastPane(t) == n))
    }
  }

  test("seconds become microseconds once, rounded alike everywhere") {
    assert(Micros.of(1.5) == 1500000L && Micros.of(0.0000004) == 0L)
    assert(Micros.period(0.0000004) == 1L)
    assert(PaneSpec.of(WindowSpec("time_interval", "", 0, 0, 0, "", Nil, ordered = false, Nil,
      duration = 0.25, period = 0.1, discard = 1, offset = 0.05)) ==
      PaneSpec(250000L, 100000L, 1000000L, 50000L))
    assert(Micros.secondOf(-1L) == -1L && Micros.secondOf(1999999L) == 1L)
  }
}

package io.sqlext.window

/**
 * Pane geometry of TIME_INTERVAL(duration, period, discard, offset), all in microseconds:
 * panes [N*period + offset, N*period + offset + duration). Pane membership lives here
 * ([[panesOf]]); ExpandPanes writes the same arithmetic as Catalyst expressions, and
 * PaneExpansionSuite checks the two agree.
 */
final case class PaneSpec(duration: Long, period: Long, discard: Long, offset: Long) {
  require(duration > 0 && period > 0 && discard >= 0, s"invalid panes $this")

  def start(n: Long): Long = n * period + offset
  def end(n: Long): Long = start(n) + duration

  /** The highest N whose pane starts at or before `time` (it contains `time` unless in a gap). */
  def lastPane(time: Long): Long = Math.floorDiv(time - offset, period)

  /** How many panes can contain one time: the copies a row-to-panes expansion makes. */
  def copies: Int = ((duration + period - 1) / period).toInt

  /** N of every pane containing `time` (none when it falls in a gap, period > duration). */
  def panesOf(time: Long): Iterator[Long] = {
    val last = lastPane(time)
    val first = Math.floorDiv(time - offset - duration, period) + 1
    Iterator.range(0, (last - first + 1).toInt).map(first + _)
  }
}

object PaneSpec {
  /** The window's panes from TIME_INTERVAL's seconds. */
  def of(spec: WindowSpec): PaneSpec = PaneSpec(Micros.period(spec.duration),
    Micros.period(spec.period), Micros.of(spec.discard), Micros.of(spec.offset))
}

/** One pane of one partition between watermarks: complete (the watermark passed its end),
 *  fresh (tuples arrived since its last firing), and how often it fired. */
final case class PaneState(complete: Boolean, fresh: Boolean, firings: Long) {
  /** A tuple joined the pane: it fires at the next watermark that lets it. */
  def added: PaneState = if (fresh) this else copy(fresh = true)
}

object PaneState {
  /** A pane created by its first tuple. */
  val Created: PaneState = PaneState(complete = false, fresh = true, firings = 0L)
}

/** What one watermark did to a pane: the index of its firing, if it fired (0: ON_TIME, then
 *  LATE 1, 2, ...), and its state afterwards, None once it closed. */
final case class PaneStep(fired: Option[Long], next: Option[PaneState])

/**
 * The pane rule of semantics.md section 6, the one home of it: batch replay
 * ([[TimeIntervalWindow]]) and both streaming pane processors drive it. A pane completes when
 * the watermark W reaches its end; a complete pane fires each time W advances after tuples
 * joined it; it closes at W >= end + discard age, and tuples below W - discard age are dropped.
 * Watermarks only move forward, and each reaches a pane once.
 */
final case class PaneRule(panes: PaneSpec) {

  /** A tuple SPL drops: older than W - discard age (no watermark yet: Long.MinValue). */
  def isLate(time: Long, watermark: Long): Boolean =
    watermark != Long.MinValue && time < watermark - panes.discard

  /** Watermark W reaches pane N in state `pane`. */
  def advance(n: Long, pane: PaneState, watermark: Long): PaneStep = {
    if (watermark == Long.MinValue) return PaneStep(None, Some(pane)) // no watermark yet
    val complete = pane.complete || watermark >= panes.end(n)
    val fire = complete && pane.fresh
    val closed = complete && watermark - panes.discard >= panes.end(n)
    val after = PaneState(complete, pane.fresh && !fire, pane.firings + (if (fire) 1 else 0))
    PaneStep(Option.when(fire)(pane.firings), Option.unless(closed)(after))
  }

  /** The lowest watermark above `watermark` at which [[advance]] changes pane N: its completion,
   *  its closing, or (a complete pane tuples joined since) any advance. */
  def nextChange(n: Long, pane: PaneState, watermark: Long): Long = {
    val closing = panes.end(n) + panes.discard
    val change = if (!pane.complete) math.min(panes.end(n), closing)
      else if (pane.fresh) watermark + 1
      else closing
    math.max(change, watermark + 1)
  }
}

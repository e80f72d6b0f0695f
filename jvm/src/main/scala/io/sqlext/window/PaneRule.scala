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

/** What a TIME_INTERVAL window hands on (spec/sql.md section 8): every update (SPL: ON_TIME,
 *  then LATE re-firings), the final content only (EMIT FINAL), or updates plus early firings
 *  at most once per `every` µs of the window's clock (EMIT EARLY EVERY). */
sealed trait PaneEmit

object PaneEmit {
  case object Updates extends PaneEmit
  case object Final extends PaneEmit
  final case class Early(every: Long) extends PaneEmit {
    require(every > 0, s"EMIT EARLY EVERY needs a positive duration, got $every µs")
  }

  def parse(name: String, everySeconds: Double): PaneEmit = name match {
    case "" => Updates
    case "final" => Final
    case "early" => Early(Micros.period(everySeconds))
    case other => throw WindowSpec.unknown("emit_panes", other)
  }
}

/** One pane of one partition between watermarks: complete (the watermark passed its end),
 *  fresh (tuples arrived since its last firing), how often it fired, and (EMIT EARLY) the
 *  clock from which it may fire early again (Long.MaxValue: never). */
final case class PaneState(complete: Boolean, fresh: Boolean, firings: Long,
    earlyAt: Long = Long.MaxValue) {
  /** A tuple joined the pane: it fires at the next watermark that lets it. */
  def added: PaneState = if (fresh) this else copy(fresh = true)
}

object PaneState {
  /** A pane created by its first tuple (without EMIT EARLY; see [[PaneRule.created]]). */
  val Created: PaneState = PaneState(complete = false, fresh = true, firings = 0L)
}

/** One firing of a pane: its index (PANE_INDEX(), 0, 1, ... over all its firings) and its
 *  PANE_TIMING(). */
final case class PaneFiring(index: Long, timing: String) {
  /** WINDOW_EVENT(): EARLY and FINAL say so; on-time and late firings are SPL triggers. */
  def event: String = if (timing == PaneFiring.Early || timing == PaneFiring.Final) timing
    else Firing.Trigger
}

object PaneFiring {
  val OnTime = "ON_TIME"
  val Late = "LATE"
  val Early = "EARLY"
  val Final = "FINAL"
}

/** What one watermark did to a pane: its firing, if it fired, and its state afterwards, None
 *  once it closed. */
final case class PaneStep(fired: Option[PaneFiring], next: Option[PaneState])

/**
 * The pane rule of semantics.md section 6 and spec/sql.md section 8, the one home of it: batch
 * replay ([[TimeIntervalWindow]]) and every streaming pane processor drive it. A pane completes
 * when the watermark W reaches its end; it fires ON_TIME then, and LATE each time W advances
 * after tuples joined it; it closes at W >= end + discard age, and tuples below W - discard
 * age are dropped. Watermarks only move forward, and each reaches a pane once.
 *
 * EMIT FINAL: a pane fires once, FINAL, when it closes, with every tuple it got. EMIT EARLY
 * EVERY e: an incomplete pane that got tuples since its last firing also fires EARLY, at once
 * for its first tuple and then when the window's clock (event time in batch replay, processing
 * time in streaming) is at least e past its last early firing ([[early]]); its completion then
 * always fires ON_TIME, so the on-time row replaces the early one.
 */
final case class PaneRule(panes: PaneSpec, emit: PaneEmit = PaneEmit.Updates) {

  /** A tuple SPL drops: older than W - discard age (no watermark yet: Long.MinValue). */
  def isLate(time: Long, watermark: Long): Boolean = time < dropPoint(watermark)

  /** The event time below which tuples are late under watermark W (none before the first). */
  def dropPoint(watermark: Long): Long =
    if (watermark == Long.MinValue) Long.MinValue else watermark - panes.discard

  /** A pane created by its first tuple at `clock` (EMIT EARLY: it may fire early at once). */
  def created(clock: Long): PaneState = emit match {
    case PaneEmit.Early(_) => PaneState.Created.copy(earlyAt = clock)
    case _ => PaneState.Created
  }

  /** Watermark W reaches pane N in state `pane`. */
  def advance(n: Long, pane: PaneState, watermark: Long): PaneStep = {
    if (watermark == Long.MinValue) return PaneStep(None, Some(pane)) // no watermark yet
    val closed = watermark - panes.discard >= panes.end(n)
    if (emit == PaneEmit.Final) {
      return PaneStep(Option.when(closed)(PaneFiring(0L, PaneFiring.Final)),
        Option.unless(closed)(pane))
    }
    val completes = !pane.complete && watermark >= panes.end(n)
    val complete = pane.complete || completes
    // Before completion a pane fired early at most; its completion always fires.
    val fire = completes || (complete && pane.fresh)
    val after = pane.copy(complete = complete, fresh = pane.fresh && !fire,
      firings = pane.firings + (if (fire) 1 else 0))
    val timing = if (completes) PaneFiring.OnTime else PaneFiring.Late
    PaneStep(Option.when(fire)(PaneFiring(pane.firings, timing)),
      Option.unless(complete && closed)(after))
  }

  /** EMIT EARLY: the window's clock is at `clock` and its watermark at `watermark`; pane N
   *  fires early if it may (not once the watermark reached its end: it is late then). */
  def early(n: Long, pane: PaneState, clock: Long, watermark: Long)
      : Option[(PaneFiring, PaneState)] = emit match {
    case PaneEmit.Early(every) if pane.fresh && clock >= pane.earlyAt && !pane.complete &&
        (watermark == Long.MinValue || watermark < panes.end(n)) =>
      Some((PaneFiring(pane.firings, PaneFiring.Early),
        pane.copy(fresh = false, firings = pane.firings + 1, earlyAt = saturated(clock, every))))
    case _ => None
  }

  /** The lowest watermark above `watermark` at which [[advance]] changes pane N: its completion,
   *  its closing, or (a complete pane tuples joined since) any advance. */
  def nextChange(n: Long, pane: PaneState, watermark: Long): Long = {
    val closing = panes.end(n) + panes.discard
    val change = if (emit == PaneEmit.Final) closing
      else if (!pane.complete) math.min(panes.end(n), closing)
      else if (pane.fresh) watermark + 1
      else closing
    math.max(change, watermark + 1)
  }

  private def saturated(clock: Long, every: Long): Long =
    if (clock > Long.MaxValue - every) Long.MaxValue else clock + every
}

"""Independent reference model of TIME_INTERVAL (event-time pane) windows as our SQL exposes them.

Why this exists: tests compare what Spark computes with what this file computes. It is written
from spec/semantics.md section 6 and sql.md sections 2, 3 and 7 only, shares no
code with the extension, and favours being obviously correct over being fast: one loop over the
input in arrival order, a dict ``N -> pane`` and, per pane, a dict ``partition -> rows``.

Modelled departures from the reference runtime (sql.md section 7 and 2):
  * the DOCUMENTED intervals [N*P + O, N*P + O + D) are used for every event time, so the pane
    [0, D) exists and times before the offset (negative N) are fine; the reference's epoch
    quirk (semantics.md 6, "Reference quirks near the epoch") is not reproduced;
  * at the end of the input a final watermark of +infinity is processed, so every pane still
    holding unfired data fires once more (the reference never fires open panes at the end);
  * firings caused by one watermark come out in pane-start order, then partition-key order
    (NULL first), instead of hash order;
  * rows whose event time is NULL are not windowed but counted ("not_windowed").

Arithmetic is exact (fractions.Fraction) so that boundary tests such as "112.9 is not in
[113, 123)" or "drop iff t < W - A" cannot be decided by binary rounding. Floats are read by
their shortest decimal repr (0.1 means 1/10), as a SQL literal would be.

Standard library only, so it can run in any test without Spark.
"""

import datetime
import decimal
import math
from fractions import Fraction

from oracle import _arrival_order, _null_first

__all__ = ["pane_firings"]

EPOCH = datetime.datetime(1970, 1, 1)
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
MICROSECOND = datetime.timedelta(microseconds=1)
INFINITY = float("inf")


def _seconds(value):
    """A time, duration or watermark as exact seconds (Fraction), or a float infinity.

    Why one converter: event times, watermarks and the window's durations must be compared
    with one another, whatever their Python type. Naive datetimes are read as UTC; aware ones
    are converted to UTC.
    """
    if isinstance(value, datetime.datetime):
        epoch = EPOCH if value.tzinfo is None else EPOCH_UTC
        return Fraction((value - epoch) // MICROSECOND, 10**6)
    if isinstance(value, datetime.timedelta):
        return Fraction(value // MICROSECOND, 10**6)
    if isinstance(value, bool):
        raise TypeError(f"not a time or duration: {value!r}")
    if isinstance(value, float):
        if math.isinf(value):
            return value
        if math.isnan(value):
            raise ValueError("NaN is not a time or duration")
        return Fraction(repr(value))
    if isinstance(value, (int, decimal.Decimal, Fraction)):
        return Fraction(value)
    raise TypeError(f"not a time or duration: {value!r}")


def _like(seconds, sample):
    """Seconds converted back to the type of ``sample`` (an event time of the input).

    Why: sql.md section 3 says PANE_START()/PANE_END() have the type of the ON expression.
    An integral bound of integer event times stays an int; a fractional one (e.g. a 1.5 s
    period over int seconds) becomes a float rather than being truncated.
    """
    if isinstance(sample, datetime.datetime):
        epoch = EPOCH if sample.tzinfo is None else EPOCH_UTC
        return epoch + datetime.timedelta(microseconds=round(seconds * 10**6))
    if isinstance(sample, float):
        return float(seconds)
    if isinstance(sample, decimal.Decimal):
        return decimal.Decimal(seconds.numerator) / decimal.Decimal(seconds.denominator)
    if isinstance(sample, Fraction):
        return seconds
    return int(seconds) if seconds.denominator == 1 else float(seconds)


def _window_options(duration, period, discard, offset):
    """Validated (D, P, A, O) in exact seconds, with O stored modulo P.

    Why the checks: semantics.md 6 requires D > 0, P > 0, A >= 0, O >= 0, and sql.md 6 makes
    an offset outside [0, duration) an error, so the oracle refuses what the SQL refuses.
    """
    d = _seconds(duration)
    p = d if period is None else _seconds(period)
    a, o = _seconds(discard), _seconds(offset)
    if not d > 0:
        raise ValueError(f"duration must be > 0, got {duration!r}")
    if not p > 0:
        raise ValueError(f"period must be > 0, got {period!r}")
    if not a >= 0:
        raise ValueError(f"discard age must be >= 0, got {discard!r}")
    if not 0 <= o < d:
        raise ValueError(f"offset must be in [0, duration), got {offset!r}")
    if math.isinf(d) or math.isinf(p) or math.isinf(a):
        raise ValueError("window durations must be finite")
    return d, p, a, o % p


def _pane_numbers(t, d, p, o):
    """Every N whose pane [N*p + o, N*p + o + d) contains t (closed left, open right).

    Why a filter over a small candidate range: membership is then decided by the very
    inequality the spec states, not by a derived formula. N ranges over the integers, so
    negative N (times before the offset or the epoch) is allowed; a gap time gets no N.
    """
    low = math.floor((t - o - d) / p)
    high = math.floor((t - o) / p)
    return [n for n in range(low, high + 1) if n * p + o <= t < n * p + o + d]


class _Pane:
    """One pane: completion state, rows per partition, fresh marks and trigger counts.

    Why trigger counts are per partition: PANE_INDEX() counts firings of a (pane, partition),
    and a partition first seen after the pane already fired for others starts at index 0.
    """

    def __init__(self):
        self.complete = False
        self.parts = {}  # partition key -> rows in arrival order (never evicted)
        self.fresh = set()  # partitions updated since their last trigger
        self.triggers = {}  # partition key -> number of triggers so far
        self.early_at = {}  # EMIT EARLY: partition key -> clock of its next allowed early firing


class _TimeIntervalWindow:
    """The window-level state machine of semantics.md 6 (watermark, panes, drop rule)."""

    def __init__(self, d, p, a, o, part, emit=None, early_every=None):
        self.d, self.p, self.a, self.o, self.part = d, p, a, o, part
        self.emit, self.every = emit, early_every
        self.watermark = -INFINITY
        self.panes = {}  # N -> _Pane
        self.firings = []
        self.dropped = 0
        self.late_rows = []  # LATE ROWS INTO: what each dropped tuple was
        self.sample = None  # first event time seen, fixes the type of pane bounds

    def insert(self, row, value, clock=None):
        """Drop (t < W - A, strict) or append to every pane containing t; never trigger.

        Why no trigger here: late tuples only mark their partition fresh; the next strictly
        advancing watermark re-triggers. Missing panes are created Incomplete even when the
        watermark has already passed their end.
        """
        if self.sample is None:
            self.sample = value
        t = _seconds(value)
        if t < self.watermark - self.a:
            self.dropped += 1
            self.late_rows.append({
                "row": row, "event_time": value, "watermark": self.watermark,
                "panes": [(_like(n * self.p + self.o, value),
                           _like(n * self.p + self.o + self.d, value))
                          for n in _pane_numbers(t, self.d, self.p, self.o)]})
            return
        key = self.part(row)
        for n in _pane_numbers(t, self.d, self.p, self.o):
            pane = self.panes.setdefault(n, _Pane())
            if key not in pane.parts and self.emit == "early":
                pane.early_at[key] = clock  # its first tuple may fire it early at once
            pane.parts.setdefault(key, []).append(row)
            pane.fresh.add(key)

    def early(self, clock):
        """EMIT EARLY (sql.md 8): an incomplete pane partition with tuples since its last firing
        fires EARLY, at once for its first tuple, then once the clock is e past its last early
        firing."""
        for n in sorted(self.panes):
            pane = self.panes[n]
            start = n * self.p + self.o
            if pane.complete or self.watermark >= start + self.d:
                continue
            for key in sorted(pane.fresh, key=_null_first):
                if clock >= pane.early_at[key]:
                    self._trigger(n, start, start + self.d, pane, key, "EARLY")
                    pane.fresh.discard(key)
                    pane.early_at[key] = clock + self.every

    def advance(self, value):
        """Process watermark ``value`` if it is strictly greater than the current one.

        Why the three steps per pane in this order: completing, then triggering, then closing
        on one watermark is what makes A = 0 fire and close a pane at once (semantics.md 6).
        """
        w = _seconds(value)
        if not w > self.watermark:
            return
        self.watermark = w
        for n in sorted(self.panes):
            pane = self.panes[n]
            start = n * self.p + self.o
            end = start + self.d
            if self.emit == "final":
                # EMIT FINAL: nothing fires before the pane closes; then all of it, once.
                if w >= end + self.a:
                    for key in sorted(pane.parts, key=_null_first):
                        self._trigger(n, start, end, pane, key, "FINAL")
                    del self.panes[n]
                continue
            completes = w >= end and not pane.complete
            if completes:
                pane.complete = True
                # Its completion fires every partition: one that fired early gets its
                # on-time row even without new tuples.
                for key in sorted(pane.parts, key=_null_first):
                    self._trigger(n, start, end, pane, key, "ON_TIME")
                pane.fresh.clear()
            if pane.complete and pane.fresh:
                for key in sorted(pane.fresh, key=_null_first):
                    self._trigger(n, start, end, pane, key, "LATE")
                pane.fresh.clear()
            if pane.complete and w >= end + self.a:
                del self.panes[n]

    def _trigger(self, n, start, end, pane, key, timing):
        index = pane.triggers.get(key, 0)
        pane.triggers[key] = index + 1
        if timing == "LATE" and index == 0:
            timing = "ON_TIME"  # a partition new to a pane that completed: its first firing
        self.firings.append({
            "partition": key,
            "pane_start": _like(start, self.sample),
            "pane_end": _like(end, self.sample),
            "window_id": n,
            "timing": timing,
            "index": index,
            "rows": list(pane.parts[key]),
        })


def pane_firings(rows, duration, period=None, discard=0.0, offset=0.0, *, event_time,
                 partition_by=None, order_by=None, watermark_delay=None, watermark_by=None,
                 final_watermark=True, emit=None, early_every=None, early_clock=None):
    """Firings of TIME_INTERVAL(duration, period, discard, offset) ON event_time.

    rows: list of dicts in SCAN order. Durations are seconds (number) or timedelta.
    event_time: row -> number | datetime | None (naive datetime = UTC). partition_by: row ->
      key or None (NULL is a key of its own).
    Without order_by/watermark (the batch default): all input is present; every non-empty
      (pane, partition) fires exactly once, ON_TIME, index 0 (watermark +infinity at the end).
    order_by: row -> arrival value; arrival order is the rows stably sorted by it, None
      first (sql.md 2); without it, scan order.
    watermark_delay d: after each tuple (in arrival order) the watermark becomes
      max(event time seen) - d, if that strictly advances it.
    watermark_by: row -> value or None; rows where it is not None are watermark markers (never
      tuples) advancing the watermark to that value (only forward). Exclusive with the delay.
    final_watermark: test hook; False skips the +infinity watermark processed at the end of
      input (sql.md 7), to compare with reference cases that never see it.
    emit: None (every update), "final" (EMIT FINAL: one FINAL firing per pane partition when
      the pane closes) or "early" (EMIT EARLY EVERY early_every: incomplete pane partitions
      with new tuples also fire EARLY, by the event-time clock of batch replay, the highest
      event time so far, checked after each tuple and its watermark).
    early_clock: row -> value or None; rows where it is not None are clock markers (streaming:
      a micro-batch's processing time, after its tuples): the early check runs there only.
    Returns {"firings": [...], "dropped": n_late_dropped, "not_windowed": n_null_event_time,
      "late_rows": [{"row", "event_time", "watermark" (seconds), "panes": [(start, end)]}],
      "open": [{"partition", "window_id", "rows", "complete", "fresh", "firings"}] (the panes
      still open at the end: what a stream's window state holds)}.
    Each firing: {"partition", "pane_start", "pane_end" (same type as the event times),
      "window_id" (N of the pane start N*period + offset), "timing" ("ON_TIME" | "LATE"),
      "index" (0, 1, 2, ... per pane and partition), "rows": [row dicts of the pane's partition
      at that moment, arrival order]}. Firings of one watermark are in pane-start order, then
      partition-key order (None first).
    """
    if watermark_delay is not None and watermark_by is not None:
        raise ValueError("WATERMARK DELAY and WATERMARK BY are exclusive")
    d, p, a, o = _window_options(duration, period, discard, offset)
    delay = None if watermark_delay is None else _seconds(watermark_delay)
    part = partition_by if partition_by is not None else (lambda row: None)
    if (emit == "early") != (early_every is not None):
        raise ValueError("EMIT EARLY needs early_every, and only it")
    every = None if early_every is None else _seconds(early_every)
    window = _TimeIntervalWindow(d, p, a, o, part, emit, every)
    not_windowed = 0
    latest = -INFINITY  # max event time seen, for WATERMARK DELAY
    for row in _arrival_order(rows, order_by):
        if early_clock is not None and early_clock(row) is not None:
            if emit == "early":
                window.early(_seconds(early_clock(row)))
            continue
        if watermark_by is not None:
            mark = watermark_by(row)
            if mark is not None:
                window.advance(mark)
                continue
        value = event_time(row)
        if value is None:
            not_windowed += 1
            continue
        latest = max(latest, _seconds(value))
        window.insert(row, value, latest)
        if delay is not None:
            window.advance(latest - delay)
        if emit == "early" and early_clock is None:
            window.early(latest)
    if final_watermark:
        window.advance(INFINITY)
    open_panes = [{"partition": key, "window_id": n, "rows": list(rows),
                   "complete": pane.complete, "fresh": key in pane.fresh,
                   "firings": pane.triggers.get(key, 0)}
                  for n, pane in sorted(window.panes.items())
                  for key, rows in pane.parts.items()]
    return {"firings": window.firings, "dropped": window.dropped, "not_windowed": not_windowed,
            "late_rows": window.late_rows, "open": open_panes}

"""Independent reference model of SPL SLIDING windows as exposed through our SQL.

Why this exists: tests compare what Spark computes for ``WINDOW SLIDING <eviction> TRIGGER
<trigger>`` with what this file computes. It is written from spec/semantics.md
(sections 1, 3, 4, 5, 7) and sql.md (sections 2, 3, 7) only, shares no code with the
extension, and favours being obviously correct over being fast: one loop over the rows in
arrival order, a dict ``partition key -> list of rows`` (tests/oracle_eviction.Store) and plain
per-key dicts for policy state.

Batch replay (sql.md 2): arrival order is scan order, or rows stably sorted by ``order_by``
(NULL first). TIME policies and AGE eviction read the clock from the arrival value (datetime).
Time ticks are window-wide at t0 + k*t (k >= 1, t0 = earliest non-NULL arrival of ALL rows)
and happen only up to the latest arrival; a tick due at T runs before a tuple arriving at T.
Before a tick or tuple at clock c, every tuple stamped s with c - s > S is time-evicted first.

Per-tuple order (semantics.md 3.1): count/delta eviction + count trigger: evict -> insert ->
trigger; delta trigger: trigger (window before the tuple) -> evict -> insert; time eviction +
count trigger: insert -> trigger; time trigger: only ticks trigger. An AGE check precedes each
tuple and tick; COUNT/TUPLES partition eviction runs inside insert.

SQL-level output (semantics.md 7, sql.md 3): a trigger fires only if its partition was
initially full then (or ``emit_incomplete``); WINDOW_ID() is the per-key index among all
non-empty triggers, suppressed ones included, so visible ids can start above 0.

Choices where the spec is silent (each is tested):
  * an EMPTY trigger (only possible for a delta trigger whose partition was emptied and removed
    by time eviction) fires nothing and uses no window id, like an empty tumbling flush in
    tests/oracle.py; the "no partitions -> default partition" tick is such an empty trigger;
  * the delta-trigger reference and the count-trigger counter of a key survive the removal of
    its time-evicted empty partition (the reference only clears them in partitionEvicted, not
    partitionRemoved: R/StarDeltaSlidingWindowImpl.h, R/TimeStarSlidingWindowImpl.h); partition
    eviction clears them, together with fullness;
  * if TUPLES eviction removes the partition the tuple was just inserted into, the rest of that
    tuple's processing (initialFull check, count trigger) is skipped: the partition and its
    state are gone (the C++ code would touch a dangling reference there);
  * EVICTED firings (EMIT EVICTED) are not subject to the initialFull rule and take the key's
    next window id;
  * a row that is not windowed (NULL DELTA value) but has an arrival value still advances the
    clock; this is observationally the same as advancing it only at the end of the input,
    because time evictions and ticks are only seen by later ticks and tuples.
Standard library only, so it can run in any test without Spark.
"""

import datetime

from oracle import _arrival_order, _delta_exceeds, _null_first
from oracle_eviction import Store, epoch_second

__all__ = ["sliding_firings_with_dropped", "sliding_result"]


def _check_policy(policy, role):
    """Validate ("count", n) | ("delta", attr, d) | ("time", seconds) (sql.md 6)."""
    kind = policy[0]
    if kind == "count" and len(policy) == 2:
        if policy[1] < 1:
            raise ValueError(f"{role} COUNT(n) needs n >= 1")
    elif kind == "time" and len(policy) == 2:
        if policy[1] <= 0:
            raise ValueError(f"{role} TIME(t) needs t > 0")
    elif not (kind == "delta" and len(policy) == 3):
        raise ValueError(f"unknown sliding {role} policy {policy!r}")


def _getter(policy):
    attr = policy[1]
    return attr if callable(attr) else (lambda row: row[attr])


class _Sliding:
    """State of one sliding window over all partitions (one replay)."""

    def __init__(self, eviction, trigger, order_by, partition_eviction, emit_incomplete,
                 emit_evicted):
        self.eviction, self.trigger = eviction, trigger
        self.order_by = order_by
        self.emit_incomplete = emit_incomplete
        self.full = set()  # keys that were initially full (kept across time-evicted removal)
        self.counters = {}  # count trigger: tuples since the key's last trigger
        self.refs = {}  # delta trigger: reference value per key
        self.store = Store(partition_eviction, emit_evicted, order_by, forget=self._forget)
        self.evict_value = _getter(eviction) if eviction[0] == "delta" else None
        self.trigger_value = _getter(trigger) if trigger[0] == "delta" else None
        self.t0 = None
        self.ticks_done = 0

    def _forget(self, key):
        """Partition eviction: the key's policy state vanishes (its window ids do not)."""
        self.full.discard(key)
        self.counters.pop(key, None)
        self.refs.pop(key, None)

    def _trigger(self, key):
        """One trigger of ``key``: suppressed before initialFull, nothing at all when empty."""
        rows = self.store.parts.get(key)
        if not rows:
            return
        visible = self.emit_incomplete or key in self.full
        self.store.fire(key, rows, "TRIGGER", visible=visible)

    def _time_evict(self, clock):
        """Evict every tuple with clock - stamp > S (strict); drop partitions left empty.

        A full filter equals the reference's oldest-first scan per partition because stamps
        are non-decreasing inside a partition (arrival order is sorted by the clock).
        """
        size = datetime.timedelta(seconds=self.eviction[1])
        for key in list(self.store.parts):
            kept = [row for row in self.store.parts[key] if not clock - self.order_by(row) > size]
            self.store.parts[key] = kept
            if not kept:
                self.store.remove(key)

    def advance(self, clock):
        """Run every tick due at or before ``clock``, then time evictions due at ``clock``."""
        if self.trigger[0] == "time":
            period = datetime.timedelta(seconds=self.trigger[1])
            while self.t0 + (self.ticks_done + 1) * period <= clock:
                self.ticks_done += 1
                tick = self.t0 + self.ticks_done * period
                if self.eviction[0] == "time":
                    self._time_evict(tick)
                self.store.check_age(self._second(tick))
                for key in sorted(self.store.parts, key=_null_first):
                    self._trigger(key)
        if self.eviction[0] == "time":
            self._time_evict(clock)

    def _second(self, clock):
        """Whole second for the AGE check and recency entries; None without AGE."""
        return epoch_second(clock) if self.store.uses_age and clock is not None else None

    def _delta_evict(self, key, row):
        """Before insert, evict every x with new - x > d (strict, never when new < x).

        A full scan of the partition: the reference scans from the front while its
        window-wide ``monotonic`` flag holds and the whole partition once it is cleared. While
        it holds every partition is sorted ascending and the new value is >= its youngest, so
        the evicted tuples form a prefix and both scans remove the same tuples. initialFull
        comes with the first insert that evicts anything.
        """
        window = self.store.parts.get(key)
        if not window:
            return
        new = self.evict_value(row)
        kept = [x for x in window
                if not _delta_exceeds(new, self.evict_value(x), self.eviction[2])]
        if len(kept) < len(window):
            self.full.add(key)
            self.store.parts[key] = kept

    def tuple_arrives(self, key, row, clock):
        """One windowed tuple, in the order of semantics.md 3.1 (after ticks and evictions)."""
        evict_kind, trigger_kind = self.eviction[0], self.trigger[0]
        self.store.check_age(self._second(clock))
        if trigger_kind == "delta":
            value = self.trigger_value(row)
            if key not in self.refs:
                self.refs[key] = value  # the first tuple only becomes the reference
            elif _delta_exceeds(value, self.refs[key], self.trigger[2]):
                self._trigger(key)  # sees the window before this tuple and its evictions
                self.refs[key] = value
        if evict_kind == "count" and len(self.store.parts.get(key, ())) == self.eviction[1]:
            self.store.parts[key].pop(0)
        elif evict_kind == "delta":
            self._delta_evict(key, row)
        elif evict_kind == "time":
            self.full.add(key)  # time-evicting windows are full before their first tuple
        if not self.store.insert(key, row, self._second(clock)):
            return  # TUPLES eviction removed this very partition
        if evict_kind == "count" and len(self.store.parts[key]) == self.eviction[1]:
            self.full.add(key)
        if trigger_kind == "count":
            self.counters[key] = self.counters.get(key, 0) + 1
            if self.counters[key] == self.trigger[1]:
                self.counters[key] = 0
                self._trigger(key)


def sliding_result(rows, eviction, trigger, *, partition_by=None, order_by=None,
                   partition_eviction=None, emit_incomplete=False, emit_evicted=False):
    """Replay ``rows`` through ``WINDOW SLIDING eviction TRIGGER trigger``.

    Arguments as in ``sliding_firings_with_dropped``. Returns a dict:
      "firings": [{"partition", "window_id", "rows", "pane_start", "pane_end", "event"}] in the
         order they happen, event "TRIGGER" or "EVICTED";
      "not_windowed": rows with a NULL DELTA value (eviction or trigger attribute), or a NULL
         arrival value under a TIME policy or AGE eviction (sql.md 6);
      "evicted_tuples": tuples of evicted partitions dropped because EMIT EVICTED is off;
      "partition_evictions": [{"partitions": [keys, least recently inserted first],
         "rows": {key: rows}}], one entry per eviction event (conformance "partitionEvict").
    """
    _check_policy(eviction, "eviction")
    _check_policy(trigger, "trigger")
    window = _Sliding(eviction, trigger, order_by, partition_eviction, emit_incomplete,
                      emit_evicted)
    uses_clock = "time" in (eviction[0], trigger[0]) or window.store.uses_age
    if uses_clock and order_by is None:
        raise ValueError("TIME policies and AGE eviction in batch need order_by (a timestamp)")
    part = partition_by if partition_by is not None else (lambda row: None)
    getters = [g for g in (window.evict_value, window.trigger_value) if g is not None]
    arrival = _arrival_order(rows, order_by)
    if uses_clock:
        clocks = [order_by(row) for row in arrival if order_by(row) is not None]
        for clock in clocks:
            epoch_second(clock)  # raises TypeError unless every clock is a datetime
        window.t0 = min(clocks, default=None)
    not_windowed = 0
    for row in arrival:
        clock = order_by(row) if uses_clock else None
        if uses_clock:
            if clock is None:
                not_windowed += 1
                continue
            window.advance(clock)
        if any(value(row) is None for value in getters):
            not_windowed += 1
            continue
        window.tuple_arrives(part(row), row, clock)
    store = window.store
    return {"firings": store.firings, "not_windowed": not_windowed,
            "evicted_tuples": store.evicted_tuples, "partition_evictions": store.evictions}


def sliding_firings_with_dropped(rows, eviction, trigger, *, partition_by=None, order_by=None,
                                 partition_eviction=None, emit_incomplete=False,
                                 emit_evicted=False):
    """Firings of a SLIDING window and the number of rows that were not windowed.

    rows: list of dicts in SCAN order. eviction, trigger: ("count", n) | ("delta", attr, d) |
    ("time", seconds); attr is a row key or a function row -> value; for timestamp values d is
    in seconds. partition_by: None or row -> key (None is a key of its own). order_by: None or
    row -> arrival value (a datetime when a TIME policy or AGE eviction is used).
    partition_eviction: None | ("age", seconds) | ("count", n) | ("tuples", n).
    Returns (firings, not_windowed_count); each firing is {"partition", "window_id", "rows",
    "pane_start", "pane_end", "event"} with event "TRIGGER" or "EVICTED". Why a wrapper: it has
    the shape of ``oracle.tumbling_firings_with_dropped``; ``sliding_result`` gives more.
    """
    result = sliding_result(rows, eviction, trigger, partition_by=partition_by,
                            order_by=order_by, partition_eviction=partition_eviction,
                            emit_incomplete=emit_incomplete, emit_evicted=emit_evicted)
    return result["firings"], result["not_windowed"]

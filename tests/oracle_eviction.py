"""Reference model of PARTITION EVICTION (AGE / COUNT / TUPLES, EMIT EVICTED) for the oracles,
and of TUMBLING windows that use it.

Why a separate module: tests/oracle.py models plain TUMBLING windows and stays small; this file
adds the window-wide state that partition eviction needs (a recency list over all partitions)
and is shared by the SLIDING oracle (tests/oracle_sliding.py). Written from
spec/semantics.md sections 2, 4, 5 and 7 and sql.md sections 2, 3 and 7 only; it
shares no code with the extension. Standard library only.

Rules (semantics.md 5), applied exactly:
  * recency list ordered by each partition's LAST INSERTION; flushes and evictions do not
    refresh it; a removed partition (count/time/punct flush, time-evicted empty sliding
    partition) leaves it;
  * COUNT(n): after each insertion, while #partitions > n evict the least recently inserted;
  * TUPLES(n): after each insertion, while the window-wide tuple total > n, walk from the least
    recently inserted, marking leading empty partitions plus the first non-empty one, and
    evict them (the partition just inserted into can go too);
  * AGE(s): before a tuple is inserted and before a punctuation or tick, with whole seconds:
    eviction is needed if oldest last-insert second + s < now; then every partition whose
    last-insert second <= now - s is evicted, walking from the oldest and stopping at the first
    younger one. Seconds are floor(epoch seconds) of the arrival value (naive datetimes are
    read as UTC).
Victims vanish with their state; WINDOW_ID() numbering per key continues. Several firings of
one event come out in partition-key order, NULL first (sql.md 7).
"""

import datetime
from collections import OrderedDict

from oracle import _arrival_order, _delta_exceeds, _null_first

__all__ = ["Store", "epoch_second", "tumbling_eviction_result",
           "tumbling_firings_with_eviction"]

_NAIVE_EPOCH = datetime.datetime(1970, 1, 1)
_AWARE_EPOCH = _NAIVE_EPOCH.replace(tzinfo=datetime.timezone.utc)


def epoch_second(value):
    """Whole epoch second of an arrival value: floor, also before 1970.

    Why floor through timedelta: the recency entries of the reference keep gettimeofday's
    tv_sec only, and a timedelta's ``seconds`` part is never negative, so days*86400+seconds is
    the floor without float rounding.
    """
    if not isinstance(value, datetime.datetime):
        raise TypeError(f"arrival values used as a clock must be datetime, got {value!r}")
    delta = value - (_NAIVE_EPOCH if value.tzinfo is None else _AWARE_EPOCH)
    return delta.days * 86400 + delta.seconds


def check_partition_eviction(spec):
    """Validate ``None | ("age", s) | ("count", n) | ("tuples", n)``; return it unchanged."""
    if spec is None:
        return None
    if len(spec) != 2 or spec[0] not in ("age", "count", "tuples"):
        raise ValueError(f"unknown partition eviction {spec!r}")
    if spec[1] < 0:
        raise ValueError(f"partition eviction limit must be >= 0: {spec!r}")
    return spec


class Store:
    """Window storage shared by the tumbling and sliding oracles.

    Holds ``parts`` (key -> rows in window order), the recency list, the per-key WINDOW_ID()
    counters and the output. Why one class: partition eviction, EMIT EVICTED and window ids
    must behave identically for both window kinds, so they are written once.
    ``forget(key)`` is called for each evicted partition so a policy can drop its per-key state.
    """

    def __init__(self, partition_eviction, emit_evicted, order_by, forget=None):
        self.eviction = check_partition_eviction(partition_eviction)
        self.emit_evicted = emit_evicted
        self.order_by = order_by
        self.forget = forget if forget is not None else (lambda key: None)
        self.parts = {}
        self.recency = OrderedDict()  # key -> last-insert second (None without AGE)
        self.ids = {}
        self.firings = []
        self.evictions = []  # {"partitions": [keys, LRU first], "rows": {key: [rows]}}
        self.evicted_tuples = 0  # tuples of evicted partitions dropped without EMIT EVICTED

    @property
    def uses_age(self):
        return self.eviction is not None and self.eviction[0] == "age"

    def fire(self, key, rows, event, visible=True):
        """Take the key's next window id; record a firing of ``rows`` if ``visible``.

        Why ``visible``: a sliding trigger suppressed before initialFull still uses an id.
        """
        window_id = self.ids.get(key, 0)
        self.ids[key] = window_id + 1
        if visible:
            self.firings.append({
                "partition": key,
                "window_id": window_id,
                "rows": list(rows),
                "pane_start": None if self.order_by is None else self.order_by(rows[0]),
                "pane_end": None if self.order_by is None else self.order_by(rows[-1]),
                "event": event,
            })

    def remove(self, key):
        """Drop a partition from storage and the recency list, keeping policy state."""
        self.parts.pop(key, None)
        self.recency.pop(key, None)

    def total(self):
        return sum(len(rows) for rows in self.parts.values())

    def insert(self, key, row, second):
        """Append ``row``, refresh recency, run COUNT/TUPLES eviction; True if key survived."""
        self.parts.setdefault(key, []).append(row)
        self.recency.pop(key, None)
        self.recency[key] = second
        if self.eviction is not None and self.eviction[0] == "count":
            excess = len(self.recency) - self.eviction[1]
            if excess > 0:
                self._evict(list(self.recency)[:excess])
        elif self.eviction is not None and self.eviction[0] == "tuples":
            while self.total() > self.eviction[1]:
                victims = []
                for candidate in self.recency:
                    victims.append(candidate)
                    if self.parts[candidate]:
                        break
                self._evict(victims)
        return key in self.parts

    def check_age(self, now):
        """AGE(s) check at whole second ``now`` (before a tuple, punctuation or tick)."""
        if not self.uses_age or now is None or not self.recency:
            return
        age = self.eviction[1]
        if not next(iter(self.recency.values())) + age < now:
            return
        victims = []
        for key, last in self.recency.items():
            if last > now - age:
                break
            victims.append(key)
        self._evict(victims)

    def _evict(self, victims):
        """Evict whole partitions: one EVICTED firing each (non-empty, EMIT EVICTED) or drop."""
        self.evictions.append({"partitions": list(victims),
                               "rows": {key: list(self.parts[key]) for key in victims}})
        for key in sorted(victims, key=_null_first):
            rows = self.parts[key]
            if self.emit_evicted:
                if rows:
                    self.fire(key, rows, "EVICTED")
            else:
                self.evicted_tuples += len(rows)
        for key in victims:
            self.remove(key)
            self.forget(key)

    def flush_all(self, event="FLUSH"):
        """One punctuation or time tick: flush every partition in key order, remove them all."""
        for key in sorted(self.parts, key=_null_first):
            if self.parts[key]:
                self.fire(key, self.parts[key], event)
            self.remove(key)


def _value_getter(attr):
    return attr if callable(attr) else (lambda row: row[attr])


def tumbling_eviction_result(rows, policy, *, partition_eviction, emit_evicted=False,
                             partition_by=None, order_by=None, file_of=None, punct_of=None):
    """TUMBLING window (policies as in ``oracle.tumbling_firings``) with PARTITION EVICTION.

    Returns {"firings", "not_windowed", "evicted_tuples", "partition_evictions"}; firings carry
    "event": "FLUSH" or "EVICTED". Why a dict: the two counters are different metrics (NULL
    rows never windowed vs. tuples silently lost to eviction) and tests check both.
    Per tuple (semantics.md 4): [AGE check] -> count: insert, COUNT/TUPLES eviction, flush at n
    and remove the partition; delta: flush the old content if new - oldest > d (the partition
    stays), insert, COUNT/TUPLES eviction. time/punct: inserts only; each tick or punctuation
    is preceded by an AGE check and flushes (and removes) every partition.
    """
    kind = policy[0]
    part = partition_by if partition_by is not None else (lambda row: None)
    store = Store(partition_eviction, emit_evicted, order_by)
    uses_clock = kind == "time" or store.uses_age
    if uses_clock and order_by is None:
        raise ValueError("TIME policies and AGE eviction in batch need order_by (a timestamp)")
    if kind == "count" and policy[1] < 1:
        raise ValueError("COUNT(n) needs n >= 1")
    if kind == "time" and policy[1] <= 0:
        raise ValueError("TIME(t) needs t > 0")
    if kind not in ("count", "delta", "time") and policy not in (("punct",), ("punct_expr",)):
        raise ValueError(f"unknown tumbling policy {policy!r}")
    value_of = _value_getter(policy[1]) if kind == "delta" else None
    state = {"not_windowed": 0, "clock": None, "tick": 1}
    clocks = [order_by(row) for row in rows] if kind == "time" else []
    t0 = min((c for c in clocks if c is not None), default=None)

    def second(clock):
        return epoch_second(clock) if store.uses_age and clock is not None else None

    def punctuate():
        store.check_age(second(state["clock"]))
        store.flush_all()

    def tuple_arrives(row):
        clock = order_by(row) if uses_clock else None
        if uses_clock and clock is None:
            state["not_windowed"] += 1
            return
        if uses_clock:
            epoch_second(clock)  # raises TypeError unless the clock is a datetime
            state["clock"] = clock
        if kind == "time":
            period = datetime.timedelta(seconds=policy[1])
            while t0 + state["tick"] * period <= clock:
                store.check_age(second(t0 + state["tick"] * period))
                store.flush_all()
                state["tick"] += 1
        if kind == "delta" and value_of(row) is None:
            state["not_windowed"] += 1
            return
        store.check_age(second(clock))
        key = part(row)
        window = store.parts.get(key)
        if kind == "delta" and window and _delta_exceeds(value_of(row), value_of(window[0]),
                                                         policy[2]):
            store.fire(key, window, "FLUSH")
            store.parts[key] = []  # the partition stays (and keeps its recency entry)
        if store.insert(key, row, second(clock)) and kind == "count":
            if len(store.parts[key]) == policy[1]:
                store.fire(key, store.parts[key], "FLUSH")
                store.remove(key)

    if kind == "punct":
        if file_of is None:
            raise ValueError("punct() needs file_of")
        files = {}
        for row in rows:
            files.setdefault(file_of(row), []).append(row)
        for name in sorted(files, key=_null_first):
            for row in _arrival_order(files[name], order_by):
                tuple_arrives(row)
            punctuate()
    else:
        if kind == "punct_expr" and punct_of is None:
            raise ValueError("punct_expr needs punct_of")
        for row in _arrival_order(rows, order_by):
            if kind == "punct_expr" and punct_of(row):
                if uses_clock and order_by(row) is not None:
                    state["clock"] = order_by(row)
                punctuate()
            else:
                tuple_arrives(row)
    return {"firings": store.firings, "not_windowed": state["not_windowed"],
            "evicted_tuples": store.evicted_tuples, "partition_evictions": store.evictions}


def tumbling_firings_with_eviction(rows, policy, *, partition_eviction, emit_evicted=False,
                                   partition_by=None, order_by=None, file_of=None,
                                   punct_of=None):
    """TUMBLING with PARTITION EVICTION; returns ``(firings, not_windowed_count)``.

    Thin wrapper over ``tumbling_eviction_result`` mirroring ``oracle.
    tumbling_firings_with_dropped``; firings have "event": "FLUSH" or "EVICTED".
    """
    result = tumbling_eviction_result(
        rows, policy, partition_eviction=partition_eviction, emit_evicted=emit_evicted,
        partition_by=partition_by, order_by=order_by, file_of=file_of, punct_of=punct_of)
    return result["firings"], result["not_windowed"]

"""Windows for the value tests (test_window_values.py): the SQL window clause beside the oracle
call that says which rows each firing holds, and Hypothesis strategies per window family.

Families: TUMBLING COUNT, DELTA and PUNCT(expr); SLIDING with COUNT or DELTA eviction x COUNT or
DELTA trigger (EMIT INCOMPLETE drawn); PARTITION EVICTION COUNT/TUPLES (EMIT EVICTED drawn) on
either kind. No TIME policy: its windows depend on the wall clock in streaming. Every query
orders by seq and partitions by k when partitioned; the oracles get the same.
"""

from dataclasses import dataclass, field
from typing import Callable

from aggregate_reference import AGGREGATES, window_rows
from hypothesis import assume
from hypothesis import strategies as st
from oracle import tumbling_firings
from oracle_eviction import tumbling_eviction_result
from oracle_sliding import sliding_result

__all__ = ["FAMILIES", "Window", "case", "sliding_window", "tumbling_window"]


@dataclass(frozen=True)
class Window:
    """A window clause and the oracle of its firings."""

    policy: str  # TUMBLING ... | SLIDING ... TRIGGER ...
    tail: str  # " PARTITION EVICTION ... EMIT ...", or ""
    partitioned: bool
    oracle: Callable = field(repr=False, compare=False)  # rows -> oracle firings

    def query(self, source, aggregates=AGGREGATES, extra=""):
        """SELECT [k AS p,] WINDOW_ID() AS w, WINDOW_EVENT() AS e, <aggregates><extra>."""
        key = "k AS p, " if self.partitioned else ""
        over = f"OVER ({'PARTITION BY k ' if self.partitioned else ''}ORDER BY seq)"
        select = ", ".join(f"{sql} AS {alias}" for alias, sql in aggregates)
        return (f"SELECT {key}WINDOW_ID() AS w, WINDOW_EVENT() AS e, {select}{extra} "
                f"FROM {source} WINDOW {self.policy} {over}{self.tail}")

    def firings(self, rows):
        """[((partition, window id, event), rows)] in firing order; the key is what the query
        shows as (p, w, e)."""
        return [((f["partition"], f["window_id"], f.get("event", "FLUSH")), f["rows"])
                for f in self.oracle(rows)]


def _by_k(partitioned):
    return (lambda row: row["k"]) if partitioned else None


def _seq(row):
    return row["seq"]


def _marker(row):
    return row["m"]


def tumbling_window(text, policy, partitioned, limit=None, emit_evicted=False):
    """TUMBLING <text> (oracle policy as in oracle.tumbling_firings); with PARTITION EVICTION
    when ``limit`` = (SQL text, oracle spec)."""
    if limit is None:
        def oracle(rows):
            return tumbling_firings(rows, policy, partition_by=_by_k(partitioned),
                                    order_by=_seq, punct_of=_marker)
        return Window(f"TUMBLING {text}", "", partitioned, oracle)

    def evicting(rows):
        return tumbling_eviction_result(
            rows, policy, partition_eviction=limit[1], emit_evicted=emit_evicted,
            partition_by=_by_k(partitioned), order_by=_seq, punct_of=_marker)["firings"]
    tail = f" PARTITION EVICTION {limit[0]}{' EMIT EVICTED' if emit_evicted else ''}"
    return Window(f"TUMBLING {text}", tail, partitioned, evicting)


def sliding_window(eviction, trigger, partitioned, incomplete=False, limit=None,
                   emit_evicted=False):
    """SLIDING <eviction> TRIGGER <trigger>, each (SQL text, oracle policy)."""
    def oracle(rows):
        return sliding_result(rows, eviction[1], trigger[1], partition_by=_by_k(partitioned),
                              order_by=_seq, partition_eviction=limit and limit[1],
                              emit_incomplete=incomplete, emit_evicted=emit_evicted)["firings"]
    tail = (f" PARTITION EVICTION {limit[0]}" if limit else "") + \
        (" EMIT INCOMPLETE" if incomplete else "") + (" EMIT EVICTED" if emit_evicted else "")
    return Window(f"SLIDING {eviction[0]} TRIGGER {trigger[0]}", tail, partitioned, oracle)


def _count(low, high):
    return st.integers(low, high).map(lambda n: (f"COUNT({n})", ("count", n)))


def _delta(values):
    return st.sampled_from(values).map(lambda d: (f"DELTA(d, {d})", ("delta", "d", d)))


TUMBLING_POLICIES = {"count": _count(1, 5), "delta": _delta([0, 1.5, 4]),
                     "punct": st.just(("PUNCT(m)", ("punct_expr",)))}
EVICTIONS = {"count": _count(2, 5), "delta": _delta([0, 2, 4])}
TRIGGERS = {"count": _count(1, 3), "delta": _delta([0, 1, 3])}
LIMITS = st.sampled_from([("COUNT(1)", ("count", 1)), ("COUNT(2)", ("count", 2)),
                          ("TUPLES(3)", ("tuples", 3)), ("TUPLES(6)", ("tuples", 6))])


@st.composite
def tumbling(draw, kind, evict=False):
    """TUMBLING <kind>, partitioned or not; with PARTITION EVICTION (partitioned) if ``evict``."""
    text, policy = draw(TUMBLING_POLICIES[kind])
    if not evict:
        return tumbling_window(text, policy, draw(st.booleans()))
    return tumbling_window(text, policy, True, draw(LIMITS), draw(st.booleans()))


@st.composite
def sliding(draw, eviction, trigger, evict=False):
    """SLIDING <eviction> TRIGGER <trigger> [PARTITION EVICTION ...] [EMIT ...]."""
    ev, tr = draw(EVICTIONS[eviction]), draw(TRIGGERS[trigger])
    partitioned = evict or draw(st.booleans())
    incomplete = draw(st.booleans())
    if not evict:
        return sliding_window(ev, tr, partitioned, incomplete)
    return sliding_window(ev, tr, True, incomplete, draw(LIMITS), draw(st.booleans()))


FAMILIES = {
    "tumbling-count": tumbling("count"),
    "tumbling-delta": tumbling("delta"),
    "tumbling-punct": tumbling("punct"),
    "sliding-count-count": sliding("count", "count"),
    "sliding-count-delta": sliding("count", "delta"),
    "sliding-delta-count": sliding("delta", "count"),
    "sliding-delta-delta": sliding("delta", "delta"),
    "partition-eviction": st.one_of(
        st.sampled_from(["count", "delta", "punct"]).flatmap(lambda k: tumbling(k, True)),
        st.tuples(st.sampled_from(["count", "delta"]), st.sampled_from(["count", "delta"]))
        .flatmap(lambda c: sliding(*c, evict=True))),
}


@st.composite
def case(draw, windows, max_rows=40, ansi_on=None, dense=False):
    """(window, ansi_on, rows): ansi_on drawn unless given; under ansi=true every BIGINT of the
    rows has one sign (aggregate_reference.value_rows), so Spark's overflow error does not
    depend on the order of additions."""
    window = draw(windows)
    ansi_on = draw(st.booleans()) if ansi_on is None else ansi_on
    sign = draw(st.sampled_from([1, -1])) if ansi_on else None
    rows = draw(window_rows(max_rows, bigint_sign=sign, min_rows=8, dense=dense))
    # Not Hypothesis's first, all-zero choice (one key, every value NULL): with a handful of
    # examples per test it would spend one on windows of NULLs.
    assume(len({row["k"] for row in rows}) > 1)
    assume(all(any(row[c] is not None for row in rows) for c in ("xd", "xf", "xi", "xl")))
    return window, ansi_on, rows

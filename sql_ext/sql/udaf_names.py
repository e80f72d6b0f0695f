"""The Python UDAFs the lowering knows, by name: a call to one in a windowed query becomes a
call of its batched form over each window's values (`__sx_udaf_<name>(COLLECT_LIST(x))`).

Two sources: the UDAFs registered in this process (sql_ext.udaf adds each name), and those of
the session whose statement is being rewritten, which the JVM lists with each statement (a
Spark Connect client registers its UDAFs in its own session on the server, not here)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from sql_ext.sql.contract import UDAF_BATCHED_PREFIX

BATCHED_PREFIX = UDAF_BATCHED_PREFIX

_names: set[str] = set()
_lock = threading.Lock()
_session_names: ContextVar[frozenset[str]] = ContextVar("session_udafs", default=frozenset())


def add(name: str) -> None:
    with _lock:
        _names.add(name.lower())


@contextmanager
def of_session(names: Iterable[str]) -> Iterator[None]:
    """Within the block, `registered` also holds `names` (one statement's session UDAFs)."""
    token = _session_names.set(frozenset(n.lower() for n in names if n))
    try:
        yield
    finally:
        _session_names.reset(token)


def registered() -> frozenset[str]:
    """The lower-case names of the UDAFs registered in this process or the session at hand."""
    with _lock:
        return frozenset(_names) | _session_names.get()

"""The Python UDAFs of this process, by name, as the lowering needs them: a call to one in a
windowed query becomes a call of its batched form over each window's values
(`__sx_udaf_<name>(COLLECT_LIST(x))`). sql_ext.udaf adds a name when it registers a UDAF."""

from __future__ import annotations

import threading

BATCHED_PREFIX = "__sx_udaf_"

_names: set[str] = set()
_lock = threading.Lock()


def add(name: str) -> None:
    with _lock:
        _names.add(name.lower())


def registered() -> frozenset[str]:
    """The lower-case names of the UDAFs registered in this process."""
    with _lock:
        return frozenset(_names)

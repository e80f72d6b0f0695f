"""Many people managing streams on one server at once: PyHive clients send CREATE, CREATE ...
TRIGGER EVERY, CREATE OR REPLACE, ALTER, REFRESH, STOP STREAM, DROP TABLE, DROP STREAMING
TABLE, queries and SHOW STREAMS on three shared names and one name each, while a feeder appends
to the source (`python/manage_load.py`, its own `sql-ext thriftserver`). Every statement is
answered, an error only where two clients race and naming it; no client hangs; the streams the
JVM runs (Spark's UI) are exactly those SHOW STREAMS lists RUNNING; every streaming table left
holds exactly the windows of its batch query.

The suite's run: 5 clients for 12 s, every kind of statement among their first ones.
`dev.sh soak`: 16 clients for 90 s."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scale import size

LOAD = Path(__file__).resolve().parents[1] / "python" / "manage_load.py"
CLIENTS, SECONDS = size((5, 12), (16, 90))


@pytest.mark.heavy
@pytest.mark.soak
def test_many_clients_manage_streams_at_once(tmp_path):
    figures = tmp_path / "load.json"
    result = subprocess.run(
        [sys.executable, str(LOAD), "--clients", str(CLIENTS), "--seconds", str(SECONDS),
         "--json", str(figures)], capture_output=True, text=True, timeout=1500)
    print(result.stdout)
    assert result.returncode == 0, (result.stdout[-4000:] + result.stderr[-4000:]
                                    + f"\n(log: {tmp_path})")
    summary = json.loads(figures.read_text())
    assert summary["problems"] == []
    kinds = summary["kinds"]
    # Every kind ran, and most statements did what they said.
    assert set(kinds) == {"create", "create_every", "replace", "alter", "refresh", "stop",
                          "drop", "drop_streaming", "select", "show_streams"}, kinds
    answered = sum(k.get("answered", 0) for k in kinds.values())
    assert answered > sum(k.get("raced", 0) for k in kinds.values())

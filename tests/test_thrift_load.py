"""The JDBC server under load: concurrent PyHive clients send statements of every kind through
`python/thrift_load.py` (its own `sql-ext thriftserver` on 127.0.0.1). Every windowed result
equals the oracle and its plain-SQL form, every malformed statement gets an error naming its
problem (no helper names, no plan, nothing "internal") and its connection serves the next
statement, and the server is alive at the end.

The suite's run: 4 clients, 48 statements, every kind and every malformed statement among
them. `dev.sh soak`: 16 clients and 1,040 statements, 20 times over (SQL_EXT_SOAK_RUNS), each
on a server of its own."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scale import size

LOAD = Path(__file__).resolve().parents[1] / "python" / "thrift_load.py"
CLIENTS, STATEMENTS = size((4, 48), (16, 1040))
RUNS = size(1, int(os.environ.get("SQL_EXT_SOAK_RUNS", "20")))


@pytest.mark.soak
@pytest.mark.parametrize("run", range(RUNS))
def test_concurrent_clients_get_every_answer_right(tmp_path, run):
    figures = tmp_path / "load.json"
    result = subprocess.run(
        [sys.executable, str(LOAD), "--clients", str(CLIENTS), "--statements", str(STATEMENTS),
         "--cover", "--seed", str(15 + run), "--deadline", "900", "--json", str(figures)],
        capture_output=True, text=True, timeout=1200)
    # On failure: the server log's errors, its end, and the whole log kept beside load.json.
    errors = result.stderr.find("server log's errors")
    assert result.returncode == 0, (result.stdout[-2000:] + result.stderr[errors:][:4000]
                                    + result.stderr[-2000:] + f"\n(log: {tmp_path})")
    summary = json.loads(figures.read_text())
    assert summary["statements"] == STATEMENTS and summary["failures"] == []
    assert summary["alive"]
    assert set(summary["latency"]) == {"tumbling", "tumbling_plain", "panes", "panes_plain",
                                       "malformed", "malformed_plain", "plain", "show_streams"}
    print(result.stdout)

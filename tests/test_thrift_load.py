"""The JDBC server under load (issue 15): 16 concurrent PyHive clients, 1,040 statements of
every kind through `python/thrift_load.py` (its own `sql-ext thriftserver` on 127.0.0.1).
Every windowed result equals the oracle and its plain-SQL form, every malformed statement
gets an error naming its problem (no helper names, no plan, nothing "internal") and its
connection serves the next statement, and the server is alive at the end."""

import json
import subprocess
import sys
from pathlib import Path

LOAD = Path(__file__).resolve().parents[1] / "python" / "thrift_load.py"


def test_sixteen_clients_a_thousand_statements(tmp_path):
    figures = tmp_path / "load.json"
    result = subprocess.run(
        [sys.executable, str(LOAD), "--clients", "16", "--statements", "1040",
         "--deadline", "900", "--json", str(figures)],
        capture_output=True, text=True, timeout=1200)
    # On failure: the server log's errors, its end, and the whole log kept beside load.json.
    errors = result.stderr.find("server log's errors")
    assert result.returncode == 0, (result.stdout[-2000:] + result.stderr[errors:][:4000]
                                    + result.stderr[-2000:] + f"\n(log: {tmp_path})")
    summary = json.loads(figures.read_text())
    assert summary["statements"] == 1040 and summary["failures"] == [] and summary["alive"]
    assert set(summary["latency"]) == {"tumbling", "tumbling_plain", "panes", "panes_plain",
                                       "malformed", "malformed_plain", "plain", "show_streams"}
    print(result.stdout)

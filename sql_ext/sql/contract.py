"""What Python and the JVM extension must spell alike, defined once on this side and checked
against the JVM's own definitions by tests/test_contract.py (which fails when either side
changes alone): the columns of SHOW STREAMS, the longest error a catalog entry records.
"""

from __future__ import annotations

# SHOW STREAMS, in order (io.sqlext.commands.StreamStatementCommand declares the same output).
STREAM_COLUMNS = ("name", "state", "trigger", "batch", "rows_in", "rows_out", "watermark",
                  "state_rows", "state_bytes", "late_dropped", "not_windowed",
                  "out_of_order_rows", "last_progress", "last_error", "last_error_time",
                  "checkpoint", "location")

# A stream's failure as SHOW STREAMS and the catalog keep it: at most this many characters
# (StreamCatalog.ShortErrorLimit).
SHORT_ERROR_LIMIT = 2000

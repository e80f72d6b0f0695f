"""Streaming tables: a windowed query over FROM STREAM(source) written into a Delta table, an
object of the catalog (spec/sql.md section 5). The public streaming API is this package's:

    from sql_ext.streaming import create_streaming_table, show_streams
    query = create_streaming_table(spark, "max_flow", '''
        SELECT freeway, PANE_START() AS time_start, MAX(lane_flow) AS flow FROM STREAM(traffic)
        WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)
        WATERMARK DELAY 10''', checkpoint="/tmp/ckpt/max_flow", trigger=10)

Owns, one module each: the plan of a streaming query (`plan`: the rewrite into the window
processor's input and the aggregation over its firings), the Delta sinks (`sink`), the
definitions in the catalog (`catalog`), the registry of this process's runs (`runs`), running
one stream (`runner`), starting, altering, stopping and dropping them (`lifecycle`), SHOW
STREAMS (`status`), and the streaming statements a client sends (`statements`).

May import: sql_ext.sql, sql_ext.jvm, pyspark and delta.
"""

from sql_ext.sql.contract import STREAM_COLUMNS
from sql_ext.streaming.catalog import AVAILABLE_NOW
from sql_ext.streaming.lifecycle import (alter_streaming_table, create_streaming_table,
                                         default_checkpoint, drop_streaming_table,
                                         refresh_streaming_table, resume, stop_stream)
from sql_ext.streaming.runs import short_error
from sql_ext.streaming.status import show_streams, state_curve, stream_status

__all__ = [
    "AVAILABLE_NOW", "STREAM_COLUMNS", "alter_streaming_table", "create_streaming_table",
    "default_checkpoint", "drop_streaming_table", "refresh_streaming_table", "resume",
    "short_error", "show_streams", "state_curve", "stop_stream", "stream_status",
]

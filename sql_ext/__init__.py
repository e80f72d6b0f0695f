"""sql_ext: IBM Streams SPL windows as plain SQL on Spark.

    spark = sql_ext.session()
    spark.sql("SELECT SUM(cost) FROM orders WINDOW TUMBLING COUNT(4)").show()
"""

from sql_ext.metrics import not_windowed_rows, window_metrics
from sql_ext.session import configure, session
from sql_ext.sql.errors import WindowSqlError
from sql_ext.sql.transpile import transpile
from sql_ext.udaf import udaf

__all__ = [
    "WindowSqlError", "configure", "not_windowed_rows", "session", "transpile", "udaf",
    "window_metrics",
]

"""sql_ext: IBM Streams SPL windows as plain SQL on Spark.

    spark = sql_ext.session()
    spark.sql("SELECT SUM(cost) FROM orders WINDOW TUMBLING COUNT(4)").show()

The grammar (`sql_ext.sql`, `sql-ext transpile`) needs sqlglot only: where pyspark is not
installed, `import sql_ext` still works, and what needs Spark says so when it is used.
"""

from sql_ext.sql.errors import WindowSqlError
from sql_ext.sql.transpile import transpile
from sql_ext.version import __version__

# What needs Spark (pyspark and, through it, py4j, pandas and pyarrow).
_SPARK_EXPORTS = ("configure", "not_windowed_rows", "session", "udaf", "window_metrics")
_SPARK_PACKAGES = {"pyspark", "py4j", "pandas", "pyarrow", "numpy", "delta"}

try:
    from sql_ext.metrics import not_windowed_rows, window_metrics
    from sql_ext.session import configure, session
    from sql_ext.udaf import udaf
except ModuleNotFoundError as missing:
    if (missing.name or "").split(".")[0] not in _SPARK_PACKAGES:
        raise
    _without_spark = missing

    def __getattr__(name: str):
        if name in _SPARK_EXPORTS:
            raise ModuleNotFoundError(
                f"sql_ext.{name} needs Spark: {_without_spark} (installing the sql-ext wheel "
                "installs pyspark; the grammar, sql_ext.sql and `sql-ext transpile`, needs only "
                "sqlglot)",
                name=_without_spark.name)
        raise AttributeError(f"module 'sql_ext' has no attribute {name!r}")

__all__ = [
    "WindowSqlError", "__version__", "configure", "not_windowed_rows", "session", "transpile",
    "udaf", "window_metrics",
]

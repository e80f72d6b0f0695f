"""SPL to SQL: translates the windowed Aggregates of SPL applications (with the Filters and
Functors before them) into sql-ext streaming tables, views and source tables, and says
precisely what it does not translate (`sql-ext spl`).

The grammar (`spl.lark`) and its reading into a model (`source`), SPL types and their Spark
counterparts (`types`), expressions (`expressions`), one Aggregate's SELECT (`aggregate`), and
the application's graph into statements (`translate`).

May import: Lark, the standard library and `sql_ext.sql`. No pyspark, no JVM: it runs (and is
tested) without Spark.
"""

from sql_ext.spl.translate import Translation, translate, translate_sources

__all__ = ["Translation", "translate", "translate_sources"]

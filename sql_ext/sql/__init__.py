"""The SQL layer: the extended grammar and its lowering into plain Spark SQL.

Owns the sqlglot dialect (`dialect`, the one owner of the grammar), the window model and its
validation (`window_model`), the lowering of a windowed SELECT (`transpile`), the recognition
of the streaming statements (`statements`), the helper columns and spec fields shared with the
JVM (`contract`), table names (`names`), the names of Python UDAFs (`udaf_names`) and the one
error type (`errors`).

May import: sqlglot and the standard library only. No pyspark, no JVM: everything here runs
(and is tested) without Spark.
"""

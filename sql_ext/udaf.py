"""Python UDAFs for windowed SQL, vectorised across windows.

Windows are often small and many, and Spark's grouped Python UDFs pay a Python call per group.
A sql_ext UDAF is written once over a *batch of windows*: it receives one `pyarrow.ListArray`
per argument (one list per window, in the same order) and returns one value per window:

    from sql_ext.udaf import reduce_windows

    @sql_ext.udaf("double")
    def py_sum(values):
        return reduce_windows(np.add, values)

In a windowed query, `py_sum(x)` is lowered to `__sx_udaf_py_sum(COLLECT_LIST(x))`: Spark
collects each window's values in the JVM, then one Arrow call handles thousands of windows.
A UDAF registered in the process reaches every session created afterwards, so `sql-ext
thriftserver --udafs my_package.aggregates` (and `sql-ext dbt --udafs ...`) imports a module
of UDAFs and makes them callable by every JDBC and dbt user. The UDAF code (this module's and
the defining module's) is pickled by value: executors need pyarrow and numpy, not sql_ext or
the module.

Outside windowed queries the same name is an ordinary Spark grouped-aggregate UDF (one call per
group), so plain `GROUP BY` queries work too (Spark does not let those mix grouped Python UDFs
with built-in aggregates in one SELECT; windowed queries can). NULL inputs are skipped, as
built-in aggregates do (with several arguments, rows where any argument is NULL).
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql import SparkSession
from pyspark.sql.functions import arrow_udf
from pyspark.sql.pandas.functions import ArrowUDFType
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import DataType, _parse_datatype_string

from sql_ext import jvm
from sql_ext.sql import udaf_names
from sql_ext.sql.udaf_names import BATCHED_PREFIX

_registry: dict[str, Udaf] = {}


@dataclass
class Udaf:
    name: str
    function: Callable
    returns: str

    def wrappers(self) -> tuple[Callable, Callable]:
        """The two functions Spark runs in executors: over a batch of windows (windowed
        queries), and over one group (plain GROUP BY)."""
        arrow_type = to_arrow_type(_parse_datatype_string(self.returns))
        function = self.function

        def batched(*lists: pa.Array) -> pa.Array:
            return _as_array(function(*_split_struct(lists)), arrow_type)

        def per_group(*columns: pa.Array):
            mask = _all_valid(columns)
            one_window = [_single_list(c.filter(mask) if mask is not None else c)
                          for c in columns]
            return _as_array(function(*one_window), arrow_type)[0].as_py()

        # Spark names a Python UDF after its function in plans and errors.
        batched.__name__, per_group.__name__ = BATCHED_PREFIX + self.name, self.name
        return batched, per_group

    def register(self, spark: SparkSession) -> None:
        """Registers both forms of the UDAF in `spark` and, in a classic session, for every
        session the process makes after (a Spark Connect session keeps them to itself)."""
        return_type: DataType = _parse_datatype_string(self.returns)
        batched, per_group = self.wrappers()
        with warnings.catch_warnings():  # pyspark prefers type hints; *args cannot carry them
            warnings.simplefilter("ignore", UserWarning)
            scalar = arrow_udf(batched, return_type, ArrowUDFType.SCALAR)
            grouped = arrow_udf(per_group, return_type, ArrowUDFType.GROUPED_AGG)
        spark.udf.register(BATCHED_PREFIX + self.name, scalar)
        spark.udf.register(self.name, grouped)
        if not jvm.is_classic(spark):
            return  # a Spark Connect client's session: its server lists the names per statement
        for name, wrapped in ((BATCHED_PREFIX + self.name, scalar), (self.name, grouped)):
            jvm.share_function(spark, name, wrapped)

    def __call__(self, *args):
        return self.function(*args)


def udaf(returns: str, name: str | None = None):
    """Decorator: defines a UDAF over a batch of windows and registers it for SQL (in the
    active and the default session now, and in every session sql_ext starts later)."""

    def wrap(function: Callable) -> Udaf:
        definition = Udaf(name or function.__name__, function, returns)
        _registry[definition.name.lower()] = definition
        udaf_names.add(definition.name)
        _pickle_by_value(function.__module__)
        active = SparkSession.getActiveSession()
        if active is not None and not jvm.is_classic(active):
            definition.register(active)  # a Spark Connect client's session, on its server
        else:
            for session in jvm.sessions_for_functions():
                definition.register(session)
        return definition

    return wrap


def load_modules(names: list[str]) -> list[str]:
    """Imports modules of UDAFs (their @udaf functions register as they load); the UDAF names."""
    before = set(_registry)
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            raise SystemExit(f"--udafs {name}: cannot import it ({error}); the module must be "
                             "importable by this Python (PYTHONPATH or an installed package)")
    return sorted(set(_registry) - before)


def _pickle_by_value(module_name: str) -> None:
    """Executors get the UDAF's code inside the task, not by importing its module there."""
    module = sys.modules.get(module_name)
    if module is not None and module_name != "__main__":
        cloudpickle.register_pickle_by_value(module)


def registered() -> dict[str, Udaf]:
    """UDAFs by lower-case name (the rewriter lowers these in windowed queries)."""
    return dict(_registry)


def register_all(spark: SparkSession) -> None:
    for definition in _registry.values():
        definition.register(spark)


def segments(lists: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(flat values, offsets) of a ListArray: window i is values[offsets[i]:offsets[i+1]]."""
    offsets = lists.offsets.to_numpy()
    values = lists.values.to_numpy(zero_copy_only=False)
    return values[offsets[0]:offsets[-1]], offsets - offsets[0]


def reduce_windows(ufunc: np.ufunc, lists: pa.Array) -> pa.Array:
    """Applies a NumPy ufunc's reduction to every window at once (NULL for empty windows)."""
    values, offsets = segments(lists)
    empty = offsets[1:] == offsets[:-1]
    if len(values) == 0:
        return pa.nulls(len(offsets) - 1)
    starts = np.minimum(offsets[:-1], len(values) - 1)
    result = ufunc.reduceat(values, starts)
    return pa.array(result, mask=empty)


def _split_struct(lists: tuple[pa.Array, ...]) -> list[pa.Array]:
    """Several arguments arrive as one list<struct>; give the function one list per argument."""
    if len(lists) != 1 or not pa.types.is_struct(lists[0].type.value_type):
        return list(lists)
    packed = lists[0]
    fields = packed.values.flatten()
    return [pa.ListArray.from_arrays(packed.offsets, field) for field in fields]


def _all_valid(columns) -> pa.Array | None:
    if all(c.null_count == 0 for c in columns):
        return None
    mask = columns[0].is_valid()
    for column in columns[1:]:
        mask = pa.compute.and_(mask, column.is_valid())
    return mask


def _single_list(column: pa.Array) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array([0, len(column)], pa.int32()), column)


def _as_array(result, arrow_type: pa.DataType) -> pa.Array:
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    if isinstance(result, pa.Array):
        return result if result.type == arrow_type else result.cast(arrow_type)
    return pa.array(result, type=arrow_type)


_pickle_by_value(__name__)  # the wrappers above reach executors without sql_ext installed

"""dbt runs for `method: session`, and where the dbt package is.

Under dbt-spark's `method: session`, dbt runs its SQL in a Spark session of its own Python
process. sql-ext's SQL needs the extension's Python rewriter registered in that process, which
a profile's `server_side_parameters` (Spark confs) cannot do. `run` therefore builds sql-ext's
session first, the embedded default or one the caller built with sql_ext.configure, and runs
dbt's own runner in the same process: dbt-spark's `getOrCreate()` then finds that session, and
the profile's server_side_parameters apply to it as runtime confs. `method: thrift` needs none
of this: `sql-ext thriftserver` is the process.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from sql_ext.session import session

PACKAGE = Path(__file__).with_name("package")
# Set while dbt runs in this process: the streaming_table materialization refuses continuous
# triggers under it (a stream in dbt's own process would die when dbt returns).
IN_PROCESS_CONF = "spark.sql_ext.dbt.in_process"


def package_path() -> Path:
    """The dbt package's folder, for a project's packages.yml (`- local: <this path>`)."""
    return PACKAGE


def run(args: list[str], spark: SparkSession | None = None, **session_options):
    """Runs dbt (`args` as on its command line) in this process, on `spark` or on the embedded
    default session (sql_ext.session(**session_options)); dbt's dbtRunnerResult."""
    try:
        from dbt.cli.main import dbtRunner
    except ImportError as error:
        raise RuntimeError("dbt is not installed here: install the sql-ext wheel with its "
                           "[dbt] extra, pip install 'sql_ext-<version>-py3-none-any.whl[dbt]' "
                           "(dbt-core 1.11 with dbt-spark[PyHive,session] 1.11)") from error
    if spark is None:
        spark = session(**session_options)
    spark.conf.set(IN_PROCESS_CONF, "true")
    try:
        return dbtRunner().invoke(list(args))
    finally:
        spark.conf.unset(IN_PROCESS_CONF)

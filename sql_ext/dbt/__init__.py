"""dbt with sql-ext: the dbt package (`package/`: macros only, for a project's packages.yml)
and dbt runs in a sql-ext session for `method: session` profiles (`runner`).

May import: sql_ext.session and everything below it; dbt itself only when a run starts (an
optional dependency).
"""

from sql_ext.dbt.runner import package_path, run

__all__ = ["package_path", "run"]

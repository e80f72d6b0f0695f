"""dbt's own adapter test suite (dbt-tests-adapter's base classes, as dbt-spark runs them)
against `sql-ext thriftserver`: stock dbt-spark materializations (seed, view, table,
incremental, --empty, generic tests) work unchanged through the server; and the streaming_table
materialization inside dbt's `project` fixture, beside a batch windowed table model."""

import pytest
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.fixtures.project import *  # noqa: F401,F403 - dbt's `project` fixture family
from dbt.tests.util import run_dbt, run_sql_with_adapter

from sql_ext.dbt_runner import package_path


@pytest.fixture(scope="class")
def dbt_profile_target(thrift_server):
    return {"type": "spark", "method": "thrift", "host": "127.0.0.1", "port": thrift_server,
            "connect_retries": 3, "connect_timeout": 10}


DELTA = {"models": {"+file_format": "delta"}, "seeds": {"+file_format": "delta"}}


class TestSimpleMaterializations(BaseSimpleMaterializations):
    pass


class TestEmpty(BaseEmpty):
    pass


class TestGenericTests(BaseGenericTests):
    pass


class TestIncrementalDelta(BaseIncremental):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "incremental", **DELTA}


SOURCE = """
version: 2
sources:
  - name: feed
    schema: "{{ target.schema }}"
    tables: [{name: events}]
models:
  - name: event_counts
    data_tests:
      - sql_ext.no_duplicate_window_keys:
          arguments: {columns: [k, w]}
"""
STREAMING = """
{{ config(materialized='streaming_table') }}
SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, MIN(seq) AS lo
FROM STREAM({{ source('feed', 'events') }})
WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k ORDER BY seq)
"""
BATCH = """
{{ config(materialized='table') }}
SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, MIN(seq) AS lo
FROM {{ source('feed', 'events') }}
WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k ORDER BY seq)
"""


class TestStreamingTableInDbtProjectFixture:
    """The streaming model equals its batch twin after each of two runs around an append."""

    @pytest.fixture(scope="class")
    def packages(self):
        return {"packages": [{"local": str(package_path())}]}

    @pytest.fixture(scope="class")
    def models(self):
        return {"sources.yml": SOURCE, "event_counts.sql": STREAMING,
                "event_counts_batch.sql": BATCH}

    def _append(self, project, first: int, last: int) -> None:
        rows = ", ".join(f"({i}, '{'xy'[i % 2]}')" for i in range(first, last))
        run_sql_with_adapter(project.adapter,
                             f"INSERT INTO {project.test_schema}.events VALUES {rows}")

    def test_streaming_model_equals_its_batch_twin(self, project):
        run_sql_with_adapter(project.adapter, f"CREATE TABLE {project.test_schema}.events "
                                              "(seq BIGINT, k STRING) USING DELTA")
        self._append(project, 0, 20)
        run_dbt(["deps"])  # (leaves no adapter registered; `build` registers one again)
        run_dbt(["build"])
        self._append(project, 20, 50)
        run_dbt(["build"])
        table = f"{project.test_schema}.event_counts"
        got = run_sql_with_adapter(project.adapter, f"SELECT k, w, n, lo FROM {table}",
                                   fetch="all")
        want = run_sql_with_adapter(project.adapter, f"SELECT * FROM {table}_batch",
                                    fetch="all")
        assert len(want) == 16 and sorted(map(tuple, got)) == sorted(map(tuple, want))
        run_sql_with_adapter(project.adapter, f"DROP STREAMING TABLE {table}")

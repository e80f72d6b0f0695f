"""dbt's own adapter test suite (dbt-tests-adapter's base classes, as dbt-spark runs them)
against `sql-ext thriftserver`: stock dbt-spark materializations (seed, view, table,
incremental, --empty, generic tests) work unchanged through the server. (The streaming_table
materialization is tested in test_dbt.py.)"""

import pytest
from dbt.adapters.factory import reset_adapters
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.fixtures.project import *  # noqa: F401,F403 - dbt's `project` fixture family


@pytest.fixture(scope="class")
def dbt_profile_target(thrift_server):
    # dbt keeps the adapter of the last dbtRunner call of this process registered, and dbt's
    # `adapter` fixture keeps a registered one: without the reset, a class after another test's
    # dbt run (say against a TLS server since stopped) would talk to that test's server.
    reset_adapters()
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


"""One real SparkSession (with the real extension jar and Delta) for the whole test run."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    import sql_ext

    warehouse = tmp_path_factory.mktemp("warehouse")
    session = sql_ext.session(warehouse=warehouse, conf={"spark.sql.shuffle.partitions": "2"})
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()

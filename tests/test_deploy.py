"""Deploying sql-ext as users do: the wheel in a clean virtual environment outside the checkout,
spark-submit with no extra arguments and `sql-ext thriftserver --master` on a real Spark
standalone cluster on 127.0.0.1 whose executors run a Python without sql_ext. The submitted job
is tests/deploy_job.py; its results must equal a pure-Python model of the windows (and plain
Spark's GROUP BY in the same run)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyhive import hive

from sql_ext.server.thrift import free_port, wait_for_port
from venvs import linked_venv

ROOT = Path(__file__).resolve().parents[1]
JOB = Path(__file__).resolve().parent / "deploy_job.py"
VENV_BIN = Path(sys.executable).parent
SUBMIT = [str(VENV_BIN / "spark-submit"), "--conf", "spark.executor.memory=512m"]
# What executors need for UDAFs: pyspark and its dependencies for Arrow UDFs, not sql_ext.
WORKER_PACKAGES = ("pyspark", "pyarrow", "pandas", "numpy")


def expected_windows(rows: int = 120, size: int = 4) -> list:
    """TUMBLING COUNT(size) per k over v ascending: full windows of `size` tuples each."""
    result = []
    for k in range(3):
        values = [float(v) for v in range(rows) if v % 3 == k]
        for w in range(len(values) // size):
            chunk = values[w * size:(w + 1) * size]
            result.append([str(k), w, size, sum(chunk), sum(chunk)])
    return sorted(result)


def check_result(result: dict, kafka: bool = False) -> None:
    expected = expected_windows()
    assert result["windowed"] == expected
    assert result["plain_spark"] == expected
    assert result["ctas"] == expected and result["ctas_format"] == "delta"
    assert result["streaming"] == expected
    if kafka:
        assert result["kafka"] == result["kafka_streaming"] == expected


@pytest.fixture
def numbers_topic(kafka):
    """The job's rows (k = id % 3, v = id) as JSON messages of a new topic: the job's
    SQL_EXT_DEPLOY_KAFKA."""
    import uuid

    from kafka_messages import create_topic, produce

    topic = f"deploy_{uuid.uuid4().hex[:8]}"
    create_topic(kafka, topic, 2)
    produce(kafka, topic, [(str(i % 3), {"k": str(i % 3), "v": float(i)}) for i in range(120)])
    return f"{kafka},{topic}"


def spark_home() -> str:
    """pyspark's folder: Spark's scripts find the rest from there."""
    import pyspark

    return str(Path(pyspark.__file__).parent)


def run_job(command: list, work: Path, env: dict, cwd: Path, *after: str) -> dict:
    """`command <work folder> after...`: the job's RESULT line."""
    work.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([*command, str(work), *after], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"{command} failed:\n{done.stderr[-6000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def clean_env(**extra) -> dict:
    """This process's environment without its virtual environment or source folder."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
                        "SPARK_HOME")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return {**env, **extra}


class StandaloneCluster:
    """A master and a two-core worker, started with bin/spark-class from the pyspark package,
    stopped by the process ids started here. One worker: each application's executor is a JVM
    of its own on the worker, with the Python the worker was given (a second worker would add
    three executor JVMs and check the same)."""

    def __init__(self, folder: Path, env: dict):
        self.folder, self.env, self.processes = folder, env, []
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"

    def _start(self, name: str, *args: str) -> None:
        log = open(self.folder / f"{name}.log", "w")
        self.processes.append(subprocess.Popen(
            [str(VENV_BIN / "spark-class"), *args], stdout=log, stderr=subprocess.STDOUT,
            env=self.env, cwd=self.folder, start_new_session=True))

    def start(self) -> "StandaloneCluster":
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(free_port()))
        try:
            wait_for_port("127.0.0.1", self.port, timeout=120)
        except TimeoutError:
            raise AssertionError((self.folder / "master.log").read_text()[-3000:])
        work = self.folder / "worker"
        work.mkdir()
        self._start("worker", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                    "--cores", "2", "--memory", "1g", "--work-dir", str(work),
                    "--webui-port", str(free_port()), self.url)
        deadline = time.monotonic() + 120
        while "Registering worker" not in (self.folder / "master.log").read_text():
            assert time.monotonic() < deadline, (self.folder / "master.log").read_text()[-3000:]
            time.sleep(0.5)
        return self

    def stop(self) -> None:
        for process in reversed(self.processes):
            os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


@pytest.fixture(scope="module")
def worker_python(tmp_path_factory):
    """Executors' Python: pyspark and the Arrow UDF dependencies, the driver's own copies
    (linked into a virtual environment of their own), and no sql_ext."""
    python = linked_venv(tmp_path_factory.mktemp("workers") / "venv", WORKER_PACKAGES)
    lacks = subprocess.run([str(python), "-c", "import sql_ext"], capture_output=True)
    assert lacks.returncode != 0  # the executors cannot import sql_ext
    has = subprocess.run([str(python), "-c", "import pyspark, pyarrow, pandas, numpy"],
                         capture_output=True, text=True)
    assert has.returncode == 0, has.stderr
    return python


def installed_wheel(folder: Path) -> Path:
    """`bash python/dev.sh wheel`, pip install of it into a fresh venv: the venv's Python."""
    subprocess.run(["bash", str(ROOT / "python" / "dev.sh"), "wheel"], check=True, cwd=ROOT,
                   capture_output=True, timeout=900)
    wheels = sorted((ROOT / "dist").glob("sql_ext-*-py3-none-any.whl"))
    assert wheels, "dev.sh wheel made no wheel"
    # pip resolves the wheel's requirements: the large ones are there already (linked), the
    # rest it installs.
    python = linked_venv(folder, WORKER_PACKAGES, pip=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheels[-1])], check=True,
                   timeout=900)
    return python


@pytest.mark.heavy
def test_the_wheel_outside_the_checkout_on_a_standalone_cluster(tmp_path, worker_python,
                                                                 numbers_topic):
    """The wheel in a fresh venv, everything run from elsewhere (the job alone, no tests folder
    beside it): `sql-ext run-examples` (the embedded default), transpile and jars; then two
    applications on a standalone cluster whose executors' Python has no sql_ext, each loading
    sql-ext's jars its own way: spark-submit of a job (the driver's JVM runs before
    sql_ext.configure adds the jars) and `sql-ext thriftserver --master` (configure sets them
    before the JVM starts). Both run windowed queries with a Python UDAF, a Delta CTAS and
    streaming tables over Delta and Kafka; no --jars, no --packages."""
    python = installed_wheel(tmp_path / "venv")
    bin_dir = python.parent
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(JOB, elsewhere / "deploy_job.py")
    env = clean_env(XDG_CACHE_HOME=str(tmp_path / "cache"), PYSPARK_PYTHON=str(python),
                    SQL_EXT_DEPLOY_KAFKA=numbers_topic)
    env.pop("SQL_EXT_JAR_CACHE", None)

    located = subprocess.run([str(python), "-c", "import sql_ext; print(sql_ext.__file__)"],
                             capture_output=True, text=True, env=env, cwd=elsewhere, check=True)
    assert str(tmp_path / "venv") in located.stdout and str(ROOT) not in located.stdout
    transpiled = subprocess.run(
        [str(bin_dir / "sql-ext"), "transpile",
         "SELECT SUM(v) FROM t WINDOW TUMBLING COUNT(2) OVER (ORDER BY v)"],
        capture_output=True, text=True, env=env, cwd=elsewhere, check=True)
    assert "SQL_EXT_WINDOW(" in transpiled.stdout
    printed = subprocess.run([str(bin_dir / "sql-ext"), "jars"], capture_output=True, text=True,
                             env=env, cwd=elsewhere, check=True).stdout
    assert printed.startswith("--jars ") and str(tmp_path / "venv") in printed
    examples = subprocess.run([str(bin_dir / "sql-ext"), "run-examples"], capture_output=True,
                              text=True, env=env, cwd=elsewhere, timeout=600)
    assert examples.returncode == 0, examples.stderr[-4000:]
    assert "seed_count4_cost" in examples.stdout
    assert (elsewhere / "spark-warehouse" / "seed_count4_cost" / "_delta_log").is_dir()
    # Delta's and the Kafka connector's jars went to the user's cache folder, not the checkout.
    assert sorted(p.name for p in (tmp_path / "cache" / "sql-ext" / "jars").glob("*.jar")) == [
        "commons-pool2-2.13.1.jar", "delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.4.0.jar",
        "kafka-clients-3.9.2.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar",
        "spark-token-provider-kafka-0-10_2.13-4.2.0.jar"]

    cluster = StandaloneCluster(tmp_path, clean_env(SPARK_HOME=spark_home())).start()
    # The drivers run the wheel's Python; the executors a Python without sql_ext.
    job_env = dict(env, PYSPARK_PYTHON=str(worker_python), PYSPARK_DRIVER_PYTHON=str(python),
                   SPARK_HOME=spark_home())
    # spark-submit's own drivers read dev.sh test's JVM settings (C1) from a conf folder.
    submit_env = dict(job_env)
    if "SQL_EXT_TEST_SPARK_CONF_DIR" in os.environ:
        submit_env["SPARK_CONF_DIR"] = os.environ["SQL_EXT_TEST_SPARK_CONF_DIR"]
    try:
        submitted = run_job([*SUBMIT, "--master", cluster.url, "deploy_job.py"],
                            tmp_path / "job", submit_env, elsewhere)
        served = query_thrift_server_on(cluster, [str(bin_dir / "sql-ext")], elsewhere, job_env,
                                        numbers_topic)
    finally:
        cluster.stop()
    check_result(submitted, kafka=True)
    assert submitted["master"] == cluster.url
    # The UDAF ran in executors of the cluster, whose Python has no sql_ext.
    apps = list(tmp_path.glob("worker/app-*"))
    assert len({app.name for app in apps}) == 2, apps
    # The examples' table, through the catalog the server shares with run-examples.
    assert served[0] == [(3, 23.5)]
    expected = [(str(k), w, n, total, total) for k, w, n, total, _ in expected_windows()]
    assert served[1:] == [expected] * 4


def served_rows(command: list, env: dict, cwd: Path, *statements: str) -> list:
    """Starts the Thrift server `command` on a free port, runs `statements` through PyHive and
    stops it: the rows of each statement that returns rows, sorted."""
    port = free_port()
    with open(cwd / "server.log", "w") as log:
        server = subprocess.Popen([*command, "--port", str(port)], stdout=log,
                                  stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                  start_new_session=True)
    try:
        wait_for_port("127.0.0.1", port, timeout=180)
        with hive.connect(host="127.0.0.1", port=port) as conn:
            cursor, results = conn.cursor(), []
            for statement in statements:
                cursor.execute(statement)
                if cursor.description and statement.lstrip().upper().startswith("SELECT"):
                    results.append(sorted(cursor.fetchall()))
            return results
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def query_thrift_server_on(cluster: StandaloneCluster, sql_ext: list, folder: Path, env: dict,
                           numbers_topic: str) -> list:
    """`sql-ext thriftserver --master <cluster> --udafs ...` from `folder` (the catalog of
    run-examples there): the examples' table; a windowed query with a UDAF of the --udafs module
    (which the executors cannot import) over a Delta CTAS and over a Kafka topic, and a
    streaming table over each, through JDBC."""
    bootstrap, topic = numbers_topic.split(",")
    windowed = ("SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, SUM(v) AS total, team_total(v) AS py "
                "FROM {source} WINDOW TUMBLING COUNT(4) OVER (PARTITION BY k ORDER BY v)")
    env = dict(env, PYTHONPATH=str(Path(__file__).resolve().parent))  # tests/udafs, driver only
    return served_rows(
        [*sql_ext, "thriftserver", "--master", cluster.url, "--udafs", "udafs.team_aggregates"],
        env, folder,
        "SELECT COUNT(*) AS n, SUM(total) AS total FROM seed_punct_per_file "
        "WINDOW TUMBLING COUNT(3) OVER (ORDER BY window)",
        "CREATE TABLE numbers USING DELTA AS SELECT CAST(id % 3 AS STRING) AS k, "
        "CAST(id AS DOUBLE) AS v FROM range(120)",
        windowed.format(source="numbers"),
        "CREATE STREAMING TABLE numbers_live AS " + windowed.format(source="STREAM(numbers)"),
        "SELECT * FROM numbers_live",
        "CREATE TABLE numbers_topic (k STRING, v DOUBLE) USING kafka OPTIONS ("
        f"'kafka.bootstrap.servers' = '{bootstrap}', 'subscribe' = '{topic}', "
        "'format' = 'json')",
        windowed.format(source="numbers_topic"),
        "CREATE STREAMING TABLE topic_live AS " + windowed.format(source="STREAM(numbers_topic)"),
        "SELECT * FROM topic_live")


def test_a_driver_that_cannot_take_jars_gets_the_submit_arguments(spark):
    """Where configure cannot load the jars (a class loader that takes none, as a driver on
    another machine may have), the error gives spark-submit's exact arguments."""
    from sql_ext import jars
    from sql_ext.session import add_jars

    jvm = spark.sparkContext._jvm
    with pytest.raises(RuntimeError) as error:
        add_jars(jvm.java.lang.ClassLoader.getPlatformClassLoader(),
                 [str(p) for p in jars.all_jars()])
    assert " ".join(jars.submit_arguments()) in str(error.value)
    assert f"--jars {jars.extension_jar().as_uri()}," in str(error.value)

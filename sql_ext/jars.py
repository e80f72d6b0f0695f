"""The JVM jars a session loads, and where the embedded default keeps its files.

The extension jar ships inside the package (`sql_ext/jars/sql-ext.jar`, in the wheel too).
Delta's jars and Spark's Kafka connector (with the Kafka client it was built with) are
downloaded once from Maven Central and checked against their SHA-1: Spark's
own `spark.jars.packages` resolution only runs when spark-submit starts the JVM, so it cannot
serve a driver that is already running (spark-submit of a job that calls `configure`), while a
checked download into a cache works there, and offline after the first run.

Where files go: in a source checkout (the package sits beside `build.sbt`) everything stays in
the project folder, as `python/dev.sh` promises; an installed package keeps Delta's jars in the
user's cache folder and the warehouse under the working directory, as Spark's own
`spark-warehouse` is. `SQL_EXT_JAR_CACHE` and `SQL_EXT_WAREHOUSE` override both.
"""

from __future__ import annotations

import hashlib
import os
import sys
import urllib.request
from pathlib import Path

DELTA_VERSION = "4.4.0"
SCALA_SUFFIX = "_4.2_2.13"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
DELTA_ARTIFACTS = (
    ("io.delta", f"delta-spark{SCALA_SUFFIX}", DELTA_VERSION),
    ("io.delta", "delta-storage", DELTA_VERSION),
)
# Spark's Kafka connector for this Spark (4.2.0) and the versions its pom names: Kafka topics
# are tables through it (sql_ext reads it; docs/kafka.md).
SPARK_VERSION = "4.2.0"
KAFKA_ARTIFACTS = (
    ("org.apache.spark", "spark-sql-kafka-0-10_2.13", SPARK_VERSION),
    ("org.apache.spark", "spark-token-provider-kafka-0-10_2.13", SPARK_VERSION),
    ("org.apache.kafka", "kafka-clients", "3.9.2"),
    ("org.apache.commons", "commons-pool2", "2.13.1"),
)
PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_DIR = PACKAGE_DIR.parent
EXTENSION_CLASS = "io.sqlext.SqlExtExtensions"
# Delta's first, so that sql-ext's parser is the outermost: Delta's (4.4) drops spark.sql's
# parameter values on the way in, and sql-ext's hands them on to Spark's own parser.
EXTENSIONS = f"io.delta.sql.DeltaSparkSessionExtension,{EXTENSION_CLASS}"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
# Streaming windows run under transformWithState, which needs the RocksDB state store.
ROCKSDB_STATE_STORE = \
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
LOCAL_FILES = "io.sqlext.streaming.LocalFiles"
LOCAL_FILES_FS = "io.sqlext.streaming.LocalFilesFs"


def in_checkout() -> bool:
    """Whether the package runs from its source folder (not from an installed wheel)."""
    return (PROJECT_DIR / "build.sbt").is_file() and (PROJECT_DIR / "jvm").is_dir()


def extension_jar() -> Path:
    jar = PACKAGE_DIR / "jars" / "sql-ext.jar"
    if not jar.is_file():
        hint = ("build it with `bash python/dev.sh setup` (runs sbt jvm/package)" if in_checkout()
                else "this installation lacks it: reinstall the sql-ext wheel")
        raise FileNotFoundError(f"{jar} is missing: {hint}")
    return jar


def cache_dir() -> Path:
    if os.environ.get("SQL_EXT_JAR_CACHE"):
        return Path(os.environ["SQL_EXT_JAR_CACHE"])
    if in_checkout():
        return PROJECT_DIR / ".cache" / "jars"
    user_cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(user_cache) / "sql-ext" / "jars"


def default_warehouse() -> Path:
    if os.environ.get("SQL_EXT_WAREHOUSE"):
        return Path(os.environ["SQL_EXT_WAREHOUSE"])
    if in_checkout():
        return PROJECT_DIR / "warehouse"
    return Path.cwd() / "spark-warehouse"


def _download(url: str, target: Path) -> None:
    """Fetches `url` into `target`, checked against Maven Central's SHA-1. Says so on stderr (a
    session's first start waits for it), with a progress bar where stderr is a terminal."""
    from tqdm import tqdm

    with urllib.request.urlopen(url, timeout=120) as response:
        size = int(response.headers.get("Content-Length") or 0)
        print(f"sql-ext: fetching {target.name} ({size / 1e6:.1f} MB) from Maven Central into "
              f"{target.parent} (once)", file=sys.stderr, flush=True)
        chunks = []
        with tqdm(total=size or None, unit="B", unit_scale=True, desc=target.name,
                  file=sys.stderr, disable=None, leave=False) as progress:
            while chunk := response.read(1 << 16):
                chunks.append(chunk)
                progress.update(len(chunk))
    data = b"".join(chunks)
    with urllib.request.urlopen(url + ".sha1", timeout=60) as response:
        expected = response.read().decode().split()[0].strip()
    if hashlib.sha1(data).hexdigest() != expected:
        raise OSError(f"checksum mismatch for {url}")
    tmp = target.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(target)


def _fetched(what: str, artifacts) -> list[Path]:
    """`artifacts` ((group, artifact, version), ...) as jars in the cache, fetched on first
    use."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    jars = []
    for group, artifact, version in artifacts:
        name = f"{artifact}-{version}.jar"
        target = folder / name
        if not target.is_file():
            url = f"{MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}/{version}/{name}"
            try:
                _download(url, target)
            except OSError as error:
                raise OSError(f"cannot fetch {what} jar {name} from Maven Central into "
                              f"{folder} ({error}); put the jar there by hand, or point "
                              "SQL_EXT_JAR_CACHE at a folder that has it") from error
        jars.append(target)
    return jars


def delta_jars() -> list[Path]:
    """Delta's jars, fetched into the cache on first use."""
    return _fetched("Delta's", DELTA_ARTIFACTS)


def kafka_jars() -> list[Path]:
    """Spark's Kafka connector and the Kafka client, fetched into the cache on first use."""
    return _fetched("Spark's Kafka connector", KAFKA_ARTIFACTS)


def fetched_jars() -> list[Path]:
    """The jars fetched from Maven Central: Delta's and the Kafka connector's."""
    return [*delta_jars(), *kafka_jars()]


def all_jars() -> list[Path]:
    return [extension_jar(), *fetched_jars()]


def jar_uris() -> list[str]:
    """file: URIs of `all_jars`, as spark.jars and spark-submit's --jars take them: Spark reads
    a plain path there as a URI whenever it parses as one, so a `#` in it would end the path
    (and a comma would split the list). Percent-encoded, they are shell words too: `$(sql-ext
    jars)` passes them as they are, whatever the folders are called."""
    return [p.resolve().as_uri() for p in all_jars()]


def submit_arguments() -> list[str]:
    """The spark-submit arguments that load sql-ext where `configure` cannot (a driver that
    runs on another machine: cluster deploy mode)."""
    return ["--jars", ",".join(jar_uris()),
            "--conf", f"spark.sql.extensions={EXTENSIONS}",
            "--conf", f"spark.sql.catalog.spark_catalog={DELTA_CATALOG}",
            "--conf", f"spark.sql.streaming.stateStore.providerClass={ROCKSDB_STATE_STORE}"]

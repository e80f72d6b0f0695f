"""Every call from Python into the JVM, one way: a function per call, with Python types in and
out. No other module touches py4j (`_jvm`, `_jdf`, `_jsparkSession`, ...): tests/test_layers.py
fails on one that does.

The calls the other way (the JVM's parser asking the Python rewriter, running a streaming
statement) arrive in sql_ext.server.callback.

May import: pyspark and py4j; from sql_ext, nothing but sql_ext.sql.
"""

from __future__ import annotations

import json
import os

from py4j.java_gateway import JavaClass
from py4j.protocol import Py4JJavaError
from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery
from pyspark.sql.types import StructType

# The extension's Scala objects that Python calls, by fully qualified name.
REWRITER_REGISTRY = "io.sqlext.rewriter.SqlRewriterRegistry"
PARTIAL_AGGREGATES = "io.sqlext.aggregate.PartialAggregates"
STREAMING_WINDOWS = "io.sqlext.streaming.StreamingWindows"
LATE_ROW_FILES = "io.sqlext.streaming.delta.LateRowFiles"
DELTA_BATCH_APPEND = "io.sqlext.streaming.delta.DeltaBatchAppend"
STREAM_CATALOG = "io.sqlext.streaming.catalog.StreamCatalog"
STREAM_PROGRESS = "io.sqlext.streaming.catalog.StreamProgress"
RUNNING_STREAMS = "io.sqlext.streaming.catalog.RunningStreams"
AWAITED_STREAMS = "io.sqlext.commands.AwaitedStreams"
CANCELLED_STATEMENTS = "io.sqlext.commands.CancelledStatements"
PROCESS_FUNCTIONS = "io.sqlext.analysis.ProcessFunctions"
WINDOW_METRICS = "io.sqlext.execution.WindowMetrics"
ACCESS_POLICY = "io.sqlext.access.AccessPolicy"
ACCESS_CHECKS = "io.sqlext.access.AccessChecks"
SERVER_WORK = "io.sqlext.access.ServerWork"
SESSION_USERS = "io.sqlext.access.SessionUsers"
ACCESS_RULES = "io.sqlext.access.AccessRules"
CONNECT_GUARD = "io.sqlext.access.ConnectGuard"
THRIFT_CALL_GUARD = "io.sqlext.access.ThriftCallGuard"
SCALA_OBJECTS = (REWRITER_REGISTRY, PARTIAL_AGGREGATES, STREAMING_WINDOWS, LATE_ROW_FILES,
                 DELTA_BATCH_APPEND, STREAM_CATALOG, STREAM_PROGRESS, PROCESS_FUNCTIONS,
                 WINDOW_METRICS, RUNNING_STREAMS)


def require_classic(spark, what: str = "this sql_ext helper") -> None:
    """Raises a clear error when `spark` is a Spark Connect client's session: `what` calls
    into the driver's JVM, which only a classic session has in its process."""
    if not is_classic(spark):
        raise TypeError(
            f"{what} needs a classic session, whose driver runs in this process "
            "(sql_ext.session()); this is a Spark Connect client's session. Over Spark Connect "
            "use SQL: windowed queries, the streaming-table statements and SHOW STREAMS all "
            "work there")


def _object(spark: SparkSession, name: str):
    """The JVM class (a Scala object's static forwarders) `name` of `spark`'s driver."""
    require_classic(spark)
    return _class(spark.sparkContext._gateway, name)


# A class by its name, made once per gateway, not found by walking py4j's packages
# (`jvm.io.sqlext...`): each step of that walk asks the JVM whether the prefix is a class, and
# each miss searches every jar of the driver's class path and every package py4j imported.
# Lookups like these were 4.7 % of a test session's JVM time (2.1 % after: PySpark's own).
_classes: dict[tuple[int, str], JavaClass] = {}


def _class(gateway, name: str) -> JavaClass:
    client = gateway._gateway_client
    key = (id(client), name)
    found = _classes.get(key)
    if found is None or found._gateway_client is not client:
        found = _classes[key] = JavaClass(name, client)
    return found


def _session(spark: SparkSession):
    require_classic(spark)
    return spark._jsparkSession


# -- the rewriter and functions -------------------------------------------------------------

def register_rewriter(spark: SparkSession, rewriter) -> None:
    """Registers `rewriter` (a py4j callback implementing io.sqlext.rewriter.SqlRewriter) with
    the JVM's RewritingParser."""
    ensure_callback_server_started(spark.sparkContext._gateway)
    try:
        _object(spark, REWRITER_REGISTRY).register(rewriter)
    except Exception as error:  # py4j reports a missing class as a generic error
        raise RuntimeError(
            "the sql_ext extension jar is not on this session's classpath: build the session "
            "with sql_ext.session() or sql_ext.configure(builder)") from error


def gateway_id(spark: SparkSession) -> int:
    """One number per py4j gateway (one driver JVM) of this process."""
    return id(spark.sparkContext._gateway)


def session_of(jsession) -> SparkSession:
    """The Python session of a JVM session handed to a callback."""
    return SparkSession(SparkContext._active_spark_context, jsession)


def share_function(spark: SparkSession, name: str, function) -> None:
    """Makes a registered Python UDF (a pyspark UserDefinedFunction) callable in every session
    the process creates from now on: the Thrift server's JDBC sessions."""
    _object(spark, PROCESS_FUNCTIONS).share(name, function._unwrapped._judf)


def partial_aggregate_kinds(spark: SparkSession, facts: list[dict]) -> str | None:
    """PartialAggregates' decision (shared with the batch rule) for the aggregates `facts`."""
    return _object(spark, PARTIAL_AGGREGATES).kindsJson(json.dumps(facts))


def window_metrics(frame: DataFrame) -> dict[str, int]:
    """The window operators' metrics of an executed query, by their JVM names."""
    values = _object(frame.sparkSession, WINDOW_METRICS).of(frame._jdf.queryExecution())
    return {key: int(value) for key, value in dict(values).items()}


def table_ddl(spark: SparkSession, schema: StructType) -> str:
    """The column list of a CREATE TABLE for `schema`, as Spark writes it."""
    data_type = _class(spark.sparkContext._gateway, "org.apache.spark.sql.types.DataType")
    return data_type.fromJson(schema.json()).toDDL()


# -- streaming windows and their writes ------------------------------------------------------

def stream_firings(spark: SparkSession, tuples: DataFrame, spec: dict, checkpoint: str,
                   late_location: str | None = None) -> DataFrame:
    """The stream of firings of the window `spec` over the stream `tuples`; with LATE ROWS
    INTO, its late rows go to files of the table at `late_location` (None: a plan for the
    firings' columns only, never run)."""
    return DataFrame(_object(spark, STREAMING_WINDOWS).firings(
        tuples._jdf, json.dumps(spec), checkpoint, late_location), spark)


def late_rows_schema(tuples: DataFrame) -> StructType:
    """LATE ROWS INTO: the late table's columns for a streaming window over `tuples`."""
    return StructType.fromJson(json.loads(
        _object(tuples.sparkSession, STREAMING_WINDOWS).lateRowsSchema(tuples._jdf)))


def commit_late_rows(spark: SparkSession, checkpoint: str, app_id: str, batch_id: int,
                     discard: bool = False) -> int:
    """LateRowFiles.commit: the late rows that micro-batch `batch_id` of the stream at
    `checkpoint` wrote, committed to their table as batch `batch_id` of `app_id` at most once
    (or deleted, `discard`); how many rows it committed."""
    return int(_object(spark, LATE_ROW_FILES).commit(
        _session(spark), checkpoint, app_id, batch_id, app_id, discard))


def delta_batch_append(rows: DataFrame, path: str, app_id: str, batch_id: int) -> bool:
    """DeltaBatchAppend: `rows` appended to the Delta table at `path` as batch `batch_id` of
    `app_id`, at most once; whether it wrote."""
    return bool(_object(rows.sparkSession, DELTA_BATCH_APPEND).append(
        rows._jdf, path, app_id, batch_id, app_id))


def stream_session(spark: SparkSession, settings: dict[str, str], owner: str = "") -> SparkSession:
    """A session of its own for a stream: a copy of `spark` (its temporary views, functions and
    settings), with `settings` where `spark` does not set them, whose statements are those of
    `spark`'s signed-in user, or of `owner` where one is given. `spark` is left as it is."""
    jcopy = _session(spark).cloneSession()
    users = _object(spark, SESSION_USERS)
    if owner:
        users.runAs(jcopy, owner)  # the streaming table's owner's stream
    else:
        users.inherit(_session(spark), jcopy)  # the same user's stream
    copy = SparkSession(spark.sparkContext, jcopy)
    for key, value in settings.items():
        if spark.conf.get(key, None) is None:
            copy.conf.set(key, value)
    return copy


def query_id(query) -> str:
    return str(query.id)


# -- the catalog of streaming tables ---------------------------------------------------------

def catalog_identify(spark: SparkSession, name: str) -> tuple[str, str]:
    """(database, table) of `name` as `spark` resolves it, in the catalog's spelling."""
    db, table = _object(spark, STREAM_CATALOG).identify(_session(spark), name)
    return db, table


def catalog_exists(spark: SparkSession, db: str, table: str) -> bool:
    return bool(_object(spark, STREAM_CATALOG).exists(_session(spark), db, table))


def catalog_location(spark: SparkSession, db: str, table: str) -> str:
    return str(_object(spark, STREAM_CATALOG).location(_session(spark), db, table))


def catalog_properties(spark: SparkSession, db: str, table: str) -> dict[str, str]:
    return json.loads(_object(spark, STREAM_CATALOG).propertiesJson(_session(spark), db, table))


def catalog_update(spark: SparkSession, db: str, table: str,
                   changes: dict[str, str | None], owner: str | None = None) -> None:
    """Sets properties of the table's catalog entry; a None value removes one. `owner`, where
    given, becomes the entry's owner."""
    values = _class(spark.sparkContext._gateway, "java.util.HashMap")()
    for key, value in changes.items():
        values.put(key, value)
    _object(spark, STREAM_CATALOG).update(_session(spark), db, table, values, owner)


def catalog_owner(spark: SparkSession, db: str, table: str) -> str:
    """Who owns the table (its catalog entry's owner)."""
    return _object(spark, STREAM_CATALOG).owner(_session(spark), db, table)


def catalog_list(spark: SparkSession) -> list[tuple[str, str, str, dict[str, str]]]:
    """(db, table, owner, sql_ext.stream properties) of every streaming table of the
    catalog."""
    return [tuple(row) for row in json.loads(_object(spark, STREAM_CATALOG).list(_session(spark)))]


def last_commit(spark: SparkSession, checkpoint: str) -> tuple[int, int] | None:
    """(batch id, commit time in ms) of the stream's last committed micro-batch, or None."""
    found = list(_object(spark, STREAM_CATALOG).lastCommit(_session(spark), checkpoint))
    return (found[0], found[1]) if found else None


# -- progress figures ------------------------------------------------------------------------

def watch_progress(spark: SparkSession) -> None:
    """StreamProgress listens to the streams of `spark`'s context (rows in, drops, state)."""
    _object(spark, STREAM_PROGRESS).watch(_session(spark))


def dropped_rows(spark: SparkSession, checkpoint: str) -> tuple[int, int, int, int]:
    """(late, without an event time, out of order) tuples and undecodable Kafka messages of
    the stream at `checkpoint`."""
    return tuple(_object(spark, STREAM_PROGRESS).dropped(_session(spark), checkpoint))


def rows_in(spark: SparkSession, query) -> int:
    return int(_object(spark, STREAM_PROGRESS).rowsIn(query_id(query)))


def state_curve(spark: SparkSession, query) -> list[tuple[int, int]]:
    """(batch id, rows in the state store) of each micro-batch of `query`."""
    flat = list(_object(spark, STREAM_PROGRESS).stateCurve(query_id(query)))
    return list(zip(flat[::2], flat[1::2]))


# -- files, logs, the driver -----------------------------------------------------------------

def _file_system(spark: SparkSession, path: str):
    hadoop_path = _class(spark.sparkContext._gateway, "org.apache.hadoop.fs.Path")(path)
    return hadoop_path, hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def path_exists(spark: SparkSession, path: str) -> bool:
    """Whether a file or directory exists, through Hadoop's file system."""
    hadoop_path, fs = _file_system(spark, path)
    return bool(fs.exists(hadoop_path))


def delete_path(spark: SparkSession, path: str) -> bool:
    """Deletes a directory tree through Hadoop's file system (local or remote)."""
    hadoop_path, fs = _file_system(spark, path)
    return bool(fs.delete(hadoop_path, True))


def drop_log_lines(spark: SparkSession, logger: str, pattern: str) -> None:
    """Log4j in the driver JVM: the lines of `logger` whose message matches `pattern` (a Java
    regex, the whole message) are dropped, as Spark's own default configuration drops a benign
    Thrift message; the logger's other lines stay. A logger the log configuration names already
    is left as configured.

    The logger's level: Spark's console threshold where Spark set one ("Setting default log
    level to WARN", the default profile in a Python driver), since Spark lets every line of a
    logger with a configuration of its own through that threshold; else the root's, which
    `setLogLevel` governs."""
    jvm = spark.sparkContext._jvm
    log4j = jvm.org.apache.logging.log4j
    context = log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    if config.getLoggerConfig(logger).getName() == logger:
        return
    result = log4j.core.Filter.Result
    spark_logging = jvm.java.lang.Class.forName("org.apache.spark.internal.Logging$") \
        .getField("MODULE$").get(None)
    threshold = spark_logging.sparkShellThresholdLevel()  # None: the parent's level
    lines = log4j.core.config.LoggerConfig(logger, threshold, True)
    lines.addFilter(log4j.core.filter.RegexFilter.createFilter(
        pattern, None, False, result.DENY, result.NEUTRAL))
    config.addLogger(logger, lines)
    context.updateLoggers()


def set_system_properties(spark: SparkSession, properties: dict[str, str]) -> None:
    """Java system properties of the driver JVM."""
    system = _class(spark.sparkContext._gateway, "java.lang.System")
    for key, value in properties.items():
        system.setProperty(key, value)


def driver_process(spark: SparkSession):
    """The driver JVM's process (a subprocess.Popen) when this Python process launched it."""
    return getattr(spark.sparkContext._gateway, "proc", None)


def driver_running() -> bool:
    """A driver JVM already runs: spark-submit started it (and passed its gateway port), or an
    earlier session in this process did. Its class path is fixed by now."""
    return SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ


def start_driver(settings: dict[str, str], secret) -> None:
    """Starts the driver JVM (unless one runs) with the settings it needs at its start (memory,
    class path, Java options, ...) but none for which `secret(key)` holds: PySpark passes every
    setting it starts a JVM with as a `--conf` argument, which `ps` shows to every user of the
    machine. The session that starts next sets the secrets in the running JVM's SparkConf."""
    if driver_running():
        return
    public = SparkConf(loadDefaults=False)
    public.setAll([(key, value) for key, value in settings.items() if not secret(key)])
    SparkContext._ensure_initialized(conf=public)


def driver_class_loader():
    """The class loader of the running driver's current thread (spark-submit's application
    loader under spark-submit)."""
    SparkContext._ensure_initialized()
    return SparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader()


def class_loader_name(loader) -> str:
    return loader.getClass().getName() if loader is not None else "none"


def loadable(loader, class_name: str) -> bool:
    try:
        SparkContext._jvm.java.lang.Class.forName(class_name, False, loader)
        return True
    except Exception:  # py4j's error for a missing class
        return False


def add_jar(loader, path: str) -> None:
    loader.addURL(SparkContext._jvm.java.io.File(path).toURI().toURL())


# -- the Thrift server -----------------------------------------------------------------------

def start_thrift_server(spark: SparkSession, host: str, port: int):
    """HiveThriftServer2 on (host, port) over `spark`'s context, in this driver; its client
    sessions' users are known to the access checks (io.sqlext.access.SessionUsers); what a
    connection sets as its session opens passes them, and the JDBC metadata calls list only the
    tables a user may read (ThriftCallGuard)."""
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set("hive.server2.thrift.bind.host", host)
    hadoop.set("hive.server2.thrift.port", str(port))
    server = _class(spark.sparkContext._gateway,
                    "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2")
    started = server.startWithContext(_session(spark).sqlContext())
    _object(spark, SESSION_USERS).register(started)
    _object(spark, THRIFT_CALL_GUARD).install(started)
    return started


def enforce_access(spark: SparkSession, admins: list[str], paths: list[str],
                   servers: list[str], rules: str | None = None) -> None:
    """From now on every statement of a signed-in user who is not an admin (in `admins` or the
    rules file's) passes the access checks (io.sqlext.access.AccessChecks): files in the folders
    `paths` and the Kafka servers `servers` are every user's, besides what the access rules file
    `rules` gives them. An invalid rules file raises ValueError naming the problem."""
    array_list = _class(spark.sparkContext._gateway, "java.util.ArrayList")
    if rules is not None:
        _configured(lambda: _object(spark, ACCESS_RULES).use(rules))
    _object(spark, ACCESS_POLICY).enforce(array_list(admins), array_list(paths),
                                          array_list(servers))


def session_user(spark: SparkSession) -> str | None:
    """The signed-in user whose statements `spark` runs (io.sqlext.access.SessionUsers), None
    outside a server's client session."""
    return _object(spark, SESSION_USERS).userOrNull(_session(spark))


def table_refusal(spark: SparkSession, privilege: str, name: str) -> str | None:
    """The access rule 'tables' for the user of `spark`: why `privilege` on the table `name` is
    refused, or None where the access rules give it (or there are none)."""
    return _object(spark, ACCESS_CHECKS).tableRefusal(_session(spark), privilege, name)


def stream_refusal(spark: SparkSession, query: DataFrame, name: str) -> str | None:
    """The access rule 'tables' for the user of `spark` (a stream's own session), checked
    before each micro-batch: why reading the stream's `query` or writing its table `name` is
    refused now, or None."""
    return _object(spark, ACCESS_CHECKS).streamRefusal(_session(spark), query._jdf, name)


def readable(spark: SparkSession, db: str, table: str) -> bool:
    """Whether the user of `spark` may read `db`.`table` by the access rules."""
    return bool(_object(spark, ACCESS_CHECKS).readable(_session(spark), db, table))


def path_refusal(spark: SparkSession, what: str, location: str, access: str,
                 defines: str | None = None) -> str | None:
    """The access rule 'paths' for the user of `spark` (io.sqlext.access.AccessChecks, the
    rule every statement's paths keep to): why `access` (READ FILES, WRITE FILES, CREATE
    EXTERNAL TABLE) at `location`, given as `what` by a statement that defines the table
    `defines` (which may name its own folders again), is refused, or None where it is allowed
    or the user is not checked."""
    return _object(spark, ACCESS_CHECKS).pathRefusal(_session(spark), what, location, access,
                                                     defines)


def empty_frame(spark: SparkSession, schema: StructType) -> DataFrame:
    """An empty DataFrame of `schema` in `spark`. Unlike pyspark's createDataFrame, it leaves
    the process's active session alone: a stream's own session must not become the caller's."""
    jsession = _session(spark)
    rows = _class(spark.sparkContext._gateway, "java.util.ArrayList")()
    return DataFrame(jsession.createDataFrame(rows, jsession.parseDataType(schema.json())), spark)


def stream_source(spark: SparkSession, source: str) -> DataFrame:
    """The source `source` of a stream: a streaming view as it is, a table as a stream
    (io.sqlext.access.ServerWork.streamSource)."""
    return DataFrame(_object(spark, SERVER_WORK).streamSource(_session(spark), source), spark)


def start_stream(writer: DataStreamWriter) -> StreamingQuery:
    """Starts `writer`'s stream as the server's work (io.sqlext.access.ServerWork): the
    streaming statement it runs for was judged already, its checkpoint with it."""
    spark = writer._spark
    return StreamingQuery(_object(spark, SERVER_WORK).startStream(
        writer._jwrite))


def empty_delta_table(spark: SparkSession, schema: StructType, location: str,
                      partitioned_by: tuple[str, ...]) -> None:
    """The Delta table at `location` emptied, with `schema` and `partitioned_by`, written by
    the server: in a session of no user (a new session of `spark`'s), since the statement that
    asked for it was judged already (its LOCATION, which may be the table's own)."""
    server = _session(spark).newSession()
    rows = _class(spark.sparkContext._gateway, "java.util.ArrayList")()
    frame = server.createDataFrame(rows, server.parseDataType(schema.json()))
    columns = spark.sparkContext._jvm.PythonUtils.toSeq(list(partitioned_by))
    frame.write().format("delta").mode("overwrite").option("overwriteSchema", "true") \
        .partitionBy(columns).save(location)


def sessions_for_functions() -> list:
    """The classic sessions a function registered now must reach: the active one and the
    process's default (what sql_ext.session() built), once each. pyspark makes a session
    active whenever it creates a DataFrame in it, so the active one is not always the user's."""
    found: list = []
    for candidate in (SparkSession.getActiveSession(), SparkSession._instantiatedSession):
        if candidate is None or getattr(candidate.sparkContext, "_jsc", None) is None:
            continue
        if not any(candidate._jsparkSession.equals(s._jsparkSession) for s in found):
            found.append(candidate)
    return found


def guard_connect(spark: SparkSession, users: str | None, no_client_code: bool) -> None:
    """io.sqlext.access.ConnectGuard's setup (before the Connect service starts), and Connect's
    sessions' users known to the access checks (SessionUsers)."""
    _configured(lambda: _object(spark, CONNECT_GUARD).configure(users, no_client_code))
    _object(spark, SESSION_USERS).registerConnect()


def _configured(configure) -> None:
    """Runs `configure`, a JVM call that reads a file the operator wrote; the JVM's
    IllegalArgumentException (what is wrong with the file) as a ValueError."""
    try:
        configure()
    except Py4JJavaError as error:
        raise ValueError(error.java_exception.getMessage()) from None


def _connect_service(spark: SparkSession) -> JavaClass:
    """Spark's Connect service (a Scala object: its static forwarders)."""
    return _class(spark.sparkContext._gateway,
                  "org.apache.spark.sql.connect.service.SparkConnectService")


def start_connect_server(spark: SparkSession) -> None:
    """Spark Connect's service over `spark`'s context, in this driver, at the address and with
    the token its session started with (spark.connect.grpc.binding.*, ...authenticate.token)."""
    _connect_service(spark).start(spark.sparkContext._jsc.sc())


def stop_connect_server(spark: SparkSession) -> None:
    """Stops the Connect service started by start_connect_server, before `spark` stops. Started
    this way (not as Spark's plugin), nothing stops it with the context: its session and
    execution managers' periodic checks would go on and, once the context has stopped, log an
    "Unexpected exception in periodic task" (a NullPointerException) every interval until the
    process exits. Stopping it shuts its checks down and waits for them."""
    service = _connect_service(spark)
    # Scala's default arguments (no grace period): its clients are done, or being let go.
    service.stop(getattr(service, "stop$default$1")(), getattr(service, "stop$default$2")())


def is_classic(spark) -> bool:
    """Whether `spark` is a session of this process's JVM (not a Spark Connect client's)."""
    return isinstance(spark, SparkSession) and hasattr(spark, "_jsparkSession")


# -- the registry of running streams (io.sqlext.streaming.catalog.RunningStreams) ----------------


def run_started(spark: SparkSession, db: str, table: str, stream_id: str,
                location: str | None, query) -> None:
    """Records `query` as the run of db.table (a DROP TABLE from any session stops it; its
    failure is recorded in the catalog)."""
    _object(spark, RUNNING_STREAMS).started(_session(spark), db, table, stream_id, location,
                                            query._jsq)


def stop_between_batches(spark: SparkSession, query, timeout: float) -> None:
    """Stops `query` (a pyspark StreamingQuery) between two micro-batches when the one in
    flight ends within `timeout` seconds, else in the middle of it."""
    _object(spark, RUNNING_STREAMS).stopBetweenBatches(query._jsq, int(timeout * 1000))


def hand_over_stream(spark: SparkSession, query) -> str:
    """Hands `query` to the streaming statement that waits for it in the JVM (a cancel of the
    statement stops it); the token the statement's answer names."""
    return _object(spark, AWAITED_STREAMS).handOver(query._jsq)


# Spark's names of the errors an interrupted JVM call raises, which a stop in the middle of a
# micro-batch causes (StreamExecution.IO_EXCEPTION_NAMES).
_INTERRUPTIONS = ("java.lang.InterruptedException", "java.io.InterruptedIOException",
                  "java.nio.channels.ClosedByInterruptException")


def interruption(error: BaseException) -> str | None:
    """The Java exception's text when `error` is a JVM call's interruption, else None."""
    if isinstance(error, Py4JJavaError):
        cause = str(error.java_exception)
        if cause.startswith(_INTERRUPTIONS):
            return cause
    return None


def statement_ended(spark: SparkSession, statement_id: str) -> str | None:
    """Why the Thrift server's statement `statement_id` ended early ("cancelled", "stopped by
    the statement timeout"), None while it goes on."""
    return _object(spark, CANCELLED_STATEMENTS).whyOrNull(statement_id)


def latest_run(spark: SparkSession, db: str, table: str) -> dict | None:
    """The latest run of db.table in this process, running or ended: stream_id, query (a
    pyspark StreamingQuery), location, rows_out; None when there is none."""
    run = _object(spark, RUNNING_STREAMS).run(db, table)
    if run is None:
        return None
    return dict(stream_id=run.streamId(), query=StreamingQuery(run.query()),
                location=run.location(), rows_out=int(run.rowsOut()))


def run_set_location(spark: SparkSession, db: str, table: str, location: str) -> None:
    run = _object(spark, RUNNING_STREAMS).run(db, table)
    if run is not None:
        getattr(run, "location_$eq")(location)  # (a Scala var's setter)


def run_wrote(spark: SparkSession, db: str, table: str, rows: int) -> None:
    _object(spark, RUNNING_STREAMS).wrote(db, table, rows)


def run_swap_logged_drops(spark: SparkSession, db: str, table: str,
                          drops: tuple[int, ...]) -> tuple[int, ...]:
    """Records the drop figures now logged for db.table's run; the ones logged before."""
    before = _object(spark, RUNNING_STREAMS).swapLoggedDrops(db, table, *drops)
    return tuple(before)

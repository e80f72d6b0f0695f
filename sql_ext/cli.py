"""`sql-ext` command line: run the seed examples, start the Thrift or Spark Connect server,
transpile SQL, run dbt in a sql-ext session.

The top layer: it may import every other. Each command imports what it runs when it runs, so
that `sql-ext transpile` and `--version` run where pyspark is not installed
(tests/test_grammar_alone.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from sql_ext import jars
from sql_ext.logs import VERBOSE_ENV
from sql_ext.sql.errors import WindowSqlError
from sql_ext.sql.transpile import transpile as transpile_sql
from sql_ext.version import __version__

MASTER_HELP = ("Spark's master URL (default: spark.master of --conf or --properties-file, else "
               "local[2]); on a cluster also set SPARK_LOCAL_IP and PYSPARK_PYTHON for it")
WAREHOUSE_HELP = ("the Delta warehouse folder, with the embedded catalog in it (default: "
                  "spark.sql.warehouse.dir of --conf or --properties-file, else "
                  "SQL_EXT_WAREHOUSE, else <checkout>/warehouse in a source checkout and "
                  "./spark-warehouse when installed)")
METASTORE_HELP = ("an external catalog: a JDBC URL or thrift://host:port (default: the "
                  "embedded one in the warehouse; also SQL_EXT_METASTORE)")


def run_examples(args) -> int:
    from sql_ext.samples import seed_examples

    spark = _session(args, "sql-ext")
    spark.sparkContext.setLogLevel("ERROR")
    seed_examples.main(spark)
    spark.stop()
    return 0


def _session(args, app_name: str, command_conf: dict[str, str] | None = None):
    """The command's session: the operator's Spark settings (--properties-file, then --conf,
    then --driver-memory), under the settings the command's own flags make (--port, --auth,
    ...), as spark-submit's flags win over its --conf. spark.master and the warehouse come
    from the flags when given, else from the settings."""
    from sql_ext.session import session
    from sql_ext.spark_settings import SettingsError, operator_settings

    try:
        settings = operator_settings(args.properties_file, args.conf, args.driver_memory)
    except SettingsError as error:
        raise SystemExit(f"sql-ext {args.command}: {error}") from None
    master = settings.pop("spark.master", "local[2]")
    warehouse = settings.pop("spark.sql.warehouse.dir", None)
    return session(warehouse=args.warehouse or warehouse,
                   master=getattr(args, "master", None) or master, app_name=app_name,
                   metastore=args.metastore, conf={**settings, **(command_conf or {})})


def thriftserver(args) -> int:
    from sql_ext.server import access, auth, monitoring, sharing, tls
    from sql_ext.server.thrift import start_thrift_server, thrift_conf

    auth.check_bind(args.host, args.auth, args.insecure_no_auth)
    secure = tls.server_conf(args.tls_cert, args.tls_key)
    tls.warn_clear_text(args.host, args.auth, bool(secure))
    conf = {**thrift_conf(args.host, args.port), **auth.server_conf(args.auth, args.password_file),
            **secure, **monitoring.ui_conf(args.host, args.ui_port),
            **sharing.server_conf(args.query_timeout, args.scheduler)}
    spark = _session(args, "sql-ext-thriftserver", conf)
    if args.auth == "password":
        try:
            access.enforce(spark, args.admin, args.allow_path, args.allow_server,
                           args.access_rules)
        except ValueError as error:
            raise SystemExit(f"sql-ext thriftserver: --access-rules: {error}") from None
    elif args.admin or args.allow_path or args.allow_server or args.access_rules:
        raise SystemExit("sql-ext thriftserver: --admin, --allow-path, --allow-server and "
                         "--access-rules need --auth password (without sign-in the server's "
                         "one user, its operator, is an admin)")
    _load_udafs(args.udafs)
    start_thrift_server(spark, args.host, args.port)
    if args.auth == "password":
        # Sign-in opens only now: the server guards what each connection sets as its session
        # opens (io.sqlext.access.ThriftCallGuard), installed as it started; until here every
        # sign-in fails (the authenticator has no password file yet).
        auth.install(spark, args.password_file)
    # Clients may connect from here on; the streams resume meanwhile, before the start's last
    # line (as for the Connect server), so that after that line only _serve talks to the JVM.
    if args.resume:
        _resume(spark)
    _print_ui(spark)
    print(f"sql-ext Thrift server on jdbc:hive2://{args.host}:{args.port}/default"
          f"{';ssl=true' if secure else ''} (Ctrl-C to stop)", flush=True)
    return _serve(spark, "sql-ext Thrift server")


def _resume(spark) -> None:
    """Starts again the streaming tables the catalog lists as RUNNING, and says which."""
    from sql_ext.streaming import resume

    started = resume(spark)
    print(f"resumed {len(started)} streaming table(s): {', '.join(started) or '-'}", flush=True)


def _print_ui(spark) -> None:
    """The Spark UI's address. Servers print it just before their `(Ctrl-C to stop)` line,
    which ends their start: whoever reads that line (a supervisor, a test) may take the start
    as done, so after it no call asks the JVM anything but _serve, and a JVM that dies then
    ends the server with _serve's message, not a call's error."""
    url = spark.sparkContext.uiWebUrl
    if url:
        print(f"Spark UI on {url} (Structured Streaming: streaming tables by name; Prometheus "
              f"metrics: {url}/metrics/prometheus/)", flush=True)


def connect_server(args) -> int:
    from sql_ext.server import access, auth, monitoring, sharing
    from sql_ext.server.connect import (TOKEN_ENV, connect_conf, guard, start_connect_server,
                                        token_of)

    auth.check_bind(args.host, args.auth, args.insecure_no_auth, "sql-ext connect-server",
                    f"--auth token (with --users FILE, --token-file FILE or {TOKEN_ENV})")
    users = args.users if args.auth == "token" else None
    if args.users and not users:
        raise SystemExit("sql-ext connect-server: --users needs --auth token")
    if (args.admin or args.allow_path or args.allow_server or args.access_rules) and not users:
        raise SystemExit("sql-ext connect-server: --admin, --allow-path, --allow-server and "
                         "--access-rules need --auth token --users FILE (without users told "
                         "apart, every client is the server's operator, an admin)")
    token = token_of(args.token_file) if args.auth == "token" and not users else None
    guarded = bool(users) or args.no_client_udfs
    spark = _session(args, "sql-ext-connect-server",
                     {**connect_conf(args.host, args.port, token, guarded),
                      **monitoring.ui_conf(args.host, args.ui_port), **sharing.server_conf(None)})
    try:
        if guarded:
            guard(spark, users, args.no_client_udfs)
        if users:
            access.enforce(spark, args.admin, args.allow_path, args.allow_server,
                           args.access_rules)
    except ValueError as error:
        raise SystemExit(f"sql-ext connect-server: {error}") from None
    _load_udafs(args.udafs)
    if args.resume:
        _resume(spark)
    # Last: the first remote statement finds the rewriter, the UDAFs and the streams in place.
    address = start_connect_server(spark, args.host, args.port)
    given = args.token_file or os.environ.get(TOKEN_ENV)
    shown = f"/;token={token}" if token and not given else (
        "/;token=<your token>" if token or users else "")
    _print_ui(spark)
    print(f"sql-ext Spark Connect server on {address}{shown} (Ctrl-C to stop)", flush=True)
    return _serve(spark, "sql-ext Spark Connect server")


def pipelines(args) -> int:
    """spark-pipelines with sql-ext's SQL, in one command: a Spark Connect server in this
    process (loopback, a fresh token, on the warehouse) and Spark's own pipelines CLI in a
    child process pointed at it."""
    import importlib.util
    import secrets
    import subprocess

    missing = [m for m in ("grpc", "yaml", "zstandard") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"sql-ext pipelines needs pyspark's Connect and pipelines packages (missing: "
              f"{', '.join(missing)}): install sql-ext with its [connect] extra",
              file=sys.stderr)
        return 2
    from sql_ext.server.connect import connect_conf, start_connect_server, stop_connect_server
    from sql_ext.server.thrift import free_port

    port, token = free_port(), secrets.token_urlsafe(32)
    spark = _session(args, "sql-ext-pipelines", connect_conf("127.0.0.1", port, token))
    _load_udafs(args.udafs)
    start_connect_server(spark, "127.0.0.1", port)
    pipeline_args = args.pipeline_args[1:] if args.pipeline_args[:1] == ["--"] \
        else args.pipeline_args
    # pyspark's client sends a token without TLS only to "localhost".
    env = dict(os.environ, SPARK_REMOTE=f"sc://localhost:{port}/;token={token}")
    try:
        return subprocess.call([sys.executable, "-m", "pyspark.pipelines.cli", *pipeline_args],
                               env=env)
    finally:
        stop_connect_server(spark)
        spark.stop()


def _serve(spark, what: str) -> int:
    """Serves until SIGTERM or Ctrl-C. The JVM that PySpark launched serves every client: if
    it dies (a crash, the OOM killer), this process must not linger as a server that answers
    nothing; it exits non-zero so that a supervisor restarts it."""
    from sql_ext import jvm

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    driver = jvm.driver_process(spark)
    try:
        while not stop.wait(2.0):
            if driver is not None and driver.poll() is not None:
                print(f"{what}: its JVM exited with code {driver.returncode}; the server stops",
                      file=sys.stderr, flush=True)
                return 1
    except KeyboardInterrupt:
        pass
    return 0


def _load_udafs(modules: str | None) -> None:
    """--udafs a.b,c.d: imports the modules; their UDAFs reach every session made after."""
    if not modules:
        return
    from sql_ext.udaf import load_modules

    names = load_modules([m.strip() for m in modules.split(",") if m.strip()])
    print(f"UDAFs for every session: {', '.join(names) or '-'}", flush=True)


def connect_token(args) -> int:
    """Gives a user a new token in a Connect token file; prints it (it is not kept)."""
    from sql_ext.server.connect import add_token

    try:
        token = add_token(args.file, args.user)
    except ValueError as error:
        print(f"sql-ext connect-token: {error}", file=sys.stderr)
        return 2
    print(f"{args.user}'s token (shown once; the file keeps its hash): {token}")
    print(f"connect as sc://<host>:<port>/;token={token}")
    return 0


def passwd(args) -> int:
    """Adds a user to a password file, or changes their password."""
    import getpass

    from sql_ext.server.auth import set_password

    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass(f"password for {args.user}: ")
        if password != getpass.getpass("again: "):
            print("the two passwords differ; nothing changed", file=sys.stderr)
            return 1
    if not password:
        print("an empty password is not allowed; nothing changed", file=sys.stderr)
        return 1
    set_password(args.file, args.user, password)
    print(f"{args.user} can sign in (password file {args.file})")
    return 0


def dbt(args) -> int:
    """dbt for `method: session` profiles, in this process on sql-ext's session."""
    from sql_ext.dbt import run

    dbt_args = args.dbt_args[1:] if args.dbt_args[:1] == ["--"] else args.dbt_args
    spark = _session(args, "sql-ext-dbt")
    _load_udafs(args.udafs)
    result = run(dbt_args, spark=spark)
    if result.exception is not None:
        return 2
    return 0 if result.success else 1


def dbt_package(args) -> int:
    from sql_ext.dbt import package_path

    print(package_path())
    return 0


def print_jars(args) -> int:
    """The spark-submit arguments for a driver `configure` cannot reach (cluster deploy mode)."""
    print(" ".join(jars.submit_arguments()))
    return 0


def transpile(args) -> int:
    text = args.sql if args.sql != "-" else sys.stdin.read()
    try:
        print(transpile_sql(text))
    except WindowSqlError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def spl(args) -> int:
    """SPL files -> sql-ext statements: a SQL script per file (stdout or --out), or JSON."""
    from pathlib import Path

    from sql_ext.spl import translate_sources

    params = {}
    for item in args.param or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            print(f"error: --param {item!r}: expected NAME=VALUE", file=sys.stderr)
            return 2
        params[name] = value
    try:
        sources = [(str(path), Path(path).read_text()) for path in args.files]
    except OSError as error:
        print(f"error: {error.filename}: {error.strerror}", file=sys.stderr)
        return 2
    result = translate_sources(sources, params)
    if args.json:
        import json

        print(json.dumps(result.to_json(), indent=2))
    elif args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for file, _ in sources:
            target = out / (Path(file).stem + ".sql")
            target.write_text(result.script(file))
            print(f"{file} -> {target}")
    else:
        print(result.script(), end="")
    for entry in result.untranslated:
        print(f"not translated: {entry.file}:{entry.line}:{entry.column}: "
              f"{entry.operator} {entry.stream}: {entry.reason}".replace("  ", " "),
              file=sys.stderr)
    return 0


def _spark_options(command, master: bool = True) -> None:
    """Where the command's Spark session is, and the operator's Spark settings for it, given
    as spark-submit takes them."""
    command.add_argument("--warehouse", default=None, help=WAREHOUSE_HELP)
    command.add_argument("--metastore", default=None, help=METASTORE_HELP)
    if master:
        command.add_argument("--master", default=None, help=MASTER_HELP)
    command.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                         help="a Spark setting (repeatable; wins over --properties-file); "
                              "settings whose names Spark redacts (secret, password, token, "
                              "access key) never reach a command line that ps shows")
    command.add_argument("--properties-file", default=None, metavar="FILE",
                         help="Spark settings in spark-defaults.conf's format (key value per "
                              "line), as spark-submit reads them: the place for secrets")
    command.add_argument("--driver-memory", default=None, metavar="MEM",
                         help="the driver's memory, such as 4g (spark.driver.memory; wins "
                              "over --conf and --properties-file)")


def _server_options(command, port: int, udaf_users: str) -> None:
    """The options the Thrift and Connect servers share."""
    command.add_argument("--host", default="127.0.0.1",
                         help="the address to listen on (default 127.0.0.1: this machine only)")
    command.add_argument("--port", type=int, default=port,
                         help=f"the port to listen on (default {port})")
    _spark_options(command)
    command.add_argument("--no-resume", dest="resume", action="store_false",
                         help="do not start the catalog's TRIGGER EVERY streaming tables")
    command.add_argument("--insecure-no-auth", action="store_true",
                         help="allow --auth none on an address other machines can reach")
    command.add_argument("--udafs", default=None, metavar="MODULE[,MODULE]",
                         help=f"modules of @sql_ext.udaf functions for {udaf_users}")
    command.add_argument("--ui-port", type=int, default=None, metavar="PORT",
                         help="serve Spark's UI (streaming tables by name) and Prometheus "
                              "metrics (/metrics/prometheus/) on this port")


def build_parser() -> argparse.ArgumentParser:
    """The `sql-ext` command line: every command and flag, each with its help text."""
    parser = argparse.ArgumentParser(prog="sql-ext", description=__doc__)
    parser.add_argument("--version", action="version", version=f"sql-ext {__version__}")
    parser.add_argument("--verbose", action="store_true",
                        help="keep the warnings of Spark and Hive that sql-ext leaves out by "
                             "default (SQL_EXT_VERBOSE=1 does the same)")
    commands = parser.add_subparsers(dest="command", required=True)
    examples = commands.add_parser("run-examples", help="run the seed examples into Delta tables")
    _spark_options(examples)
    examples.set_defaults(run=run_examples)
    server = commands.add_parser("thriftserver", help="start the JDBC/Thrift server")
    _server_options(server, 10000, "every JDBC/dbt session")
    server.add_argument("--auth", choices=("none", "password"), default="none",
                        help="none (the default, loopback only) or password (--password-file)")
    server.add_argument("--password-file", default=None,
                        help="users and salted password hashes (sql-ext passwd FILE USER)")
    server.add_argument("--admin", action="append", default=[], metavar="USER",
                        help="a signed-in user who may do anything (repeatable); every other "
                             "user is held to the access checks (docs/security.md)")
    server.add_argument("--allow-path", action="append", default=[], metavar="DIR",
                        help="a folder where every user may read and write files and create "
                             "external tables (LOCATION, CHECKPOINT, file queries), outside "
                             "any table's folder (repeatable; docs/security.md)")
    server.add_argument("--allow-server", action="append", default=[], metavar="HOST:PORT",
                        help="a Kafka server every user's tables and reads may connect to "
                             "(repeatable)")
    server.add_argument("--access-rules", default=None, metavar="FILE",
                        help="a JSON file of admins, table, location and server rules: which "
                             "user may do what with which tables and folders (read again when "
                             "it changes; docs/security.md)")
    server.add_argument("--tls-cert", default=None, metavar="FILE",
                        help="TLS: the server's certificate (PEM; issuers may follow it)")
    server.add_argument("--tls-key", default=None, metavar="FILE",
                        help="TLS: the certificate's private key (PEM, unencrypted)")
    server.add_argument("--query-timeout", type=float, default=None, metavar="SECONDS",
                        help="cancel any statement running longer (a session may SET "
                             "spark.sql.thriftServer.queryTimeout lower; default: no limit)")
    server.add_argument("--scheduler", choices=("fair", "fifo"), default="fair",
                        help="fair (the default): every statement's jobs share the cores; "
                             "fifo: Spark's default, a statement's jobs wait for earlier ones")
    server.set_defaults(run=thriftserver)
    connect = commands.add_parser(
        "connect-server", help="start the Spark Connect server (sc://host:port)",
        description="Spark Connect for remote clients (pyspark's SparkSession.builder.remote, "
                    "spark-pipelines --remote, the Go/Rust/Swift clients) with sql-ext's SQL.")
    _server_options(connect, 15002, "every client session")
    connect.add_argument("--auth", choices=("none", "token"), default="none",
                         help="none (the default, loopback only) or token: clients present "
                              "it as sc://host:port/;token=...")
    connect.add_argument("--token-file", default=None,
                         help="--auth token: the token is this file's first line (default: "
                              "SPARK_CONNECT_AUTHENTICATE_TOKEN, else a new one, printed)")
    connect.add_argument("--users", default=None, metavar="FILE",
                         help="--auth token: one token per user (sql-ext connect-token FILE "
                              "USER adds one); a client is the user of its token, and users "
                              "who are not admins are held to the access checks")
    connect.add_argument("--admin", action="append", default=[], metavar="USER",
                         help="with --users: a user who may do anything (repeatable)")
    connect.add_argument("--allow-path", action="append", default=[], metavar="DIR",
                         help="with --users: a folder where every user may read and write "
                              "files and create external tables (repeatable)")
    connect.add_argument("--allow-server", action="append", default=[], metavar="HOST:PORT",
                         help="with --users: a Kafka server every user may connect to "
                              "(repeatable)")
    connect.add_argument("--access-rules", default=None, metavar="FILE",
                         help="with --users: the JSON file of admins, table, location and "
                              "server rules (docs/security.md)")
    connect.add_argument("--no-client-udfs", action="store_true",
                         help="refuse code that clients send (Python and Scala UDFs, UDTFs, "
                              "data sources, artifacts) to every user, admins too")
    connect.set_defaults(run=connect_server)
    tokens = commands.add_parser("connect-token", help="give a user a new Spark Connect token "
                                                       "(connect-server --users FILE)")
    tokens.add_argument("file", help="the token file (created if missing; kept at mode 0600)")
    tokens.add_argument("user", help="the user the token signs in")
    tokens.set_defaults(run=connect_token)
    flows = commands.add_parser(
        "pipelines", help="run spark-pipelines (Declarative Pipelines) with sql-ext's SQL",
        description="Spark's pipelines CLI against a sql-ext Spark Connect server started "
                    "for the run: sql-ext pipelines run --spec examples/pipelines/"
                    "spark-pipeline.yml (the arguments after the options go to spark-pipelines)")
    _spark_options(flows)
    flows.add_argument("--udafs", default=None, metavar="MODULE[,MODULE]",
                       help="modules of @sql_ext.udaf functions for the pipeline's SQL")
    flows.add_argument("pipeline_args", nargs=argparse.REMAINDER,
                       help="spark-pipelines' own arguments (run, dry-run, --spec, ...)")
    flows.set_defaults(run=pipelines)
    users = commands.add_parser("passwd", help="add a user to a password file, or change "
                                               "their password")
    users.add_argument("file", help="the password file (created if missing; kept at mode 0600)")
    users.add_argument("user", help="the user to add or change")
    users.add_argument("--password-stdin", action="store_true",
                       help="read the password from standard input (one line)")
    users.set_defaults(run=passwd)
    runner = commands.add_parser(
        "dbt", help="run dbt (method: session profiles) in a sql-ext session",
        description="Runs dbt in this process on sql-ext's session: sql-ext dbt run "
                    "--project-dir examples/dbt (the arguments after the options go to dbt)")
    _spark_options(runner, master=False)
    runner.add_argument("--udafs", default=None, metavar="MODULE[,MODULE]",
                        help="modules of @sql_ext.udaf functions for dbt's SQL")
    runner.add_argument("dbt_args", nargs=argparse.REMAINDER, help="dbt's own arguments")
    runner.set_defaults(run=dbt)
    package = commands.add_parser("dbt-package",
                                  help="print the folder of sql-ext's dbt package")
    package.set_defaults(run=dbt_package)
    submit = commands.add_parser(
        "jars", help="print spark-submit's arguments for sql-ext (--jars, --conf)",
        description="spark-submit in client mode needs none of these (sql_ext.configure loads "
                    "the jars); cluster deploy mode, where the driver runs elsewhere, does.")
    submit.set_defaults(run=print_jars)
    show = commands.add_parser("transpile", help="print the plain Spark SQL of windowed SQL")
    show.add_argument("sql", help="the statement, or - for standard input")
    show.set_defaults(run=transpile)
    spl_command = commands.add_parser(
        "spl", help="translate SPL applications' windowed Aggregates (and the Filters and "
                    "Functors before them) into streaming tables, views and source tables")
    spl_command.add_argument("files", nargs="+", metavar="FILE.spl", help="SPL source files")
    spl_command.add_argument("--out", default=None, metavar="DIR",
                             help="write one SQL script per SPL file into DIR (default: stdout)")
    spl_command.add_argument("--json", action="store_true",
                             help="print one JSON object: the statements in dependency order "
                                  "and the untranslated invocations")
    spl_command.add_argument("--param", action="append", metavar="NAME=VALUE",
                             help="a submission-time value (getSubmissionTimeValue) or a main "
                                  "composite's parameter; repeatable")
    spl_command.set_defaults(run=spl)
    return parser


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    args = build_parser().parse_args(argv)
    if args.verbose:
        os.environ[VERBOSE_ENV] = "1"  # for this process's sessions and the ones it starts
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())

"""What the embedded default leaves out of its output: warnings of Spark and Hive that every run
prints and no user can act on (sql_ext.session drops them by logger and message, through
sql_ext.jvm.drop_log_lines), unless `sql-ext --verbose` or SQL_EXT_VERBOSE=1 asks for
everything."""

VERBOSE_ENV = "SQL_EXT_VERBOSE"

# logger -> Java regex of the whole message.
HARMLESS_LOG_LINES = {
    # Spark's Hive client sets a marker Hive's own configuration does not know (every session).
    "org.apache.hadoop.hive.conf.HiveConf":
        r"HiveConf of name hive\.internal\.ss\.authz\.settings\.applied\.marker does not exist",
    # Adaptive execution does not apply to streams; Spark turns it off for them by itself.
    "org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream":
        r"spark\.sql\.adaptive\.enabled is not supported in streaming DataFrames/Datasets.*",
    "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution":
        r"Disabling AQE since AQE is not supported in stateful workloads\.",
    "org.apache.hadoop.hive.ql.session.SessionState":
        r"METASTORE_FILTER_HOOK will be ignored, since hive\.security\.authorization\.manager.*",
    # After a Spark Connect client (spark-pipelines) closes its session, the release of its last
    # operation finds the session gone: an ERROR with a stack trace after a run that completed.
    "org.apache.spark.sql.connect.utils.ErrorUtils":
        r"(?s)(Spark Connect RPC error during:|SessionHolder not found during error handling "
        r"for) releaseExecute\..*",
    "org.apache.spark.util.SparkStringUtils":
        r"(?s)Truncated the string representation of a plan since it was too large\..*",
}

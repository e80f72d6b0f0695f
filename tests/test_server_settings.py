"""An operator's Spark settings for a server, given as spark-submit takes them (--properties-file,
--conf, --driver-memory): read as the JVM's own java.util.Properties reads a file, in
spark-submit's order, reaching the server's Spark session, and with secrets on no process's
command line and in no client's view (SET, and Connect's config calls: tests/
test_connect_access.py).

The server is the security suite's signed-in Thrift server (tests/secured.py), which starts
with a properties file holding a secret, a --conf over one of the file's settings and
--driver-memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from secured import DRIVER_MEMORY, PROBE_SETTING, SECRET_SETTING, as_user, run

from sql_ext.spark_settings import (REDACTION_DEFAULT, SettingsError, is_secret,
                                    operator_settings, read_properties)

pytestmark = pytest.mark.xdist_group("secured_server")

REDACTED = "*********(redacted)"


def _command_lines() -> dict[int, str]:
    """Every process's command line, as `ps` shows it to any user of the machine."""
    lines = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                lines[int(proc.name)] = (proc / "cmdline").read_bytes().replace(b"\0", b" ") \
                    .decode(errors="replace")
            except OSError:
                continue
    return lines


def test_a_servers_settings_reach_its_session_and_its_secrets_no_command_line(secured_server):
    port, work = secured_server
    key, secret = SECRET_SETTING
    for user in ("root", "bob"):  # an admin and a user held to the checks
        cursor = as_user(port, user)
        # The file's setting, then --conf over it; the secret is set, and shown redacted.
        assert run(cursor, f"SET {PROBE_SETTING}") == [(PROBE_SETTING, "conf")]
        assert run(cursor, f"SET {key}") == [(key, REDACTED)]
        assert run(cursor, "SET spark.driver.memory") == [("spark.driver.memory", DRIVER_MEMORY)]
        listed = dict(run(cursor, "SET"))
        assert listed[key] == REDACTED and secret not in str(listed)
    lines = _command_lines()
    assert not [pid for pid, line in lines.items() if secret in line]
    # The server's JVM started with the memory asked (its heap), not Spark's default.
    jvms = [line for line in lines.values()
            if "SparkSubmit" in line and str(work / "warehouse") in line]
    assert len(jvms) == 1 and f"-Xmx{DRIVER_MEMORY}" in jvms[0], jvms


def test_later_flags_win_as_in_spark_submit(tmp_path):
    settings_file = tmp_path / "spark.properties"
    settings_file.write_text("spark.driver.memory 2g\nspark.a = from-file\nspark.b:from-file\n")
    assert operator_settings(str(settings_file), ["spark.a=from-conf", "spark.c=x=y"], "3g") \
        == {"spark.driver.memory": "3g", "spark.a": "from-conf", "spark.b": "from-file",
            "spark.c": "x=y"}
    with pytest.raises(SettingsError, match=r"--conf 'spark\.a': expected KEY=VALUE"):
        operator_settings(None, ["spark.a"])
    settings_file.write_text("# settings\nspark.a \\u12\n")
    with pytest.raises(SettingsError, match=r"spark\.properties, line 2: malformed \\uxxxx"):
        read_properties(settings_file)
    with pytest.raises(SettingsError, match="No such file"):
        read_properties(tmp_path / "missing.properties")


def test_secrets_are_what_spark_redacts(spark):
    """The default pattern is Spark's own (the JVM's default of spark.redaction.regex), and an
    operator's own pattern replaces it."""
    config = spark.sparkContext._jvm.java.lang.Class \
        .forName("org.apache.spark.internal.config.package$").getField("MODULE$").get(None)
    assert config.SECRET_REDACTION_PATTERN().defaultValueString() == REDACTION_DEFAULT
    assert is_secret("spark.hadoop.javax.jdo.option.ConnectionPassword")
    assert is_secret("spark.hadoop.fs.s3a.access.key") and is_secret("x.accesskey")
    assert not is_secret("spark.driver.memory")
    own = {"spark.redaction.regex": "(?i)credential"}
    assert is_secret("spark.my.credential", own) and not is_secret("spark.my.password", own)


# Pieces of a properties file, its tricky parts weighted up: separators, escapes, comments,
# continuations, blank and whitespace-only lines, keys with escaped separators.
PIECES = st.sampled_from([
    "a", "key", "spark.x.y", "Ω", " ", "  ", "\t", "\f", "=", ":", "==", " = ", "\\", "\\\\",
    "\\=", "\\:", "\\ ", "\\t", "\\n", "\\u0041", "\\u00e9", "#", "!", "\n", "\\\n", "\r\n",
    "\\\n  ", "value", "x y", "1g",
])


@given(st.lists(PIECES, max_size=30).map("".join))
# Differences found on the way: a form feed (no line end for Java), a continuation into blank
# text, a backslash at the file's end, and one before "\r\n" (Python's text mode reads "\n").
@example("a\x0ca")
@example("\\\n  ")
@example("\\")
@example("\\\n")
@example("\\\r\n")
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_properties_file_reads_as_java_reads_it(spark, tmp_path, text):
    """Against the JVM's java.util.Properties.load (UTF-8), with spark-submit's trim of each
    value (Utils.getPropertiesFromFile)."""
    path = tmp_path / "spark.properties"
    path.write_bytes(text.encode("utf-8"))
    jvm = spark.sparkContext._jvm
    reader = jvm.java.io.InputStreamReader(jvm.java.io.FileInputStream(str(path)), "UTF-8")
    properties = jvm.java.util.Properties()
    try:
        properties.load(reader)
    except Exception as error:  # noqa: BLE001 - py4j's error of Java's refusal
        assert "Malformed" in str(error)
        with pytest.raises(SettingsError, match="malformed"):
            read_properties(path)
        return
    finally:
        reader.close()
    expected = {str(k): str(properties.getProperty(k)).strip(JAVA_TRIMMED)
                for k in properties.stringPropertyNames()}
    assert read_properties(path) == expected, repr(text)


# What Java's String.trim removes: every character up to U+0020.
JAVA_TRIMMED = "".join(chr(code) for code in range(33))


def test_an_external_catalog_s_credentials_come_from_the_environment(monkeypatch, tmp_path):
    """SQL_EXT_METASTORE_USER and SQL_EXT_METASTORE_PASSWORD become Hive's connection settings
    for a JDBC catalog (the password one that stays off the driver's command line); the
    embedded catalog and a thrift:// one take no such settings."""
    from sql_ext.metastore import catalog_conf

    monkeypatch.setenv("SQL_EXT_METASTORE_USER", "hive")
    monkeypatch.setenv("SQL_EXT_METASTORE_PASSWORD", "pw-from-env")
    conf = catalog_conf(tmp_path, "jdbc:postgresql://db:5432/metastore")
    user = conf["spark.hadoop.javax.jdo.option.ConnectionUserName"]
    password_key = "spark.hadoop.javax.jdo.option.ConnectionPassword"
    assert (user, conf[password_key]) == ("hive", "pw-from-env")
    assert is_secret(password_key) and not is_secret("spark.hadoop.javax.jdo.option."
                                                     "ConnectionUserName")
    for other in (None, "thrift://metastore:9083"):
        assert not any("Connection" in k and "URL" not in k for k in catalog_conf(tmp_path, other))

"""Spark settings as an operator gives them to a server: `--properties-file FILE` (the
spark-defaults.conf format spark-submit reads), `--conf KEY=VALUE` and `--driver-memory`, with
spark-submit's precedence (the file, then each --conf, then the shorthand), and which of them
are secrets that no process's command line may show.

No Spark here: the servers' commands read their settings before any JVM starts, and the JVM's
own java.util.Properties is this reader's oracle (tests/test_server_settings.py).
"""

from __future__ import annotations

import re
from pathlib import Path

# Spark's spark.redaction.regex default: the settings whose values its UI, logs and event logs
# hide. The same names stay off the driver's command line (sql_ext.jvm.start_driver).
REDACTION_DEFAULT = r"(?i)secret|password|token|access[.]?key"


class SettingsError(ValueError):
    """A setting an operator gave that cannot be read; names the flag or the file's line."""


def is_secret(key: str, settings: dict[str, str] | None = None) -> bool:
    """Whether Spark redacts `key`'s value (under the settings' own spark.redaction.regex)."""
    pattern = (settings or {}).get("spark.redaction.regex") or REDACTION_DEFAULT
    return re.search(pattern, key) is not None


def conf_item(item: str) -> tuple[str, str]:
    """KEY=VALUE of a --conf flag, as spark-submit splits it (at the first '=')."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise SettingsError(f"--conf {item!r}: expected KEY=VALUE, for example "
                            "--conf spark.sql.shuffle.partitions=8")
    return key.strip(), value


def operator_settings(properties_file: str | None = None, conf: list[str] | None = None,
                      driver_memory: str | None = None) -> dict[str, str]:
    """The settings of a server's flags: the properties file's, then each --conf over them,
    then --driver-memory over spark.driver.memory (spark-submit's order)."""
    settings = read_properties(properties_file) if properties_file else {}
    settings.update(conf_item(item) for item in conf or [])
    if driver_memory:
        settings["spark.driver.memory"] = driver_memory
    return settings


def read_properties(path: str | Path) -> dict[str, str]:
    """A properties file as Spark reads one (java.util.Properties, UTF-8; values trimmed as
    spark-submit trims them): `key value`, `key=value` or `key:value`, `#` and `!` comments,
    a backslash at a line's end continuing it, and backslash escapes."""
    try:  # bytes: Python's text mode would turn "\r\n" into "\n", Java reads both as they are
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError as error:
        raise SettingsError(f"--properties-file {path}: {error.strerror}") from None
    settings: dict[str, str] = {}
    for number, line in _logical_lines(text):
        try:
            key, value = _split(line)
        except ValueError as error:
            raise SettingsError(f"--properties-file {path}, line {number}: {error}") from None
        settings[key] = value.strip(JAVA_TRIM)
    return settings


def _logical_lines(text: str):
    """(first physical line's number, text) of each entry, read as java.util.Properties reads
    lines: leading whitespace and blank lines skipped, a `#` or `!` first on a line starts a
    comment, and an odd run of backslashes before a line's end joins the next line (its
    leading whitespace skipped); a backslash at the file's end is dropped."""
    line: list[str] = []
    number = physical = 1
    skip_space, continued, backslash = True, False, False
    index = 0
    while index < len(text):
        char = text[index]
        index += 1
        ends_line = char == "\n" or (char == "\r" and text[index:index + 1] != "\n")
        if skip_space:
            if char in " \t\f" or (char in "\r\n" and not continued):
                physical += ends_line
                continue
            skip_space, continued = False, False
        if not line and char in "#!":  # a comment: to the line's end
            while index < len(text) and text[index] not in "\r\n":
                index += 1
            skip_space = True
            continue
        if char not in "\r\n":
            number = number if line else physical
            line.append(char)
            backslash = not backslash if char == "\\" else False
            continue
        physical += ends_line
        if not line:
            skip_space = True
        elif index >= len(text) or not backslash:
            yield number, "".join(line[:-1] if backslash else line)
            line, skip_space, backslash = [], True, False
        else:  # the backslash joins the next line
            line.pop()
            skip_space, continued, backslash = True, True, False
            if char == "\r" and text[index:index + 1] == "\n":
                index += 1
                physical += 1
    if line:
        yield number, "".join(line[:-1] if backslash else line)


def _split(line: str) -> tuple[str, str]:
    """Key and raw value: the key ends at the first unescaped '=', ':' or whitespace; then
    whitespace and at most one '=' or ':' separate it from the value."""
    end = 0
    while end < len(line) and line[end] not in "=: \t\f":
        end += 2 if line[end] == "\\" else 1
    end = min(end, len(line))
    rest = line[end:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(line[:end]), _unescape(rest)


ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
# What spark-submit's trim of a value (Java's String.trim) removes: every character to U+0020.
JAVA_TRIM = "".join(chr(code) for code in range(33))


def _unescape(text: str) -> str:
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        code = text[index + 1]
        if code == "u":
            digits = text[index + 2:index + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise ValueError(f"malformed \\uxxxx escape: {text[index:index + 6]!r}")
            out.append(chr(int(digits, 16)))
            index += 6
        else:
            out.append(ESCAPES.get(code, code))
            index += 2
    return "".join(out)

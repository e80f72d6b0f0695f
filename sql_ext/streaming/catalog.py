"""Streaming tables as objects of the catalog (spec/sql.md section 5).

A streaming table's definition (its query as written, trigger, location as given, checkpoint)
and its recorded state are properties of the table's catalog entry, under `sql_ext.stream`:

    sql_ext.stream.query.0, .1, ...  the windowed SELECT, in parts of at most 3,000 characters
    sql_ext.stream.trigger           AVAILABLE NOW | EVERY <seconds> SECONDS
    sql_ext.stream.checkpoint        the checkpoint directory
    sql_ext.stream.location          the LOCATION given, or absent (a managed table)
    sql_ext.stream.partitioned_by    PARTITIONED BY's columns (JSON), when given
    sql_ext.stream.tblproperties     TBLPROPERTIES given (JSON), when given
    sql_ext.stream.id                the stream's incarnation (Delta's txnAppId of its commits)
    sql_ext.stream.state             RUNNING | STOPPED | FAILED, as last recorded
    sql_ext.stream.error, .error_time   the last failure (recorded by the JVM when it happens)

so they outlive the process, and SHOW STREAMS of any process on the catalog lists them. The
metastore's own table parameters (not Delta's table properties) hold them: listing them is one
metastore call per database, and no Delta log is read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import SparkSession

from sql_ext import jvm
from sql_ext.sql.contract import STREAM_CHECKPOINT_PROPERTY
from sql_ext.sql.names import quote

PREFIX = "sql_ext.stream"
QUERY_PART = 3000  # metastore parameter values were VARCHAR(4000) in older schemas
AVAILABLE_NOW = "available_now"


@dataclass(frozen=True)
class Definition:
    query: str  # the windowed SELECT over FROM STREAM(...), as written
    trigger: str | float  # AVAILABLE_NOW or seconds between micro-batches
    checkpoint: str
    location: str | None  # as given; None: the catalog's managed location
    partitioned_by: tuple[str, ...] = ()
    tblproperties: tuple[tuple[str, str], ...] = ()  # in the order given

    @property
    def continuous(self) -> bool:
        return self.trigger != AVAILABLE_NOW

    def trigger_text(self) -> str:
        if not self.continuous:
            return "AVAILABLE NOW"
        return f"EVERY {repr(float(self.trigger)).removesuffix('.0')} SECONDS"

    def properties(self) -> dict[str, str]:
        query = self.query.strip().rstrip(";").strip()
        parts = [query[i:i + QUERY_PART] for i in range(0, len(query), QUERY_PART)] or [""]
        props = {f"{PREFIX}.query.{i}": part for i, part in enumerate(parts)}
        props.update({f"{PREFIX}.trigger": self.trigger_text(),
                      STREAM_CHECKPOINT_PROPERTY: self.checkpoint})
        if self.location:
            props[f"{PREFIX}.location"] = self.location
        if self.partitioned_by:
            props[f"{PREFIX}.partitioned_by"] = json.dumps(list(self.partitioned_by))
        if self.tblproperties:
            props[f"{PREFIX}.tblproperties"] = json.dumps(dict(self.tblproperties))
        return props

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> Definition:
        parts = sorted((int(k.rsplit(".", 1)[1]), v) for k, v in props.items()
                       if k.startswith(f"{PREFIX}.query."))
        trigger = props.get(f"{PREFIX}.trigger", "AVAILABLE NOW")
        return cls(query="".join(v for _, v in parts),
                   trigger=AVAILABLE_NOW if trigger == "AVAILABLE NOW"
                   else float(trigger.split()[1]),
                   checkpoint=props.get(STREAM_CHECKPOINT_PROPERTY, ""),
                   location=props.get(f"{PREFIX}.location"),
                   partitioned_by=tuple(json.loads(props.get(f"{PREFIX}.partitioned_by", "[]"))),
                   tblproperties=tuple(json.loads(
                       props.get(f"{PREFIX}.tblproperties", "{}")).items()))

    def differences(self, given: Definition) -> list[str]:
        """What `given` changes in this (stored) definition, in words; [] when nothing."""
        found = []
        if " ".join(self.query.rstrip(";").split()) != " ".join(given.query.rstrip(";").split()):
            found.append(f"the query is\n  {self.query.strip()}\nnot\n  {given.query.strip()}")
        if self.trigger != given.trigger:
            found.append(f"TRIGGER is {self.trigger_text()}, not {given.trigger_text()}")
        if self.checkpoint != given.checkpoint:
            found.append(f"CHECKPOINT is '{self.checkpoint}', not '{given.checkpoint}'")
        if (self.location or None) != (given.location or None):
            found.append(f"LOCATION is {_location_text(self.location)}, not "
                         f"{_location_text(given.location)}")
        if [c.lower() for c in self.partitioned_by] != [c.lower() for c in given.partitioned_by]:
            found.append(f"PARTITIONED BY is {_columns_text(self.partitioned_by)}, not "
                         f"{_columns_text(given.partitioned_by)}")
        if dict(self.tblproperties) != dict(given.tblproperties):
            found.append(f"TBLPROPERTIES are {_properties_text(self.tblproperties)}, not "
                         f"{_properties_text(given.tblproperties)}")
        return found

    def structural_differences(self, given: Definition) -> list[str]:
        """The differences ALTER STREAMING TABLE cannot apply in place: where the table and its
        state live, and how the table's files are laid out."""
        return [d for d in self.differences(given)
                if d.startswith(("CHECKPOINT", "LOCATION", "PARTITIONED BY"))]


def _location_text(location: str | None) -> str:
    return f"'{location}'" if location else "the catalog's (none given)"


def _columns_text(columns: tuple[str, ...]) -> str:
    return f"({', '.join(columns)})" if columns else "none"


def _properties_text(properties: tuple[tuple[str, str], ...]) -> str:
    return ("(" + ", ".join(f"'{k}' = '{v}'" for k, v in properties) + ")") if properties \
        else "none"


@dataclass
class Entry:
    """A streaming table as the catalog records it."""

    db: str
    table: str
    definition: Definition
    stream_id: str
    state: str
    error: str | None
    error_time: str | None
    window: str | None = None  # the window as last recorded (WINDOW_PROPERTY)
    owner: str = ""  # who defined it: the catalog entry's owner

    @property
    def name(self) -> str:
        return f"{quote(self.db)}.{quote(self.table)}"

    @property
    def key(self) -> str:
        return f"{self.db}.{self.table}"


def identify(spark: SparkSession, name: str) -> tuple[str, str]:
    """(database, table) of `name` as `spark` resolves it, in the catalog's spelling."""
    return jvm.catalog_identify(spark, name)


def exists(spark: SparkSession, db: str, table: str) -> bool:
    """Whether the catalog has the table (also when its files are gone)."""
    return jvm.catalog_exists(spark, db, table)


def location(spark: SparkSession, db: str, table: str) -> str:
    """Where the table keeps its files (its catalog entry's location), once per stream start."""
    return jvm.catalog_location(spark, db, table)


def read(spark: SparkSession, db: str, table: str) -> dict[str, str]:
    """The table's sql_ext.stream properties ({} for a table that is not a streaming table)."""
    return jvm.catalog_properties(spark, db, table)


def entry(db: str, table: str, props: dict[str, str], owner: str = "") -> Entry:
    return Entry(db, table, Definition.from_properties(props), props.get(f"{PREFIX}.id", ""),
                 props.get(f"{PREFIX}.state", "STOPPED"), props.get(f"{PREFIX}.error"),
                 props.get(f"{PREFIX}.error_time"), props.get(WINDOW_PROPERTY), owner)


def write(spark: SparkSession, db: str, table: str, changes: dict[str, str | None],
          owner: str | None = None) -> None:
    """Sets properties of the table's catalog entry; a None value removes one. `owner`, where
    given, becomes its owner."""
    jvm.catalog_update(spark, db, table, changes, owner)


def define(spark: SparkSession, db: str, table: str, definition: Definition,
           stream_id: str, running_window: str | None = None) -> dict[str, str]:
    """Records `definition` as the table's, stopped, or RUNNING its window `running_window`
    (JSON) when its stream starts now, and the signed-in user who sent it (if any) as its
    owner; the sql_ext.stream properties it then has (no second read of the metastore)."""
    old = read(spark, db, table)
    changes: dict[str, str | None] = {k: None for k in old if k.startswith(f"{PREFIX}.query.")}
    changes.update(defined(definition, stream_id, running_window))
    write(spark, db, table, changes, jvm.session_user(spark))
    return {k: v for k, v in {**old, **changes}.items() if v is not None}


def defined(definition: Definition, stream_id: str,
            running_window: str | None = None) -> dict[str, str]:
    """The properties `define` records."""
    props = {**definition.properties(), f"{PREFIX}.id": stream_id,
             f"{PREFIX}.state": "STOPPED" if running_window is None else "RUNNING"}
    if running_window is not None:
        props[WINDOW_PROPERTY] = running_window
    return props


# The window of a streaming table as window_state() reads it (the JVM's WindowState).
WINDOW_PROPERTY = f"{PREFIX}.window"


def record_start(spark: SparkSession, entry: Entry, window: str, running: bool = True) -> None:
    """Records a starting stream: RUNNING (unless not `running`: a REFRESH's one pass of a
    TRIGGER EVERY table keeps the state its stream had), with its planned window (JSON); one
    metastore write, none when both are recorded already."""
    changes = {}
    if running and entry.state != "RUNNING":
        changes[f"{PREFIX}.state"] = "RUNNING"
    if entry.window != window:
        changes[WINDOW_PROPERTY] = window
    if changes:
        write(spark, entry.db, entry.table, changes)
        entry.state = "RUNNING" if running else entry.state
        entry.window = window


def record_state(spark: SparkSession, entry: Entry, state: str) -> None:
    """Records `state` unless it is already the recorded one (a metastore write saved)."""
    if entry.state != state:
        write(spark, entry.db, entry.table, {f"{PREFIX}.state": state})
        entry.state = state


def record_failure(spark: SparkSession, entry: Entry, message: str, when: str) -> None:
    write(spark, entry.db, entry.table, {f"{PREFIX}.state": "FAILED",
                                         f"{PREFIX}.error": message[:QUERY_PART],
                                         f"{PREFIX}.error_time": when})


def entries(spark: SparkSession) -> list[Entry]:
    """Every streaming table of the catalog (one metastore call per database)."""
    return [entry(db, table, props, owner)
            for db, table, owner, props in jvm.catalog_list(spark)]


def last_commit(spark: SparkSession, checkpoint: str) -> tuple[int, int] | None:
    """(batch id, commit time in ms) of the stream's last committed micro-batch, or None."""
    return jvm.last_commit(spark, checkpoint)

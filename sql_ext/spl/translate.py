"""SPL applications -> sql-ext statements.

The graph of every main composite (one no other composite invokes) is flattened: composite
operators are expanded with their parameters bound and their streams renamed after the
invocation. Then each invocation is one of:

- an `Aggregate` with a window: `CREATE STREAMING TABLE <output> AS SELECT ... FROM
  STREAM(<source>) WINDOW ...`, reading the source table under the Filters and Functors on the
  way (their conditions become its WHERE, their attributes its expressions: a permanent view
  cannot be read as a stream in Spark);
- a `Filter` or a stateless `Functor`: `CREATE VIEW <output> AS SELECT ... FROM <input>`;
- anything else: not translated, said with its place and why. A stream such an operator
  produces that a translated one reads becomes a source table (`CREATE TABLE ... USING DELTA`,
  or a Kafka topic table for a KafkaConsumer) with the stream's attributes as Spark types.

Statements come in dependency order. Nothing is dropped silently: every invocation is either
translated or listed in `untranslated`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from lark import Token, Tree

from sql_ext.spl import aggregate
from sql_ext.spl.expressions import Scope, Untranslatable, constant, node_place
from sql_ext.spl.expressions import translate as sql_of
from sql_ext.spl.source import (Composite, Invocation, Place, SplSyntaxError, StreamDecl, Unit,
                                parse)
from sql_ext.spl.types import SplType, UnsupportedType, attributes, quote, spark_type, type_of

TRANSLATED = ("Aggregate", "Filter", "Functor")


@dataclass
class Statement:
    kind: str  # source | view | streaming_table
    stream: str
    table: str
    sql: str
    query: str | None
    file: str
    line: int


@dataclass
class Untranslated:
    stream: str
    operator: str
    file: str
    line: int
    column: int
    reason: str


@dataclass
class Translation:
    statements: list[Statement] = field(default_factory=list)
    untranslated: list[Untranslated] = field(default_factory=list)

    def to_json(self) -> dict:
        statements = []
        for s in self.statements:
            entry = {"kind": s.kind, "stream": s.stream, "table": s.table, "sql": s.sql}
            if s.query is not None:
                entry["query"] = s.query
            entry.update(file=s.file, line=s.line)
            statements.append(entry)
        return {"statements": statements, "untranslated": [asdict(u) for u in self.untranslated]}

    def script(self, file: str | None = None) -> str:
        """The statements of `file` (all when None) as a SQL script, each after a comment
        naming its SPL source line; the untranslated invocations as comments at the end."""
        lines = []
        for s in self.statements:
            if file is None or s.file == file:
                lines.append(f"-- {s.file}:{s.line}: {s.kind.replace('_', ' ')} for SPL stream "
                             f"{s.stream}\n{s.sql};\n")
        skipped = [u for u in self.untranslated if file is None or u.file == file]
        if skipped:
            lines.append("-- Not translated:")
            lines += [f"--   {u.file}:{u.line}:{u.column}: {u.operator} {u.stream}: {u.reason}"
                      for u in skipped]
        return "\n".join(lines) + ("\n" if lines else "")

    def __str__(self) -> str:
        return json.dumps(self.to_json(), indent=2)


@dataclass
class Node:
    """One invocation of the flattened graph, its streams renamed, its parameters bound."""

    invocation: Invocation
    outputs: list[str]  # flattened stream names, one per output port
    inputs: list[list[str]]  # per input port, flattened stream names
    params: dict[str, Tree]
    types: dict[str, Tree]
    file: str


def _substitute(tree, params: dict[str, Tree]):
    """`tree` with each composite parameter replaced by its bound value."""
    if isinstance(tree, Tree):
        if tree.data == "param_ref" and str(tree.children[0]) in params:
            return params[str(tree.children[0])]
        return Tree(tree.data, [_substitute(c, params) for c in tree.children], tree.meta)
    return tree


class _Graph:
    def __init__(self, units: list[Unit], submission: dict[str, str]):
        self.submission = submission
        self.composites: dict[str, tuple[Composite, Unit]] = {}
        unit_types: dict[str, Tree] = {}
        composite_types: dict[str, Tree] = {}  # Composite.Type, found by its last name
        for unit in units:
            unit_types.update(unit.types)
            for composite in unit.composites.values():
                self.composites[composite.name] = (composite, unit)
                composite_types.update(composite.types)
        self.types = {**composite_types, **unit_types}
        self.nodes: list[Node] = []
        self.producer: dict[str, Node] = {}
        self.schemas: dict[str, list[tuple[str, SplType]]] = {}
        self.decls: dict[str, tuple[StreamDecl, Node]] = {}

    def mains(self) -> list[tuple[Composite, Unit]]:
        invoked = {i.operator for c, _ in self.composites.values() for i in c.invocations}
        return [(c, u) for name, (c, u) in self.composites.items() if name not in invoked]

    def expand(self, composite: Composite, unit: Unit, params: dict[str, Tree],
               ports: dict[str, str], prefix: str, depth: int = 0) -> None:
        if depth > 20:
            raise RecursionError(f"composite {composite.name} invokes itself")
        bound = dict(params)
        for name, param in composite.params.items():
            if name not in bound and param.default is not None:
                bound[name] = _substitute(param.default, bound)
        types = {**self.types, **composite.types}

        def rename(stream: str) -> str:
            return ports.get(stream, f"{prefix}{stream}")

        for invocation in composite.invocations:
            outputs = [rename(d.name) for d in invocation.outputs]
            inputs = [[rename(s) if not s.startswith("$") else s for s in port.streams]
                      for port in invocation.inputs]
            inner = self.composites.get(invocation.operator)
            if inner is not None:
                inner_composite, inner_unit = inner
                inner_params = {}
                for name, values in invocation.params.items():
                    inner_params["$" + name] = _substitute(values[0], bound) if values else None
                inner_ports = dict(zip(inner_composite.inputs, [i[0] for i in inputs if i]))
                inner_ports.update(zip(inner_composite.outputs, outputs))
                label = invocation.alias or (outputs[0] if outputs else inner_composite.name)
                self.expand(inner_composite, inner_unit, inner_params, inner_ports,
                            f"{label}_", depth + 1)
                continue
            node = Node(invocation, outputs, inputs, bound, types, unit.file)
            self.nodes.append(node)
            for stream, decl in zip(outputs, invocation.outputs):
                self.producer[stream] = node
                self.decls[stream] = (decl, node)

    def resolve_schemas(self) -> dict[str, str]:
        """Each stream's attributes; streams whose type cannot be resolved -> why."""
        failures: dict[str, str] = {}
        pending = dict(self.decls)
        while pending:
            progress = False
            for stream, (decl, node) in list(pending.items()):
                try:
                    self.schemas[stream] = attributes(decl.type_items,
                                                      lambda n, node=node: self._named(n, node))
                except KeyError:
                    continue
                except UnsupportedType as error:
                    failures[stream] = str(error)
                del pending[stream]
                progress = True
            if not progress:
                for stream, (decl, _) in pending.items():
                    failures[stream] = "its type names a type or stream the translator " \
                                       "cannot find"
                break
        return failures

    def _named(self, name: str, node: Node) -> SplType:
        if name in node.types:
            return type_of(node.types[name], lambda n: self._named(n, node))
        local = next((s for s in self.schemas if s == name or s.endswith("_" + name)), None)
        if local is not None:
            return SplType("tuple", tuple(self.schemas[local]))
        if name in self.decls:
            raise KeyError(name)  # a stream's type not resolved yet
        return None


def _assignments(invocation: Invocation) -> list:
    """The output clause of the first output port, named by its stream or the alias."""
    name = invocation.outputs[0].name
    return invocation.assignments.get(name) or invocation.assignments.get(
        invocation.alias or "", [])


def _line(node: Node, stream: str) -> int:
    """The line of the declaration of `stream` in `node` (not of its annotations)."""
    for flat, decl in zip(node.outputs, node.invocation.outputs):
        if flat == stream:
            return decl.place.line
    return node.invocation.place.line


def _event_time(node: Node, scope: Scope) -> tuple[str, float] | None:
    annotation = node.invocation.annotations.get("eventTime")
    if annotation is None:
        return None
    attribute = annotation.get("eventTimeAttribute")
    if attribute is None:
        return None
    sql, kind = sql_of(attribute, scope)
    lag = float(constant(annotation["lag"], scope)) if "lag" in annotation else 0.0
    if kind is not None and kind.kind in ("int64", "uint64"):
        resolution = str(annotation.get("resolution", Tree("name", ["Milliseconds"])).children[0])
        function = {"Milliseconds": "TIMESTAMP_MILLIS", "Microseconds": "TIMESTAMP_MICROS",
                    "Nanoseconds": None}.get(resolution)
        if function is None:
            raise Untranslatable(f"event time in {resolution}: Spark timestamps hold microseconds",
                                 attribute)
        sql = f"{function}({sql})"
    return sql, lag


class _Translator:
    def __init__(self, graph: _Graph, result: Translation, failures: dict[str, str]):
        self.graph = graph
        self.result = result
        self.failures = failures
        self.inputs: dict[str, aggregate.Input] = {}  # stream -> how it reads from a table
        self.done: set[int] = set()  # the nodes tried, by id
        self.panes: set[str] = set()  # streaming tables of TIME_INTERVAL windows (upserted)

    def table(self, stream: str) -> str:
        return quote(stream)

    def input_of(self, node: Node) -> str:
        """The stream `node` reads; for several streams on its port, the source table of their
        union (declared once)."""
        streams = node.inputs[0]
        if len(streams) == 1:
            return streams[0]
        name = "_".join(streams)
        if name in self.inputs:
            return name
        for stream in streams:
            producer = self.graph.producer.get(stream)
            if producer is not None and producer.invocation.operator in TRANSLATED:
                raise Untranslatable(f"several input streams, {stream} among them made by a "
                                     f"translated {producer.invocation.operator}: Spark streams "
                                     "one table, so their union must be a source table")
        schemas = [self.graph.schemas.get(s) for s in streams]
        if any(schema is None for schema in schemas) or any(
                schema != schemas[0] for schema in schemas):
            raise Untranslatable(f"several input streams ({', '.join(streams)}) whose types "
                                 "differ or are unknown")
        self.graph.schemas[name] = schemas[0]
        producer = self.graph.producer.get(streams[0])
        self.source_for(name, producer, ", ".join(streams))
        return name

    def source_for(self, stream: str, union_producer: Node | None = None,
                   union_of: str | None = None) -> aggregate.Input:
        """How `stream` is read: a translated Filter/Functor chain, an Aggregate's streaming
        table, or a source table."""
        if stream in self.inputs:
            return self.inputs[stream]
        producer = self.graph.producer.get(stream, union_producer)
        if union_of is None and producer is not None \
                and producer.invocation.operator in TRANSLATED \
                and self.translate_node(producer):
            if stream in self.panes:
                raise Untranslatable(f"{stream} is a table of event-time panes, whose rows a "
                                     "late tuple replaces: Delta cannot stream it to another "
                                     "window")
            return self.inputs[stream]
        if stream not in self.graph.schemas:
            raise Untranslatable(f"the type of input stream {stream} is unknown: "
                                 f"{self.failures.get(stream, 'no operator produces it')}")
        columns = self.graph.schemas[stream]
        scope = Scope({n: t for n, t in columns}, {stream},
                      submission=self.graph.submission)
        event_time = None
        if producer is not None:
            event_time = _event_time(producer, Scope(dict(columns), {stream}, producer.params,
                                                     self.graph.submission))
        source = aggregate.Input(self.table(stream), [], scope, event_time)
        self.inputs[stream] = source
        scope.columns.update(self.declare_source(stream, producer, union_of))
        return source

    def declare_source(self, stream: str, producer: Node | None, union_of: str | None = None
                       ) -> dict[str, str]:
        """Declares `stream`'s source table (for `union_of`, the streams whose producers all
        append to it); the SQL of attributes that are not its columns of the same name (a
        Kafka message's key is `kafka_key`)."""
        columns = self.graph.schemas[stream]
        place = producer.invocation.place if producer else Place("", 0, 0)
        try:
            column_sql = ",\n  ".join(
                f"{quote(n)} {spark_type(t)}{'' if t.optional else ' NOT NULL'}"
                for n, t in columns)
        except UnsupportedType as error:
            raise Untranslatable(f"source stream {stream}: {error}") from None
        if union_of is None and producer is not None \
                and producer.invocation.operator == "KafkaConsumer":
            params = producer.invocation.params
            scope = Scope({}, submission=self.graph.submission)
            topic = constant(params["topic"][0], scope) if "topic" in params else stream
            servers = self.graph.submission.get("bootstrap.servers", "localhost:9092")
            for value in params.get("kafkaProperty", []):
                text = str(constant(value, scope))
                if text.startswith("bootstrap.servers="):
                    servers = text.partition("=")[2]
            key = "key"
            if "outputKeyAttributeName" in params:
                key = str(constant(params["outputKeyAttributeName"][0], scope))
            column_sql = ",\n  ".join(f"{quote(n)} {spark_type(t)}" for n, t in columns
                                      if n != key)
            renamed = {key: "kafka_key"} if key in dict(columns) else {}
            sql = (f"CREATE TABLE IF NOT EXISTS {self.table(stream)} (\n  {column_sql}\n) USING "
                   f"kafka\nOPTIONS ('kafka.bootstrap.servers' = '{servers}', 'subscribe' = "
                   f"'{topic}', 'format' = 'json')")
        else:
            sql = (f"CREATE TABLE IF NOT EXISTS {self.table(stream)} (\n  {column_sql}\n) "
                   "USING DELTA")
            renamed = {}
        self.result.statements.append(Statement(
            "source", union_of or stream, self.table(stream), sql, None, place.file,
            _line(producer, stream) if producer else 0))
        return renamed

    def translate_node(self, node: Node) -> bool:
        """Translates `node` (once); False when it is not translated (reported)."""
        key = id(node)
        if key in self.done:
            return all(o in self.inputs for o in node.outputs)
        self.done.add(key)
        invocation = node.invocation
        try:
            if invocation.operator not in TRANSLATED:
                sources = [o for o in node.outputs if o in self.inputs]
                becomes = f"; its stream {', '.join(sources)} is a source table" if sources \
                    else ""
                raise Untranslatable(f"{invocation.operator} is not translated (only Aggregate, "
                                     f"Filter and Functor are){becomes}")
            handlers = [h for h in invocation.logic if h != "state"]
            if handlers:
                raise Untranslatable(f"a logic clause runs SPL code per tuple ({handlers[0]})")
            # State alone does nothing by itself; an output that uses it is refused by name.
            if len(node.inputs) != 1:
                raise Untranslatable(f"{len(node.inputs)} input ports: a window reads one")
            for stream in node.outputs:
                if stream in self.failures:
                    raise Untranslatable(f"output stream {stream}: {self.failures[stream]}")
            if invocation.operator == "Aggregate":
                self.translate_aggregate(node)
            else:
                self.translate_view(node)
            return True
        except Untranslatable as error:
            line, column = node_place(error.node) if error.node is not None else (0, 0)
            if not line:
                line, column = invocation.place.line, invocation.place.column
            self.result.untranslated.append(Untranslated(
                ", ".join(node.outputs) or (invocation.alias or ""), invocation.operator,
                node.file, line, column, error.reason))
            return False

    def _port_names(self, node: Node) -> set[str]:
        port = node.invocation.inputs[0]
        return set(port.streams) | ({port.alias} if port.alias else set()) | set(node.inputs[0])

    def translate_view(self, node: Node) -> None:
        invocation = node.invocation
        if len(node.outputs) != 1:
            raise Untranslatable(f"{invocation.operator} with {len(node.outputs)} output ports "
                                 "(a view has one)")
        read = self.input_of(node)
        upstream = self.source_for(read)
        stream = node.outputs[0]
        out = self.graph.schemas[stream]
        names = self._port_names(node)
        # The view reads its input by name; the chain inlines it for streaming tables.
        local = Scope(dict(self.graph.schemas.get(read, [])), names, node.params,
                      self.graph.submission)
        inlined = Scope(upstream.scope.attributes, names, node.params, self.graph.submission,
                        columns=upstream.scope.columns)
        condition = invocation.params.get("filter")
        assigned = dict(_assignments(invocation))
        projections, columns, types = [], {}, {}
        for name, kind in out:
            types[name] = kind
            if name not in assigned:  # SPL assigns the input attribute of the same name
                if local.attributes.get(name) != kind:
                    raise Untranslatable(f"output attribute {name} is not assigned and the "
                                         f"input has no {kind} attribute of that name")
                projections.append(quote(name))
                columns[name] = inlined.column(name)
                continue
            sql, _ = sql_of(assigned[name], local)
            projections.append(f"CAST({sql} AS {spark_type(kind)}) AS {quote(name)}")
            columns[name] = f"CAST({sql_of(assigned[name], inlined)[0]} AS {spark_type(kind)})"
        where = list(upstream.where)
        view_where = ""
        if condition:
            where.append(sql_of(condition[0], inlined)[0])
            view_where = f"\nWHERE {sql_of(condition[0], local)[0]}"
        query = ("SELECT " + ",\n       ".join(projections)
                 + f"\nFROM {self.table(read)}{view_where}")
        self.result.statements.append(Statement(
            "view", stream, self.table(stream),
            f"CREATE OR REPLACE VIEW {self.table(stream)} AS\n{query}", query,
            node.file, _line(node, stream)))
        self.inputs[stream] = aggregate.Input(
            upstream.table, where,
            Scope(types, {stream}, submission=self.graph.submission, columns=columns),
            upstream.event_time)

    def translate_aggregate(self, node: Node) -> None:
        invocation = node.invocation
        if not invocation.windows:
            raise Untranslatable("an Aggregate without a window clause")
        source = self.source_for(self.input_of(node))
        names = self._port_names(node)
        window_items = next(iter(invocation.windows.values()))
        panes = aggregate.window_kind(window_items) == "timeInterval"
        scope = Scope(source.scope.attributes, names, node.params, self.graph.submission,
                      pane_functions=panes, columns=source.scope.columns)
        bound = aggregate.Input(source.table, source.where, scope, source.event_time)
        window = aggregate.window_clause(window_items, invocation.params, bound)
        stream = node.outputs[0]
        assignments = _assignments(invocation)
        text = aggregate.select(assignments, self.graph.schemas[stream], invocation.params,
                                bound, window)
        query = text.replace("{source}", source.table)
        sql = (f"CREATE STREAMING TABLE {self.table(stream)} AS\n"
               + text.replace("{source}", f"STREAM({source.table})"))
        self.result.statements.append(Statement("streaming_table", stream, self.table(stream),
                                                sql, query, node.file, _line(node, stream)))
        # A cascade reads this streaming table (a Delta table that only grows, unless its
        # panes are upserted).
        self.inputs[stream] = aggregate.Input(
            self.table(stream), [],
            Scope(dict(self.graph.schemas[stream]), {stream}, submission=self.graph.submission),
            None)
        if panes:
            self.panes.add(stream)


def _literal(value: str) -> Tree:
    """A --param value as an SPL literal: a number if it reads as one, else a string."""
    try:
        float(value)
        return Tree("number", [Token("NUMBER", value)])
    except ValueError:
        return Tree("string", [Token("STRING", json.dumps(value))])


def translate_sources(sources: list[tuple[str, str]], params: dict[str, str] | None = None
                      ) -> Translation:
    """Translates SPL files given as (file name, text)."""
    result = Translation()
    units = []
    for file, text in sources:
        try:
            units.append(parse(text, file))
        except SplSyntaxError as error:
            result.untranslated.append(Untranslated("", "", file, error.place.line,
                                                    error.place.column, error.reason))
    params = dict(params or {})
    graph = _Graph(units, params)
    bound = {f"${k}": _literal(v) for k, v in params.items()}
    for composite, unit in graph.mains():
        taken = set(graph.producer)
        ours = {d.name for i in composite.invocations for d in i.outputs}
        # Main composites' streams keep their names, unless two of them use one.
        graph.expand(composite, unit, bound, {}, f"{composite.name}_" if ours & taken else "")
    failures = graph.resolve_schemas()
    translator = _Translator(graph, result, failures)
    # Aggregates first pull in their chains and sources; then the rest, so every invocation
    # is either translated or reported.
    order = {"Aggregate": 0, "Filter": 1, "Functor": 1}
    for node in sorted(graph.nodes, key=lambda n: order.get(n.invocation.operator, 2)):
        translator.translate_node(node)
    result.untranslated.sort(key=lambda u: (u.file, u.line, u.column))
    return result


def translate(text: str, file: str = "<spl>", params: dict[str, str] | None = None
              ) -> Translation:
    """Translates one SPL source text (see the module docstring)."""
    return translate_sources([(file, text)], params)

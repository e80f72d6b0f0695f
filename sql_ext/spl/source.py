"""SPL source read into a small model: composites, their parameters, types and graphs, each
operator invocation with its streams, window, param and output clauses, and where each was
written. The grammar is spl.lark (Lark, LALR); expressions stay Lark trees, which
expressions.py translates.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from sql_ext.spl.types import parts as _parts



@dataclass(frozen=True)
class Place:
    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class SplSyntaxError(ValueError):
    """SPL text the grammar cannot read, with its place."""

    def __init__(self, message: str, place: Place):
        super().__init__(f"{place}: {message}")
        self.place = place
        self.reason = message


@dataclass
class StreamDecl:
    name: str
    type_items: list  # Lark trees: attributes and type names, resolved later
    place: Place
    alias: str | None = None  # stream<T> Name as Alias


@dataclass
class InputPort:
    streams: list[str]
    alias: str | None


@dataclass
class Invocation:
    operator: str
    outputs: list[StreamDecl]
    alias: str | None
    inputs: list[InputPort]
    windows: dict[str, list[Tree]]  # port (alias or stream) -> the window's items
    params: dict[str, list[Tree]]
    assignments: dict[str, list[tuple[str, Tree]]]  # output stream -> (attribute, value)
    logic: list[str]  # the logic clause's handlers: state, onTuple, onPunct, onProcess
    annotations: dict[str, dict[str, Tree]]
    place: Place


@dataclass
class CompositeParam:
    name: str  # with its $
    kind: str  # expression, operator, type, attribute, function
    type: Tree | None
    default: Tree | None
    place: Place


@dataclass
class Composite:
    name: str
    inputs: list[str]
    outputs: list[str]
    params: dict[str, CompositeParam]
    types: dict[str, Tree]
    invocations: list[Invocation]
    place: Place


@dataclass
class Unit:
    """One SPL file."""

    file: str
    namespace: str | None
    composites: dict[str, Composite]
    types: dict[str, Tree]


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("sql_ext.spl").joinpath("spl.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False)


def place_of(node, file: str) -> Place:
    if isinstance(node, Token):
        return Place(file, node.line, node.column)
    meta = node.meta
    return Place(file, getattr(meta, "line", 0), getattr(meta, "column", 0))


def parse(text: str, file: str = "<spl>") -> Unit:
    if "<%" in text:
        line = text[:text.index("<%")].count("\n") + 1
        column = text.index("<%") - text.rfind("\n", 0, text.index("<%"))
        raise SplSyntaxError("mixed-mode SPL (Perl code between <% and %>) must be run through "
                             "the SPL compiler's preprocessor first (splmm)",
                             Place(file, line, column))
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as error:
        token = getattr(error, "token", None)
        near = f" at {str(token)!r}" if token is not None and str(token) else ""
        raise SplSyntaxError(f"not SPL the translator can read{near}",
                             Place(file, error.line, error.column)) from None
    return _Reader(file).unit(tree)


def _names(tree: Tree) -> list[str]:
    return [str(t) for t in tree.children if isinstance(t, Token) and t.type == "NAME"]


class _Reader:
    def __init__(self, file: str):
        self.file = file

    def unit(self, tree: Tree) -> Unit:
        namespace, composites, types = None, {}, {}
        for child in tree.children:
            if child.data == "namespace":
                namespace = ".".join(_names(child.children[0]))
            elif child.data == "composite":
                composite = self.composite(child)
                composites[composite.name] = composite
            elif child.data == "toplevel_type":
                name, body = self.type_def(child.children[0])
                types[name] = body
        return Unit(self.file, namespace, composites, types)

    def type_def(self, tree: Tree) -> tuple[str, Tree]:
        name = [t for t in tree.children if isinstance(t, Token) and t.type == "NAME"][0]
        return str(name), tree.children[-1]

    def composite(self, tree: Tree) -> Composite:
        name = str(next(t for t in tree.children if isinstance(t, Token) and t.type == "NAME"))
        inputs, outputs, params, types, invocations = [], [], {}, {}, []
        for child in tree.children:
            if not isinstance(child, Tree):
                continue
            if child.data == "composite_ports":
                for group in child.children:
                    direction = str(group.children[0])
                    ports = [_names(p)[-1] for p in group.children[1:]]
                    (inputs if direction == "input" else outputs).extend(ports)
            elif child.data == "param_section":
                for param in child.children:
                    parsed = self.composite_param(param)
                    params[parsed.name] = parsed
            elif child.data == "type_section":
                for type_def in child.children:
                    type_name, body = self.type_def(type_def)
                    types[type_name] = body
            elif child.data == "graph_section":
                invocations.extend(self.invocation(i) for i in child.children)
        return Composite(name, inputs, outputs, params, types, invocations,
                         place_of(tree, self.file))

    def composite_param(self, tree: Tree) -> CompositeParam:
        kind_tree, name = tree.children[0], tree.children[1]
        kind_tokens = [t for t in kind_tree.children if isinstance(t, Token)]
        kind = str(kind_tokens[0]) if kind_tokens else "type"
        type_trees = [t for t in kind_tree.children if isinstance(t, Tree)]
        default = tree.children[2].children[0] if len(tree.children) > 2 else None
        return CompositeParam(str(name), kind, type_trees[0] if type_trees else None, default,
                              place_of(name, self.file))

    def stream_decl(self, tree: Tree) -> StreamDecl:
        stream_type, name, *alias = _parts(tree)
        return StreamDecl(str(name), list(stream_type.children), place_of(name, self.file),
                          str(alias[0]) if alias else None)

    def invocation(self, tree: Tree) -> Invocation:
        annotations = {}
        outputs, alias, operator, inputs = [], None, "", []
        windows, params, assignments, logic = {}, {}, {}, []
        for child in tree.children:
            if isinstance(child, Token):
                continue
            if child.data == "annotation":
                args = {str(a.children[0]): a.children[1] for a in child.children[1:]}
                annotations[str(child.children[0])] = args
            elif child.data == "outputs":
                for part in child.children:
                    if isinstance(part, Tree):
                        outputs.append(self.stream_decl(part))
                    else:
                        alias = str(part)
            elif child.data == "op_name":
                operator = str(child.children[0]).rpartition("::")[2]
            elif child.data == "inputs":
                for port in child.children:
                    streams = [str(s.children[0]) for s in port.children if isinstance(s, Tree)]
                    names = [t for t in port.children if isinstance(t, Token)]
                    inputs.append(InputPort(streams, str(names[0]) if names else None))
            elif child.data == "window_clause":
                for item in child.children:
                    port = str(item.children[0])
                    windows[port] = list(item.children[1:])
            elif child.data == "param_clause":
                for item in child.children:
                    params[str(item.children[0])] = list(item.children[1:])
            elif child.data == "output_clause":
                for item in child.children:
                    assignments[str(item.children[0])] = [
                        (str(a.children[0]), a.children[1]) for a in item.children[1:]]
            elif child.data == "logic_clause":
                logic += [str(item.children[0]) for item in child.children]
        # `stream<T> Name as Alias = ...`: the alias names the invocation (and its output
        # clause may use it); the stream keeps its name.
        if alias is None and len(outputs) == 1:
            alias = outputs[0].alias
        return Invocation(operator, outputs, alias, inputs, windows, params, assignments,
                          logic, annotations, place_of(tree, self.file))

"""SPL types and their Spark SQL counterparts.

An SPL type is kept as a `SplType`: a primitive name (`int32`, `rstring`, ...), a collection
(`list`, `set`, `map`, `optional`) with its element types, or a tuple with its attributes. Named
types (`type T = ...;`, a stream's type used as `stream<T>`) are resolved when the tuple types
of streams are built (translate.py), so everything here is structural.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lark import Token, Tree

# SPL primitive -> Spark type. Unsigned types take the next wider signed type, so every value
# fits; uint64 needs DECIMAL(20,0). SPL's decimal types are IEEE 754 decimal floating point;
# Spark's DECIMAL is fixed point: the digits of each format, half of them after the point.
PRIMITIVES = {
    "boolean": "BOOLEAN",
    "int8": "TINYINT", "int16": "SMALLINT", "int32": "INT", "int64": "BIGINT",
    "uint8": "SMALLINT", "uint16": "INT", "uint32": "BIGINT", "uint64": "DECIMAL(20,0)",
    "float32": "FLOAT", "float64": "DOUBLE",
    "decimal32": "DECIMAL(14,7)", "decimal64": "DECIMAL(32,16)", "decimal128": "DECIMAL(38,18)",
    "rstring": "STRING", "ustring": "STRING", "xml": "STRING",
    "timestamp": "TIMESTAMP", "blob": "BINARY",
}
INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float32", "float64")
DECIMALS = ("decimal32", "decimal64", "decimal128")
NUMERIC = INTEGERS + FLOATS + DECIMALS
STRINGS = ("rstring", "ustring")


class UnsupportedType(ValueError):
    """A type with no Spark counterpart (complex numbers, an unknown name)."""


@dataclass(frozen=True)
class SplType:
    kind: str  # a primitive name, "list", "set", "map", "optional", "tuple" or "enum"
    args: tuple = ()  # element types; for "tuple": ((name, SplType), ...)
    bound: str | None = field(default=None, compare=False)  # rstring[8], list<T>[4]

    def __str__(self) -> str:
        if self.kind == "tuple":
            return "tuple<" + ", ".join(f"{t} {n}" for n, t in self.args) + ">"
        if self.kind == "enum":
            return "enum{" + ", ".join(self.args) + "}"
        if self.args:
            return f"{self.kind}<{', '.join(str(a) for a in self.args)}>"
        return self.kind

    @property
    def integral(self) -> bool:
        return self.kind in INTEGERS

    @property
    def numeric(self) -> bool:
        return self.kind in NUMERIC

    @property
    def string(self) -> bool:
        return self.kind in STRINGS

    @property
    def optional(self) -> bool:
        return self.kind == "optional"

    @property
    def value(self) -> SplType:
        """The type inside `optional<T>`; the type itself otherwise."""
        return self.args[0] if self.optional else self

    def attribute(self, name: str) -> SplType | None:
        if self.kind != "tuple":
            return None
        return dict(self.args).get(name)


def primitive(name: str) -> SplType:
    return SplType(name)


def spark_type(t: SplType) -> str:
    """The Spark SQL type of an SPL type (optional<T> is T: Spark's columns are nullable)."""
    if t.kind in PRIMITIVES:
        return PRIMITIVES[t.kind]
    if t.kind in ("list", "set"):
        return f"ARRAY<{spark_type(t.args[0])}>"
    if t.kind == "map":
        return f"MAP<{spark_type(t.args[0])}, {spark_type(t.args[1])}>"
    if t.kind == "optional":
        return spark_type(t.args[0])
    if t.kind == "tuple":
        return "STRUCT<" + ", ".join(f"{quote(n)}: {spark_type(a)}" for n, a in t.args) + ">"
    if t.kind == "enum":
        return "STRING"
    raise UnsupportedType(f"SPL type {t} has no Spark SQL counterpart")


def wider(a: SplType, b: SplType) -> SplType:
    """The type of `a op b` for numbers as SPL types them: both sides must agree in SPL, so
    this only picks a side when one is a literal's default type."""
    return a if a == b else (b if a.kind in ("int32", "float64") else a)


_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
# Words Spark's parser reads as keywords in some position: quoted as names.
_KEYWORDS = {
    "all", "and", "any", "array", "as", "asc", "between", "both", "by", "case", "cast",
    "check", "collate", "column", "constraint", "create", "cross", "current", "current_date",
    "current_time", "current_timestamp", "current_user", "date", "default", "delete", "desc",
    "distinct", "drop", "else", "end", "escape", "except", "exists", "false", "fetch", "filter",
    "for", "foreign", "from", "full", "function", "grant", "group", "having", "in", "inner",
    "insert", "intersect", "interval", "into", "is", "join", "lateral", "leading", "left",
    "like", "limit", "map", "minus", "natural", "not", "null", "of", "offset", "on", "only",
    "or", "order", "outer", "over", "partition", "percent", "position", "primary", "range",
    "references", "right", "rollup", "row", "rows", "select", "semi", "session_user", "set",
    "some", "start", "stream", "struct", "table", "tablesample", "then", "time", "timestamp",
    "to", "trailing", "true", "union", "unique", "unknown", "update", "user", "using", "values",
    "when", "where", "window", "with", "emit", "trigger", "watermark", "late", "tumbling",
    "sliding", "time_interval", "year", "month", "day", "hour", "minute", "second",
}


def quote(name: str) -> str:
    """`name` as a Spark SQL identifier: backquoted when it is a keyword or not a plain word."""
    if name and set(name) <= _SAFE and not name[0].isdigit() and name.lower() not in _KEYWORDS:
        return name
    return "`" + name.replace("`", "``") + "`"


def parts(tree: Tree) -> list:
    """A node's children without the angle brackets of `stream<...>` and `list<...>`."""
    return [c for c in tree.children if not (isinstance(c, Token) and c.type in ("LT", "GT"))]


def type_of(tree: Tree, named) -> SplType:
    """The SplType of a type tree; `named(name)` resolves a type name (or raises KeyError)."""
    if tree.data == "primitive_type":
        bound = tree.children[1] if len(tree.children) > 1 else None
        return SplType(str(tree.children[0]), bound=str(bound) if bound is not None else None)
    if tree.data == "collection_type":
        kind = str(tree.children[0])
        args = tuple(type_of(t, named) for t in parts(tree)[1:]
                     if isinstance(t, Tree) and t.data != "bound")
        return SplType(kind, args)
    if tree.data == "tuple_type":
        return SplType("tuple", tuple(attributes(parts(tree)[0].children, named)))
    if tree.data == "enum_type":
        return SplType("enum", tuple(str(t) for t in tree.children))
    if tree.data == "named_type":
        name = str(tree.children[-1])  # Composite.Type names the composite's type
        resolved = named(name.rpartition("::")[2])
        if resolved is None:
            raise UnsupportedType(f"unknown type {name}")
        return resolved
    if tree.data == "type_body":
        return type_of(tree.children[0], named)
    if tree.data == "attr_list":
        return SplType("tuple", tuple(attributes(tree.children, named)))
    raise UnsupportedType(f"unknown type form {tree.data}")


def attributes(items, named) -> list[tuple[str, SplType]]:
    """The attributes of a stream or tuple type: `T a` adds one, a tuple type's name adds all of
    its attributes (SPL's type extension: stream<Base, tuple<int32 extra>>)."""
    out: list[tuple[str, SplType]] = []
    for item in items:
        if item.data == "attr":
            out.append((str(item.children[1]), type_of(item.children[0], named)))
        else:
            t = type_of(item, named)
            if t.kind != "tuple":
                raise UnsupportedType(f"{t} is not a tuple type")
            out.extend(t.args)
    seen: dict[str, SplType] = {}
    for name, t in out:
        seen.setdefault(name, t)
    return list(seen.items())

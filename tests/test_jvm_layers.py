"""The JVM extension's layers, as tests/test_layers.py checks the Python package's: each Scala
package states in its documentation (the scaladoc of its package object) which packages of the
extension it may import, on a line `May import: ...`, and nothing else reaches them. The rules
form no cycle, and every dependency keeps them.

Dependencies come from the compiled classes (the JDK's jdeps over sql_ext/jars/sql-ext.jar):
Scala reaches another package without an import line too (a fully qualified name, a chained
package clause, a name relative to an enclosing package), and bytecode sees them all. The
import lines of the sources are read as well, for what compiles to nothing: an unused import,
a constant the compiler inlined. Each rule is also run on made-up packages, classes and sources
that break it, so a check that stopped finding anything would fail here too. No Spark runs."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import zipfile
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "jvm" / "src" / "main" / "scala"
EXTENSION = "io.sqlext"
# Spark keeps part of its API to its own SQL package; the extension's calls into it live there.
INSIDE_SPARK = "org.apache.spark.sql.sqlext"
PREFIXES = (EXTENSION, INSIDE_SPARK)
# The root package holds the wiring above every package (SqlExtExtensions) and two objects below
# every package, as its documentation says: any package may import these, and they import none.
SHARED = ("Contract", "SqlExtErrors")
RULE = "May import:"


# -- the rules, from the packages' documentation ---------------------------------------------

def package_clauses(text: str) -> str:
    """The package of a Scala source: its leading package clauses, chained
    (`package io.sqlext` then `package streaming` is io.sqlext.streaming)."""
    parts = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("//", "/*", "*")):
            continue
        found = re.fullmatch(r"package\s+([\w.]+)\s*;?", stripped)
        if not found:
            break
        parts.append(found.group(1))
    return ".".join(parts)


def documented(root: Path) -> dict[str, str]:
    """Package -> the scaladoc of its package object, one line of text."""
    docs = {}
    for path in sorted(root.rglob("*.scala")):
        text = path.read_text()
        for doc, name in re.findall(r"/\*\*((?:(?!\*/).)*)\*/\s*package\s+object\s+(\w+)",
                                    text, re.S):
            lines = (re.sub(r"^\s*\*\s?", "", line) for line in doc.splitlines())
            docs[f"{package_clauses(text)}.{name}"] = " ".join(" ".join(lines).split())
    return docs


def rule_sentence(doc: str) -> str | None:
    """The sentence that starts `May import:`, up to its period (a period inside `code` or a
    [[link]] is part of a name)."""
    start = doc.find(RULE)
    if start < 0:
        return None
    depth, code = 0, False
    for i in range(start, len(doc)):
        char = doc[i]
        if char == "`":
            code = not code
        elif doc.startswith("[[", i):
            depth += 1
        elif doc.startswith("]]", i):
            depth -= 1
        elif char == "." and not code and depth == 0 and doc[i + 1:i + 2] in ("", " "):
            return doc[start:i + 1]
    return doc[start:]


def full_name(name: str) -> str:
    """A package as the rules write it: full, or relative to io.sqlext."""
    if name.startswith(PREFIXES):
        return name
    return f"{EXTENSION}.{name}"


def named(sentence: str) -> list[str]:
    """The names in backticks or [[links]] of a sentence."""
    return [code or link for code, link in re.findall(r"`([^`]+)`|\[\[([^\]]+)\]\]", sentence)]


def rules(docs: dict[str, str], packages: set[str]) -> tuple[dict[str, set[str]], list[str]]:
    """Package -> the packages it may import, and what is wrong with the documentation."""
    allowed, wrong = {}, []
    for package in sorted(packages):
        sentence = rule_sentence(docs.get(package, ""))
        if sentence is None:
            wrong.append(f"{package}: no package object whose scaladoc says `{RULE} ...`")
            continue
        if docs[package].count(RULE) > 1:
            wrong.append(f"{package}: more than one `{RULE}` line")
        names = named(sentence)
        allowed[package] = {full_name(name) for name in names}
        for name in names:
            if full_name(name) not in packages:
                wrong.append(f"{package}: `{name}` in its `{RULE}` line is no package of the "
                             "extension (name packages only, in backticks or [[links]])")
            elif full_name(name) == package:
                wrong.append(f"{package}: its `{RULE}` line names itself")
    for package in sorted(set(docs) - packages):
        wrong.append(f"{package}: documented, but no class lives in it")
    return allowed, wrong


def rule_cycles(allowed: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per group of packages whose rules let them import each other."""
    found, state, stack = [], {}, []

    def visit(package: str) -> None:
        state[package] = "open"
        stack.append(package)
        for target in sorted(allowed.get(package, ())):
            if state.get(target) == "open":
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[package] = "done"

    for package in sorted(allowed):
        if package not in state:
            visit(package)
    return found


# -- the dependencies, from the jar and the sources -------------------------------------------

def unit(name: str, packages: set[str]) -> str:
    """What a rule governs for a class (or an imported name): its package, or for a shared
    object of the root package, the object."""
    while name not in packages and "." in name:
        parent, _, last = name.rpartition(".")
        if parent == EXTENSION and last.split("$")[0] in SHARED:
            return f"{EXTENSION}.{last.split('$')[0]}"
        name = parent
    return name


def class_edges(jar: Path, jdeps: str) -> list[tuple[str, str]]:
    """(class, class it refers to) for every reference between two of the extension's classes,
    as jdeps reads them from the bytecode."""
    result = subprocess.run([jdeps, "-verbose:class", "-filter:none", str(jar)],
                            capture_output=True, text=True, check=True)
    edges = []
    for line in result.stdout.splitlines():
        found = re.match(r"\s+(\S+)\s+->\s+(\S+)", line)
        if found and all(name.startswith(PREFIXES) for name in found.groups()):
            edges.append((found.group(1), found.group(2)))
    return edges


def jar_packages(jar: Path) -> set[str]:
    """The packages of the extension's classes (a package object alone makes none)."""
    with zipfile.ZipFile(jar) as archive:
        names = [entry[:-len(".class")].replace("/", ".") for entry in archive.namelist()
                 if entry.endswith(".class")]
    return {name.rpartition(".")[0] for name in names
            if name.startswith(PREFIXES) and name.rpartition(".")[2] not in ("package",
                                                                                "package$")}


def import_edges(root: Path, packages: set[str]) -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, file:line) for every import of the extension's names in
    the sources (a file of the root package is its object's: files are named after what they
    define). Relative imports are left to the bytecode."""
    edges = []
    for path in sorted(root.rglob("*.scala")):
        text = path.read_text()
        package = package_clauses(text)
        here = unit(f"{package}.{path.stem}", packages)
        for found in re.finditer(r"^[ \t]*import[ \t]+((?:[^{\n]|\{[^}]*\})+)", text, re.M):
            line = text.count("\n", 0, found.start()) + 1
            for name in imported_names(found.group(1)):
                name = name.removeprefix("_root_.")
                if name.startswith(PREFIXES) and unit(name, packages) != here:
                    edges.append((here, unit(name, packages), f"{path.relative_to(root)}:{line}"))
    return edges


def imported_names(clause: str) -> list[str]:
    """`a.b.{C, D => E}, f.g._` -> a.b.C, a.b.D, f.g."""
    names = []
    for part in re.split(r",\s*(?![^{]*\})", clause.strip()):
        found = re.fullmatch(r"([\w.]+?)\.?\{([^}]*)\}", part.strip())
        if found:
            for selector in found.group(2).split(","):
                selector = selector.split("=>")[0].strip()
                names.append(found.group(1) if selector in ("_", "*", "")
                             else f"{found.group(1)}.{selector}")
        else:
            names.append(re.sub(r"\.(_|\*)$", "", part.strip()))
    return names


def problems(allowed: dict[str, set[str]], packages: set[str], classes, imports) -> list[str]:
    """Every dependency that a rule does not allow, one line each."""
    may = {package: targets | {f"{EXTENSION}.{name}" for name in SHARED}
           for package, targets in allowed.items()}
    shared = {f"{EXTENSION}.{name}" for name in SHARED}
    may.update({name: set() for name in shared})
    seen = set()
    found = [(unit(source, packages), unit(target, packages), source)
             for source, target in classes]
    for source, target, where in found + list(imports):
        if source != target and target not in may.get(source, set()):
            what = ("imports no package of the extension" if source in shared
                    else f"does not list {target} in its `{RULE}` line")
            seen.add(f"{where}: {source} refers to {target}, but {source} {what}")
    return sorted(seen)


# -- the extension itself -------------------------------------------------------------------

def _jdeps() -> str:
    jdeps = shutil.which("jdeps")
    assert jdeps, "jdeps is missing: these checks read the jar with the JDK's jdeps (JDK 17)"
    return jdeps


@cache
def _extension():
    # This checkout's jar, where `sbt jvm/package` puts it and sql_ext.jars finds it: its
    # classes are compared with this checkout's sources (an installed sql_ext may be another's).
    jar = ROOT / "sql_ext" / "jars" / "sql-ext.jar"
    assert jar.is_file(), f"{jar} is missing: build it with `bash python/dev.sh setup`"
    newer = [path for path in [*SOURCES.parent.rglob("*"), ROOT / "build.sbt"]
             if path.is_file() and path.stat().st_mtime > jar.stat().st_mtime]
    assert not newer, (f"{jar} is older than {newer[0].relative_to(ROOT)}: its classes are not "
                       "the sources' (rebuild it: `bash python/dev.sh setup`)")
    sources = {package_clauses(path.read_text()) for path in SOURCES.rglob("*.scala")
               if not re.search(r"^package\s+object\s", path.read_text(), re.M)}
    packages = jar_packages(jar) | sources
    allowed, wrong = rules(documented(SOURCES), packages)
    return jar, packages, allowed, wrong


def test_every_package_says_what_it_owns_and_may_import():
    _, packages, _, wrong = _extension()
    assert {f"{EXTENSION}.parser", f"{EXTENSION}.streaming.time", INSIDE_SPARK} <= packages
    assert not wrong, "\n".join(wrong)
    root = documented(SOURCES)[EXTENSION]
    assert all(f"`{name}`" in root for name in SHARED), "the root's doc names what it shares"


def test_the_rules_are_layers():
    _, _, allowed, _ = _extension()
    assert rule_cycles(allowed) == []


def test_the_extension_keeps_its_layers():
    jar, packages, allowed, _ = _extension()
    classes = class_edges(jar, _jdeps())
    assert len(classes) > 100, "jdeps found almost nothing: is the jar the extension's?"
    found = problems(allowed, packages, classes, import_edges(SOURCES, packages))
    assert not found, "dependencies that no rule allows:\n" + "\n".join(found)


def test_the_classes_python_names_are_in_the_jar():
    """Python reaches the extension's classes by name through py4j (and Spark by settings): a
    class moved between packages must be renamed there too."""
    jar, _, _, _ = _extension()
    with zipfile.ZipFile(jar) as archive:
        classes = {entry[:-len(".class")].replace("/", ".").rstrip("$")
                   for entry in archive.namelist() if entry.endswith(".class")}
    spelled = set()
    for path in (ROOT / "sql_ext").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and re.fullmatch(r"io\.sqlext(\.\w+)*\.[A-Z]\w*", node.value):
                spelled.add((path.relative_to(ROOT).as_posix(), node.value))
    assert len(spelled) > 10
    assert [(path, name) for path, name in sorted(spelled) if name not in classes] == []


# -- each rule against what breaks it ------------------------------------------------------

LOW, HIGH = f"{EXTENSION}.window", f"{EXTENSION}.commands"


def _doc(package: str, rule: str) -> str:
    parent, _, name = package.rpartition(".")
    return f"package {parent}\n\n/**\n * What it owns.\n *\n * {rule}\n */\npackage object {name}\n"


def _rules_of(tmp_path: Path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / f"{name}.scala").write_text(text)
    return rules(documented(tmp_path), {LOW, HIGH})


MADE_UP = {"low": _doc(LOW, "May import: Spark only."),
           "high": _doc(HIGH, "May import: `window` and Spark.")}


def test_the_made_up_packages_keep_their_rules(tmp_path):
    assert _rules_of(tmp_path, MADE_UP) == ({LOW: set(), HIGH: {LOW}}, [])


@pytest.mark.parametrize("files, expected", [
    ({**MADE_UP, "low": "package io.sqlext\n\n/** Owns, says no rule. */\npackage object window\n"},
     f"{LOW}: no package object whose scaladoc says"),
    ({**MADE_UP, "low": "package io.sqlext.window\n\nobject Undocumented\n"},
     f"{LOW}: no package object whose scaladoc says"),
    ({**MADE_UP, "high": _doc(HIGH, "May import: `windows` and Spark.")},
     f"{HIGH}: `windows` in its `May import:` line is no package"),
    ({**MADE_UP, "high": _doc(HIGH, "May import: `window` (its `WindowSpec`) and Spark.")},
     f"{HIGH}: `WindowSpec` in its `May import:` line is no package"),
    ({**MADE_UP, "high": _doc(HIGH, "May import: `window` and `commands`.")},
     f"{HIGH}: its `May import:` line names itself"),
    ({**MADE_UP, "high": _doc(HIGH, "May import: `window`.\n * May import: Spark.")},
     f"{HIGH}: more than one `May import:` line"),
    ({**MADE_UP, "gone": _doc(f"{EXTENSION}.gone", "May import: Spark only.")},
     f"{EXTENSION}.gone: documented, but no class lives in it"),
])
def test_each_documentation_rule_finds_what_breaks_it(tmp_path, files, expected):
    _, wrong = _rules_of(tmp_path, files)
    assert any(expected in problem for problem in wrong), wrong


def test_the_rule_line_is_read_as_written(tmp_path):
    """Names in backticks and [[links]], relative to io.sqlext or full, up to the sentence's
    period (not one inside a name); the sentences after it are prose."""
    (tmp_path / "input.scala").write_text(
        "package io.sqlext\npackage streaming\n\n/**\n * Owns. Say `x.y`.\n *\n"
        " * May import: [[io.sqlext.streaming.time]] (the\n * clock), `replay`,\n"
        " * `org.apache.spark.sql.sqlext` and Spark.\n * Never `commands`.\n */\n"
        "package object input\n")
    doc = documented(tmp_path)[f"{EXTENSION}.streaming.input"]
    assert [full_name(name) for name in named(rule_sentence(doc))] == [
        f"{EXTENSION}.streaming.time", f"{EXTENSION}.replay", INSIDE_SPARK]


def test_rules_that_allow_each_other_are_no_layers():
    assert rule_cycles({LOW: set(), HIGH: {LOW}}) == []
    assert rule_cycles({LOW: {HIGH}, HIGH: {LOW}}) == [[HIGH, LOW, HIGH]]


@pytest.mark.parametrize("edge, expected", [
    ((f"{LOW}.Windows$", f"{HIGH}.StreamStatementCommand"),
     f"{LOW}.Windows$: {LOW} refers to {HIGH}, but {LOW} does not list {HIGH}"),
    ((f"{LOW}.Windows", f"{EXTENSION}.SqlExtExtensions"),
     f"{LOW}.Windows: {LOW} refers to {EXTENSION}, but {LOW} does not list {EXTENSION}"),
    ((f"{EXTENSION}.SqlExtErrors$", f"{LOW}.WindowSpec"),
     f"{EXTENSION}.SqlExtErrors refers to {LOW}, but {EXTENSION}.SqlExtErrors imports no "
     "package of the extension"),
])
def test_each_dependency_rule_finds_what_breaks_it(edge, expected):
    packages = {LOW, HIGH, EXTENSION}
    allowed = {LOW: set(), HIGH: {LOW}, EXTENSION: {LOW, HIGH}}
    kept = [(f"{HIGH}.A", f"{LOW}.B$"), (f"{LOW}.B", f"{EXTENSION}.Contract$"),
            (f"{EXTENSION}.SqlExtExtensions", f"{HIGH}.A"), (f"{LOW}.B", f"{LOW}.C")]
    assert problems(allowed, packages, kept, []) == []
    found = problems(allowed, packages, kept + [edge], [])
    assert any(expected in problem for problem in found), found


def test_jdeps_finds_a_reference_that_no_import_line_shows(tmp_path):
    """A fully qualified name in code, compiled: the bytecode has it, no import line does."""
    javac = shutil.which("javac")
    assert javac, "javac is missing (the JDK's)"
    sources = {"commands/Command.java": "package io.sqlext.commands;\npublic class Command {}\n",
               "window/Window.java": "package io.sqlext.window;\npublic class Window {\n"
                                     "  Object make() { return new io.sqlext.commands.Command(); }"
                                     "\n}\n"}
    for name, text in sources.items():
        (tmp_path / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / name).write_text(text)
    classes = tmp_path / "classes"
    subprocess.run([javac, "-d", str(classes), *(str(tmp_path / "src" / name) for name in sources)],
                   check=True)
    jar = tmp_path / "made-up.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        for path in classes.rglob("*.class"):
            archive.write(path, path.relative_to(classes).as_posix())
    packages = jar_packages(jar)
    assert packages == {LOW, HIGH}
    edges = class_edges(jar, _jdeps())
    assert (f"{LOW}.Window", f"{HIGH}.Command") in edges
    assert import_edges(tmp_path / "src", packages) == []
    assert problems({LOW: set(), HIGH: set()}, packages, edges, []) == [
        f"{LOW}.Window: {LOW} refers to {HIGH}, but {LOW} does not list {HIGH} in its "
        "`May import:` line"]


def test_an_import_line_counts_even_when_nothing_uses_it(tmp_path):
    """What compiles to nothing (an unused import, an inlined constant) is in the import lines:
    braces over lines, renames, `_root_`, wildcards; not what a comment says."""
    folder = tmp_path / "io" / "sqlext" / "window"
    folder.mkdir(parents=True)
    (folder / "Windows.scala").write_text(
        "package io.sqlext\npackage window\n\nimport java.util.UUID\n"
        "import io.sqlext.{Contract, SqlExtErrors => Errors}\n"
        "import _root_.io.sqlext.commands.{StreamStatementCommand,\n  AwaitedStreams}\n"
        "import io.sqlext.window.WindowSpec\n"
        "/** import io.sqlext.execution.Not */\nobject Windows\n")
    (tmp_path / "io" / "sqlext" / "SqlExtErrors.scala").write_text(
        "package io.sqlext\n\nimport io.sqlext.replay._\nobject SqlExtErrors\n")
    replay = f"{EXTENSION}.replay"
    packages = {LOW, HIGH, EXTENSION, replay}
    edges = import_edges(tmp_path, packages)
    assert sorted(edges) == sorted([
        (f"{EXTENSION}.SqlExtErrors", replay, "io/sqlext/SqlExtErrors.scala:3"),
        (LOW, f"{EXTENSION}.Contract", "io/sqlext/window/Windows.scala:5"),
        (LOW, f"{EXTENSION}.SqlExtErrors", "io/sqlext/window/Windows.scala:5"),
        (LOW, HIGH, "io/sqlext/window/Windows.scala:6"),
        (LOW, HIGH, "io/sqlext/window/Windows.scala:6"),
    ])
    allowed = {LOW: set(), HIGH: set(), EXTENSION: set(), replay: set()}
    assert problems(allowed, packages, [], edges) == [
        f"io/sqlext/SqlExtErrors.scala:3: {EXTENSION}.SqlExtErrors refers to {replay}, but "
        f"{EXTENSION}.SqlExtErrors imports no package of the extension",
        f"io/sqlext/window/Windows.scala:6: {LOW} refers to {HIGH}, but {LOW} does not list "
        f"{HIGH} in its `May import:` line"]

"""The JVM jars a session loads: the extension jar shipped in the package and Delta's jars,
downloaded once from Maven Central into the project's cache and checked against their SHA-1."""

from __future__ import annotations

import hashlib
import os
import urllib.request
from pathlib import Path

DELTA_VERSION = "4.4.0"
SCALA_SUFFIX = "_4.2_2.13"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
DELTA_ARTIFACTS = (
    ("io.delta", f"delta-spark{SCALA_SUFFIX}", DELTA_VERSION),
    ("io.delta", "delta-storage", DELTA_VERSION),
)
PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_DIR = PACKAGE_DIR.parent


def extension_jar() -> Path:
    jar = PACKAGE_DIR / "jars" / "sql-ext.jar"
    if not jar.is_file():
        raise FileNotFoundError(
            f"{jar} is missing: build it with `bash python/dev.sh setup` (runs sbt jvm/package)")
    return jar


def cache_dir() -> Path:
    return Path(os.environ.get("SQL_EXT_JAR_CACHE", PROJECT_DIR / ".cache" / "jars"))


def _download(url: str, target: Path) -> None:
    with urllib.request.urlopen(url, timeout=120) as response:
        data = response.read()
    with urllib.request.urlopen(url + ".sha1", timeout=60) as response:
        expected = response.read().decode().split()[0].strip()
    if hashlib.sha1(data).hexdigest() != expected:
        raise OSError(f"checksum mismatch for {url}")
    tmp = target.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(target)


def delta_jars() -> list[Path]:
    """Delta's jars, fetched into the cache on first use."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    jars = []
    for group, artifact, version in DELTA_ARTIFACTS:
        name = f"{artifact}-{version}.jar"
        target = folder / name
        if not target.is_file():
            url = f"{MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}/{version}/{name}"
            _download(url, target)
        jars.append(target)
    return jars


def all_jars() -> list[Path]:
    return [extension_jar(), *delta_jars()]

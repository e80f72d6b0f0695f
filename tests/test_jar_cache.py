"""The jars a first session fetches from Maven Central: checked, kept in the cache, and the
wait said on stderr (a progress bar on a terminal)."""

import hashlib
import urllib.request

from sql_ext import jars

# A small artifact of the Kafka connector's set (commons-pool2, about 0.2 MB).
ARTIFACT = next(a for a in jars.KAFKA_ARTIFACTS if a[1] == "commons-pool2")


def test_a_first_fetch_says_so_and_a_second_finds_the_cache(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("SQL_EXT_JAR_CACHE", str(tmp_path / "jar cache"))
    [jar] = jars._fetched("a test's", [ARTIFACT])
    said = capfd.readouterr().err
    assert jar.parent == tmp_path / "jar cache" and jar.is_file()
    assert f"sql-ext: fetching {jar.name} (0.2 MB) from Maven Central" in said, said
    group, artifact, version = ARTIFACT
    url = (f"{jars.MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}/{version}/"
           f"{artifact}-{version}.jar.sha1")
    with urllib.request.urlopen(url, timeout=60) as response:
        assert hashlib.sha1(jar.read_bytes()).hexdigest() == response.read().decode().split()[0]
    assert jars._fetched("a test's", [ARTIFACT]) == [jar]
    assert capfd.readouterr().err == ""

"""The documentation site in a real browser: `mkdocs build --strict` into a temporary folder,
served over HTTP on 127.0.0.1, opened in headless Chromium (tests/site_browser.py): the home
page and a reference page render, the site search finds a word, and no page logs an error or
fails a request. Two broken copies of the site show that the checks catch what they look for.

Chromium is Debian's package, which `bash python/dev.sh test` installs where it is missing:
without it these tests fail, they are not skipped."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from site_browser import (Chromium, SiteServer, check_home, check_reference, check_search)
from test_docs import QUIET, ROOT

# One worker builds the site and starts the browser for all of them.
pytestmark = pytest.mark.xdist_group("site_browser")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser") / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(folder)], cwd=ROOT, capture_output=True, text=True, env=QUIET)
    assert done.returncode == 0, done.stderr[-4000:]
    return folder


@pytest.fixture(scope="module")
def server(site):
    with SiteServer(site) as served:
        yield served


@pytest.fixture(scope="module")
def browser():
    with Chromium() as chromium:
        yield chromium


def test_the_home_page_renders(browser, server):
    assert check_home(browser, server.url) == []


def test_the_windows_reference_page_renders(browser, server):
    assert check_reference(browser, server.url) == []


def test_the_site_search_finds_a_word(browser, server):
    assert check_search(browser, server.url, "TUMBLING") == []


def test_a_script_error_fails_the_check(browser, site, tmp_path):
    broken = shutil.copytree(site, tmp_path / "site")
    page = broken / "index.html"
    page.write_text(page.read_text().replace(
        "</body>", "<script>window.notAFunction()</script></body>"))
    with SiteServer(broken) as served:
        wrong = check_home(browser, served.url)
    assert any("uncaught error" in w and "notAFunction" in w for w in wrong), wrong


def test_a_missing_search_index_fails_the_check(browser, site, tmp_path):
    broken = shutil.copytree(site, tmp_path / "site")
    (broken / "search" / "search_index.json").unlink()
    with SiteServer(broken) as served:
        wrong = check_search(browser, served.url, "TUMBLING", timeout=5)
    assert any(w.startswith("search: HTTP 404") and "search_index.json" in w
               for w in wrong), wrong
    assert any("no visible result" in w for w in wrong), wrong

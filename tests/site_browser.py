"""The built documentation site in a real headless Chromium: the pages render, the site search
finds a word, and no page logs an error or fails a request.

Chromium is Debian's package (`bash python/dev.sh test` and `bash python/dev.sh docs` install
it), driven over the DevTools protocol through a pipe (--remote-debugging-pipe): no driver
binary, no Python package and no debugging port, and no version of a driver to keep in step
with the browser's. tests/test_site_browser.py runs these checks on a fresh build;
`python tests/site_browser.py [SITE]` runs them on a built site (by default .cache/site, where
`mkdocs build` writes it) and prints what is wrong: `dev.sh docs` runs it after its build.
"""

from __future__ import annotations

import fcntl
import functools
import http.server
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
# Debian's (dev.sh installs it where missing), or the binary SQL_EXT_CHROMIUM names.
CHROMIUM = os.environ.get("SQL_EXT_CHROMIUM") or "/usr/bin/chromium"
# Hosts outside the site a page may ask: none (mkdocs.yml's `theme.font: false` keeps the
# theme from Google's fonts). The browser here resolves no host but 127.0.0.1, so the checks do
# not depend on the network; a request to any other host fails the check.
OUTSIDE_ALLOWED: frozenset[str] = frozenset()
# The text of the page's first heading, less the permalink ("¶", toc's) inside it.
HEADING = """(() => {
  const h = document.querySelector('.md-content h1');
  if (!h) return null;
  const copy = h.cloneNode(true);
  copy.querySelectorAll('.headerlink').forEach(e => e.remove());
  return copy.textContent.trim();
})()"""


class SiteServer:
    """A built site over HTTP on 127.0.0.1, on a free port, served from a thread."""

    def __init__(self, site: Path):
        if not (site / "index.html").is_file():
            raise FileNotFoundError(f"no built site in {site} (no index.html)")
        handler = functools.partial(_QuietHandler, directory=str(site))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()

    def __enter__(self) -> SiteServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # a line per request on the test's output otherwise
        pass


class Chromium:
    """One headless Chromium, spoken to over its DevTools pipe. Each `Tab` is a page of its
    own, with the events of its page and of the page's workers (the site search runs in one)."""

    def __init__(self, timeout: float = 30):
        if not os.access(CHROMIUM, os.X_OK):
            raise FileNotFoundError(
                f"Chromium is missing ({CHROMIUM}): `bash python/dev.sh test` installs it "
                "(apt-get install chromium); SQL_EXT_CHROMIUM names another binary")
        self.timeout = timeout
        self.profile = Path(tempfile.mkdtemp(prefix="sql-ext-chromium-"))
        self.events: list[dict] = []
        self._replies: dict[int, dict] = {}
        self._next_id = 0
        self._buffer = b""
        self._parents: dict[str, str] = {}  # a worker's session -> its page's session
        to_browser, self._out = os.pipe()
        self._in, from_browser = os.pipe()
        # The child's ends away from fds 3 and 4, where the shell moves them: an end already
        # at 3 or 4 would be closed or overwritten there.
        to_browser, from_browser = (_high_fd(to_browser), _high_fd(from_browser))
        args = [CHROMIUM, "--headless", "--remote-debugging-pipe",
                f"--user-data-dir={self.profile}",
                # root in a container: no user namespace for Chromium's sandbox
                "--no-sandbox",
                # every host but the site's unresolvable: no check waits on the network
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--mute-audio", "--window-size=1280,900", "about:blank"]
        self._log = open(self.profile / "chromium.log", "wb")
        # Chromium reads the protocol on fd 3 and writes it on fd 4: the shell puts the pipes'
        # ends there (bash: dash takes no fd above 9). In a session of its own: close() can
        # end its whole process group if it does not close.
        self.process = subprocess.Popen(
            ["/bin/bash", "-c",
             f'exec "$@" 3<&{to_browser} 4>&{from_browser} {to_browser}<&- {from_browser}>&-',
             "bash", *args],
            pass_fds=(to_browser, from_browser), stdin=subprocess.DEVNULL,
            stdout=self._log, stderr=self._log, start_new_session=True)
        os.close(to_browser)
        os.close(from_browser)
        try:
            self.version = self.call("Browser.getVersion")["product"]
        except BaseException:
            self.close()
            raise

    # --- the protocol -------------------------------------------------------------------------

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        """Sends a command without waiting for its answer; returns its id."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._out, data):]
        return self._next_id

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Sends a command and returns its result, keeping the events that came meanwhile."""
        number = self.send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while number not in self._replies:
            message = self._read(deadline)
            if message is None:
                raise TimeoutError(f"Chromium did not answer {method} in {self.timeout} s")
            self._dispatch(message)
        reply = self._replies.pop(number)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error'].get('message')}")
        return reply["result"]

    def pump(self, seconds: float) -> None:
        """Takes in the events of the next `seconds`."""
        deadline = time.monotonic() + seconds
        while (message := self._read(deadline)) is not None:
            self._dispatch(message)

    def settle(self, quiet: float = 0.5, limit: float = 5) -> None:
        """Takes in events until none came for `quiet` seconds (at most `limit`): an error
        logged just after a check's condition held is still seen."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            message = self._read(min(end, time.monotonic() + quiet))
            if message is None:
                return
            self._dispatch(message)

    def _read(self, deadline: float) -> dict | None:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if select.select([self._in], [], [], left)[0]:
                chunk = os.read(self._in, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"Chromium exited; its log ends:\n{self.log_tail()}")
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def _dispatch(self, message: dict) -> None:
        if "id" in message:
            self._replies[message["id"]] = message
            return
        self.events.append(message)
        if message["method"] == "Target.attachedToTarget" and message.get("sessionId"):
            # A page's worker, paused until its events are on: answers are not waited for
            # (this runs while a call waits for its own), the pipe keeps their order.
            child = message["params"]["sessionId"]
            self._parents[child] = message["sessionId"]
            for method in ("Runtime.enable", "Network.enable", "Log.enable",
                           "Runtime.runIfWaitingForDebugger"):
                self.send(method, session=child)

    def log_tail(self) -> str:
        self._log.flush()
        return (self.profile / "chromium.log").read_text(errors="replace")[-3000:]

    # --- pages --------------------------------------------------------------------------------

    def open(self, url: str) -> Tab:
        """A new page at `url`, loaded (document.readyState complete), its events recorded."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=session)
        self.call("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True,
                                           "flatten": True}, session)
        tab = Tab(self, target, session)
        failed = self.call("Page.navigate", {"url": url}, session).get("errorText")
        if failed:
            raise RuntimeError(f"{url}: {failed}")
        loaded = f"document.readyState === 'complete' && location.href === {json.dumps(url)}"
        if not tab.wait_for(loaded, self.timeout):
            raise TimeoutError(f"{url} did not load in {self.timeout} s")
        return tab

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                self.send("Browser.close")
                self.process.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        finally:
            for fd in (self._in, self._out):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._log.close()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _high_fd(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Tab:
    def __init__(self, browser: Chromium, target: str, session: str):
        self.browser, self.target, self.session = browser, target, session

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (a promise's, awaited)."""
        done = self.browser.call("Runtime.evaluate", {"expression": expression,
                                                      "returnByValue": True,
                                                      "awaitPromise": True}, self.session)
        if "exceptionDetails" in done:
            raise RuntimeError(f"{expression}: {done['exceptionDetails']}")
        return done["result"].get("value")

    def wait_for(self, expression: str, timeout: float) -> bool:
        """Whether the expression became true within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            if time.monotonic() >= deadline:
                return False
            self.browser.pump(0.1)
        return True

    def click(self, selector: str) -> None:
        """A mouse click in the middle of the element, as a user's."""
        box = self.evaluate(f"""(() => {{
          const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();
          return {{x: r.x + r.width / 2, y: r.y + r.height / 2}};
        }})()""")
        for kind in ("mousePressed", "mouseReleased"):
            self.browser.call("Input.dispatchMouseEvent", {**box, "type": kind, "button": "left",
                                                           "clickCount": 1}, self.session)

    def type(self, text: str) -> None:
        """Key presses into the focused element, one key down and up per character."""
        for ch in text:
            key = {"key": ch, "code": f"Key{ch.upper()}" if ch.isalpha() else "",
                   "windowsVirtualKeyCode": ord(ch.upper())}
            self.browser.call("Input.dispatchKeyEvent",
                              {**key, "type": "keyDown", "text": ch}, self.session)
            self.browser.call("Input.dispatchKeyEvent", {**key, "type": "keyUp"}, self.session)

    def problems(self) -> list[str]:
        """The page's (and its workers') errors: uncaught exceptions, console errors, failed
        requests and answers of 400 and above, save requests to OUTSIDE_ALLOWED."""
        self.browser.settle()
        mine = {self.session} | {c for c, p in self.browser._parents.items() if p == self.session}
        urls: dict[tuple, str] = {}
        found = []
        for event in self.browser.events:
            session = event.get("sessionId")
            if session not in mine:
                continue
            method, params = event["method"], event.get("params", {})
            if method == "Network.requestWillBeSent":
                urls[session, params["requestId"]] = params["request"]["url"]
            elif method == "Network.loadingFailed":
                url = urls.get((session, params["requestId"]), "?")
                if not _outside_allowed(url):
                    found.append(f"request failed: {url}: {params['errorText']}")
            elif method == "Network.responseReceived" and params["response"]["status"] >= 400:
                response = params["response"]
                found.append(f"HTTP {response['status']}: {response['url']}")
            elif method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                text = details.get("exception", {}).get("description") or details["text"]
                found.append(f"uncaught error: {text} ({details.get('url', '?')}:"
                             f"{details.get('lineNumber', 0) + 1})")
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                text = " ".join(str(a.get("value", a.get("description", "")))
                                for a in params["args"])
                found.append(f"console.{params['type']}: {text}")
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                entry = params["entry"]
                if not _outside_allowed(entry.get("url", "")):
                    found.append(f"console error: {entry['text']} ({entry.get('url', '')})")
        return list(dict.fromkeys(found))

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})


def _outside_allowed(url: str) -> bool:
    return urlsplit(url).hostname in OUTSIDE_ALLOWED


# --- the checks: each opens a page of the site at `base` and returns what is wrong ----------

def first_heading(page: Path) -> str:
    return re.search(r"^# (.+)$", page.read_text(), re.M).group(1).strip()


def site_name() -> str:
    return re.search(r"^site_name:\s*(.+)$", (ROOT / "mkdocs.yml").read_text(), re.M).group(1)


def check_home(browser: Chromium, base: str) -> list[str]:
    """The home page: the site's name as its title, docs/index.md's heading first."""
    tab = browser.open(base)
    wrong = []
    title, heading = tab.evaluate("document.title"), tab.evaluate(HEADING)
    if title != site_name():
        wrong.append(f"home page: title {title!r}, not {site_name()!r}")
    if heading != first_heading(ROOT / "docs" / "index.md"):
        wrong.append(f"home page: first heading {heading!r}, not docs/index.md's")
    wrong += [f"home page: {p}" for p in tab.problems()]
    tab.close()
    return wrong


def check_reference(browser: Chromium, base: str) -> list[str]:
    """docs/reference/windows.md's page: its heading and title, its first SQL example as a code
    block, and the theme's copy button on it (the theme's script ran)."""
    page = ROOT / "docs" / "reference" / "windows.md"
    heading = first_heading(page)
    example = re.search(r"^```sql\n(.+)$", page.read_text(), re.M).group(1)
    tab = browser.open(base + "reference/windows/")
    wrong = []
    title = tab.evaluate("document.title")
    if title != f"{heading} - {site_name()}":
        wrong.append(f"reference page: title {title!r}")
    if tab.evaluate(HEADING) != heading:
        wrong.append(f"reference page: first heading {tab.evaluate(HEADING)!r}, not {heading!r}")
    blocks = tab.evaluate("[...document.querySelectorAll('.md-content pre code')]"
                          ".map(c => c.textContent)")
    if not any(example in block for block in blocks):
        wrong.append(f"reference page: no code block with {example!r} ({len(blocks)} blocks)")
    # mkdocs.yml's content.code.copy: the theme's script puts a copy button on each block.
    copy = "document.querySelector('.md-content pre [data-clipboard-target]') !== null"
    if not tab.wait_for(copy, 5):
        wrong.append("reference page: no copy button on its code blocks (the theme's script?)")
    wrong += [f"reference page: {p}" for p in tab.problems()]
    tab.close()
    return wrong


def check_search(browser: Chromium, base: str, word: str = "TUMBLING",
                 timeout: float = 30) -> list[str]:
    """The search box of the home page: the word typed, results shown, one of them the windows
    reference page (the search index loaded, the search worker answered)."""
    tab = browser.open(base)
    tab.click(".md-search__input")
    tab.type(word)
    shown = """(() => {
      const items = [...document.querySelectorAll('.md-search-result__item')];
      const seen = items.filter(i => i.getBoundingClientRect().height > 0);
      return seen.some(i => i.querySelector('a[href*="reference/windows/"]'));
    })()"""
    wrong = []
    if not tab.wait_for(shown, timeout):
        meta = tab.evaluate("document.querySelector('.md-search-result__meta')?.textContent")
        meta = " ".join((meta or "").split())
        wrong.append(f"search: no visible result for {word!r} linking to the windows reference "
                     f"page in {timeout} s (the result list says: {meta!r})")
    wrong += [f"search: {p}" for p in tab.problems()]
    tab.close()
    return wrong


CHECKS = {"home page": check_home, "reference page": check_reference, "search": check_search}


def main(argv: list[str]) -> int:
    site = Path(argv[0]) if argv else ROOT / ".cache" / "site"
    started = time.monotonic()
    wrong = []
    with SiteServer(site) as server, Chromium() as browser:
        print(f"checking {site} at {server.url} in {browser.version}")
        for name, check in CHECKS.items():
            found = check(browser, server.url)
            print(f"  {name}: {'ok' if not found else 'WRONG'}")
            wrong += found
    for line in wrong:
        print(f"  - {line}")
    print(f"{'failed' if wrong else 'passed'} in {time.monotonic() - started:.1f} s")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The picture of a pane's life on docs/concepts.md (docs/diagrams/pane-life.svg).

It is drawn by docs/diagrams/pane_life.py from the pane model (tests/oracle_panes.py). These
tests keep it true: the committed SVG is what the script draws now (so it cannot drift from
the model), what it shows follows the rules of the reference page (a pane fires when the
watermark reaches its end, closes at its end plus the discard age, drops tuples below the
watermark minus the discard age), the engine fires exactly the firings it shows and drops
the tuple it shows dropped, and the page shows the picture with the same example.
"""

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "diagrams" / "pane_life.py"
SVG = ROOT / "docs" / "diagrams" / "pane-life.svg"
PAGE = ROOT / "docs" / "concepts.md"
NS = "{http://www.w3.org/2000/svg}"


def test_the_committed_svg_is_what_the_script_draws(tmp_path):
    out = tmp_path / "pane-life.svg"
    # -B: no __pycache__ under docs/, which the site would publish.
    done = subprocess.run([sys.executable, "-B", str(SCRIPT), "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == SVG.read_bytes(), \
        "docs/diagrams/pane-life.svg is stale: run .venv/bin/python docs/diagrams/pane_life.py"


def _picture():
    """What the committed SVG shows: the window, the steps, the panes, firings and drops."""
    root = ET.parse(SVG).getroot()
    groups = list(root.iter(f"{NS}g"))
    steps = [g.attrib for g in groups if g.get("class") == "step"]
    panes = []
    for g in (g for g in groups if g.get("class") == "pane"):
        texts = ["".join(t.itertext()) for t in g.iter(f"{NS}text")]
        firings = [(f.get("data-step"), f.get("data-timing"), int(f.get("data-index")),
                    [int(s) for s in f.get("data-tuples").split()],
                    ["".join(t.itertext()) for t in f.iter(f"{NS}text")])
                   for f in g.iter(f"{NS}g") if f.get("class") == "firing"]
        panes.append({"start": int(g.get("data-start")), "end": int(g.get("data-end")),
                      "created": g.get("data-created"), "closed": g.get("data-closed"),
                      "texts": texts, "firings": firings,
                      "joined": [(int(t.get("data-seq")), t.get("data-late") == "true")
                                 for t in g.iter(f"{NS}g") if t.get("class") == "tuple"],
                      "dropped": [int(d.get("data-seq")) for d in g.iter(f"{NS}g")
                                  if d.get("class") == "dropped"]})
    return root.get("data-window"), steps, panes


def _window_numbers(window):
    found = re.fullmatch(r"TIME_INTERVAL\((\d+), (\d+), (\d+)\) ON t OVER \(ORDER BY seq\) "
                         r"WATERMARK DELAY (\d+)", window)
    assert found, window
    return [int(v) for v in found.groups()]


def test_the_picture_follows_the_pane_rules():
    """Independent of the model: each pane shows its bounds, fires ON_TIME at the first step
    whose watermark reaches its end, LATE only after a late tuple joined, closes at the first
    step whose watermark reaches end + discard age; the dropped tuple was below W - discard."""
    window, steps, panes = _picture()
    duration, period, discard, delay = _window_numbers(window)
    order = [s["data-step"] for s in steps]
    assert order[-1] == "end" and len(order) == 10
    event = {int(s["data-step"]): int(s["data-t"]) for s in steps[:-1]}
    mark = {s["data-step"]: float(s["data-watermark"]) for s in steps}
    highest = float("-inf")
    for step in order[:-1]:  # the watermark shown is the highest event time so far - delay
        highest = max(highest, event[int(step)])
        assert mark[step] == highest - delay

    def first_step(level):
        return next(s for s in order if mark[s] >= level)

    assert [(p["start"], p["end"]) for p in panes] == [(100, 110), (110, 120), (120, 130)]
    for pane in panes:
        assert pane["end"] - pane["start"] == duration and pane["start"] % period == 0
        assert f"pane [{pane['start']}, {pane['end']})" in pane["texts"]
        assert pane["created"] == str(min(seq for seq, _ in pane["joined"]))
        on_time, *late = pane["firings"]
        assert on_time[:3] == (first_step(pane["end"]), "ON_TIME", 0)
        assert pane["closed"] == first_step(pane["end"] + discard)
        for index, (step, timing, shown_index, tuples, texts) in enumerate(pane["firings"]):
            assert texts == [f"{timing} #{shown_index}", f"[{', '.join(map(str, tuples))}]"]
            assert shown_index == index
            assert all(pane["start"] <= event[seq] < pane["end"] for seq in tuples)
        for step, timing, _, tuples, _ in late:
            assert timing == "LATE" and order.index(step) > order.index(str(tuples[-1]))
        for seq, is_late in pane["joined"]:
            assert is_late == (order.index(str(seq)) > order.index(on_time[0]))
    dropped = [seq for pane in panes for seq in pane["dropped"]]
    assert dropped == [7]
    before = order[order.index("7") - 1]
    assert event[7] < mark[before] - discard


def test_the_engine_fires_what_the_picture_shows(spark):
    """The same events through spark.sql in batch: every firing (pane, timing, index, tuples in
    arrival order) equals the picture's, and LATE ROWS INTO holds the tuple it shows dropped."""
    window, steps, panes = _picture()
    events = [(int(s["data-step"]), int(s["data-t"])) for s in steps[:-1]]
    spark.createDataFrame(events, "seq BIGINT, t BIGINT").coalesce(1) \
        .createOrReplaceTempView("concepts_pane_life")
    rows = spark.sql(
        "SELECT PANE_START() AS s, PANE_END() AS e, PANE_TIMING() AS timing, "
        "PANE_INDEX() AS idx, COLLECT_LIST(seq) AS tuples FROM concepts_pane_life "
        f"WINDOW {window} LATE ROWS INTO concepts_pane_life_late").collect()
    engine = sorted((r.s, r.e, r.timing, r.idx, list(r.tuples)) for r in rows)
    shown = sorted((p["start"], p["end"], timing, index, tuples)
                   for p in panes for _, timing, index, tuples, _ in p["firings"])
    assert len(shown) == 5 and engine == shown
    late = spark.sql("SELECT seq, late_watermark, late_panes FROM concepts_pane_life_late") \
        .collect()
    assert [r.seq for r in late] == [seq for p in panes for seq in p["dropped"]]
    assert [(p.start, p.end) for p in late[0].late_panes] == [(100, 110)]


def _page_example():
    """The page's example: its events (a plain fence), its query (a plain fence) and the
    output shown after the query (```text)."""
    page = PAGE.read_text()
    events = re.search(r"^```\n(seq +t\n.*?)^```$", page, re.S | re.M)
    query = re.search(r"^```\n(SELECT .*?)^```\n+```text\n(.*?)^```$", page, re.S | re.M)
    assert events and query, "the example's events, query or output are not on the page"
    pairs = re.findall(r"^ *(\d+) +(\d+)$", events.group(1), re.M)
    assert len(pairs) == len(events.group(1).splitlines()) - 1
    return page, [(int(a), int(b)) for a, b in pairs], query.group(1), query.group(2)


def test_the_page_shows_the_picture_and_its_example():
    page, events, query, _ = _page_example()
    assert "](diagrams/pane-life.svg)" in page
    window, steps, _ = _picture()
    assert f"WINDOW {window}" in query
    assert events == [(int(s["data-step"]), int(s["data-t"])) for s in steps[:-1]]


def test_the_page_s_query_gives_the_output_shown(spark):
    _, events, query, shown = _page_example()
    spark.createDataFrame(events, "seq BIGINT, t BIGINT").coalesce(1) \
        .createOrReplaceTempView("pane_life_events")
    assert spark.sql(query)._show_string(100, False) == shown

"""The picture of a pane's life on docs/concepts.md: docs/diagrams/pane-life.svg.

Why a script and not a drawing: the picture must say what the product does. Every pane event
it shows (created, tuples joining, firings, a dropped tuple, closing) is computed by the
test suite's independent model of TIME_INTERVAL panes (tests/oracle_panes.py), which the
tests compare with the engine; tests/test_concepts_diagram.py regenerates the SVG and fails
when the committed one differs, and runs the example through spark.sql.

    .venv/bin/python docs/diagrams/pane_life.py [--out FILE]

Plain SVG text, standard library only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from oracle_panes import pane_firings  # noqa: E402 - after the path it needs

# The example: (seq, t) in arrival order; t is the event time in seconds.
EVENTS = [(1, 101), (2, 104), (3, 112), (4, 107), (5, 115), (6, 123), (7, 108), (8, 118),
          (9, 126)]
DURATION, PERIOD, DISCARD, DELAY = 10, 10, 10, 2
WINDOW = (f"TIME_INTERVAL({DURATION}, {PERIOD}, {DISCARD}) ON t OVER (ORDER BY seq) "
          f"WATERMARK DELAY {DELAY}")
END = "end"  # the step after the last tuple: the end of batch input, a watermark of +infinity


def _model(count: int, final: bool) -> dict:
    """The model's view after the first `count` tuples (and the end of input if `final`)."""
    rows = [{"seq": seq, "t": t} for seq, t in EVENTS[:count]]
    return pane_firings(rows, DURATION, PERIOD, DISCARD, event_time=lambda r: r["t"],
                        order_by=lambda r: r["seq"], watermark_delay=DELAY,
                        final_watermark=final)


def timeline() -> dict:
    """Steps (one per tuple, then the end of input) and, per pane, what happened at which step.

    Why prefixes: the model reports firings, drops and the panes still open; running it on
    each prefix of the input (without the end-of-input watermark, except for the last step)
    shows when each pane was created, fired and closed, without a second model of the rules.
    """
    steps, panes, dropped = [], {}, []
    before = _model(0, final=False)
    highest = None
    for count in range(1, len(EVENTS) + 2):
        final = count == len(EVENTS) + 1
        after = _model(min(count, len(EVENTS)), final=final)
        step = END if final else EVENTS[count - 1][0]
        if not final:
            highest = max(EVENTS[count - 1][1], highest or EVENTS[count - 1][1])
        # The watermark after this step, as sql.md defines WATERMARK DELAY (labels only).
        steps.append({"step": step, "t": None if final else EVENTS[count - 1][1],
                      "watermark": None if final else highest - DELAY})
        fired = after["firings"][len(before["firings"]):]
        open_now = {p["window_id"]: p for p in after["open"]}
        assert all(p["partition"] is None for p in after["open"]), "one partition only"
        for firing in fired:
            pane = _pane(panes, firing["window_id"], firing["pane_start"], firing["pane_end"])
            pane["firings"].append({"step": step, "timing": firing["timing"],
                                    "index": firing["index"],
                                    "tuples": [r["seq"] for r in firing["rows"]]})
        for n, state in open_now.items():
            start = n * PERIOD
            _pane(panes, n, start, start + DURATION)
        for n, pane in panes.items():
            pane.setdefault("created", step)
            held = open_now[n]["rows"] if n in open_now else []
            shown = [r["seq"] for r in held] + [s for f in fired if f["window_id"] == n
                                                for s in (r["seq"] for r in f["rows"])]
            if not final and step in shown and step not in pane["joined"]:
                pane["joined"][step] = any(f["step"] != step for f in pane["firings"])
            if n not in open_now and "closed" not in pane:
                pane["closed"] = step
        if after["dropped"] > before["dropped"]:
            late = after["late_rows"][-1]
            dropped.append({"seq": late["row"]["seq"], "t": late["event_time"],
                            "panes": [list(p) for p in late["panes"]]})
        before = after
    return {"steps": steps, "panes": [panes[n] for n in sorted(panes)], "dropped": dropped}


def _pane(panes: dict, n: int, start, end) -> dict:
    return panes.setdefault(n, {"window_id": n, "start": start, "end": end, "firings": [],
                                "joined": {}})


# Layout, in SVG user units.
LABEL_W, COL_W, TOP, LANE_H, MARGIN = 168, 84, 122, 100, 16
RIGHT = 60  # room for the last column's "closed"
COLOURS = {"collecting": "#dbe9f6", "complete": "#fde6c8", "tuple": "#2f6db5",
           "late": "#d9822b", "ON_TIME": "#2e8b57", "LATE": "#d9822b", "drop": "#c0392b",
           "grid": "#d0d0d0", "text": "#222222", "muted": "#666666"}


def _x(column: int) -> float:
    return LABEL_W + COL_W * column + COL_W / 2


def _text(x, y, body, size=12, anchor="middle", weight="normal", fill=COLOURS["text"],
          extra=""):
    return (f'<text x="{x:g}" y="{y:g}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{fill}"{extra}>{escape(str(body))}</text>')


def _interval(start, end) -> str:
    return f"[{start}, {end})"


def svg(data: dict) -> str:
    """The timeline as an SVG document: columns are arrival steps, lanes are panes."""
    steps, panes = data["steps"], data["panes"]
    column = {s["step"]: i for i, s in enumerate(steps)}
    width = LABEL_W + COL_W * len(steps) + RIGHT
    legend_y = TOP + LANE_H * len(panes) + 26
    height = legend_y + 70
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" '
           f'data-window={quoteattr(WINDOW)}>',
           f"<title>{escape('The life of a pane: ' + WINDOW)}</title>",
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           _text(MARGIN, 24, f"WINDOW {WINDOW}", 14, "start", "bold")]
    # Header: one column per step, the tuple that arrived and the watermark after it.
    out.append(_text(MARGIN, 56, "tuple arrives (seq: t)", 12, "start", "bold"))
    out.append(_text(MARGIN, 84, "watermark W after it", 12, "start", "bold"))
    out.append(_text(MARGIN, 100, "(highest t so far - 2)", 11, "start",
                     fill=COLOURS["muted"]))
    for i, step in enumerate(steps):
        x = _x(i)
        out.append(f'<line x1="{x - COL_W / 2:g}" y1="40" x2="{x - COL_W / 2:g}" '
                   f'y2="{TOP + LANE_H * len(panes):g}" stroke="{COLOURS["grid"]}"/>')
        if step["step"] == END:
            out.append(f'<g class="step" data-step="{END}" data-watermark="+inf">')
            out.append(_text(x, 48, "end of", 12, weight="bold"))
            out.append(_text(x, 62, "input", 12, weight="bold"))
            out.append(_text(x, 84, "+\u221e", 13))
        else:
            out.append(f'<g class="step" data-step="{step["step"]}" data-t="{step["t"]}" '
                       f'data-watermark="{step["watermark"]}">')
            out.append(_text(x, 56, f'{step["step"]}: t={step["t"]}', 12, weight="bold"))
            out.append(_text(x, 84, step["watermark"], 13))
        out.append("</g>")
    for lane, pane in enumerate(panes):
        out += _lane(lane, pane, column, data["dropped"])
    out += _legend(legend_y)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _lane(lane: int, pane: dict, column: dict, dropped: list) -> list[str]:
    """One pane: its life as a bar (collecting, then complete), its tuples and its firings."""
    y = TOP + LANE_H * lane
    bounds = _interval(pane["start"], pane["end"])
    created, closed = column[pane["created"]], column[pane["closed"]]
    on_time = column[pane["firings"][0]["step"]]
    bar_y, bar_h = y + 14, 26
    out = [f'<g class="pane" data-start="{pane["start"]}" data-end="{pane["end"]}" '
           f'data-window-id="{pane["window_id"]}" data-created="{pane["created"]}" '
           f'data-closed="{pane["closed"]}">',
           f'<line x1="0" y1="{y:g}" x2="{LABEL_W + COL_W * len(column):g}" y2="{y:g}" '
           f'stroke="{COLOURS["grid"]}"/>',
           _text(MARGIN, y + 26, f"pane {bounds}", 13, "start", "bold"),
           _text(MARGIN, y + 44, f"fires when W \u2265 {pane['end']}", 11, "start",
                 fill=COLOURS["muted"]),
           _text(MARGIN, y + 60, f"closes when W \u2265 {pane['end'] + DISCARD}", 11, "start",
                 fill=COLOURS["muted"]),
           _text(MARGIN, y + 76, f"(end + discard age {DISCARD})", 11, "start",
                 fill=COLOURS["muted"])]
    left = _x(created) - COL_W / 2 + 6
    # The collecting bar runs on under the complete one (if any): its rounded end stays hidden.
    under = 8 if closed > on_time else 0
    out.append(f'<rect class="collecting" x="{left:g}" y="{bar_y}" '
               f'width="{_x(on_time) - left + under:g}" height="{bar_h}" rx="6" '
               f'fill="{COLOURS["collecting"]}"/>')
    out.append(f'<rect class="complete" x="{_x(on_time):g}" y="{bar_y}" '
               f'width="{_x(closed) - _x(on_time):g}" height="{bar_h}" '
               f'fill="{COLOURS["complete"]}"/>')
    out.append(f'<line x1="{_x(closed):g}" y1="{bar_y - 4}" x2="{_x(closed):g}" '
               f'y2="{bar_y + bar_h + 4}" stroke="{COLOURS["text"]}" stroke-width="3"/>')
    out.append(_text(_x(closed) + 5, bar_y + 17, "closed", 11, "start", "bold"))
    for step, late in pane["joined"].items():
        colour = COLOURS["late" if late else "tuple"]
        out.append(f'<g class="tuple" data-seq="{step}" data-late="{str(late).lower()}">'
                   f'<circle cx="{_x(column[step]):g}" cy="{bar_y + bar_h / 2:g}" r="11" '
                   f'fill="{colour}"/>')
        out.append(_text(_x(column[step]), bar_y + bar_h / 2 + 4, step, 12, weight="bold",
                         fill="#ffffff"))
        out.append("</g>")
    for drop in dropped:
        if [pane["start"], pane["end"]] not in drop["panes"]:
            continue
        x, cy = _x(column[drop["seq"]]), bar_y + bar_h / 2
        out.append(f'<g class="dropped" data-seq="{drop["seq"]}" data-t="{drop["t"]}">'
                   f'<circle cx="{x:g}" cy="{cy:g}" r="11" fill="#ffffff" '
                   f'stroke="{COLOURS["drop"]}" stroke-width="2" stroke-dasharray="3 2"/>')
        out.append(_text(x, cy + 4, drop["seq"], 12, weight="bold", fill=COLOURS["drop"]))
        out.append(f'<line x1="{x - 13:g}" y1="{cy + 13:g}" x2="{x + 13:g}" y2="{cy - 13:g}" '
                   f'stroke="{COLOURS["drop"]}" stroke-width="2"/>')
        out.append(_text(x, y + 62, "dropped", 11, weight="bold", fill=COLOURS["drop"]))
        out.append(_text(x, y + 78, f"t < W - {DISCARD}", 11, fill=COLOURS["drop"]))
        out.append("</g>")
    for firing in pane["firings"]:
        x = _x(column[firing["step"]])
        colour = COLOURS[firing["timing"]]
        tuples = ", ".join(str(s) for s in firing["tuples"])
        out.append(f'<g class="firing" data-step="{firing["step"]}" '
                   f'data-timing="{firing["timing"]}" data-index="{firing["index"]}" '
                   f'data-tuples="{" ".join(str(s) for s in firing["tuples"])}">')
        out.append(f'<rect x="{x - 40:g}" y="{y + 50}" width="80" height="18" rx="4" '
                   f'fill="{colour}"/>')
        out.append(_text(x, y + 63, f'{firing["timing"]} #{firing["index"]}', 10.5,
                         weight="bold", fill="#ffffff"))
        out.append(_text(x, y + 84, f"[{tuples}]", 12))
        out.append("</g>")
    out.append("</g>")
    return out


def _legend(y: float) -> list[str]:
    rows = [[("rect", COLOURS["collecting"], "created by its first tuple, collecting tuples"),
             ("rect", COLOURS["complete"], "fired; a late tuple fires it again")],
            [("circle", COLOURS["tuple"], "a tuple joins"),
             ("circle", COLOURS["late"], "a late tuple joins"),
             ("badge", COLOURS["ON_TIME"], "a firing: PANE_TIMING() #PANE_INDEX(), its tuples")]]
    out = ['<g class="legend">']
    for line, items in enumerate(rows):
        x, top = MARGIN, y + 22 * line
        for shape, colour, label in items:
            if shape == "circle":
                out.append(f'<circle cx="{x + 8}" cy="{top + 8}" r="7" fill="{colour}"/>')
            else:
                out.append(f'<rect x="{x}" y="{top}" width="18" height="16" rx="3" '
                           f'fill="{colour}"/>')
            out.append(_text(x + 24, top + 13, label, 12, "start"))
            x += 24 + 7 * len(label) + 28
    out.append(_text(MARGIN, y + 60, "Columns: the input in arrival order (ORDER BY seq), then "
                     "the end of the input. A pane fires when the watermark reaches its end, "
                     "and again at the next watermark after late tuples joined it.", 11,
                     "start", fill=COLOURS["muted"]))
    out.append("</g>")
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("pane-life.svg"))
    args = parser.parse_args(argv)
    args.out.write_text(svg(timeline()), encoding="utf-8", newline="\n")


if __name__ == "__main__":
    main()

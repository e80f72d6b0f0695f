"""The seed examples (the README's main job) produce the sums their documents give."""

import runpy
from pathlib import Path

from sql_ext.samples import seed_examples

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_seed_examples_write_delta_tables(spark):
    results = seed_examples.main(spark)
    count4 = results["seed_count4_cost"]
    assert [(r.tuples, r.cost) for r in count4] == [(4, 10)]
    delta = results["seed_delta_temperature"]
    assert [list(r.temperatures) for r in delta] == [[16.0, 16.4, 17.1], [17.6, 18.0]]
    per_file = results["seed_punct_per_file"]
    assert [(r.window, r.items, r.total) for r in per_file] == [(0, 3, 10.0), (1, 2, 7.0),
                                                                (2, 4, 6.5)]
    by_customer = results["seed_count3_by_customer"]
    assert [(r.customer, list(r.orders)) for r in by_customer] == [
        ("A345", ["x1", "x2", "x3"]), ("B823", ["y1", "y2", "y3"])]
    assert spark.sql("DESCRIBE DETAIL seed_count4_cost").first().format == "delta"


def _seed_001_panes(batches, t0):
    """The pane oracle's last firing of each pane of seed 001 (max lane flow per freeway over
    TIME_INTERVAL(50, 25, 1000, 0), WATERMARK DELAY 5), each batch of readings one micro-batch
    followed by its watermark: (freeway, pane start, flow, timing)."""
    import datetime

    from oracle_panes import pane_firings

    rows, seen = [], []
    for readings in batches:
        rows += [{"pos": len(rows) + i, "t": s, "freeway": f, "flow": v}
                 for i, (s, f, v) in enumerate(readings)]
        seen += [s for s, _, _ in readings]
        rows.append({"pos": len(rows), "wm": max(seen) - 5})
    result = pane_firings(rows, 50, 25, 1000, 0, event_time=lambda r: r.get("t"),
                          partition_by=lambda r: r.get("freeway"), order_by=lambda r: r["pos"],
                          watermark_by=lambda r: r.get("wm"), final_watermark=False)
    last = {(f["partition"], f["pane_start"]): f for f in result["firings"]}
    return sorted((p, t0 + datetime.timedelta(seconds=s), max(r["flow"] for r in f["rows"]),
                   f["timing"]) for (p, s), f in last.items())


def test_traffic_streaming_example_matches_the_pane_oracle(spark, tmp_path):
    """Seed 001 as a streaming table fed file by file, late readings included."""
    example = runpy.run_path(str(EXAMPLES / "traffic_streaming.py"))
    got = sorted((r.freeway, r.time_start, r.flow, r.timing)
                 for r in example["main"](spark, tmp_path))
    assert got == _seed_001_panes(example["FILES"], example["T0"])
    assert any(timing == "LATE" for *_, timing in got)  # the late file re-fired panes


def test_traffic_from_a_kafka_topic_matches_the_pane_oracle(spark, kafka):
    """Seed 001 fed from a Kafka topic (examples/kafka): each round of readings is one
    micro-batch, so the panes are the file example's; the producer command sends readings."""
    import uuid

    example = runpy.run_path(str(EXAMPLES / "kafka" / "traffic_kafka.py"))
    topic = f"traffic_{uuid.uuid4().hex[:8]}"
    got = sorted((r.freeway, r.time_start, r.flow, r.timing)
                 for r in example["main"](spark, kafka, topic))
    assert got == _seed_001_panes(example["ROUNDS"], example["T0"])
    # The producer command: readings keyed by freeway, as the topic table decodes them.
    produce = runpy.run_path(str(EXAMPLES / "kafka" / "produce.py"))
    assert produce["main"](["--bootstrap", kafka, "--topic", topic, "--rate", "5",
                            "--seconds", "1"]) == 0
    assert spark.sql("SELECT COUNT(*) FROM traffic_topic WHERE lane_flow BETWEEN 50 AND 700 "
                     "AND freeway IS NOT NULL").first()[0] == 13 + 5

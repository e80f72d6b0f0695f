"""The seed examples (the README's main job) produce the sums their documents give."""

import runpy
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "seed_examples.py"


def test_seed_examples_write_delta_tables(spark):
    results = runpy.run_path(str(EXAMPLES))["main"](spark)
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

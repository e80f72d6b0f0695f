"""Row filters and column masks of the access rules, on the security suite's signed-in server
(tests/secured.py): eve reads rp.orders through her rule (its filter keeps the EU rows and her
own sales, the card reads as its last four digits, ssn is hidden), in every plan shape, at every
door: plain and windowed SQL, joins, subqueries, CTEs, an admin's view, IDENTIFIER(), EXECUTE
IMMEDIATE, time travel, the change data feed, CACHE, what CTAS and INSERT ... SELECT copy into
her own tables, her streaming tables (a changed rule applies from the next micro-batch), dbt
through the server, and the listings. The oracle is a model of the rule over the admin's rows
(`ROWS`); a property test draws rules and statements at random. Writes to the table are refused
to her, and so is what would show what the rule hides (SELECT *, DESCRIBE HISTORY)."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scale import examples
from secured import as_user, dbt_as, refused, rewrite_rules, rules, run
from test_managed_streams import _until

pytestmark = pytest.mark.xdist_group("secured_server")

COLUMNS = ("id", "region", "card", "ssn", "seller", "amount")
ROWS = [
    (1, "EU", "1111222233334444", "123-45", "x", 10),
    (2, "US", "5555666677778888", "999-99", "eve", 20),
    (3, "US", "9999000011112222", "000-00", "y", 30),
    (4, "EU", "4444333322221111", "111-11", "z", 40),
    (5, "APAC", "1212343456567878", "222-22", "eve", 50),
    (6, "EU", "8765432187654321", "333-33", "w", 60),
    (7, "US", "1357246813572468", "444-44", "q", 70),
    (8, "EU", "2468135724681357", "555-55", "eve", 80),
]
REGIONS = {"EU": "Europe", "US": "America", "APAC": "Asia"}


def _row(values) -> dict:
    return dict(zip(COLUMNS, values))


def seen_by_eve(rows=ROWS, keep=lambda r: r["region"] == "EU" or r["seller"] == "eve",
                masks=None) -> list[dict]:
    """The rows eve reads by her rule (the model): kept by the filter, masked."""
    masks = masks if masks is not None else {"card": lambda r: "****" + r["card"][-4:],
                                             "ssn": lambda r: None}
    return [{c: (masks[c](r) if c in masks else r[c]) for c in COLUMNS}
            for r in map(_row, rows) if keep(r)]


def _values(rows) -> str:
    return ", ".join("(" + ", ".join(repr(v) for v in row) + ")" for row in rows)


@pytest.fixture(scope="module")
def policies(secured_server):
    """The admin's rp.orders (change data feed on), rp.regions, a view of the orders and a
    streaming table of them; eve's database."""
    port, work = secured_server
    root = as_user(port, "root")
    run(root, "CREATE DATABASE IF NOT EXISTS rp")
    run(root, "CREATE TABLE rp.orders (id INT, region STRING, card STRING, ssn STRING, "
              "seller STRING, amount INT) USING DELTA "
              "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    run(root, f"INSERT INTO rp.orders VALUES {_values(ROWS)}")
    run(root, "CREATE TABLE rp.regions USING DELTA AS SELECT * FROM VALUES "
              + ", ".join(f"('{k}', '{v}')" for k, v in REGIONS.items()) + " AS t(region, name)")
    run(root, "CREATE VIEW rp.orders_view AS SELECT id, card, amount FROM rp.orders")
    run(root, "CREATE VIEW rp.everything AS SELECT * FROM rp.orders")
    # (JDBC's getColumns lists the columns the catalog holds: a Delta table's are in its log.)
    run(root, "CREATE TABLE rp.people USING PARQUET AS SELECT 'ann' AS name, 's' AS secret")
    run(as_user(port, "eve"), "CREATE DATABASE IF NOT EXISTS eve_db")
    return root, work


def test_eve_reads_the_orders_through_her_rule_in_every_plan_shape(secured_server, policies):
    port, _ = secured_server
    eve = as_user(port, "eve")
    visible = seen_by_eve()
    plain = sorted((r["id"], r["region"], r["card"], r["amount"]) for r in visible)
    select = "SELECT id, region, card, amount FROM {} ORDER BY id"
    assert run(eve, select.format("rp.orders")) == plain
    assert run(eve, select.format("IDENTIFIER('rp.' || 'orders')")) == plain
    assert run(eve, f"EXECUTE IMMEDIATE '{select.format('rp.orders')}'") == plain
    assert run(eve, "WITH c AS (SELECT * EXCEPT (ssn) FROM rp.orders) "
                    "SELECT id, region, card, amount FROM c ORDER BY id") == plain
    assert run(eve, "SELECT * EXCEPT (ssn, seller) FROM rp.orders ORDER BY id") == plain
    assert run(eve, "SELECT id, region, card, amount FROM (SELECT * FROM rp.orders) "
                    "ORDER BY id") == plain
    # The admin's views: their query reads the table with the reader's rule.
    assert run(eve, "SELECT * FROM rp.orders_view ORDER BY id") == [
        (r["id"], r["card"], r["amount"]) for r in sorted(visible, key=lambda r: r["id"])]
    assert run(eve, "SELECT id FROM rp.everything ORDER BY id") == [(row[0],) for row in plain]
    # Aggregates, joins and subqueries see the filtered rows and the masked values.
    totals = defaultdict(lambda: [0, 0])
    for r in visible:
        totals[r["region"]][0] += 1
        totals[r["region"]][1] += r["amount"]
    assert run(eve, "SELECT region, COUNT(*), SUM(amount) FROM rp.orders GROUP BY region "
                    "ORDER BY region") == sorted((k, n, s) for k, (n, s) in totals.items())
    assert run(eve, "SELECT o.id, r.name, o.card FROM rp.orders o JOIN rp.regions r "
                    "ON o.region = r.region ORDER BY o.id") == sorted(
        (r["id"], REGIONS[r["region"]], r["card"]) for r in visible)
    average = sum(r["amount"] for r in visible) / len(visible)
    assert run(eve, "SELECT id FROM rp.orders WHERE amount > (SELECT AVG(amount) "
                    "FROM rp.orders) ORDER BY id") == sorted(
        (r["id"],) for r in visible if r["amount"] > average)
    assert run(eve, "SELECT a.id, b.card FROM rp.orders a JOIN rp.orders b ON a.id = b.id "
                    "ORDER BY a.id") == [(r[0], r[2]) for r in plain]
    # A predicate on the masked column sees the mask: no raw digit matches.
    assert run(eve, "SELECT COUNT(*) FROM rp.orders WHERE card LIKE '1111%'") == [(0,)]
    # A window sees only the filtered rows, in their order, with the masked values.
    windows = []
    for region in sorted({r["region"] for r in visible}):
        rows = sorted((r for r in visible if r["region"] == region), key=lambda r: r["id"])
        for w in range(len(rows) // 2):
            pair = rows[2 * w:2 * w + 2]
            windows.append((region, w, 2, sum(r["amount"] for r in pair),
                            max(r["card"] for r in pair)))
    assert run(eve, "SELECT region, WINDOW_ID() AS w, COUNT(*) AS n, SUM(amount) AS s, "
                    "MAX(card) AS c FROM rp.orders WINDOW TUMBLING COUNT(2) "
                    "OVER (PARTITION BY region ORDER BY id) ORDER BY region, w") == windows
    # The admin reads the table as it is.
    assert run(policies[0], "SELECT COUNT(*), MAX(card) FROM rp.orders") == [
        (8, "9999000011112222")]


def test_a_hidden_column_cannot_be_named_or_selected(secured_server, policies):
    port, _ = secured_server
    eve = as_user(port, "eve")
    hidden = ("the column ssn of rp.orders is hidden from eve", "SELECT * EXCEPT (ssn)")
    for sql in ("SELECT * FROM rp.orders", "TABLE rp.orders", "SELECT ssn FROM rp.orders",
                "SELECT id FROM rp.orders WHERE ssn IS NULL",
                "SELECT COUNT(DISTINCT ssn) FROM rp.orders",
                "SELECT x FROM (SELECT ssn AS x FROM rp.orders)",
                "SELECT id FROM rp.orders WHERE id IN (SELECT length(ssn) FROM rp.orders)",
                "SELECT * FROM rp.everything",
                "CREATE TABLE eve_db.all_of_it USING DELTA AS SELECT * FROM rp.orders",
                "SELECT COUNT(*) AS n FROM rp.orders WINDOW TUMBLING COUNT(1) "
                "OVER (PARTITION BY ssn)"):
        refused(eve, sql, "tables", "eve", *hidden)
    # Listings do not show it.
    assert "ssn" not in [row[0] for row in run(eve, "DESCRIBE TABLE rp.orders")]
    assert "ssn" not in [row[0] for row in run(eve, "SHOW COLUMNS IN rp.orders")]
    assert "ssn" in [row[0] for row in run(policies[0], "DESCRIBE TABLE rp.orders")]
    from test_thrift_auth import _metadata_call

    def columns(user, password):
        return {row[3] for row in _metadata_call(port, user, password, "GetColumns",
                                                 schemaName="rp", tableName="people",
                                                 columnName="%")}
    assert columns("eve", "3ve") == {"name"}
    assert columns("root", "admin-pw") == {"name", "secret"}
    assert [row[0] for row in run(eve, "DESCRIBE TABLE rp.people")] == ["name"]
    refused(eve, "SELECT * FROM rp.people", "tables", "eve", "the column secret of rp.people")
    assert run(eve, "SELECT name FROM rp.people") == [("ann",)]


def test_what_eve_copies_is_filtered_and_masked_and_the_table_is_hers_to_read_only(
        secured_server, policies):
    port, _ = secured_server
    eve, root = as_user(port, "eve"), policies[0]
    visible = sorted(seen_by_eve(), key=lambda r: r["id"])
    run(eve, "CREATE TABLE eve_db.copy USING DELTA AS SELECT id, card, amount FROM rp.orders")
    run(eve, "CREATE TABLE eve_db.appended (id INT, card STRING) USING DELTA")
    run(eve, "INSERT INTO eve_db.appended SELECT id, card FROM rp.orders")
    assert run(root, "SELECT * FROM eve_db.copy ORDER BY id") == [
        (r["id"], r["card"], r["amount"]) for r in visible]
    assert run(root, "SELECT * FROM eve_db.appended ORDER BY id") == [
        (r["id"], r["card"]) for r in visible]
    # CACHE: the cached rows are eve's, and nobody else's plan meets them.
    run(eve, "CACHE TABLE eve_cached AS SELECT id, card FROM rp.orders")
    assert run(eve, "SELECT * FROM eve_cached ORDER BY id") == [
        (r["id"], r["card"]) for r in visible]
    assert run(root, "SELECT COUNT(*), MAX(card) FROM rp.orders") == [(8, "9999000011112222")]
    run(eve, "UNCACHE TABLE eve_cached")
    # Time travel and the change data feed go through the rule too.
    run(root, "INSERT INTO rp.orders VALUES (9, 'EU', '0000000000009999', '9', 'n', 90)")
    try:
        assert run(eve, "SELECT id, card FROM rp.orders VERSION AS OF 1 ORDER BY id") == [
            (r["id"], r["card"]) for r in visible]
        assert run(eve, "SELECT id, card, _change_type FROM table_changes('rp.orders', 2) "
                        "ORDER BY id") == [(9, "****9999", "insert")]
        # Writes, and what shows beside the rows, are refused: the rule is read-only for her.
        for sql, words in (
                ("INSERT INTO rp.orders SELECT id, region, card, ssn, seller, amount "
                 "FROM rp.orders", "may only read it"),
                ("DELETE FROM rp.orders WHERE id = 1", "DELETE on rp.orders"),
                ("DESCRIBE HISTORY rp.orders", "DESCRIBE HISTORY of rp.orders"),
                ("DESCRIBE TABLE rp.orders card", "DESCRIBE of a column of rp.orders"),
                ("SELECT * FROM window_state('rp.orders')", "rp.orders")):
            refused(eve, sql, "tables", "eve", words)
    finally:
        run(root, "DELETE FROM rp.orders WHERE id = 9")
    assert run(root, "SELECT COUNT(*) FROM rp.orders") == [(8,)]


def test_eve_s_streams_read_through_the_rule_as_it_is_at_each_micro_batch(
        secured_server, policies):
    port, work = secured_server
    eve, root = as_user(port, "eve"), policies[0]
    try:
        # A stream reads with its owner's rights, whoever starts it: the admin's REFRESH of
        # eve's streaming table reads through her rule.
        run(eve, "CREATE STREAMING TABLE eve_db.cards AS SELECT id, MAX(card) AS c FROM "
                 "STREAM(rp.orders) WINDOW TUMBLING COUNT(1) OVER (PARTITION BY id)")
        extra = [(12, "US", "7777777777777777", "7", "m", 120),
                 (13, "EU", "8888888888881234", "8", "m", 130)]
        run(root, f"INSERT INTO rp.orders VALUES {_values(extra)}")
        run(root, "REFRESH STREAMING TABLE eve_db.cards")
        assert run(root, "SELECT id, c FROM eve_db.cards WHERE id > 8 ORDER BY id") == [
            (13, "****1234")]
        run(eve, "CREATE STREAMING TABLE eve_db.sums TRIGGER EVERY 1 AS SELECT region, "
                 "WINDOW_ID() AS w, SUM(amount) AS total, MAX(card) AS c "
                 "FROM STREAM(rp.orders) WINDOW TUMBLING COUNT(1) OVER (PARTITION BY region)")
        run(eve, "CREATE STREAMING TABLE eve_db.names TRIGGER EVERY 1 AS SELECT COUNT(*) AS n "
                 "FROM STREAM(rp.regions) WINDOW TUMBLING COUNT(1)")
        first = sorted((r["region"], r["amount"], r["card"]) for r in seen_by_eve(ROWS + extra))
        sums = "SELECT region, total, c FROM eve_db.sums ORDER BY region, total"
        _until(lambda: run(eve, sums) == first, "the first micro-batch")
        changed = rules(work)
        for rule in changed["tables"]:
            if rule.get("user") == "eve" and rule.get("table") == "orders":
                rule["filter"] = "region = 'US'"
                rule["columns"] = [{"name": "card", "mask": "'XX'"}]
        changed["tables"].insert(0, {"user": "eve", "database": "rp", "table": "regions",
                                     "privileges": ["SELECT"], "filter": "region <> 'EU'"})
        rewrite_rules(work, json.dumps(changed))
        run(root, "INSERT INTO rp.orders VALUES (10, 'EU', '1', '1', 'eve', 100), "
                  "(11, 'US', '2', '2', 'n', 110)")
        run(root, "INSERT INTO rp.regions VALUES ('LATAM', 'Latin America')")
        # The next micro-batch reads through the new rule: the US row, its card as 'XX'.
        _until(lambda: run(eve, sums) == sorted(first + [("US", 110, "XX")]),
               "the micro-batch after the rule changed")
        # A stream that read a table without a rule stops when a rule comes to filter it.
        stopped = _until(lambda: [r for r in run(root, "SHOW STREAMS") if r[0] == "eve_db.names"
                                  and r[1] == "FAILED"], "the stream to stop")
        assert "the access rules now filter or mask rp.regions for eve" in stopped[0][14]
    finally:
        rewrite_rules(work, json.dumps(rules(work)))
        for table in ("sums", "names", "cards"):
            run(eve, f"DROP STREAMING TABLE IF EXISTS eve_db.{table}")
        run(root, "DELETE FROM rp.orders WHERE id > 8")
        run(root, "DELETE FROM rp.regions WHERE region = 'LATAM'")


def test_dbt_through_the_server_reads_through_the_rule(secured_server, policies, tmp_path,
                                                        monkeypatch):
    from test_dbt import _messages

    dbt = dbt_as(secured_server[0], "eve", "eve_db", tmp_path, monkeypatch)
    shown = dbt("show", "--inline", "SELECT id, card FROM rp.orders ORDER BY id",
                "--output", "json", "--limit", "20")
    assert shown.success, _messages(shown)
    assert [tuple(row) for row in shown.result.results[0].agate_table.rows] == [
        (r["id"], r["card"]) for r in sorted(seen_by_eve(), key=lambda r: r["id"])]


# -- a property: random rules and statements ------------------------------------------------

FILTERS = [  # (SQL over the table's columns, the same in Python)
    ("region = 'EU'", lambda r: r["region"] == "EU"),
    ("region IN ('US', 'APAC')", lambda r: r["region"] in ("US", "APAC")),
    ("amount > 35", lambda r: r["amount"] > 35),
    ("id % 2 = 0", lambda r: r["id"] % 2 == 0),
    ("seller = current_user()", lambda r: r["seller"] == "eve"),
    ("card LIKE '1%'", lambda r: r["card"].startswith("1")),
    ("ssn < '300'", lambda r: r["ssn"] < "300"),  # a hidden column may filter
]
CARD_MASKS = [("'XXXX'", lambda r: "XXXX"), ("concat('**', substr(card, -2))",
                                              lambda r: "**" + r["card"][-2:]),
              ("concat(region, card)", lambda r: r["region"] + r["card"]),
              ("NULL", lambda r: None)]
AMOUNT_MASKS = [("amount * 0", lambda r: 0), ("amount - 5", lambda r: r["amount"] - 5),
                ("CASE WHEN region = 'EU' THEN amount ELSE -1 END",
                 lambda r: r["amount"] if r["region"] == "EU" else -1)]


@st.composite
def filters(draw, depth=0):
    if depth >= 2 or draw(st.booleans()):
        return draw(st.sampled_from(FILTERS))
    op = draw(st.sampled_from(("AND", "OR", "NOT")))
    a = draw(filters(depth=depth + 1))
    if op == "NOT":
        return f"NOT ({a[0]})", lambda r, f=a[1]: not f(r)
    b = draw(filters(depth=depth + 1))
    both = (lambda r, f=a[1], g=b[1]: f(r) and g(r)) if op == "AND" else \
        (lambda r, f=a[1], g=b[1]: f(r) or g(r))
    return f"({a[0]}) {op} ({b[0]})", both


@st.composite
def rule_and_model(draw):
    keep = draw(st.one_of(st.none(), filters()))
    card = draw(st.one_of(st.none(), st.sampled_from(CARD_MASKS)))
    amount = draw(st.one_of(st.none(), st.sampled_from(AMOUNT_MASKS)))
    hide_seller = draw(st.booleans())
    columns = [{"name": "ssn", "allow": False}]
    masks = {"ssn": lambda r: None}
    if card:
        columns.append({"name": "card", "mask": card[0]})
        masks["card"] = card[1]
    if amount:
        columns.append({"name": "amount", "mask": amount[0]})
        masks["amount"] = amount[1]
    if hide_seller:
        columns.append({"name": "seller", "allow": False})
        masks["seller"] = lambda r: None
    rule = {"user": "eve", "database": "rp", "table": "orders", "privileges": ["SELECT"],
            "columns": columns}
    if keep:
        rule["filter"] = keep[0]
    return rule, seen_by_eve(keep=keep[1] if keep else lambda r: True, masks=masks)


STATEMENTS = {  # a statement eve may run under any drawn rule -> its result from her rows
    "plain": ("SELECT id, region, card, amount FROM rp.orders",
              lambda rows: [(r["id"], r["region"], r["card"], r["amount"]) for r in rows]),
    "view": ("SELECT id, card, amount FROM rp.orders_view",
             lambda rows: [(r["id"], r["card"], r["amount"]) for r in rows]),
    "aggregate": ("SELECT region, COUNT(*), SUM(amount) FROM rp.orders GROUP BY region",
                  lambda rows: [(k, sum(1 for r in rows if r["region"] == k),
                                 sum(r["amount"] for r in rows if r["region"] == k))
                                for k in {r["region"] for r in rows}]),
    "join": ("SELECT o.id, r.name, o.card FROM rp.orders o JOIN rp.regions r "
             "ON o.region = r.region",
             lambda rows: [(r["id"], REGIONS[r["region"]], r["card"]) for r in rows]),
    "subquery": ("SELECT id, card FROM rp.orders WHERE id IN "
                 "(SELECT id FROM rp.orders WHERE amount >= 30)",
                 lambda rows: [(r["id"], r["card"]) for r in rows if r["amount"] >= 30]),
    "cte": ("WITH c AS (SELECT id, amount FROM rp.orders) SELECT COUNT(*), SUM(amount) FROM c",
            lambda rows: [(len(rows), sum(r["amount"] for r in rows) if rows else None)]),
    "windowed": ("SELECT region, WINDOW_ID() AS w, COUNT(*) AS n, SUM(amount) AS s "
                 "FROM rp.orders WINDOW TUMBLING COUNT(2) OVER (PARTITION BY region ORDER BY id)",
                 lambda rows: [
                     (k, w, 2, sum(r["amount"] for r in sorted(
                         (r for r in rows if r["region"] == k), key=lambda r: r["id"])
                         [2 * w:2 * w + 2]))
                     for k in {r["region"] for r in rows}
                     for w in range(sum(1 for r in rows if r["region"] == k) // 2)]),
}


def _sorted(rows):
    return sorted(rows, key=lambda row: tuple((v is None, str(v)) for v in row))


@settings(max_examples=examples(12, 100, "SQL_EXT_POLICY_EXAMPLES"), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(drawn=rule_and_model(), shapes=st.lists(st.sampled_from(sorted(STATEMENTS)),
                                                min_size=2, max_size=3, unique=True))
def test_random_rules_and_statements_match_the_model(secured_server, policies, drawn, shapes):
    port, work = secured_server
    rule, rows = drawn
    changed = rules(work)
    changed["tables"] = [rule] + [r for r in changed["tables"]
                                  if not (r.get("user") == "eve" and r.get("table") == "orders")]
    rewrite_rules(work, json.dumps(changed))
    try:
        eve = as_user(port, "eve")
        for shape in shapes:
            sql, model = STATEMENTS[shape]
            assert _sorted(run(eve, sql)) == _sorted(model(rows)), (shape, rule)
    finally:
        rewrite_rules(work, json.dumps(rules(work)))

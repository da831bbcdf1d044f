"""`consistency: transaction` in mirror YAML: which transaction topic an entry's topics stop at, what the
sources YAML says of it for `zync run`, and what is refused."""

from __future__ import annotations

import pytest
import yaml

from compiler.mirrors import expand_patterns, load_mirrors
from compiler.properties import render_sources
from compiler.spec import TransformError
from zync.transactions import TRANSACTIONS_META, TRANSACTIONS_OF_META


def _load(tmp_path, text: str):
    path = tmp_path / "db.yml"
    path.write_text(text)
    return path, load_mirrors(path)


def test_a_pattern_entry_stops_its_topics_at_their_connectors_transaction_topic(tmp_path):
    path, loaded = _load(tmp_path, r"""
mirrors:
  - topics: 'pg\.public\..*'
    pool: raw_pg
    consistency: transaction
  - model: notes
    topic: other.public.notes
    pool: raw_pg
    consistency: transaction
    transactions: other.txns
""")
    (expanded,) = expand_patterns([loaded], ["pg.public.orders", "pg.public.lines", "pg.transaction"])
    assert {m.topic: m.transactions for m in expanded.mirrors} == {
        "pg.public.orders": "pg.transaction", "pg.public.lines": "pg.transaction", "other.public.notes": "other.txns"}
    sources = {t["name"]: t for t in yaml.safe_load(render_sources([expanded], [path]))["sources"][0]["tables"]}
    assert sources["raw_pg_public_orders"]["meta"][TRANSACTIONS_META] == "pg.transaction"
    # The transaction topics become pooled sources of their own, which zync run ingests with the pool.
    assert {k: sources["raw_pg_transaction"]["meta"][k] for k in ("zync_topic", "zync_pool", TRANSACTIONS_OF_META)} \
        == {"zync_topic": "pg.transaction", "zync_pool": "raw_pg", TRANSACTIONS_OF_META: "pg"}
    assert sources["raw_other_txns"]["meta"][TRANSACTIONS_OF_META] == "other"
    assert "raw_pg_transaction__dead_letters" not in sources


ORDERS = "model: orders\n    topic: pg.public.orders\n    "


@pytest.mark.parametrize(("entry", "says"), [
    (ORDERS + "consistency: transaction", "`consistency: transaction` needs `pool:`"),
    (ORDERS + "pool: raw_pg\n    consistency: whole", "consistency is one of topic, transaction"),
    (ORDERS + "pool: raw_pg\n    transactions: pg.transaction", "`transactions` names the"),
])
def test_a_consistency_that_cannot_be_kept_is_refused_with_its_line(tmp_path, entry, says):
    with pytest.raises(TransformError) as refused:
        _load(tmp_path, f"mirrors:\n  - {entry}\n")
    assert says in str(refused.value) and "db.yml" in str(refused.value)

"""Contract suite of the audit store, run against SQLite and the machine's PostgreSQL."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from connectors.audit import (
    WAL_AUTOCHECKPOINT_PAGES,
    AnchorRecord,
    AuditStore,
    DocumentIn,
    NewNotarization,
    ReceiptRecord,
)
from connectors.migrations import HEAD_REVISION
from ledger.core.clock import ManualClock
from tests.harness.postgres import PG_URL, blocked_by, conninfo, fresh_schema
from tests.harness.waiting import wait_until

T = TypeVar("T")

START_S = 1_700_000_000.0


def h(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()


CHAIN = h("chain-1")
OTHER_CHAIN = h("chain-2")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START_S)


def add_docs(store: AuditStore, labels: list[str], *, source: str = "folder:/drop") -> list[int]:
    return store.notarizations.upsert_documents(
        source, [DocumentIn(f"{x}.pdf", h(x), len(x)) for x in labels]
    )


def notarize(
    store: AuditStore, labels: list[str], *, chain: str = CHAIN, collection: str = "c1"
) -> list[int]:
    doc_ids = add_docs(store, labels)
    rows = [
        NewNotarization(d, collection, chain, h(x)) for d, x in zip(doc_ids, labels, strict=True)
    ]
    return store.notarizations.add(rows)


def node_receipt(entry_hash: str, *, height: int = 7) -> dict:
    return {
        "entry": {"entryhash": entry_hash, "timestamp": 1_700_000_060},
        "merklebranch": [{"left": entry_hash, "right": h("r"), "top": h("t")}],
        "entryblockkeymr": h("eb"),
        "directoryblockkeymr": h(f"db{height}"),
        "directoryblockheight": height,
    }


# -- documents ----------------------------------------------------------------------------


def test_upsert_documents_returns_ids_in_input_order_and_dedupes(store: AuditStore) -> None:
    ids = add_docs(store, ["a", "b", "a"])
    assert ids[0] == ids[2] and ids[0] != ids[1]
    assert add_docs(store, ["b", "a"]) == [ids[1], ids[0]]


def test_changed_content_at_same_path_is_a_new_document(store: AuditStore) -> None:
    first = store.notarizations.upsert_documents("folder:/d", [DocumentIn("x.pdf", h("v1"), 1)])
    second = store.notarizations.upsert_documents("folder:/d", [DocumentIn("x.pdf", h("v2"), 2)])
    other_source = store.notarizations.upsert_documents(
        "folder:/e", [DocumentIn("x.pdf", h("v1"), 1)]
    )
    assert len({first[0], second[0], other_source[0]}) == 3


def test_upsert_keeps_first_seen_and_moves_last_seen(store: AuditStore, clock) -> None:
    (doc_id,) = add_docs(store, ["a"])
    clock.advance(3600)
    add_docs(store, ["a"])
    with store.engine.connect() as conn:
        row = conn.execute(
            text("SELECT first_seen_at, last_seen_at FROM documents WHERE id = :i"), {"i": doc_id}
        ).one()
    seen = [v if isinstance(v, datetime) else datetime.fromisoformat(v) for v in row]
    assert (seen[1].replace(tzinfo=None) - seen[0].replace(tzinfo=None)).total_seconds() == 3600


def test_upsert_rejects_bad_hex(store: AuditStore) -> None:
    with pytest.raises(ValueError, match="64 hex"):
        store.notarizations.upsert_documents("folder:/d", [DocumentIn("x", "abc", 1)])


def test_upsert_handles_thousands_in_one_call(store: AuditStore) -> None:
    labels = [f"doc{i}" for i in range(2500)]
    ids = add_docs(store, labels)
    assert len(set(ids)) == 2500
    assert add_docs(store, labels[::-1]) == ids[::-1]


# -- notarizations ------------------------------------------------------------------------


def test_add_notarizations_ignores_duplicates_in_batch_and_table(store: AuditStore) -> None:
    first = notarize(store, ["a", "b", "a"])
    assert len(first) == 2
    again = notarize(store, ["a", "c"])
    assert len(again) == 1
    assert store.runs.summary("c1")["pending"] == 3


def test_same_hash_may_be_notarized_in_another_chain(store: AuditStore) -> None:
    notarize(store, ["a"])
    assert len(notarize(store, ["a"], chain=OTHER_CHAIN)) == 1


def test_unique_chain_sha256_is_enforced_by_the_database(store: AuditStore) -> None:
    (doc_id,) = add_docs(store, ["a"])
    notarize(store, ["a"])
    sql = text(
        "INSERT INTO notarizations (document_id, collection, chain_id, sha256, stage, attempts,"
        " created_at, updated_at) VALUES (:d, 'c', :c, :s, 'pending', 0, :t, :t)"
    )
    with pytest.raises(IntegrityError), store.engine.begin() as conn:
        conn.execute(sql, {"d": doc_id, "c": CHAIN, "s": h("a"), "t": datetime.now(UTC)})


def test_known_hashes_is_per_chain(store: AuditStore) -> None:
    notarize(store, ["a", "b"])
    assert store.notarizations.known_hashes(CHAIN, [h("a"), h("z"), h("b")]) == {h("a"), h("b")}
    assert store.notarizations.known_hashes(OTHER_CHAIN, [h("a")]) == set()
    assert store.notarizations.known_hashes(CHAIN, [h("A").upper()]) == set()


def test_concurrent_writers_never_duplicate(store: AuditStore) -> None:
    labels = [f"d{i}" for i in range(300)]
    doc_ids = add_docs(store, labels)
    rows = [NewNotarization(d, "c1", CHAIN, h(x)) for d, x in zip(doc_ids, labels, strict=True)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(store.notarizations.add, [rows] * 4))
    assert sorted(i for r in results for i in r) == sorted(set(i for r in results for i in r))
    assert sum(len(r) for r in results) == 300
    assert store.runs.summary()["pending"] == 300


@contextlib.contextmanager
def two_stores(postgres_url: str) -> Iterator[tuple[str, AuditStore, AuditStore]]:
    """A fresh PostgreSQL schema (dropped at exit) and two audit stores (two workers) on it."""
    with (
        fresh_schema(postgres_url, prefix="test_audit") as schema,
        AuditStore(postgres_url, schema=schema) as first,
        AuditStore(postgres_url, schema=schema) as second,
    ):
        yield schema, first, second


def race_on_locked_rows(
    postgres_url: str,
    schema: str,
    stores: tuple[AuditStore, AuditStore],
    call: Callable[[AuditStore], T],
) -> list[T]:
    """``call`` of each store in its own thread at once: a third session holds every
    notarization's row lock until both calls wait for it, then lets go. Results in order."""
    import psycopg

    with (
        psycopg.connect(conninfo(postgres_url)) as holder,
        psycopg.connect(conninfo(postgres_url), autocommit=True) as watcher,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        holder.execute(f'SELECT id FROM "{schema}".notarizations FOR UPDATE')
        try:
            calls = [pool.submit(call, store) for store in stores]
            pid = holder.info.backend_pid
            wait_until(lambda: blocked_by(watcher, pid) == 2, 30, 0.05, what="2 waiting")
        finally:
            holder.rollback()  # also on failure: the pool waits for its threads
        return [c.result(timeout=30) for c in calls]


@pytest.mark.postgres
def test_two_processes_moving_the_same_rows_log_each_move_once(postgres_url: str) -> None:
    """Two workers sweeping one collection record the same entries at ``ledger`` at once.
    The second update must find the rows moved and log nothing (it logged every move a
    second time when the stages were read before the update)."""
    with two_stores(postgres_url) as (schema, first, second):
        ids = notarize(first, [f"d{i}" for i in range(50)])
        entries = {i: h(f"entry-{i}") for i in ids}
        first.notarizations.mark_published(entries)
        blocks = {e: (7, h("keymr7")) for e in entries.values()}
        moved = race_on_locked_rows(
            postgres_url, schema, (first, second), lambda s: s.notarizations.record_ledger(blocks)
        )
        assert sorted(moved) == [0, len(ids)]
        events = first.notarizations.stage_events(ids)
        assert all([e.stage for e in events[i]].count("ledger") == 1 for i in ids), events


@pytest.mark.postgres
def test_two_processes_failing_the_same_rows_log_failed_once(postgres_url: str) -> None:
    """As above, for ``mark_failed(retryable=False)``: both workers find the rows live,
    and only the first one's update may log ``failed`` (both did when it read first)."""
    with two_stores(postgres_url) as (schema, first, second):
        ids = notarize(first, [f"d{i}" for i in range(20)])
        errors = {i: "receipt rejected" if i % 2 else "entry refused" for i in ids}
        race_on_locked_rows(
            postgres_url,
            schema,
            (first, second),
            lambda s: s.notarizations.mark_failed(errors, retryable=False),
        )
        events = first.notarizations.stage_events(ids)
        assert all([e.stage for e in events[i]].count("failed") == 1 for i in ids), events
        rows = {r.id: r for r in first.notarizations.by_ids(ids)}
        assert {i: (r.stage, r.error, r.attempts) for i, r in rows.items()} == {
            i: ("failed", errors[i], 1) for i in ids
        }


def test_pending_selects_by_stage_range_collection_and_limit(store: AuditStore) -> None:
    ids = notarize(store, ["a", "b", "c"])
    notarize(store, ["d"], collection="c2")
    store.notarizations.mark_published({ids[0]: h("e-a")})
    to_publish = store.notarizations.pending(stage_below="published", collection="c1")
    assert [r.id for r in to_publish] == ids[1:]
    assert [r.path for r in to_publish] == ["b.pdf", "c.pdf"]
    assert to_publish[0].source == "folder:/drop" and to_publish[0].entry_hash is None
    waiting = store.notarizations.pending(stage_from="published", stage_below="ledger")
    assert [(r.id, r.entry_hash, r.stage) for r in waiting] == [(ids[0], h("e-a"), "published")]
    assert len(store.notarizations.pending(stage_below="published", limit=1)) == 1
    assert len(store.notarizations.pending(stage_below="published")) == 3


def test_pending_entries_are_the_ids_and_hashes_of_the_pending_rows(store: AuditStore) -> None:
    ids = notarize(store, ["a", "b", "c", "d"])
    notarize(store, ["e"], collection="c2")
    store.notarizations.mark_published({ids[0]: h("e-a"), ids[2]: h("e-c"), ids[3]: h("e-d")})
    for kwargs in (
        {"stage_below": "published"},
        {"stage_from": "published", "stage_below": "ledger"},
        {"stage_from": "published", "stage_below": "ledger", "collection": "c1", "limit": 1},
        {"stage_from": "published", "stage_below": "ledger", "after_id": ids[0]},
    ):
        rows = store.notarizations.pending(**kwargs)
        assert store.notarizations.pending_entries(**kwargs) == [(r.id, r.entry_hash) for r in rows]
    assert store.notarizations.pending_entries(stage_from="published", stage_below="ledger") == [
        (ids[0], h("e-a")),
        (ids[2], h("e-c")),
        (ids[3], h("e-d")),
    ]


def test_pending_pages_rows_of_several_stages_in_id_order(store: AuditStore) -> None:
    # Rows of two stages interleaved by id: every page is the lowest ids of both stages
    # (one query per stage, merged), with no row skipped or repeated across pages.
    ids = notarize(store, [f"r{i}" for i in range(9)])
    store.notarizations.mark_published({i: h(f"e{i}") for i in ids})
    store.notarizations.mark_stage([h(f"e{i}") for i in ids[1::3]], "multi_az")
    store.notarizations.mark_stage([h(f"e{i}") for i in ids[2::3]], "ledger")
    waiting = [i for n, i in enumerate(ids) if n % 3 != 2]
    kwargs = {"stage_from": "published", "stage_below": "ledger", "collection": "c1"}
    pages: list[list[int]] = []
    after = 0
    while page := store.notarizations.pending_entries(**kwargs, limit=2, after_id=after):
        pages.append([i for i, _ in page])
        after = page[-1][0]
    assert pages == [waiting[k : k + 2] for k in range(0, len(waiting), 2)]
    rows = store.notarizations.pending(**kwargs, limit=3, after_id=waiting[0])
    assert [(r.id, r.stage) for r in rows] == [
        (waiting[1], "multi_az"),
        (waiting[2], "published"),
        (waiting[3], "multi_az"),
    ]


def test_stage_changes_go_forward_only_and_log_events(store: AuditStore, clock) -> None:
    (nid,) = notarize(store, ["a"])
    e = h("entry-a")
    assert store.notarizations.mark_published({nid: e.upper()}) == 1
    clock.advance(10)
    assert store.notarizations.mark_stage([e], "multi_az") == 1
    clock.advance(10)
    assert store.notarizations.record_ledger({e: (42, h("keymr42"))}) == 1
    assert store.notarizations.mark_stage([e], "multi_az") == 0  # never backwards
    assert store.notarizations.mark_published({nid: h("other")}) == 0
    clock.advance(10)
    assert (
        store.notarizations.mark_stage([e], "anchor", details={e: {"anchor_block_hash": h("btc")}})
        == 1
    )
    assert store.notarizations.pending(stage_from="published", stage_below="anchor") == []
    (proof,) = store.proofs.records()
    n = proof.notarization
    assert (n.stage, n.entry_hash, n.dblock_height, n.dblock_keymr) == (
        "anchor",
        e,
        42,
        h("keymr42"),
    )
    assert n.published_at == datetime.fromtimestamp(START_S, UTC)
    assert n.ledger_at == datetime.fromtimestamp(START_S + 20, UTC)
    assert n.anchored_at == datetime.fromtimestamp(START_S + 30, UTC)
    events = store.notarizations.events(nid)
    assert [ev.stage for ev in events] == ["pending", "published", "multi_az", "ledger", "anchor"]
    assert events[3].details == {"dblock_height": 42, "dblock_keymr": h("keymr42")}
    assert events[4].details == {"anchor_block_hash": h("btc")}
    assert all(ev.at.tzinfo is not None for ev in events)


def test_stages_may_be_skipped(store: AuditStore) -> None:
    (nid,) = notarize(store, ["a"])
    store.notarizations.mark_published({nid: h("e")})
    assert store.notarizations.record_ledger({h("e"): (3, h("k"))}) == 1
    assert [ev.stage for ev in store.notarizations.events(nid)] == [
        "pending",
        "published",
        "ledger",
    ]


def test_mark_stage_rejects_pending_and_failed(store: AuditStore) -> None:
    for stage in ("pending", "failed"):
        with pytest.raises(ValueError):
            store.notarizations.mark_stage([h("e")], stage)


def test_retryable_error_keeps_stage_and_counts_attempts(store: AuditStore) -> None:
    (nid,) = notarize(store, ["a"])
    store.notarizations.mark_failed({nid: "service down"}, retryable=True)
    store.notarizations.mark_failed({nid: "still down"}, retryable=True)
    (row,) = store.notarizations.pending(stage_below="published")
    assert (row.stage, row.attempts, row.error) == ("pending", 2, "still down")
    store.notarizations.mark_published({nid: h("e")})
    (row,) = store.notarizations.pending(stage_from="published", stage_below="ledger")
    assert row.error is None
    assert [ev.stage for ev in store.notarizations.events(nid)] == [
        "pending",
        "error",
        "error",
        "published",
    ]


def test_terminal_failure_is_final(store: AuditStore) -> None:
    a, b = notarize(store, ["a", "b"])
    store.notarizations.mark_failed({a: "rejected: 422"}, retryable=False)
    assert [r.id for r in store.notarizations.pending(stage_below="anchor")] == [b]
    assert store.notarizations.mark_published({a: h("e")}) == 0
    store.notarizations.mark_failed({a: "again"}, retryable=False)  # no second event
    assert [ev.stage for ev in store.notarizations.events(a)] == ["pending", "failed"]
    assert store.notarizations.known_hashes(CHAIN, [h("a")]) == {h("a")}
    assert store.runs.summary("c1") == {
        "pending": 1,
        "published": 0,
        "multi_az": 0,
        "ledger": 0,
        "anchor": 0,
        "failed": 1,
    }


def test_summary_per_collection(store: AuditStore) -> None:
    ids = notarize(store, ["a", "b"])
    notarize(store, ["c"], collection="c2")
    store.notarizations.mark_published({ids[0]: h("e")})
    assert store.runs.summary("c1")["published"] == 1
    assert store.runs.summary("c1")["pending"] == 1
    assert store.runs.summary("c2")["pending"] == 1
    assert sum(store.runs.summary().values()) == 3
    assert set(store.runs.summary("none").values()) == {0}


def test_a_runs_notarizations_by_hash_and_their_progress(
    store: AuditStore, clock: ManualClock
) -> None:
    """``notarized_at`` (id and creation time per hash of a chain) and ``progress`` (stage
    and stored receipt per id): what a run counts its own documents with."""
    a, b = notarize(store, ["a", "b"])
    clock.advance(5)
    (c,) = notarize(store, ["c"])
    notarize(store, ["a"], chain=OTHER_CHAIN)
    labels = ["a", "b", "c", "not-notarized"]
    found = store.notarizations.notarized_at(CHAIN, [h(x).upper() for x in labels] + [h("a")])
    start = datetime.fromtimestamp(START_S, UTC)
    assert found == {
        h("a"): (a, start),
        h("b"): (b, start),
        h("c"): (c, start + timedelta(seconds=5)),
    }
    store.notarizations.mark_published({a: h("ea"), b: h("eb")})
    store.notarizations.record_ledger({h("ea"): (7, h("db7"))})
    verified = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    store.proofs.save_receipts(
        [ReceiptRecord.from_node(node_receipt(h("ea")), verified_at=verified)]
    )
    store.notarizations.mark_failed({c: "refused"}, retryable=False)
    assert store.runs.progress([a, b, c, a, 10_000]) == {
        a: ("ledger", True),
        b: ("published", False),
        c: ("failed", False),
    }
    assert store.runs.progress([]) == {}


def test_mark_published_then_moves_on_in_the_same_call(store: AuditStore, clock) -> None:
    a, b, c = notarize(store, ["a", "b", "c"])
    store.notarizations.mark_published({b: h("eb")})  # b was published by an earlier run
    store.notarizations.mark_failed({c: "refused"}, retryable=False)
    clock.advance(5)
    moved = store.notarizations.mark_published(
        {a: h("ea"), b: h("eb"), c: h("ec")}, then="multi_az"
    )
    assert moved == 1  # only a was pending
    stages = {p.notarization.id: p.notarization.stage for p in store.proofs.records()}
    assert stages == {a: "multi_az", b: "multi_az", c: "failed"}
    assert [ev.stage for ev in store.notarizations.events(a)] == [
        "pending",
        "published",
        "multi_az",
    ]
    assert [ev.stage for ev in store.notarizations.events(b)] == [
        "pending",
        "published",
        "multi_az",
    ]
    (row_a,) = [p.notarization for p in store.proofs.records() if p.notarization.id == a]
    assert row_a.entry_hash == h("ea")
    assert row_a.multi_az_at == datetime.fromtimestamp(START_S + 5, UTC)
    for stage in ("pending", "published", "failed"):
        with pytest.raises(ValueError):
            store.notarizations.mark_published({a: h("ea")}, then=stage)  # type: ignore[arg-type]


def test_moves_of_many_rows_sharing_values_keep_each_rows_values(store: AuditStore) -> None:
    ids = notarize(store, [f"x{i}" for i in range(40)])
    store.notarizations.mark_published({i: h(f"e{i}") for i in ids})  # one value per row
    # two directory blocks: each row keeps its own (one UPDATE per block)
    assert (
        store.notarizations.record_ledger({h(f"e{i}"): (i % 2, h(f"k{i % 2}")) for i in ids}) == 40
    )
    for proof in store.proofs.records():
        n = proof.notarization
        assert n.entry_hash == h(f"e{n.id}")
        assert (n.stage, n.dblock_height, n.dblock_keymr) == ("ledger", n.id % 2, h(f"k{n.id % 2}"))
        details = store.notarizations.events(n.id)[-1].details
        assert details == {"dblock_height": n.id % 2, "dblock_keymr": h(f"k{n.id % 2}")}
    assert (
        store.notarizations.record_ledger({h(f"e{i}"): (9, h("k9")) for i in ids}) == 0
    )  # not moved again
    assert {p.notarization.dblock_height for p in store.proofs.records()} == {0, 1}


def test_record_receipts_saves_them_and_moves_their_rows_to_ledger(store: AuditStore) -> None:
    a, b, c = notarize(store, ["a", "b", "c"])
    store.notarizations.mark_published({a: h("ea"), b: h("eb"), c: h("ec")})
    verified = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    records = [
        ReceiptRecord.from_node(node_receipt(h("ea"), height=7), verified_at=verified),
        ReceiptRecord.from_node(node_receipt(h("eb"), height=8), verified_at=verified),
        ReceiptRecord.from_node(node_receipt(h("nope")), verified_at=verified),
    ]
    assert store.proofs.record_receipts(records) == 2
    assert store.proofs.record_receipts(records) == 0
    assert store.runs.receipt_count("c1") == 2
    proofs = {p.notarization.id: p for p in store.proofs.records(collection="c1")}
    for nid, height, record in ((a, 7, records[0]), (b, 8, records[1])):
        n = proofs[nid].notarization
        assert (n.stage, n.dblock_height, n.dblock_keymr) == ("ledger", height, h(f"db{height}"))
        assert proofs[nid].receipt == record
    assert proofs[c].receipt is None and proofs[c].notarization.stage == "published"
    assert store.proofs.missing_receipts() == []


def test_batch_stage_updates_of_thousands(store: AuditStore) -> None:
    labels = [f"x{i}" for i in range(1200)]
    ids = notarize(store, labels)
    assert store.notarizations.mark_published({i: h(f"e{i}") for i in ids}) == 1200
    blocks = {h(f"e{i}"): (i % 5, h(f"k{i % 5}")) for i in ids}
    assert store.notarizations.record_ledger(blocks) == 1200
    assert store.runs.summary()["ledger"] == 1200


# -- receipts -----------------------------------------------------------------------------


def test_receipts_saved_once_and_returned_with_proofs(store: AuditStore) -> None:
    a, b = notarize(store, ["a", "b"])
    store.notarizations.mark_published({a: h("ea"), b: h("eb")})
    store.notarizations.record_ledger({h("ea"): (7, h("db7")), h("eb"): (7, h("db7"))})
    assert [r.id for r in store.proofs.missing_receipts()] == [a, b]
    verified = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    record = ReceiptRecord.from_node(node_receipt(h("ea")), verified_at=verified)
    unknown = ReceiptRecord.from_node(node_receipt(h("nope")), verified_at=verified)
    assert store.proofs.save_receipts([record, unknown]) == 1
    assert store.proofs.save_receipts([record]) == 0
    assert [r.id for r in store.proofs.missing_receipts()] == [b]
    proofs = {p.notarization.id: p for p in store.proofs.records(collection="c1")}
    assert proofs[b].receipt is None
    assert proofs[a].receipt == record
    (only_a,) = store.proofs.records(sha256=h("a"))
    assert only_a.receipt is not None and only_a.receipt.raw == node_receipt(h("ea"))


def test_receipt_from_node_rejects_malformed() -> None:
    with pytest.raises(ValueError, match="receipt"):
        ReceiptRecord.from_node({"entry": {}}, verified_at=datetime.now(UTC))


# -- runs ---------------------------------------------------------------------------------


def test_runs_record_start_finish_and_counts(store: AuditStore, clock) -> None:
    run_id = store.runs.start("notarize-folder", parameters={"root": "/drop"})
    started = store.runs.get(run_id)
    assert started is not None and started["status"] == "running"
    clock.advance(5)
    store.runs.finish(run_id, counts={"hashed": 10, "published": 9})
    run = store.runs.get(run_id)
    assert run is not None
    assert run["status"] == "completed" and run["counts"] == {"hashed": 10, "published": 9}
    assert (run["finished_at"] - run["started_at"]).total_seconds() == 5
    assert run["parameters"] == {"root": "/drop"}
    with pytest.raises(KeyError):
        store.runs.finish(run_id + 99, counts={})
    assert store.runs.get(run_id + 99) is None


def test_data_survives_reopening(backend: dict, clock) -> None:
    with AuditStore(backend["url"], clock=clock, schema=backend.get("schema")) as first:
        notarize(first, ["a"])
    with AuditStore(backend["url"], clock=clock, schema=backend.get("schema")) as second:
        assert second.notarizations.known_hashes(CHAIN, [h("a")]) == {h("a")}


# -- backend specifics ---------------------------------------------------------------------


def test_sqlite_file_uses_wal(tmp_path) -> None:
    path = tmp_path / "nested" / "audit.db"
    with AuditStore(f"sqlite:///{path}") as store:
        notarize(store, ["a"])
        with store._engine.connect() as conn:  # the store's own connections
            pages = conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar()
    assert pages == WAL_AUTOCHECKPOINT_PAGES == 50_000
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connection.close()


def test_in_memory_sqlite_works() -> None:
    with AuditStore("sqlite://") as store:
        assert len(notarize(store, ["a"])) == 1


def test_unsupported_backends_and_options_are_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="unsupported"):
        AuditStore("mysql+pymysql://127.0.0.1/x", create_tables=False)
    with pytest.raises(ValueError, match="PostgreSQL"):
        AuditStore(f"sqlite:///{tmp_path / 'a.db'}", schema="s")
    with pytest.raises(ValueError, match="schema"):
        AuditStore(PG_URL, schema='x"; drop', create_tables=False)


def test_audit_tables_do_not_leak_into_sqlmodel_global_metadata() -> None:
    from sqlmodel import SQLModel

    assert "notarizations" not in SQLModel.metadata.tables


# -- anchors ------------------------------------------------------------------------------


def node_anchors(
    height: int, *, keymr: str | None = None, confirmations: int | None = None
) -> dict:
    pow_anchor: dict = {"transactionhash": h(f"tx{height}"), "blockhash": h(f"blk{height}")}
    if confirmations is not None:
        pow_anchor["confirmations"] = confirmations
    return {
        "directoryblockheight": height,
        "directoryblockkeymr": keymr or h(f"db{height}"),
        "anchor_pow": pow_anchor,
        "anchor_contract": False,
    }


def to_ledger(store: AuditStore, labels: list[str], height: int, **kw) -> list[int]:
    ids = notarize(store, labels, **kw)
    store.notarizations.mark_published({i: h(f"e-{x}") for i, x in zip(ids, labels, strict=True)})
    store.notarizations.record_ledger({h(f"e-{x}"): (height, h(f"db{height}")) for x in labels})
    return ids


def test_anchor_record_from_node_reads_anchor_pow() -> None:
    at = datetime(2024, 5, 6, tzinfo=UTC)
    record = AnchorRecord.from_node(node_anchors(9, confirmations=3), verified_at=at)
    assert (record.dblock_height, record.dblock_keymr) == (9, h("db9"))
    assert (record.transaction_id, record.anchor_block_hash) == (h("tx9"), h("blk9"))
    assert record.confirmations == 3 and record.raw["anchor_contract"] is False
    assert (
        AnchorRecord.from_node(node_anchors(9), verified_at=at, confirmations=7).confirmations == 7
    )
    assert AnchorRecord.from_node(node_anchors(9), verified_at=at).confirmations == 0
    for bad in ({"directoryblockheight": 9}, {**node_anchors(9), "anchor_pow": False}):
        with pytest.raises(ValueError, match="anchor_pow"):
            AnchorRecord.from_node(bad, verified_at=at)


def test_rows_awaiting_anchor_are_ledger_rows_grouped_by_block(store: AuditStore) -> None:
    a, b = to_ledger(store, ["a", "b"], 7)
    (c,) = to_ledger(store, ["c"], 8, collection="c2")
    notarize(store, ["pending-only"])
    assert [r.id for r in store.proofs.awaiting_anchor()] == [a, b, c]
    assert [r.id for r in store.proofs.awaiting_anchor(collection="c2")] == [c]
    assert [r.id for r in store.proofs.awaiting_anchor(limit=1, after_id=a)] == [b]
    assert store.proofs.awaiting_anchor_blocks() == [(7, h("db7")), (8, h("db8"))]
    assert store.proofs.awaiting_anchor_blocks(collection="c1") == [(7, h("db7"))]


def test_record_anchors_moves_the_block_rows_and_logs_events(store: AuditStore, clock) -> None:
    a, b = to_ledger(store, ["a", "b"], 7)
    (c,) = to_ledger(store, ["c"], 8)
    clock.advance(60)
    verified = datetime(2024, 5, 6, tzinfo=UTC)
    record = AnchorRecord.from_node(node_anchors(7, confirmations=1), verified_at=verified)
    assert store.proofs.record_anchors([record]) == 2
    assert [r.id for r in store.proofs.awaiting_anchor()] == [c]
    rows = {p.notarization.id: p.notarization for p in store.proofs.records()}
    assert rows[a].stage == rows[b].stage == "anchor"
    assert rows[a].anchored_at == datetime.fromtimestamp(START_S + 60, UTC)
    events = store.notarizations.events(a)
    assert [e.stage for e in events][-1] == "anchor"
    assert events[-1].details == {
        "dblock_height": 7,
        "anchor_block_hash": h("blk7"),
        "transaction_id": h("tx7"),
        "confirmations": 1,
    }
    assert store.proofs.anchors() == {a: record, b: record}
    assert store.runs.summary()["anchor"] == 2


def test_recording_again_refreshes_confirmations_without_new_events(store: AuditStore) -> None:
    (a,) = to_ledger(store, ["a"], 7)
    at = datetime(2024, 5, 6, tzinfo=UTC)
    store.proofs.record_anchors([AnchorRecord.from_node(node_anchors(7), verified_at=at)])
    later = AnchorRecord.from_node(node_anchors(7, confirmations=6), verified_at=at)
    assert store.proofs.record_anchors([later]) == 0
    assert store.proofs.anchors(notarization_ids=[a])[a].confirmations == 6
    assert [e.stage for e in store.notarizations.events(a)].count("anchor") == 1


def test_anchor_for_another_block_keymr_is_not_applied(store: AuditStore) -> None:
    (a,) = to_ledger(store, ["a"], 7)
    at = datetime(2024, 5, 6, tzinfo=UTC)
    forged = AnchorRecord.from_node(node_anchors(7, keymr=h("other")), verified_at=at)
    assert store.proofs.record_anchors([forged]) == 0
    assert store.proofs.anchors() == {}
    assert [r.id for r in store.proofs.awaiting_anchor()] == [a]


def test_record_anchors_respects_collection_and_skips_failed(store: AuditStore) -> None:
    (a,) = to_ledger(store, ["a"], 7)
    (b,) = to_ledger(store, ["b"], 7, collection="c2")
    (c,) = to_ledger(store, ["c"], 7)
    store.notarizations.mark_failed({c: "receipt rejected"}, retryable=False)
    at = datetime(2024, 5, 6, tzinfo=UTC)
    record = AnchorRecord.from_node(node_anchors(7), verified_at=at)
    assert store.proofs.record_anchors([record], collection="c2") == 1
    assert set(store.proofs.anchors()) == {b}
    assert store.proofs.record_anchors([record]) == 1
    assert set(store.proofs.anchors()) == {a, b}
    assert set(store.proofs.anchors(collection="c1")) == {a}


def test_record_anchors_rejects_bad_hex(store: AuditStore) -> None:
    to_ledger(store, ["a"], 7)
    bad = AnchorRecord(7, h("db7"), "xyz", h("tx"), 0, {}, datetime.now(UTC))
    with pytest.raises(ValueError, match="64 hex"):
        store.proofs.record_anchors([bad])


def test_stage_events_in_one_call(store: AuditStore) -> None:
    a, b = to_ledger(store, ["a", "b"], 7)
    (c,) = notarize(store, ["c"])
    events = store.notarizations.stage_events([a, b, c, 9999])
    assert set(events) == {a, b, c}
    assert events[a] == store.notarizations.events(a)
    assert [e.stage for e in events[c]] == ["pending"]


def test_proofs_filter_by_creation_period(store: AuditStore, clock) -> None:
    (early,) = notarize(store, ["early"])
    clock.advance(100)
    (late,) = notarize(store, ["late"])
    cut = datetime.fromtimestamp(START_S + 50, UTC)
    assert [p.notarization.id for p in store.proofs.records(since=cut)] == [late]
    assert [p.notarization.id for p in store.proofs.records(until=cut)] == [early]


def test_opened_store_is_at_the_newest_schema_revision(store: AuditStore) -> None:
    assert store.schema_revision() == HEAD_REVISION


def test_stage_values_are_checked_by_the_database(store: AuditStore) -> None:
    (nid,) = notarize(store, ["a"])
    with pytest.raises(IntegrityError), store.engine.begin() as conn:
        conn.execute(text("UPDATE notarizations SET stage = 'bogus' WHERE id = :i"), {"i": nid})

"""Collections, batches and their members in the audit store, on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from connectors.audit import (
    AnchorRecord,
    AuditPathError,
    AuditStore,
    CollectionModeError,
    DocumentIn,
    NewMember,
    NewNotarization,
    PublishMode,
)
from connectors.audit.sql import hex64, hex64_all
from tasks.documents import aggregation_tree, batch_members, chain_for, collection_chain_id
from tasks.steps import record_aggregate, record_new_documents


def h(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()


def open_store(backend: dict) -> AuditStore:
    return AuditStore(backend["url"], schema=backend.get("schema"))


@pytest.fixture
def store(backend: dict) -> Iterator[AuditStore]:
    with open_store(backend) as audit:
        yield audit


def collection(store: AuditStore, name: str, mode: PublishMode = "aggregate"):  # noqa: ANN201
    return store.collections.use(name, mode, chain_namer=chain_for)


def hex_paths(key: bytes, sha256s: list[str]) -> list[tuple[str, ...]]:
    """Every leaf's audit path (hex) in the tree of these documents' commitments."""
    tree = aggregation_tree(key, sha256s)
    return [tuple(x.hex() for x in tree.audit_path(i)) for i in range(tree.size)]


def docs(labels: str, *, source: str = "folder:/drop") -> list[DocumentIn]:
    return [DocumentIn(f"secret/{x}.pdf", h(x), 100 + i) for i, x in enumerate(labels)]


# -- collections --------------------------------------------------------------------------


def test_a_new_collection_gets_a_key_and_a_chain_that_names_nothing(store: AuditStore) -> None:
    record = collection(store, "/home/hr/terminations")
    assert len(record.key) == 32 and len(record.identifier) == 16
    assert record.mode == "aggregate" and record.private
    assert record.chain_id == chain_for(record.name, record.identifier, "aggregate")
    assert record.chain_id != collection_chain_id(record.name)
    assert record.key.hex() not in repr(record)
    assert collection(store, "/home/hr/terminations") == record  # same key on every use


def test_aggregate_and_entry_share_the_chain_clear_is_refused(store: AuditStore) -> None:
    first = collection(store, "c", "aggregate")
    entry = collection(store, "c", "entry")
    assert (entry.mode, entry.chain_id, entry.key) == ("entry", first.chain_id, first.key)
    with pytest.raises(CollectionModeError) as refused:
        collection(store, "c", "clear")
    assert (refused.value.registered, refused.value.requested) == ("entry", "clear")
    clear = collection(store, "plain", "clear")
    assert clear.chain_id == collection_chain_id("plain") and not clear.private
    with pytest.raises(CollectionModeError, match="--mode clear"):
        collection(store, "plain", "aggregate")


def test_a_collection_with_v1_notarizations_is_registered_clear(store: AuditStore) -> None:
    (doc_id,) = store.notarizations.upsert_documents("folder:/old", docs("a"))
    legacy_chain = collection_chain_id("old")
    store.notarizations.add([NewNotarization(doc_id, "old", legacy_chain, h("a"))])
    with pytest.raises(CollectionModeError):
        collection(store, "old", "aggregate")
    record = collection(store, "old", "clear")
    assert (record.mode, record.chain_id) == ("clear", legacy_chain)
    # a run that chose no mode goes on in the collection's own
    default = store.collections.use("old", "aggregate", chain_namer=chain_for, mode_is_default=True)
    assert default == record
    fresh = store.collections.use("new", "aggregate", chain_namer=chain_for, mode_is_default=True)
    assert fresh.mode == "aggregate"


def test_concurrent_first_uses_get_the_same_collection(backend: dict) -> None:
    def first_use(_: int) -> tuple[bytes, str]:
        with open_store(backend) as own:
            record = collection(own, "shared")
            return record.key, record.chain_id

    with open_store(backend):  # migrate once, before the race
        pass
    with ThreadPoolExecutor(4) as pool:
        assert len(set(pool.map(first_use, range(4)))) == 1


# -- batches ------------------------------------------------------------------------------


def add_batch(store: AuditStore, labels: str, *, name: str = "c") -> tuple[int, int] | None:
    record = collection(store, name)
    ids = store.notarizations.upsert_documents("folder:/drop", docs(labels))
    return record_aggregate.fn(store, record, list(zip(ids, [h(x) for x in labels], strict=True)))


def test_a_batch_is_one_notarization_and_its_documents_are_members(store: AuditStore) -> None:
    added = add_batch(store, "abc")
    assert added is not None
    batch_id, claimed = added
    assert claimed == 3
    (row,) = store.notarizations.pending(stage_below="published")
    assert (row.id, row.kind, row.batch_size, row.source) == (batch_id, "batch", 3, "batch:c")
    record = collection(store, "c")
    assert store.notarizations.known_hashes(record.chain_id, [h("a"), h("b"), h("z")]) == {
        h("a"),
        h("b"),
    }
    assert (
        store.notarizations.known_hashes(record.chain_id, [row.sha256]) == set()
    )  # a root is no document
    assert store.runs.summary("c")["pending"] == 3
    proofs = store.proofs.records(collection="c")
    assert [p.notarization.path for p in proofs] == ["secret/a.pdf", "secret/b.pdf", "secret/c.pdf"]
    assert all(p.notarization.is_member and p.notarization.id == batch_id for p in proofs)
    assert [p.notarization.leaf_index for p in proofs] == [0, 1, 2]
    assert proofs[0].notarization.batch_root == row.sha256
    root, _members = batch_members(record.key, [(0, h("a")), (1, h("b")), (2, h("c"))])
    assert root == row.sha256
    assert proofs[2].notarization.audit_path == hex_paths(record.key, [h("a"), h("b"), h("c")])[2]
    (batch,) = store.batches.read(collection="c")
    assert (batch.size, batch.members, batch.stage) == (3, 3, "pending")
    assert [m.path for m in store.batches.members(batch_id)] == [
        p.notarization.path for p in proofs
    ]
    assert store.batches.member_counts([batch_id]) == {batch_id: 3}

    store.notarizations.mark_published({batch_id: h("entry")})
    store.notarizations.record_ledger({h("entry"): (7, h("dblock"))})
    assert store.runs.summary("c")["ledger"] == 3
    assert {p.notarization.stage for p in store.proofs.records(sha256=h("b"))} == {"ledger"}
    raw = {
        "directoryblockheight": 7,
        "directoryblockkeymr": h("dblock"),
        "anchor_pow": {"transactionhash": h("tx"), "blockhash": h("blk")},
    }
    anchor = AnchorRecord.from_node(raw, verified_at=datetime(2024, 1, 1, tzinfo=UTC))
    assert (
        store.proofs.record_anchors([anchor]) == 1
    )  # one batch row moves, its 3 documents with it
    assert store.runs.summary("c")["anchor"] == 3
    assert len(store.proofs.anchors(collection="c")) == 1  # stored once, for the batch
    parts = store.proofs.of_document("c", h("c"))
    assert parts is not None
    member, stored_anchor = parts
    assert (member.notarization.path, member.notarization.leaf_index) == ("secret/c.pdf", 2)
    assert stored_anchor is not None and stored_anchor.transaction_id == h("tx")
    assert store.proofs.of_document("c", h("nope")) is None


def test_a_batch_of_several_insert_pages_keeps_every_path_and_audit_path(
    store: AuditStore,
) -> None:
    # More members than one statement carries (dialect.MEMBERS_PER_INSERT), with names
    # that JSON escapes or that are not ASCII: each comes back as it went in.
    names = [f'dossier "{i}"/été\\{i}\n✓.pdf' for i in range(2500)]
    listed = [DocumentIn(name, h(name), i) for i, name in enumerate(names)]
    ids = store.notarizations.upsert_documents("folder:/drop", listed)
    assert store.notarizations.upsert_documents("folder:/drop", listed) == ids
    record = collection(store, "c")
    root, members = batch_members(
        record.key, [(i, d.sha256) for i, d in zip(ids, listed, strict=True)]
    )
    added = store.batches.record(
        collection="c", chain_id=record.chain_id, root=root, size=len(members), members=members
    )
    assert added is not None and added[1] == 2500
    stored = store.batches.members(added[0])
    assert [m.path for m in stored] == names
    assert [m.audit_path for m in stored] == hex_paths(record.key, [d.sha256 for d in listed])
    assert [m.size_bytes for m in stored] == list(range(2500))


def test_a_batch_whose_documents_were_all_taken_is_not_recorded(store: AuditStore) -> None:
    assert add_batch(store, "ab") is not None
    assert add_batch(store, "ab") is None  # same batch, same root: nothing new
    record = collection(store, "c")
    ids = store.notarizations.upsert_documents("folder:/drop", docs("ab"))
    # another tree over the same documents: every member is taken, so nothing is written
    other = [NewMember(i, h(x), 0) for i, x in zip(ids, "ab", strict=True)]
    assert (
        store.batches.record(
            collection="c", chain_id=record.chain_id, root=h("other"), size=2, members=other
        )
        is None
    )
    assert len(store.batches.read(collection="c")) == 1
    added = add_batch(store, "abx")  # one new document: kept, with only that member
    assert added is not None and added[1] == 1
    assert store.runs.summary("c")["pending"] == 3


def stored_paths(store: AuditStore) -> int:
    with store.engine.connect() as conn:
        query = "SELECT count(*) FROM batch_members WHERE audit_path IS NOT NULL"
        return int(conn.execute(text(query)).scalar_one())


def test_a_whole_batch_stores_no_audit_path_and_reads_it_rebuilt(store: AuditStore) -> None:
    labels = "abcdefghijk"
    added = add_batch(store, labels)
    assert added is not None and added[1] == len(labels)
    assert stored_paths(store) == 0  # recomputed from the leaves when read
    record = collection(store, "c")
    expected = hex_paths(record.key, [h(x) for x in labels])
    read = [p.notarization for p in store.proofs.records(collection="c")]
    assert [r.audit_path for r in read] == expected
    assert [m.audit_path for m in store.batches.members(added[0])] == expected
    (one,) = store.proofs.records(sha256=h("f"))
    assert one.notarization.audit_path == expected[5]


def test_a_batch_that_lost_leaves_keeps_its_members_paths(store: AuditStore) -> None:
    assert add_batch(store, "ab") is not None
    added = add_batch(store, "abx")  # a and b are the first batch's: x alone is this one's
    assert added is not None and added[1] == 1
    record = collection(store, "c")
    expected = hex_paths(record.key, [h("a"), h("b"), h("x")])
    assert stored_paths(store) == 1  # the tree of a, b, x cannot be rebuilt from its rows
    (x,) = store.proofs.records(sha256=h("x"))
    assert (x.notarization.leaf_index, x.notarization.batch_size) == (2, 3)
    assert x.notarization.audit_path == expected[2]


def test_a_member_changed_in_the_database_is_refused_not_served(store: AuditStore) -> None:
    added = add_batch(store, "abc")
    assert added is not None
    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE batch_members SET sha256 = :h WHERE leaf_index = 1"), {"h": h("z")}
        )
    with pytest.raises(AuditPathError, match="rebuilt root") as refused:
        store.proofs.records(collection="c")
    assert refused.value.batch_id == added[0]


def test_two_recorders_on_the_same_documents_aggregate_each_once(backend: dict) -> None:
    """Two workers (own store and connections each) record overlapping windows at once."""
    with open_store(backend) as setup:
        record = collection(setup, "race")
    labels = [f"doc-{i}" for i in range(60)]
    start = threading.Barrier(2)

    def worker(offset: int) -> int:
        window = labels[offset : offset + 45]  # 0-44 and 15-59 overlap on 30 documents
        with open_store(backend) as own:
            batch = [DocumentIn(f"{x}.txt", h(x), 1) for x in window]
            new, _ = record_new_documents.fn(
                own, source="folder:/d", chain_id=record.chain_id, docs=batch
            )
            start.wait()
            added = None
            for i in range(0, len(new), 9):
                added = record_aggregate.fn(own, record, new[i : i + 9]) or added
            return 0 if added is None else 1

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(worker, [0, 15]))
    with open_store(backend) as check:
        members = [p.notarization.sha256 for p in check.proofs.records(collection="race")]
        assert sorted(members) == sorted(h(x) for x in labels)  # each document exactly once
        assert check.runs.summary("race")["pending"] == 60
        batches = check.batches.read(collection="race")
        assert sum(b.members for b in batches) == 60


def test_proofs_are_read_page_by_page_in_the_order_of_one_read(store: AuditStore) -> None:
    # Own rows (entry mode) and batch members of one collection, interleaved by id.
    record = collection(store, "c")
    add_batch(store, "abcde")

    def own(labels: str) -> None:
        ids = store.notarizations.upsert_documents(
            "folder:/own", docs(labels, source="folder:/own")
        )
        rows = [
            NewNotarization(i, "c", record.chain_id, h(x)) for i, x in zip(ids, labels, strict=True)
        ]
        store.notarizations.add(rows)

    own("pq")
    add_batch(store, "fgh")
    own("r")
    add_batch(store, "xyz", name="other")
    whole = store.proofs.records(collection="c")
    order = [(p.notarization.id, p.notarization.leaf_index) for p in whole]
    assert len(whole) == 11 and order == sorted(order, key=lambda o: (o[0], o[1] or 0))
    for size in (1, 2, 3, 1000):
        assert list(store.proofs.iter_records(collection="c", page_size=size)) == whole
    assert store.proofs.records(collection="c", limit=4) == whole[:4]
    everything = list(store.proofs.iter_records(page_size=2))
    assert len(everything) == 14 and whole == [
        p for p in everything if p.notarization.collection == "c"
    ]
    (g,) = store.proofs.iter_records(sha256=h("g"), page_size=1)
    assert (g.notarization.path, g.notarization.leaf_index) == ("secret/g.pdf", 1)
    (q,) = store.proofs.iter_records(sha256=h("q"), collection="c")
    assert q.notarization.path == "secret/q.pdf" and not q.notarization.is_member
    first_batch = whole[0].notarization.id
    assert list(store.proofs.iter_records(batch_id=first_batch, page_size=2)) == whole[:5]
    with pytest.raises(ValueError, match="page_size"):
        next(store.proofs.iter_records(page_size=0))


def test_hashes_are_checked_all_at_once_as_one_by_one() -> None:
    good = [h("a"), h("b").upper(), h("c")]
    assert hex64_all(good) == [hex64(x) for x in good] == [h("a"), h("b"), h("c")]
    assert hex64_all([]) == []
    spaced = h("a")[:30] + " " + h("a")[31:]  # 64 characters, one of them a space
    for bad in (h("a")[:-1], h("a") + "0", "g" * 64, spaced, "é" * 64):
        with pytest.raises(ValueError, match="64 hex characters"):
            hex64_all([h("a"), bad])

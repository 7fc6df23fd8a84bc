"""``read_unanchored``: notarizations short of ``anchor`` and the oldest, on both backends."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from connectors.audit import (
    UNANCHORED_STAGES,
    AuditStore,
    DocumentIn,
    NewNotarization,
    read_unanchored,
)
from ledger.core.clock import ManualClock

START_S = 1_700_000_000.0
CHAIN = hashlib.sha256(b"chain").hexdigest()


def h(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START_S)


def notarize(store: AuditStore, labels: list[str]) -> list[int]:
    docs = [DocumentIn(f"{x}.pdf", h(x), len(x)) for x in labels]
    ids = store.notarizations.upsert_documents("folder:/drop", docs)
    rows = [NewNotarization(d, "c1", CHAIN, h(x)) for d, x in zip(ids, labels, strict=True)]
    return store.notarizations.add(rows)


def test_empty_store_waits_for_nothing(store: AuditStore) -> None:
    unanchored = read_unanchored(store.engine)
    assert unanchored.waiting == dict.fromkeys(UNANCHORED_STAGES, 0)
    assert unanchored.oldest_created_at is None
    assert unanchored.oldest_age_s(datetime.now(UTC)) == 0.0


def test_counts_by_stage_and_the_oldest_until_anchored(
    store: AuditStore, clock: ManualClock
) -> None:
    first = notarize(store, ["a", "b"])
    clock.advance(100.0)
    later = notarize(store, ["c"])
    store.notarizations.mark_published({first[0]: h("entry-a"), later[0]: h("entry-c")})
    store.notarizations.record_ledger({h("entry-a"): (5, h("keymr"))})
    unanchored = read_unanchored(store.engine)
    assert unanchored.waiting == {
        "pending": 1,
        "published": 1,
        "multi_az": 0,
        "ledger": 1,
    }
    assert unanchored.total == 3
    at = datetime.fromtimestamp(START_S + 250.0, tz=UTC)
    assert unanchored.oldest_age_s(at) == pytest.approx(250.0)
    store.notarizations.mark_failed(
        {first[1]: "gone"}, retryable=False
    )  # failed ones wait for nothing
    store.notarizations.mark_stage([h("entry-a")], "anchor")
    unanchored = read_unanchored(store.engine)
    assert unanchored.total == 1
    assert unanchored.oldest_age_s(at) == pytest.approx(150.0)  # only "c" waits now

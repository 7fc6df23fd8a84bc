"""The callback receiver: signatures as the publishing API makes them, idempotent recording."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from connectors.audit import AuditStore, DocumentIn, NewNotarization
from connectors.callback_receiver import (
    CALLBACK_EVENT,
    CallbackEvent,
    CallbackRecorder,
    callback_url_for,
    create_receiver_app,
    parse_callback,
)
from ledger.api.outbox.callbacks import callback_target
from ledger.core.callback_signature import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    sign_callback,
    verify_callback_signature,
)

SECRET = b"shared-secret"
BASE = "http://127.0.0.1:8092/callbacks"
CHAIN = "c" * 64
KEYMR = "d" * 64
NOW = 1_700_000_000


class FixedClock:
    def __init__(self, now: float) -> None:
        self.value = now

    def now(self) -> float:
        return self.value


@pytest.fixture
def store(tmp_path: Path) -> AuditStore:
    return AuditStore(f"sqlite:///{tmp_path / 'audit.sqlite'}")


def published(store: AuditStore, entry_hash: str, *, sha: str = "a" * 64) -> int:
    """One notarization at ``multi_az`` with ``entry_hash``; returns its id."""
    (doc_id,) = store.notarizations.upsert_documents("folder:/x", [DocumentIn("a.txt", sha, 3)])
    (nid,) = store.notarizations.add([NewNotarization(doc_id, "col", CHAIN, sha)])
    store.notarizations.mark_published({nid: entry_hash})
    store.notarizations.mark_stage([entry_hash], "multi_az")
    return nid


def api_post(client: TestClient, url: str, *, secret: bytes = SECRET, timestamp: int = NOW) -> int:
    """POST as the API's dispatcher does (``ledger.api.outbox.callbacks.CallbackDispatcher._post``)."""
    headers = {
        "content-type": "application/json",
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign_callback(secret, timestamp=timestamp, url=url, body=b"{}"),
    }
    return client.post(url, content=b"{}", headers=headers).status_code


def ledger_callback(entry_hash: str) -> str:
    """The URL the API posts to at ``ledger`` for an entry published with our callback URL."""
    return callback_target(
        callback_url_for(BASE, entry_hash), {"dblock_keymr": KEYMR, "stage": "ledger"}
    )


def make_client(store: AuditStore, woken: list[CallbackEvent]) -> TestClient:
    app = create_receiver_app(
        secret=SECRET,
        callback_url=BASE,
        recorder=CallbackRecorder(store, clock=FixedClock(NOW)),
        on_recorded=woken.append,
        max_skew_s=300,
        clock=FixedClock(NOW),
    )
    return TestClient(app, base_url="http://127.0.0.1:8092")


def callback_events(store: AuditStore, nid: int) -> list[dict[str, object]]:
    return [
        dict(e.details or {}) for e in store.notarizations.events(nid) if e.stage == CALLBACK_EVENT
    ]


def test_signature_rule_matches_the_publishing_api() -> None:
    url = ledger_callback("e" * 64)
    signature = sign_callback(SECRET, timestamp=NOW, url=url, body=b"{}")
    assert verify_callback_signature(
        SECRET, timestamp=NOW, url=url, body=b"{}", signature=signature
    )
    assert not verify_callback_signature(
        b"other", timestamp=NOW, url=url, body=b"{}", signature=signature
    )
    assert not verify_callback_signature(
        SECRET, timestamp=NOW + 1, url=url, body=b"{}", signature=signature
    )


def test_callback_url_keeps_the_callers_parameters_and_names_the_entry() -> None:
    url = callback_url_for("https://h.example/cb?tenant=7&entry_hash=old", "AB" * 32)
    assert url == f"https://h.example/cb?tenant=7&entry_hash={'ab' * 32}"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"stage": "ledger", "entry_hash": "e" * 64}, "dblock_keymr"),
        ({"stage": "ledger", "entry_hash": "xyz", "dblock_keymr": KEYMR}, "entry_hash"),
        ({"stage": "done", "entry_hash": "e" * 64}, "unknown stage"),
        ({"stage": "anchor", "entry_hash": "e" * 64, "anchor_block_hash": "12"}, "anchor_block"),
    ],
)
def test_malformed_parameters_are_refused(query: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_callback(query)


def test_signed_ledger_callback_is_recorded_once_and_wakes_the_collector(
    store: AuditStore,
) -> None:
    entry_hash = "e" * 64
    nid = published(store, entry_hash)
    woken: list[CallbackEvent] = []
    client = make_client(store, woken)

    assert api_post(client, ledger_callback(entry_hash)) == 200
    assert api_post(client, ledger_callback(entry_hash)) == 200  # delivered again

    assert callback_events(store, nid) == [
        {"stage": "ledger", "dblock_keymr": KEYMR, "verified": False}
    ]
    assert woken == [CallbackEvent(entry_hash, "ledger", {"dblock_keymr": KEYMR})]
    # A callback is an announcement: the stage moves only when the sweep verified it.
    (row,) = store.notarizations.pending(stage_from="multi_az", stage_below="ledger")
    assert row.id == nid and row.stage == "multi_az" and row.ledger_at is None


def test_late_callback_and_unknown_entry_change_nothing(store: AuditStore) -> None:
    entry_hash = "e" * 64
    nid = published(store, entry_hash)
    store.notarizations.record_ledger({entry_hash: (5, KEYMR)})  # the sweep got there first
    woken: list[CallbackEvent] = []
    client = make_client(store, woken)
    before = store.notarizations.events(nid)

    assert api_post(client, ledger_callback(entry_hash)) == 200
    assert api_post(client, ledger_callback("f" * 64)) == 200  # not ours: stop retrying

    assert store.notarizations.events(nid) == before and woken == []


@pytest.mark.parametrize("forgery", ["wrong secret", "stale", "no signature", "other url"])
def test_forged_callback_is_refused_with_401_and_records_nothing(
    store: AuditStore, forgery: str
) -> None:
    entry_hash = "e" * 64
    nid = published(store, entry_hash)
    woken: list[CallbackEvent] = []
    client = make_client(store, woken)
    url = ledger_callback(entry_hash)
    before = store.notarizations.events(nid)

    if forgery == "wrong secret":
        status = api_post(client, url, secret=b"guessed")
    elif forgery == "stale":
        status = api_post(client, url, timestamp=NOW - 3600)  # a replay an hour later
    elif forgery == "no signature":
        status = client.post(url, content=b"{}").status_code
    else:  # a valid signature of another entry's callback, replayed on this entry
        signature = sign_callback(SECRET, timestamp=NOW, url=ledger_callback("f" * 64), body=b"{}")
        headers = {TIMESTAMP_HEADER: str(NOW), SIGNATURE_HEADER: signature}
        status = client.post(url, content=b"{}", headers=headers).status_code

    assert status == 401
    assert store.notarizations.events(nid) == before and woken == []


def test_anchor_callback_after_ledger_is_recorded(store: AuditStore) -> None:
    entry_hash = "e" * 64
    nid = published(store, entry_hash)
    store.notarizations.record_ledger({entry_hash: (5, KEYMR)})
    client = make_client(store, [])
    url = callback_target(
        callback_url_for(BASE, entry_hash), {"anchor_block_hash": "b" * 64, "stage": "anchor"}
    )
    assert api_post(client, url) == 200
    assert callback_events(store, nid) == [
        {"stage": "anchor", "anchor_block_hash": "b" * 64, "verified": False}
    ]


def test_failed_callback_is_recorded_with_its_reason_and_wakes_the_collector(
    store: AuditStore,
) -> None:
    entry_hash = "e" * 64
    nid = published(store, entry_hash)
    woken: list[CallbackEvent] = []
    client = make_client(store, woken)
    reason = "refused by the ledger: commit: -32602 Invalid params (invalid commit signature)"
    url = callback_target(
        callback_url_for(BASE, entry_hash),
        {"entry_hash": entry_hash, "reason": reason, "stage": "failed"},
    )
    assert api_post(client, url) == 200
    assert api_post(client, url) == 200  # delivered again: recorded once
    assert callback_events(store, nid) == [{"stage": "failed", "reason": reason, "verified": False}]
    assert woken == [CallbackEvent(entry_hash, "failed", {"reason": reason})]
    # an announcement only: the sweep reads the failure from the API before failing it
    (row,) = store.notarizations.pending(stage_from="multi_az", stage_below="ledger")
    assert row.id == nid and row.stage == "multi_az"


def test_failed_callback_for_an_entry_already_in_a_block_changes_nothing(
    store: AuditStore,
) -> None:
    entry_hash = "e" * 64
    nid = published(store, entry_hash)
    store.notarizations.record_ledger({entry_hash: (5, KEYMR)})
    client = make_client(store, [])
    before = store.notarizations.events(nid)
    url = callback_target(
        callback_url_for(BASE, entry_hash), {"reason": "x" * 900, "stage": "failed"}
    )
    assert api_post(client, url) == 200
    assert store.notarizations.events(nid) == before
    assert parse_callback({"stage": "failed", "entry_hash": entry_hash, "reason": "x" * 900})
    assert len(parse_callback({"stage": "failed", "entry_hash": entry_hash}).details["reason"]) == 0

"""Writes given up: visible on read, in callbacks, never back in the queue."""

from __future__ import annotations

from sqlalchemy import select, update

from ledger.api.models import CallbackRow, EntryRow, WriteFailure
from ledger.api.outbox.gateway import RpcFailure
from ledger.core.callback_signature import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign_callback

from .conftest import Api, ApiFactory, Receiver
from .test_worker import make_chain_with_entries, rows

HOOK = "http://127.0.0.1:9/hook?ref=abc"
#: What the node answers for a commit whose signature does not verify.
BAD_SIGNATURE = RpcFailure(-32602, "Invalid params", "invalid commit signature: does not verify")
CONNECT = {"app_id": "sdk", "app_key": ""}


def failures(api: Api) -> dict[int, WriteFailure]:
    with api.services.db.read() as session:
        return {f.entry_id: f for f in session.scalars(select(WriteFailure))}


def test_a_refused_write_is_failed_at_once_with_its_reason_on_every_read(
    make_api: ApiFactory, database_url: str
) -> None:
    api = make_api(database_url=database_url)
    chain_id, hashes = make_chain_with_entries(api, 2)
    api.ledger.refuse_commit[hashes[1]] = BAD_SIGNATURE
    report = api.run_worker()
    assert (report.committed, report.revealed) == (2, 2)
    row = rows(api)[hashes[1]]
    assert (row.stage, row.state, row.attempts) == ("failed", "failed", 1)

    body = api.get(f"/v1/chains/{chain_id}/entries/{hashes[1]}").json()
    assert body["stage"] == "failed"
    failure = body["failure"]
    assert set(failure) == {"reason", "failed_at", "attempts"}
    assert failure["reason"] == (
        "refused by the ledger: commit: -32602 Invalid params "
        "(invalid commit signature: does not verify)"
    )
    assert failure["attempts"] == 1
    assert failure["failed_at"] == "2023-11-14T22:13:20.000Z"  # the manual clock's start
    stored = failures(api)[row.id]
    assert stored.permanent and stored.failed_at == api.clock.now()
    # the spec's fields are all still there, and the others carry no failure
    for field in ("entry_hash", "chain_id", "external_ids", "content", "links", "created_at"):
        assert field in body
    assert "failure" not in api.get(f"/v1/chains/{chain_id}/entries/{hashes[2]}").json()

    connect = api.client.get(
        f"/v1/chains/{chain_id}/entries/{hashes[1]}", headers={**CONNECT, "app_key": api.key}
    ).json()["data"]
    assert connect["stage"] == "failed"
    assert connect["failure"]["reason"] == failure["reason"]
    assert connect["failure"]["failed_at"] == "2023-11-14T22:13:20.000000Z"


def test_failed_writes_never_return_to_the_queue(api: Api) -> None:
    _, hashes = make_chain_with_entries(api, 1)
    api.ledger.refuse_commit[hashes[1]] = BAD_SIGNATURE
    api.run_worker()
    del api.ledger.refuse_commit[hashes[1]]
    for _ in range(3):
        api.clock.advance(10_000)
        api.run_worker()
    assert api.ledger.commits_sent[hashes[1]] == 1
    assert api.ledger.calls["compose-entry"] == 1
    api.ledger.mine_block()
    api.run_worker()
    assert rows(api)[hashes[1]].stage == "failed"  # not moved by a block either


def test_transient_errors_give_up_after_max_attempts_as_failed(make_api: ApiFactory) -> None:
    api = make_api(submit_max_attempts=2, submit_retry_base_s=1)
    chain_id, hashes = make_chain_with_entries(api, 0)
    disk_full = RpcFailure(-32603, "Internal error", "disk full: retry later")
    api.ledger.refuse_commit[hashes[0]] = disk_full
    api.run_worker()
    assert rows(api)[hashes[0]].stage == "multi_az"  # first error: retried later
    api.clock.advance(1)
    api.run_worker()
    chain = api.get(f"/v1/chains/{chain_id}").json()
    assert chain["stage"] == "failed"
    assert chain["failure"]["reason"] == (
        "gave up after 2 attempts; last error: commit: -32603 Internal error "
        "(disk full: retry later)"
    )
    assert chain["failure"]["attempts"] == 2
    assert not failures(api)[rows(api)[hashes[0]].id].permanent


def test_entries_of_a_failed_chain_fail_too_also_those_accepted_later(api: Api) -> None:
    chain_id, hashes = make_chain_with_entries(api, 2)
    api.ledger.refuse_commit[hashes[0]] = BAD_SIGNATURE
    assert api.run_worker().failed == 3  # the chain, and with it its two entries
    late = api.post_entry(chain_id, [b"late"]).json()["entry_hash"]
    assert api.run_worker().failed == 1
    assert api.run_worker().failed == 0
    stored = rows(api)
    assert {stored[h].stage for h in [*hashes, late]} == {"failed"}
    reason = api.get(f"/v1/chains/{chain_id}/entries/{late}").json()["failure"]["reason"]
    assert reason.startswith("the chain's first entry failed: refused by the ledger: commit:")
    assert api.ledger.calls["compose-entry"] == 0  # never sent


def test_a_failed_callback_goes_to_every_write_that_asked_for_any(
    hooked: Api, receiver: Receiver
) -> None:
    chain_id = hooked.post_chain([b"cb"]).json()["chain_id"]
    hooked.run_worker()
    asked_ledger = hooked.post_entry(
        chain_id, [b"a"], callback_url=HOOK, callback_stages=["ledger"]
    ).json()["entry_hash"]
    asked_none = hooked.post_entry(chain_id, [b"b"], callback_url=HOOK, callback_stages=[])
    without_url = hooked.post_entry(chain_id, [b"c"])
    refused = [asked_ledger, asked_none.json()["entry_hash"], without_url.json()["entry_hash"]]
    for entry_hash in refused:
        hooked.ledger.refuse_commit[entry_hash] = BAD_SIGNATURE
    hooked.run_worker()
    hooked.run_worker()  # deliver
    assert {rows(hooked)[h].stage for h in refused} == {"failed"}
    assert [dict(p) for p in receiver.params()] == [
        {
            "ref": "abc",
            "entry_hash": asked_ledger,
            "reason": "refused by the ledger: commit: -32602 Invalid params "
            "(invalid commit signature: does not verify)",
            "stage": "failed",
        }
    ]
    request = receiver.requests[0]
    timestamp = int(request.headers[TIMESTAMP_HEADER])
    expected = sign_callback(b"test-secret", timestamp=timestamp, url=str(request.url), body=b"{}")
    assert request.headers[SIGNATURE_HEADER] == expected
    with hooked.services.db.read() as session:
        queued = session.scalars(select(CallbackRow.stage)).all()
    assert queued == ["failed"]


def test_the_entry_list_filters_by_stage(api: Api) -> None:
    chain_id, hashes = make_chain_with_entries(api, 3)
    api.ledger.refuse_commit[hashes[2]] = BAD_SIGNATURE
    api.run_worker()
    failed = api.get(f"/v1/chains/{chain_id}/entries", params={"stage": "failed"}).json()
    assert [i["entry_hash"] for i in failed["items"]] == [hashes[2]]
    assert (failed["count"], failed["offset"]) == (1, 0)
    waiting = api.get(f"/v1/chains/{chain_id}/entries", params={"stage": "multi_az"}).json()
    assert [i["entry_hash"] for i in waiting["items"]] == [hashes[0], hashes[1], hashes[3]]
    page = api.get(
        f"/v1/chains/{chain_id}/entries", params={"stage": "multi_az", "limit": 1, "offset": 1}
    ).json()
    assert ([i["entry_hash"] for i in page["items"]], page["count"]) == ([hashes[1]], 3)
    bad = api.get(f"/v1/chains/{chain_id}/entries", params={"stage": "accepted"})
    assert bad.status_code == 400 and "failed" in bad.json()["error"]["message"]
    connect = api.client.get(
        f"/v1/chains/{chain_id}/entries",
        params={"stages": "failed"},
        headers={**CONNECT, "app_key": api.key},
    ).json()
    assert [(i["entry_hash"], i["stage"]) for i in connect["data"]] == [(hashes[2], "failed")]


def test_rows_failed_by_an_earlier_version_are_adopted(api: Api) -> None:
    chain_id, hashes = make_chain_with_entries(api, 1)
    with api.services.db.write() as session:  # what the previous worker left behind
        session.execute(
            update(EntryRow)
            .where(EntryRow.entry_hash == hashes[1])
            .values(state="failed", attempts=20, last_error="reveal: -32603 Internal error")
        )
    api.run_worker()
    body = api.get(f"/v1/chains/{chain_id}/entries/{hashes[1]}").json()
    assert body["stage"] == "failed"
    assert body["failure"]["reason"] == ("gave up after 20 attempts: reveal: -32603 Internal error")
    assert body["failure"]["attempts"] == 20


def test_an_adopted_failed_chain_takes_its_waiting_entries_with_it(api: Api) -> None:
    chain_id, hashes = make_chain_with_entries(api, 2)
    with api.services.db.write() as session:
        session.execute(
            update(EntryRow)
            .where(EntryRow.entry_hash == hashes[0])
            .values(state="failed", attempts=20, last_error="commit: -32603 Internal error")
        )
    assert api.run_worker().failed == 3
    reasons = [
        api.get(f"/v1/chains/{chain_id}/entries/{h}").json()["failure"]["reason"] for h in hashes
    ]
    assert reasons == [
        "gave up after 20 attempts: commit: -32603 Internal error",
        *[
            "the chain's first entry failed: gave up after 20 attempts: commit: -32603 "
            "Internal error"
        ]
        * 2,
    ]
    assert api.ledger.calls["compose-entry"] == 0

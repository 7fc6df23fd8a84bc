"""Group commit of writes: batching, durability before the answer, failure isolation."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, func, select, text
from sqlalchemy.exc import OperationalError

from ledger.api.accounts import create_account, revoke_account
from ledger.api.connect import ConnectDispatch
from ledger.api.db import Database
from ledger.api.http.deps import BodySizeLimit
from ledger.api.http.fastpath import WriteFastPath
from ledger.api.models import CallbackRow, Chain, EntryRow, ExternalIdTag
from ledger.api.outbox import intake, writer
from ledger.api.outbox.intake import AccountRevoked, ChainExists, ChainNotFound, WriteRequest
from ledger.api.outbox.writer import GroupCommitWriter, WriterClosed, WriterStats
from ledger.core.clock import ManualClock
from ledger.core.entry import Entry
from ledger.observability import ObservabilityMiddleware

from .conftest import Api, ApiFactory, b64


@pytest.fixture
def db(database_url: str):
    database = Database(database_url)
    database.create_schema()
    yield database
    database.dispose()


@pytest.fixture
def account_id(db: Database) -> int:
    with db.write() as session:
        return create_account(session, "writer")[0].id


def _chain(tag: bytes) -> Entry:
    return Entry.first_entry([tag], b"first")


def _entry(chain: Entry, i: int) -> Entry:
    return Entry(chain.chain_id, (b"n", str(i).encode()), b"content %d" % i)


def _count(db: Database, model: Any) -> int:
    with db.read() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


def test_one_batch_records_chains_entries_tags_and_callbacks(db: Database, account_id: int) -> None:
    chain = _chain(b"batch")
    requests = [
        WriteRequest.of("chain", account_id, chain),
        *(
            WriteRequest.of(
                "entry",
                account_id,
                _entry(chain, i),
                callback_url="https://a.example/cb?x=1",
                callback_stages=["multi_az", "ledger"],
            )
            for i in range(3)
        ),
    ]
    with db.transaction() as connection:
        outcomes = intake.accept_batch(connection, requests, now=5.0)
    assert [o.created for o in outcomes] == [True] * 4
    with db.read() as session:
        rows = session.scalars(select(EntryRow).order_by(EntryRow.seq)).all()
        stored_chain = session.get(Chain, chain.chain_id.hex())
        urls = sorted(session.scalars(select(CallbackRow.url)))
    assert [(r.seq, r.is_first, r.stage, r.state) for r in rows] == [
        (0, True, "multi_az", "pending"),
        (1, False, "multi_az", "pending"),
        (2, False, "multi_az", "pending"),
        (3, False, "multi_az", "pending"),
    ]
    assert stored_chain is not None and stored_chain.entry_count == 4
    assert rows[1].external_ids == [b64(b"n"), b64(b"0")] and rows[1].created_at == 5.0
    assert rows[1].callback_stages == ["multi_az", "ledger"]
    assert _count(db, ExternalIdTag) == 1 + 3 * 2
    assert urls == sorted(
        f"https://a.example/cb?x=1&entry_hash={r.entry_hash}&stage=multi_az" for r in rows[1:]
    )


def test_refusals_and_repeats_inside_one_batch_leave_the_others_alone(
    db: Database, account_id: int
) -> None:
    with db.write() as session:
        other = create_account(session, "other")[0].id
    chain, foreign = _chain(b"mine"), _chain(b"theirs")
    requests = [
        WriteRequest.of("chain", account_id, chain),
        WriteRequest.of("chain", other, foreign),
        WriteRequest.of("entry", account_id, _entry(chain, 1)),
        WriteRequest.of("entry", account_id, _entry(foreign, 1)),  # not my chain
        WriteRequest.of("chain", other, chain),  # taken, in this very batch
        WriteRequest.of("entry", account_id, _entry(chain, 1)),  # repeat of a new row
        WriteRequest.of("chain", account_id, chain),  # repeat of the new chain
    ]
    with db.transaction() as connection:
        results = intake.accept_batch(connection, requests, now=1.0)
    kinds = [type(r).__name__ if isinstance(r, Exception) else r.created for r in results]
    assert kinds == [True, True, True, "ChainNotFound", "ChainExists", False, False]
    assert results[5].entry_hash == results[2].entry_hash  # type: ignore[union-attr]
    with db.read() as session:
        seqs = session.execute(select(EntryRow.chain_id, EntryRow.seq)).all()
    assert sorted(seqs) == sorted(
        [(chain.chain_id.hex(), 0), (chain.chain_id.hex(), 1), (foreign.chain_id.hex(), 0)]
    )
    with db.transaction() as connection:  # a later batch sees the stored rows
        (again,) = intake.accept_batch(
            connection, [WriteRequest.of("entry", account_id, _entry(chain, 1))], now=2.0
        )
    assert not isinstance(again, Exception) and again.created is False


def test_revoked_account_cannot_write_even_with_a_cached_key(db: Database, account_id: int) -> None:
    with db.write() as session:
        revoke_account(session, account_id)
    with db.transaction() as connection:
        (result,) = intake.accept_batch(
            connection, [WriteRequest.of("chain", account_id, _chain(b"late"))], now=1.0
        )
    assert isinstance(result, AccountRevoked)
    assert _count(db, Chain) == 0


def _run_writer(
    db: Database, requests: list[WriteRequest], **kwargs: Any
) -> tuple[list[Any], WriterStats]:
    """Submit all requests at once from one event loop: (outcomes or exceptions, stats)."""
    group = GroupCommitWriter(db, clock=ManualClock(10.0), **kwargs)
    group.start()

    async def submit_all() -> list[Any]:
        return await asyncio.gather(*(group.submit(r) for r in requests), return_exceptions=True)

    try:
        return asyncio.run(submit_all()), group.stats
    finally:
        group.stop()


def test_concurrent_writes_share_transactions_and_keep_their_order(
    db: Database, account_id: int
) -> None:
    chain = _chain(b"group")
    with db.transaction() as connection:
        intake.accept_batch(connection, [WriteRequest.of("chain", account_id, chain)], now=1.0)
    requests = [WriteRequest.of("entry", account_id, _entry(chain, i)) for i in range(200)]
    commits: list[int] = []
    event.listen(db.engine, "commit", lambda conn: commits.append(1))
    outcomes, stats = _run_writer(db, requests, max_batch=64)
    assert all(not isinstance(o, Exception) and o.created for o in outcomes)
    assert stats.writes == 200 and stats.batches < 200 and stats.mean_batch > 1
    assert len(commits) == stats.batches
    with db.read() as session:
        by_hash = dict(session.execute(select(EntryRow.entry_hash, EntryRow.seq)).all())
    assert [by_hash[o.entry_hash] for o in outcomes] == list(range(1, 201))


def test_answer_comes_only_after_the_commit(db: Database, account_id: int) -> None:
    """When ``submit`` returns, another connection already sees the row."""
    group = GroupCommitWriter(db, clock=ManualClock(1.0))
    group.start()
    try:
        outcome = group.submit_wait(WriteRequest.of("chain", account_id, _chain(b"durable")))
        other = Database(db.url)
        try:
            with other.read() as session:
                stored = session.execute(
                    text("SELECT stage FROM entries WHERE entry_hash = :h"),
                    {"h": outcome.entry_hash},
                ).scalar()
        finally:
            other.dispose()
        assert stored == "multi_az"
    finally:
        group.stop()


def test_a_database_error_fails_only_its_own_write(
    db: Database, account_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = _chain(b"faulty")
    poison = WriteRequest.of("chain", account_id, _chain(b"poison"))
    real = intake.accept_batch

    def failing(connection: Any, requests: Any, **kwargs: Any) -> Any:
        if poison in requests:
            raise OperationalError("INSERT", {}, RuntimeError("disk I/O error"))
        return real(connection, requests, **kwargs)

    monkeypatch.setattr(writer, "accept_batch", failing)
    requests = [WriteRequest.of("chain", account_id, chain), poison]
    requests += [WriteRequest.of("entry", account_id, _entry(chain, i)) for i in range(5)]
    outcomes, _ = _run_writer(db, requests, retries=2)
    assert isinstance(outcomes[1], OperationalError)
    assert all(not isinstance(o, Exception) for i, o in enumerate(outcomes) if i != 1)
    assert _count(db, EntryRow) == 6


def test_stop_writes_what_was_queued_and_then_refuses(db: Database, account_id: int) -> None:
    group = GroupCommitWriter(db, clock=ManualClock(1.0))
    group.start()
    results: list[Any] = []
    threads = [
        threading.Thread(
            target=lambda i=i: results.append(
                group.submit_wait(WriteRequest.of("chain", account_id, _chain(bytes([i]))))
            )
        )
        for i in range(20)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    group.stop()
    assert len(results) == 20 and _count(db, Chain) == 20
    with pytest.raises(WriterClosed):
        group.submit_wait(WriteRequest.of("chain", account_id, _chain(b"after")))


def test_refusal_types_are_the_routes_422_and_403(api: Api) -> None:
    chain_id = api.post_chain([b"mine"]).json()["chain_id"]
    other = {"user-key": api.new_key("other")}
    body = {"external_ids": [b64(b"mine")], "content": ""}
    taken = api.client.post("/v1/chains", json=body, headers=other)
    assert (taken.status_code, taken.json()["error"]["name"]) == (422, "Unprocessable entity")
    wrong = api.client.post(f"/v1/chains/{chain_id}/entries", json=body, headers=other)
    assert wrong.status_code == 422 and "does not exist" in wrong.json()["error"]["message"]
    assert issubclass(ChainExists, intake.WriteRefused)
    assert issubclass(ChainNotFound, intake.WriteRefused)


# -- the ASGI fast path answers exactly like the FastAPI routes -------------------------


def _exchanges(api: Api) -> list[tuple[int, Any]]:
    """A fixed script of write requests (good and bad); (status, body) of each answer."""
    key, wrong = api.headers, {"user-key": "not a key"}
    chain_body = {"external_ids": [b64(b"fast"), b64(b"path")], "content": b64(b"first")}
    script: list[tuple[str, Any, dict[str, str], dict[str, str]]] = [
        ("/v1/chains", chain_body, key, {}),
        ("/v1/chains", chain_body, key, {}),  # idempotent repeat
        ("/v1/chains", chain_body, {}, {}),  # no key
        ("/v1/chains", chain_body, wrong, {}),
        ("/v1/chains", {"external_ids": ["%%%"]}, key, {}),
        ("/v1/chains", {"external_ids": "x"}, key, {}),
        ("/v1/chains", {"content": b64(b"x" * 10300)}, key, {}),
        ("/v1/chains", {"callback_url": "http://127.0.0.1/x"}, key, {}),
        ("/v1/chains", {"callback_url": "https://a.example/", "callback_stages": ["x"]}, key, {}),
    ]
    answers = [_post(api, path, body, headers) for path, body, headers, _ in script]
    chain_id = answers[0][1]["chain_id"]
    entries = f"/v1/chains/{chain_id}/entries"
    for path, body, headers in [
        (entries, {"external_ids": [b64(b"e1")], "content": b64(b"one")}, key),
        (entries, {"external_ids": [b64(b"e1")], "content": b64(b"one")}, key),
        (entries, {}, key),
        (entries, {"content": None, "external_ids": None}, key),
        ("/v1/chains/" + "ab" * 32 + "/entries", {"content": ""}, key),
        ("/v1/chains/not-hex/entries", {"content": ""}, key),
        (entries, [1, 2], key),
    ]:
        answers.append(_post(api, path, body, headers))
    raw = api.client.post(
        entries, content=b"{not json", headers={**key, "content-type": "application/json"}
    )
    answers.append((raw.status_code, raw.json()))
    plain = api.client.post(entries, content=b"{}", headers={**key, "content-type": "text/plain"})
    answers.append((plain.status_code, plain.json()))
    big = api.client.post(
        entries,
        content=b"{" + b" " * 70_000 + b"}",
        headers={**key, "content-type": "application/json"},
    )
    answers.append((big.status_code, big.json()))
    return answers


def _post(api: Api, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
    response = api.client.post(path, json=body, headers=headers)
    return response.status_code, response.json()


def test_fast_path_and_routes_answer_the_same(make_api: ApiFactory, tmp_path: Path) -> None:
    key = "k" * 43
    fast = make_api(database_url=f"sqlite:///{tmp_path / 'fast.sqlite'}", key=None)
    slow = make_api(
        database_url=f"sqlite:///{tmp_path / 'slow.sqlite'}", key=None, write_fast_path=False
    )
    for api in (fast, slow):  # the same key and account id in both databases
        with api.services.db.write() as session:
            api.key = create_account(session, "same", clock=api.clock, key=key[:42] + "A")[1]
    # ObservabilityMiddleware, outermost, answers only its probe paths and times the rest;
    # ConnectDispatch then only takes app_id + app_key requests (Connect shapes)
    assert [m.cls for m in fast.app.user_middleware] == [
        ObservabilityMiddleware,
        ConnectDispatch,
        BodySizeLimit,
        WriteFastPath,
    ]
    assert [m.cls for m in slow.app.user_middleware] == [
        ObservabilityMiddleware,
        ConnectDispatch,
        BodySizeLimit,
    ]
    assert _exchanges(fast) == _exchanges(slow)
    statuses = [status for status, _ in _exchanges(fast)]
    assert {202, 400, 403, 413, 415, 422} <= set(statuses)

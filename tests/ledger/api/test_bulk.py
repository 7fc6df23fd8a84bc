"""The bulk write (``POST /v1/chains/{chain_id}/entries/bulk``, ``ledger.api.http.bulk``) through
the real app: per-entry answers and errors, whole-request refusals, limits, auth, one
transaction, and the way on to the ledger."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from ledger.api.accounts import revoke_account
from ledger.api.models import EntryRow
from ledger.core.entry import Entry

from .conftest import Api, ApiFactory, b64


def _bulk(api: Api, chain_id: str, entries: Any, **headers: str) -> Any:
    return api.client.post(
        f"/v1/chains/{chain_id}/entries/bulk",
        json={"entries": entries},
        headers={**api.headers, **headers},
    )


def _item(ext: bytes, content: bytes, **extra: Any) -> dict[str, Any]:
    return {"external_ids": [b64(ext)], "content": b64(content), **extra}


def _chain(api: Api, tag: bytes = b"bulk") -> str:
    return api.post_chain([tag], b"first").json()["chain_id"]


def _rows(api: Api, chain_id: str) -> list[EntryRow]:
    with api.services.db.read() as session:
        query = select(EntryRow).where(EntryRow.chain_id == chain_id).order_by(EntryRow.seq)
        return list(session.scalars(query))


@pytest.fixture(params=[True, False], ids=["fast-path", "routes"])
def any_api(request: pytest.FixtureRequest, make_api: ApiFactory) -> Api:
    """The app with and without the ASGI fast path (both must answer alike)."""
    return make_api(write_fast_path=request.param)


def test_entries_are_accepted_in_order_with_the_hashes_the_ledger_computes(any_api: Api) -> None:
    api = any_api
    chain_id = _chain(api)
    items = [_item(b"doc", b"%d" % i) for i in range(5)]
    response = _bulk(api, chain_id, items)
    assert response.status_code == 202
    answers = response.json()["items"]
    expected = [Entry(bytes.fromhex(chain_id), (b"doc",), b"%d" % i).hash().hex() for i in range(5)]
    assert answers == [
        {"entry_hash": h, "chain_id": chain_id, "stage": "multi_az"} for h in expected
    ]
    stored = _rows(api, chain_id)
    assert [(r.seq, r.entry_hash) for r in stored[1:]] == list(enumerate(expected, start=1))
    single = api.get(f"/v1/chains/{chain_id}/entries/{expected[3]}").json()
    assert (single["content"], single["stage"]) == (b64(b"3"), "multi_az")


def test_a_repeat_is_idempotent_within_and_across_requests(api: Api) -> None:
    chain_id = _chain(api)
    one = _item(b"same", b"x")
    first = _bulk(api, chain_id, [one, one]).json()["items"]
    assert first[0] == first[1]
    again = _bulk(api, chain_id, [one]).json()["items"]
    assert again == first[:1]
    single = api.post_entry(chain_id, [b"same"], b"x").json()
    assert single["entry_hash"] == first[0]["entry_hash"]
    assert len(_rows(api, chain_id)) == 2  # the first entry and this one


def test_each_bad_entry_gets_its_own_error_and_the_others_are_written(any_api: Api) -> None:
    api = any_api
    chain_id = _chain(api)
    items: list[Any] = [
        _item(b"ok", b"1"),
        {"external_ids": ["%%%"]},  # invalid Base64
        {"content": b64(b"x" * 10_300)},  # payload above 10,240 bytes
        {"callback_url": "http://127.0.0.1/hook"},  # refused by the host policy
        {"external_ids": "not a list"},  # wrong type
        "not an object",
        _item(b"ok", b"2"),
    ]
    response = _bulk(api, chain_id, items)
    assert response.status_code == 202
    answers = response.json()["items"]
    codes = [a["error"]["code"] if "error" in a else 202 for a in answers]
    assert codes == [202, 400, 422, 422, 400, 400, 202]
    assert answers[4]["error"]["message"].startswith("entries[4].external_ids")
    assert answers[5]["error"] == {
        "code": 400,
        "name": "Bad Request",
        "message": "entries[5]: must be a JSON object",
    }
    # the same error body that operation 6 answers for the same entry
    alone = api.post_entry(chain_id, [], content=b"x" * 10_300)
    assert answers[2] == alone.json()
    assert [r.seq for r in _rows(api, chain_id)] == [0, 1, 2]


def test_unknown_or_foreign_chain_is_422_for_every_entry(api: Api) -> None:
    chain_id = _chain(api)
    other = api.new_key("other")
    for target, key in ((chain_id, other), ("ab" * 32, api.key), ("not-hex", api.key)):
        response = _bulk(api, target, [_item(b"a", b"1"), _item(b"b", b"2")], **{"user-key": key})
        assert response.status_code == 202
        errors = [a["error"] for a in response.json()["items"]]
        assert [(e["code"], e["name"]) for e in errors] == [(422, "Unprocessable entity")] * 2
        assert all("does not exist" in e["message"] for e in errors)
    assert len(_rows(api, chain_id)) == 1


@pytest.mark.parametrize(
    ("headers", "name"),
    [
        ({}, "Authentication Parameters Missing"),
        ({"user-key": "not a key"}, "Authentication Failed"),
    ],
)
def test_without_a_valid_key_nothing_is_written(
    any_api: Api, headers: dict[str, str], name: str
) -> None:
    api = any_api
    chain_id = _chain(api)
    response = api.client.post(
        f"/v1/chains/{chain_id}/entries/bulk", json={"entries": [_item(b"a", b"")]}, headers=headers
    )
    assert (response.status_code, response.json()["error"]["name"]) == (403, name)
    assert len(_rows(api, chain_id)) == 1


def test_a_key_revoked_while_cached_cannot_write(make_api: ApiFactory) -> None:
    api = make_api(auth_cache_ttl_s=60.0)
    chain_id = _chain(api)  # the key is now cached
    account = api.services.keys.cached(api.key)
    assert account is not None
    with api.services.db.write() as session:
        revoke_account(session, account.id, clock=api.clock)
    answers = _bulk(api, chain_id, [_item(b"a", b"")]).json()["items"]
    assert answers[0]["error"]["code"] == 403
    assert len(_rows(api, chain_id)) == 1


def test_whole_request_refusals_use_the_error_body(any_api: Api) -> None:
    api = any_api
    chain_id = _chain(api)
    path = f"/v1/chains/{chain_id}/entries/bulk"
    json_type = {**api.headers, "content-type": "application/json"}
    cases = [
        (api.client.post(path, content=b"{oops", headers=json_type), 400),
        (api.client.post(path, json=[_item(b"a", b"")], headers=api.headers), 400),
        (api.client.post(path, json={"entries": {"a": 1}}, headers=api.headers), 400),
        (api.client.post(path, json={}, headers=api.headers), 400),
        (api.client.post(path, json={"entries": []}, headers=api.headers), 422),
        (
            api.client.post(
                path,
                content=b'{"entries": []}',
                headers={**api.headers, "content-type": "text/plain"},
            ),
            415,
        ),
    ]
    for response, status in cases:
        body = response.json()
        assert response.status_code == status, body
        assert set(body) == {"error"} and body["error"]["code"] == status
    assert len(_rows(api, chain_id)) == 1


def test_count_and_size_limits(make_api: ApiFactory) -> None:
    api = make_api(bulk_max_entries=3, bulk_max_body_bytes=8192, max_body_bytes=1024)
    chain_id = _chain(api)
    too_many = _bulk(api, chain_id, [_item(b"n", b"%d" % i) for i in range(4)])
    assert too_many.status_code == 422
    assert (
        too_many.json()["error"]["message"] == "A bulk write carries 1 to 3 entries; this one has 4"
    )
    # larger than the single route's limit, within the bulk route's
    roomy = [_item(b"n", b"y" * 1500), _item(b"n", b"z" * 1500)]
    assert _bulk(api, chain_id, roomy).status_code == 202
    single = api.post_entry(chain_id, [b"n"], b"y" * 1500)
    assert single.status_code == 413
    big = _bulk(api, chain_id, [_item(b"n", b"w" * 4000), _item(b"n", b"v" * 4000)])
    assert big.status_code == 413
    assert big.json()["error"] == {
        "code": 413,
        "name": "Payload Too Large",
        "message": "The body may be at most 8192 bytes",
    }
    assert len(_rows(api, chain_id)) == 3


def test_one_request_is_one_transaction_and_one_rate_limit_token(make_api: ApiFactory) -> None:
    api = make_api(write_batch_max=8, rate_limit_per_s=1.0, rate_limit_burst=2)
    chain_id = _chain(api)  # token 1
    stats = api.services.writer.stats
    before = (stats.batches, stats.writes)
    answers = _bulk(api, chain_id, [_item(b"t", b"%d" % i) for i in range(20)]).json()["items"]
    assert all("entry_hash" in a for a in answers)
    # 20 writes above write_batch_max: still one transaction, never split
    assert (stats.batches - before[0], stats.writes - before[1]) == (1, 20)
    limited = _bulk(api, chain_id, [_item(b"t", b"late")])  # the bucket is empty
    assert limited.status_code == 429 and "retry-after" in limited.headers


def test_bulk_entries_reach_the_ledger_like_single_ones(api: Api) -> None:
    chain_id = _chain(api)
    hashes = [
        a["entry_hash"]
        for a in _bulk(api, chain_id, [_item(b"l", b"1"), _item(b"l", b"2")]).json()["items"]
    ]
    report = api.run_worker()
    assert (report.committed, report.revealed, report.errors) == (3, 3, [])
    assert all(api.ledger.is_revealed(h) for h in hashes)
    api.ledger.mine_block()
    api.clock.advance(600)
    assert api.run_worker().confirmed == 3
    assert api.get(f"/v1/chains/{chain_id}/entries/{hashes[1]}").json()["stage"] == "ledger"


def test_other_methods_on_the_bulk_path_match_no_route(api: Api) -> None:
    chain_id = _chain(api)
    response = api.client.put(f"/v1/chains/{chain_id}/entries/bulk", json={}, headers=api.headers)
    assert (response.status_code, response.json()["error"]["name"]) == (
        404,
        "No Mapping Rule Matched",
    )


def test_a_stopping_service_writes_nothing_and_answers_503(any_api: Api) -> None:
    api = any_api
    chain_id = _chain(api)
    api.services.writer.stop()
    response = _bulk(api, chain_id, [_item(b"late", b"1")])
    assert (response.status_code, response.json()["error"]["name"]) == (
        503,
        "Service Unavailable",
    )
    assert len(_rows(api, chain_id)) == 1

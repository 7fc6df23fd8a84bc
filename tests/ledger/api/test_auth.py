"""The user-key header (or app_id + app_key) guards every operation."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.api.accounts import revoke_account

from .conftest import Api, b64

HASH = "ab" * 32


def operations(chain_id: str, entry_hash: str) -> list[tuple[str, str, Any]]:
    """(method, path, json body) for all eleven operations."""
    body = {"external_ids": [b64(b"x")], "content": b64(b"y")}
    search = {"external_ids": [b64(b"x")]}
    base = f"/v1/chains/{chain_id}"
    return [
        ("GET", "/v1", None),
        ("POST", "/v1/chains", body),
        ("GET", "/v1/chains", None),
        ("POST", "/v1/chains/search", search),
        ("GET", base, None),
        ("POST", f"{base}/entries", body),
        ("GET", f"{base}/entries", None),
        ("GET", f"{base}/entries/first", None),
        ("GET", f"{base}/entries/last", None),
        ("POST", f"{base}/entries/search", search),
        ("GET", f"{base}/entries/{entry_hash}", None),
    ]


@pytest.fixture
def chain(api: Api) -> tuple[str, str]:
    answer = api.post_chain([b"auth"], b"first").json()
    return answer["chain_id"], answer["entry_hash"]


def _call(api: Api, op: tuple[str, str, Any], headers: dict[str, str]):
    method, path, body = op
    return api.client.request(method, path, json=body, headers=headers)


def _assert_error(response, code: int, name: str) -> None:
    assert response.status_code == code, response.text
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["name"] == name


def test_every_operation_without_key_is_403_parameters_missing(api: Api, chain) -> None:
    for op in operations(*chain):
        _assert_error(_call(api, op, {}), 403, "Authentication Parameters Missing")
        _assert_error(_call(api, op, {"user-key": ""}), 403, "Authentication Parameters Missing")
        _assert_error(_call(api, op, {"app_id": "x"}), 403, "Authentication Parameters Missing")


def test_every_operation_with_wrong_key_is_403_failed(api: Api, chain) -> None:
    for op in operations(*chain):
        _assert_error(_call(api, op, {"user-key": "nope"}), 403, "Authentication Failed")
        pair = {"app_id": "app", "app_key": "nope"}
        _assert_error(_call(api, op, pair), 403, "Authentication Failed")


def test_every_operation_succeeds_with_the_key(api: Api, chain) -> None:
    codes = [_call(api, op, api.headers).status_code for op in operations(*chain)]
    assert codes == [200, 202, 200, 200, 200, 202, 200, 200, 200, 200, 200]


def test_app_id_app_key_pair_is_accepted(api: Api, chain) -> None:
    pair = {"app_id": "my-app", "app_key": api.key}
    codes = [_call(api, op, pair).status_code for op in operations(*chain)]
    assert codes == [200, 202, 200, 200, 200, 202, 200, 200, 200, 200, 200]


def test_revoked_key_stops_writing_at_once_and_reading_after_the_cache_ttl(api: Api) -> None:
    other = api.new_key("revoked")
    headers = {"user-key": other}
    assert api.client.get("/v1/chains", headers=headers).status_code == 200  # now cached
    body = {"external_ids": [b64(b"mine")], "content": ""}
    assert api.client.post("/v1/chains", json=body, headers=headers).status_code == 202
    with api.services.db.write() as session:
        from ledger.api.accounts import verify_key

        account = verify_key(session, other)
        assert account is not None
        revoke_account(session, account.id)
    body = {"external_ids": [b64(b"after revocation")], "content": ""}
    response = api.client.post("/v1/chains", json=body, headers=headers)
    _assert_error(response, 403, "Authentication Failed")
    assert api.client.get("/v1/chains", headers=headers).status_code == 200  # cached read
    api.clock.advance(api.services.settings.auth_cache_ttl_s)
    _assert_error(api.client.get("/v1/chains", headers=headers), 403, "Authentication Failed")
    assert api.get("/v1/chains").status_code == 200  # other keys unaffected


def test_key_cache_reads_the_database_once_per_ttl(api: Api) -> None:
    from sqlalchemy import event

    statements: list[str] = []
    event.listen(
        api.services.accounts_db.engine,
        "before_cursor_execute",
        lambda *args: statements.append(args[2]),
    )
    for _ in range(5):
        assert api.get("/v1/chains").status_code == 200
    lookups = [s for s in statements if "FROM accounts" in s]
    assert len(lookups) <= 1
    api.clock.advance(api.services.settings.auth_cache_ttl_s + 0.1)
    assert api.get("/v1/chains").status_code == 200
    assert len([s for s in statements if "FROM accounts" in s]) == len(lookups) + 1


def test_rate_limit_per_key_answers_429_with_retry_after(make_api) -> None:
    api = make_api(rate_limit_per_s=2.0, rate_limit_burst=3)
    other = {"user-key": api.new_key("other")}
    codes = [api.get("/v1/chains").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    limited = api.get("/v1/chains")
    _assert_error(limited, 429, "Too Many Requests")
    assert limited.headers["retry-after"] == "1"
    assert api.client.get("/v1/chains", headers=other).status_code == 200  # per key
    api.clock.advance(0.5)  # one token back at 2 per second
    assert api.get("/v1/chains").status_code == 200
    assert api.get("/v1/chains").status_code == 429


def test_unknown_keys_are_throttled_per_client_address(make_api) -> None:
    api = make_api(auth_failure_burst=3, auth_failure_rate_per_s=0.5)
    guesses = [api.client.get("/v1/chains", headers={"user-key": f"guess-{i}"}) for i in range(5)]
    assert [r.status_code for r in guesses] == [403, 403, 403, 429, 429]
    _assert_error(guesses[-1], 429, "Too Many Requests")
    assert guesses[-1].headers["retry-after"] == "2"
    assert "unknown keys from this address" in guesses[-1].text
    # Over the limit, even a right key not yet cached waits: guessing goes no faster.
    assert api.get("/v1/chains").status_code == 429
    api.clock.advance(2.0)
    assert api.get("/v1/chains").status_code == 200
    # Once cached (a live key), it is served although its address is throttled.
    api.client.get("/v1/chains", headers={"user-key": "guess-again"})
    assert api.get("/v1/chains").status_code == 200


def test_missing_keys_are_refused_but_not_throttled(make_api) -> None:
    api = make_api(auth_failure_burst=1)
    codes = {api.client.get("/v1/chains").status_code for _ in range(20)}
    assert codes == {403}
    assert api.get("/v1/chains").status_code == 200


def test_a_key_sees_only_its_own_chains(api: Api, chain) -> None:
    chain_id, entry_hash = chain
    other = {"user-key": api.new_key("mallory")}
    assert api.client.get("/v1/chains", headers=other).json()["items"] == []
    for path in [
        f"/v1/chains/{chain_id}",
        f"/v1/chains/{chain_id}/entries",
        f"/v1/chains/{chain_id}/entries/first",
        f"/v1/chains/{chain_id}/entries/last",
        f"/v1/chains/{chain_id}/entries/{entry_hash}",
    ]:
        _assert_error(api.client.get(path, headers=other), 404, "Page Not Found")
    search = {"external_ids": [b64(b"auth")]}
    response = api.client.post("/v1/chains/search", json=search, headers=other)
    _assert_error(response, 404, "Page Not Found")
    response = api.client.post(f"/v1/chains/{chain_id}/entries/search", json=search, headers=other)
    _assert_error(response, 404, "Page Not Found")
    body = {"external_ids": [b64(b"intrude")], "content": ""}
    response = api.client.post(f"/v1/chains/{chain_id}/entries", json=body, headers=other)
    _assert_error(response, 422, "Unprocessable entity")
    # and the owner's chain did not change
    assert api.get(f"/v1/chains/{chain_id}/entries").json()["count"] == 1

"""Every error path answers the one JSON error shape with the names of docs/rest-api.md §7."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from ledger.api import entry_reads
from ledger.core.entry import MAX_ENTRY_PAYLOAD_BYTES

from .conftest import Api, ApiFactory, b64


def error_of(response, code: int, name: str) -> str:
    assert response.status_code == code, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "name", "message"}
    assert body["error"]["code"] == code and body["error"]["name"] == name
    return body["error"]["message"]


@pytest.fixture
def chain_id(api: Api) -> str:
    return api.post_chain([b"errors"], b"c").json()["chain_id"]


def post_raw(api: Api, path: str, content: bytes, content_type: str = "application/json"):
    headers = {**api.headers, "content-type": content_type}
    return api.client.post(path, content=content, headers=headers)


@pytest.mark.parametrize("raw", [b"{", b"not json", b"", b"[1, 2]", b'"text"', b"null"])
def test_bad_json_is_400(api: Api, chain_id: str, raw: bytes) -> None:
    for path in ["/v1/chains", f"/v1/chains/{chain_id}/entries", "/v1/chains/search"]:
        error_of(post_raw(api, path, raw), 400, "Bad Request")


@pytest.mark.parametrize(
    "body",
    [
        {"external_ids": ["not base64!"]},
        {"external_ids": ["YQ"]},  # missing padding
        {"content": "@@@@"},
        {"content": "YWJj\n"},
        {"external_ids": "YQ=="},  # not an array
        {"external_ids": [1]},
        {"content": 5},
        {"callback_stages": ["later"]},
        {"callback_url": 7},
    ],
)
def test_bad_fields_are_400(api: Api, chain_id: str, body: dict) -> None:
    error_of(api.client.post("/v1/chains", json=body, headers=api.headers), 400, "Bad Request")
    path = f"/v1/chains/{chain_id}/entries"
    error_of(api.client.post(path, json=body, headers=api.headers), 400, "Bad Request")


def test_search_needs_at_least_one_valid_value(api: Api, chain_id: str) -> None:
    for body in [{}, {"external_ids": []}, {"external_ids": ["%%"]}]:
        for path in ["/v1/chains/search", f"/v1/chains/{chain_id}/entries/search"]:
            response = api.client.post(path, json=body, headers=api.headers)
            error_of(response, 400, "Bad Request")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_non_json_content_type_is_415(api: Api, chain_id: str, content_type: str) -> None:
    for path in ["/v1/chains", f"/v1/chains/{chain_id}/entries", "/v1/chains/search"]:
        response = post_raw(api, path, b'{"external_ids": []}', content_type)
        error_of(response, 415, "Unsupported Media Type")


def test_json_with_charset_is_accepted(api: Api) -> None:
    response = post_raw(api, "/v1/chains", b"{}", "application/json; charset=utf-8")
    assert response.status_code == 202


def test_body_above_the_limit_is_413(make_api: ApiFactory) -> None:
    api = make_api(max_body_bytes=4096)
    big = b'{"content": "' + b"A" * 5000 + b'"}'
    error_of(post_raw(api, "/v1/chains", big), 413, "Payload Too Large")

    def chunks():
        yield b'{"content": "'
        for _ in range(10):
            yield b"A" * 1000
        yield b'"}'

    headers = {**api.headers, "content-type": "application/json"}
    streamed = api.client.post("/v1/chains", content=chunks(), headers=headers)
    error_of(streamed, 413, "Payload Too Large")
    assert api.get("/v1/chains").json()["count"] == 0


def test_unknown_routes_and_methods_are_404_no_mapping(api: Api, chain_id: str) -> None:
    for method, path in [
        ("GET", "/v1/nothing"),
        ("GET", "/v2/chains"),
        ("GET", "/"),
        ("GET", "/v1/docs"),
        ("GET", "/docs"),
        ("DELETE", f"/v1/chains/{chain_id}"),
        ("PUT", "/v1/chains"),
        ("GET", f"/v1/chains/{chain_id}/entries/{'ab' * 32}/more"),
    ]:
        response = api.client.request(method, path, headers=api.headers)
        error_of(response, 404, "No Mapping Rule Matched")


def test_unknown_chain_or_entry_is_404_page_not_found(api: Api, chain_id: str) -> None:
    unknown = "cd" * 32
    for path in [
        f"/v1/chains/{unknown}",
        f"/v1/chains/{unknown}/entries",
        f"/v1/chains/{unknown}/entries/first",
        f"/v1/chains/{unknown}/entries/last",
        f"/v1/chains/{unknown}/entries/{'ef' * 32}",
        f"/v1/chains/{chain_id}/entries/{'ef' * 32}",
        "/v1/chains/not-a-chain-id",
        f"/v1/chains/{chain_id}/entries/xyz",
    ]:
        error_of(api.get(path), 404, "Page Not Found")
    search = {"external_ids": [b64(b"x")]}
    response = api.client.post(
        f"/v1/chains/{unknown}/entries/search", json=search, headers=api.headers
    )
    error_of(response, 404, "Page Not Found")


def test_entry_from_another_chain_is_not_found_under_this_chain(api: Api, chain_id: str) -> None:
    other = api.post_chain([b"other"]).json()
    path = f"/v1/chains/{chain_id}/entries/{other['entry_hash']}"
    error_of(api.get(path), 404, "Page Not Found")


def test_search_without_match_is_404(api: Api, chain_id: str) -> None:
    search = {"external_ids": [b64(b"nothing like this")]}
    error_of(
        api.client.post("/v1/chains/search", json=search, headers=api.headers),
        404,
        "Page Not Found",
    )
    path = f"/v1/chains/{chain_id}/entries/search"
    error_of(api.client.post(path, json=search, headers=api.headers), 404, "Page Not Found")


def test_payload_limit_is_10240_bytes_including_length_prefixes(api: Api, chain_id: str) -> None:
    ext = [b"k" * 10, b"v" * 20]
    room = MAX_ENTRY_PAYLOAD_BYTES - sum(2 + len(x) for x in ext)
    assert api.post_entry(chain_id, ext, b"c" * room).status_code == 202
    message = error_of(
        api.post_entry(chain_id, ext, b"c" * (room + 1)), 422, "Unprocessable entity"
    )
    assert "10240" in message
    error_of(api.post_chain(ext, b"c" * (room + 1)), 422, "Unprocessable entity")
    assert api.post_chain(ext, b"c" * room).status_code == 202


def test_existing_chain_is_422_unless_the_same_first_entry_is_repeated(api: Api) -> None:
    first = api.post_chain([b"dup"], b"one")
    again = api.post_chain([b"dup"], b"one")
    assert first.status_code == again.status_code == 202
    assert first.json() == again.json()
    message = error_of(api.post_chain([b"dup"], b"two"), 422, "Unprocessable entity")
    assert "exists" in message
    other = {"user-key": api.new_key()}
    body = {"external_ids": [b64(b"dup")], "content": b64(b"one")}
    error_of(api.client.post("/v1/chains", json=body, headers=other), 422, "Unprocessable entity")


def test_entry_into_unknown_chain_is_422(api: Api) -> None:
    for chain_id in ["cd" * 32, "short"]:
        error_of(api.post_entry(chain_id, [b"x"]), 422, "Unprocessable entity")


def test_bad_paging_is_400(api: Api, chain_id: str) -> None:
    for query in ["limit=0", "limit=100000", "offset=-1", "limit=abc"]:
        error_of(api.get(f"/v1/chains?{query}"), 400, "Bad Request")
        error_of(api.get(f"/v1/chains/{chain_id}/entries?{query}"), 400, "Bad Request")


def test_private_callback_url_is_422(api: Api) -> None:
    for url in [
        "http://127.0.0.1:9/cb",
        "http://10.1.2.3/cb",
        "http://localhost/cb",
        "http://[::1]/x",
        "ftp://example.org/x",
    ]:
        message = error_of(api.post_chain([b"cb"], callback_url=url), 422, "Unprocessable entity")
        assert "callback_url" in message
    assert api.get("/v1/chains").json()["count"] == 0


def test_real_fault_is_500_with_the_error_shape(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args, **_kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(entry_reads, "list_chains", broken)
    client = TestClient(api.app, raise_server_exceptions=False)
    message = error_of(client.get("/v1/chains", headers=api.headers), 500, "Internal Error")
    assert "disk on fire" not in message

"""The eleven operations: shapes, Base64 both ways, identifiers, ordering, search, paging."""

from __future__ import annotations

import base64
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.core.entry import Entry, chain_id_from_external_ids

from .conftest import Api, ApiFactory, b64


def test_root_gives_version_and_chains_link(api: Api) -> None:
    for path in ["/v1", "/v1/"]:
        body = api.get(path).json()
        assert body == {
            "api_version": "1.0.11",
            "links": {"chains": "http://testserver/v1/chains"},
            "sandbox": False,
        }


def test_public_base_url_is_used_in_links(make_api: ApiFactory) -> None:
    api = make_api(public_base_url="https://notary.example.org/")
    assert api.get("/v1").json()["links"]["chains"] == "https://notary.example.org/v1/chains"


def test_create_chain_answers_202_with_ids_computed_as_the_ledger_does(api: Api) -> None:
    ext, content = [b"\x00\xffbinary", b"second"], b"first entry content"
    response = api.post_chain(ext, content)
    assert response.status_code == 202
    body = response.json()
    first = Entry.first_entry(ext, content)
    assert body == {
        "chain_id": chain_id_from_external_ids(ext).hex(),
        "entry_hash": first.hash().hex(),
        "stage": "multi_az",
    }


def test_chain_resource_shape_and_links(api: Api) -> None:
    chain_id = api.post_chain([b"shape"], b"x").json()["chain_id"]
    body = api.get(f"/v1/chains/{chain_id}").json()
    url = f"http://testserver/v1/chains/{chain_id}"
    assert body == {
        "chain_id": chain_id,
        "external_ids": [b64(b"shape")],
        "links": {
            "entries": f"{url}/entries",
            "first": f"{url}/entries/first",
            "last": f"{url}/entries/last",
        },
        "stage": "multi_az",
        "created_at": "2023-11-14T22:13:20.000Z",
        "dblock_keymr": None,
        "dblock_height": None,
    }
    for link in body["links"].values():
        assert api.client.get(link, headers=api.headers).status_code == 200


def test_entry_resource_shape_and_link(api: Api) -> None:
    chain_id = api.post_chain([b"e"]).json()["chain_id"]
    api.clock.advance(1.5)
    entry_hash = api.post_entry(chain_id, [b"id1", b""], b"\x00\x01\x02").json()["entry_hash"]
    body = api.get(f"/v1/chains/{chain_id}/entries/{entry_hash}").json()
    assert body == {
        "entry_hash": entry_hash,
        "chain_id": chain_id,
        "external_ids": [b64(b"id1"), ""],
        "content": b64(b"\x00\x01\x02"),
        "links": {"chain": f"http://testserver/v1/chains/{chain_id}"},
        "stage": "multi_az",
        "created_at": "2023-11-14T22:13:21.500Z",
        "dblock_keymr": None,
        "dblock_height": None,
    }
    assert entry_hash == Entry(bytes.fromhex(chain_id), (b"id1", b""), b"\x00\x01\x02").hash().hex()
    assert (
        api.client.get(body["links"]["chain"], headers=api.headers).json()["chain_id"] == chain_id
    )


def test_uppercase_identifiers_are_accepted(api: Api) -> None:
    answer = api.post_chain([b"upper"]).json()
    upper = answer["chain_id"].upper()
    assert api.get(f"/v1/chains/{upper}").json()["chain_id"] == answer["chain_id"]
    path = f"/v1/chains/{upper}/entries/{answer['entry_hash'].upper()}"
    assert api.get(path).json()["entry_hash"] == answer["entry_hash"]
    assert api.post_entry(upper, [b"x"]).json()["chain_id"] == answer["chain_id"]


def test_missing_fields_mean_empty(api: Api) -> None:
    response = api.client.post("/v1/chains", json={}, headers=api.headers)
    assert response.status_code == 202
    chain_id = response.json()["chain_id"]
    body = api.get(f"/v1/chains/{chain_id}/entries/first").json()
    (tag,) = [base64.b64decode(x) for x in body["external_ids"]]  # generated: a UUID
    assert str(uuid.UUID(tag.decode("ascii"))) == tag.decode("ascii")
    assert chain_id == chain_id_from_external_ids([tag]).hex() and body["content"] == ""
    nulls = {"external_ids": None, "content": None, "callback_url": None}
    assert (
        api.client.post(
            f"/v1/chains/{chain_id}/entries", json=nulls, headers=api.headers
        ).status_code
        == 202
    )


def test_chains_without_external_ids_are_distinct_for_every_account(api: Api) -> None:
    """Every chain created without external IDs is a new chain, whoever creates it."""
    other = api.new_key()
    bodies = [{}, {"external_ids": None}, {"external_ids": []}, {"content": b64(b"same")}]
    answers = []
    for key in (api.key, other):
        for body in bodies:
            response = api.client.post("/v1/chains", json=body, headers={"user-key": key})
            assert response.status_code == 202, response.text
            answers.append(response.json()["chain_id"])
    assert len(set(answers)) == len(answers) == 8
    assert chain_id_from_external_ids([]).hex() not in answers
    listed = api.get("/v1/chains").json()["items"]
    assert {item["chain_id"] for item in listed} == set(answers[:4])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ext=st.lists(st.binary(max_size=40), max_size=4),
    content=st.binary(max_size=300),
)
def test_base64_round_trip(api: Api, ext: list[bytes], content: bytes) -> None:
    chain_id = api.post_chain([b"roundtrip"]).json()["chain_id"]
    entry_hash = api.post_entry(chain_id, ext, content).json()["entry_hash"]
    body = api.get(f"/v1/chains/{chain_id}/entries/{entry_hash}").json()
    assert [base64.b64decode(x) for x in body["external_ids"]] == ext
    assert base64.b64decode(body["content"]) == content


def test_entries_are_listed_in_sequence_with_first_and_last(api: Api) -> None:
    chain_id = api.post_chain([b"seq"], b"0").json()["chain_id"]
    hashes = [api.post_chain([b"seq"], b"0").json()["entry_hash"]]
    for i in range(1, 6):
        hashes.append(
            api.post_entry(chain_id, [b"n", str(i).encode()], str(i).encode()).json()["entry_hash"]
        )
    listing = api.get(f"/v1/chains/{chain_id}/entries").json()
    assert [item["entry_hash"] for item in listing["items"]] == hashes
    assert listing["count"] == 6 and listing["offset"] == 0
    prefix = f"http://testserver/v1/chains/{chain_id}/entries/"
    assert all(item["links"]["entry"] == prefix + item["entry_hash"] for item in listing["items"])
    page = api.get(f"/v1/chains/{chain_id}/entries", params={"limit": 2, "offset": 3}).json()
    assert [item["entry_hash"] for item in page["items"]] == hashes[3:5]
    assert (page["count"], page["limit"], page["offset"]) == (6, 2, 3)
    assert api.get(f"/v1/chains/{chain_id}/entries/first").json()["entry_hash"] == hashes[0]
    assert api.get(f"/v1/chains/{chain_id}/entries/last").json()["entry_hash"] == hashes[-1]


def test_repeated_entry_is_idempotent(api: Api) -> None:
    chain_id = api.post_chain([b"idem"]).json()["chain_id"]
    first = api.post_entry(chain_id, [b"doc"], b"same")
    second = api.post_entry(chain_id, [b"doc"], b"same")
    assert first.status_code == second.status_code == 202
    assert first.json() == second.json()
    assert api.get(f"/v1/chains/{chain_id}/entries").json()["count"] == 2


def test_chain_list_is_the_callers_oldest_first(api: Api) -> None:
    ids = []
    for i in range(4):
        ids.append(api.post_chain([b"list", bytes([i])]).json()["chain_id"])
        api.clock.advance(1)
    listing = api.get("/v1/chains").json()
    assert [c["chain_id"] for c in listing["items"]] == ids
    assert listing["items"][0]["links"] == {"chain": f"http://testserver/v1/chains/{ids[0]}"}
    page = api.get("/v1/chains", params={"limit": 1, "offset": 2}).json()
    assert [c["chain_id"] for c in page["items"]] == ids[2:3] and page["count"] == 4


def test_chain_search_matches_all_values_and_returns_the_oldest(api: Api) -> None:
    older = api.post_chain([b"customer", b"42", b"invoices"]).json()["chain_id"]
    api.clock.advance(1)
    newer = api.post_chain([b"42", b"customer"]).json()["chain_id"]
    api.post_chain([b"customer", b"43"])

    def search(values: list[bytes]):
        body = {"external_ids": [b64(v) for v in values]}
        return api.client.post("/v1/chains/search", json=body, headers=api.headers)

    assert search([b"customer", b"42"]).json()["chain_id"] == older
    assert search([b"42"]).json()["chain_id"] == older
    assert search([b"invoices"]).json()["chain_id"] == older
    found = search([b"42", b"customer"]).json()
    assert found["chain_id"] == older and found["external_ids"] == [
        b64(b"customer"),
        b64(b"42"),
        b64(b"invoices"),
    ]
    assert search([b"customer", b"customer"]).status_code == 404  # multiset: needs two
    assert search([b"43", b"42"]).status_code == 404
    assert newer != older


def test_chain_search_does_not_match_later_entries(api: Api) -> None:
    chain_id = api.post_chain([b"head"]).json()["chain_id"]
    api.post_entry(chain_id, [b"only-in-entry"])
    body = {"external_ids": [b64(b"only-in-entry")]}
    assert api.client.post("/v1/chains/search", json=body, headers=api.headers).status_code == 404


def test_entry_search_within_one_chain(api: Api) -> None:
    chain_id = api.post_chain([b"docs"]).json()["chain_id"]
    other = api.post_chain([b"other"]).json()["chain_id"]
    api.post_entry(other, [b"sha256", b"aaa"])
    first = api.post_entry(chain_id, [b"sha256", b"aaa"], b"1").json()["entry_hash"]
    api.post_entry(chain_id, [b"sha256", b"aaa"], b"2")
    api.post_entry(chain_id, [b"sha256", b"bbb"], b"3")
    path = f"/v1/chains/{chain_id}/entries/search"

    def search(values: list[bytes]):
        return api.client.post(
            path, json={"external_ids": [b64(v) for v in values]}, headers=api.headers
        )

    found = search([b"aaa"]).json()
    assert (
        found["entry_hash"] == first
        and found["content"] == b64(b"1")
        and found["chain_id"] == chain_id
    )
    assert search([b"bbb", b"sha256"]).json()["content"] == b64(b"3")
    first_entry = api.get(f"/v1/chains/{chain_id}/entries/first").json()["entry_hash"]
    assert search([b"docs"]).json()["entry_hash"] == first_entry
    assert search([b"ccc"]).status_code == 404


def test_entry_pages_are_ranges_of_the_sequence_up_to_the_end(api: Api) -> None:
    answer = api.post_chain([b"pages"], b"first").json()
    chain_id = answer["chain_id"]
    hashes = [answer["entry_hash"]]
    for i in range(24):
        hashes.append(api.post_entry(chain_id, [b"p", str(i).encode()]).json()["entry_hash"])
    url = f"/v1/chains/{chain_id}/entries"
    seen = []
    for offset in range(0, 30, 10):
        page = api.get(url, params={"limit": 10, "offset": offset}).json()
        assert page["count"] == 25
        seen += [item["entry_hash"] for item in page["items"]]
    assert seen == hashes
    assert api.get(url, params={"offset": 25}).json()["items"] == []
    last = api.get(f"{url}/last").json()
    assert last["entry_hash"] == hashes[-1]

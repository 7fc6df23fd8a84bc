"""Connect mode (``ledger.api.connect``): who gets which shapes, and each Connect route.

The official SDK itself is driven against the real stack in ``tests/interop``; these tests
pin the shapes, the stage mapping, paging, identities and the node reads on the in-memory
twin ledger, one behaviour each.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from ledger.api.accounts import create_account
from ledger.api.connect.shapes import iso_time
from ledger.api.models import EntryRow
from ledger.core.addresses import identity_public_key
from ledger.core.identity_keys import identity_first_entry
from ledger.core.keys import SigningKey

from .conftest import Api, ApiFactory, b64

KEYS = [SigningKey.from_seed(bytes([i + 40]) * 32) for i in range(4)]
PUB = [identity_public_key(k.public_key) for k in KEYS]


def app_pair(key: str) -> dict[str, str]:
    return {"app_id": "test-app", "app_key": key}


class Connect:
    """Calls as the SDK makes them: ``app_id`` + ``app_key``."""

    def __init__(self, api: Api, key: str | None = None) -> None:
        self.api = api
        self.headers = app_pair(key or api.key)

    def get(self, path: str, **params: Any) -> httpx.Response:
        return self.api.client.get(path, params=params, headers=self.headers)

    def post(self, path: str, body: Any, **params: Any) -> httpx.Response:
        return self.api.client.post(path, json=body, params=params, headers=self.headers)

    def chain(self, *ext_ids: bytes, content: bytes = b"c", **extra: Any) -> dict[str, Any]:
        body = {"external_ids": [b64(x) for x in ext_ids], "content": b64(content), **extra}
        answer = self.post("/v1/chains", body)
        assert answer.status_code == 202, answer.text
        return answer.json()

    def entry(self, chain_id: str, *ext_ids: bytes, content: bytes = b"e") -> dict[str, Any]:
        body = {"external_ids": [b64(x) for x in ext_ids], "content": b64(content)}
        answer = self.post(f"/v1/chains/{chain_id}/entries", body)
        assert answer.status_code == 202, answer.text
        return answer.json()


class FakeReads:
    """A node's receipt and anchors for the entries the test names."""

    def __init__(self) -> None:
        self.receipts: dict[str, dict[str, Any]] = {}
        self.anchored: dict[int, dict[str, Any]] = {}
        self.by_key: dict[str, int] = {}

    def receipt(self, entry_hash: str) -> dict[str, Any] | None:
        return self.receipts.get(entry_hash)

    def anchors(
        self, *, height: int | None = None, key: str | None = None
    ) -> dict[str, Any] | None:
        if key is not None:
            height = self.by_key.get(key)
        return None if height is None else self.anchored.get(height)

    def close(self) -> None:
        pass


@pytest.fixture
def connect(api: Api) -> Connect:
    return Connect(api)


# -- who gets which shapes ---------------------------------------------------------------------


def test_user_key_gets_the_spec_shapes_and_the_app_pair_the_hosted_ones(
    api: Api, connect: Connect
) -> None:
    chain = connect.chain(b"modes")
    spec = api.get(f"/v1/chains/{chain['chain_id']}").json()
    hosted = connect.get(f"/v1/chains/{chain['chain_id']}").json()
    assert spec["chain_id"] == hosted["data"]["chain_id"] == chain["chain_id"]
    assert spec["stage"] == "multi_az" and hosted["data"]["stage"] == "replicated"
    assert "items" in api.get("/v1/chains").json() and "data" in connect.get("/v1/chains").json()
    both = {"user-key": api.key, **app_pair(api.key)}
    assert "items" in api.client.get("/v1/chains", headers=both).json()  # user-key wins
    assert api.get("/v1").json()["api_version"] == "1.0.11"
    assert connect.get("/v1").json() == {"version": "1.0.11", "links": {"chains": "/v1/chains"}}
    assert connect.get("/v1/openapi.json").json()["openapi"].startswith("3.")


@pytest.mark.parametrize(
    ("headers", "name"),
    [
        ({"app_id": "x"}, "Authentication Parameters Missing"),
        ({"app_key": "k"}, "Authentication Parameters Missing"),
        ({"app_id": "x", "app_key": "wrong"}, "Authentication Failed"),
    ],
)
def test_connect_mode_refuses_missing_or_wrong_keys(
    api: Api, headers: dict[str, str], name: str
) -> None:
    for path in ["/v1/chains", "/v1/identities/" + "ab" * 32, "/v1/receipts/" + "ab" * 32]:
        answer = api.client.get(path, headers=headers)
        assert answer.status_code == 403 and answer.json()["error"]["name"] == name


# -- chains and entries ------------------------------------------------------------------------


def test_chain_and_entry_shapes_follow_the_stages(api: Api, connect: Connect) -> None:
    chain = connect.chain(b"shape", b"two", content=b"first")
    assert set(chain) == {"chain_id", "entry_hash", "stage"} and chain["stage"] == "replicated"
    chain_id = chain["chain_id"]
    added = connect.entry(chain_id, b"e1", content=b"second")
    assert set(added) == {"entry_hash", "stage"} and added["stage"] == "replicated"
    detail = connect.get(f"/v1/chains/{chain_id}").json()["data"]
    assert detail == {
        "chain_id": chain_id,
        "external_ids": [b64(b"shape"), b64(b"two")],
        "content": b64(b"first"),
        "stage": "replicated",
        "entries": {"href": f"/v1/chains/{chain_id}/entries"},
        "eblock": None,
        "dblock": None,
        "created_at": iso_time(api.clock.now()),
    }
    api.run_worker()
    block = api.ledger.mine_block()
    api.run_worker()
    entry = connect.get(f"/v1/chains/{chain_id}/entries/{added['entry_hash']}").json()["data"]
    assert entry["stage"] == "factom"
    assert entry["dblock"] == {"keymr": block.keymr, "height": block.height}
    assert entry["eblock"] is None  # no node reads in this app
    assert entry["chain"] == {"chain_id": chain_id, "href": f"/v1/chains/{chain_id}"}
    api.ledger.anchor_block(block.height)
    api.run_worker()
    assert connect.get(f"/v1/chains/{chain_id}").json()["data"]["stage"] == "anchored"


def test_lists_page_with_a_default_of_15_and_filter_by_stage(api: Api, connect: Connect) -> None:
    chain_id = connect.chain(b"paged")["chain_id"]
    hashes = [connect.entry(chain_id, b"n", str(i).encode())["entry_hash"] for i in range(16)]
    page = connect.get(f"/v1/chains/{chain_id}/entries").json()
    assert (page["count"], page["limit"], page["offset"], len(page["data"])) == (17, 15, 0, 15)
    assert page["data"][1]["entry_hash"] == hashes[0]
    assert set(page["data"][1]) == {"entry_hash", "chain", "created_at", "href", "stage"}
    tail = connect.get(f"/v1/chains/{chain_id}/entries", limit=10, offset=15).json()
    assert [e["entry_hash"] for e in tail["data"]] == hashes[14:]
    api.run_worker()
    api.ledger.mine_block()
    api.run_worker()
    connect.entry(chain_id, b"late")
    assert connect.get(f"/v1/chains/{chain_id}/entries", stages="factom").json()["count"] == 17
    fresh = connect.get(f"/v1/chains/{chain_id}/entries", stages="replicated").json()
    assert fresh["count"] == 1 and fresh["data"][0]["stage"] == "replicated"
    chains = connect.get("/v1/chains", stages="factom,anchored").json()
    assert [c["chain_id"] for c in chains["data"]] == [chain_id]
    for bad in ({"stages": "finalized"}, {"limit": 0}, {"limit": 10**6}, {"offset": -1}):
        assert connect.get("/v1/chains", **bad).status_code == 400


def test_searches_answer_every_match_as_a_list(connect: Connect) -> None:
    ids = [connect.chain(b"find", str(i).encode())["chain_id"] for i in range(3)]
    found = connect.post("/v1/chains/search", {"external_ids": [b64(b"find")]}).json()
    assert [c["chain_id"] for c in found["data"]] == ids and found["count"] == 3
    assert set(found["data"][0]) == {"chain_id", "external_ids", "href", "stage", "created_at"}
    second = connect.post("/v1/chains/search", {"external_ids": [b64(b"find")]}, limit=1, offset=1)
    assert [c["chain_id"] for c in second.json()["data"]] == ids[1:2]
    none = connect.post("/v1/chains/search", {"external_ids": [b64(b"absent")]})
    assert none.status_code == 200 and none.json() == {
        "data": [],
        "offset": 0,
        "limit": 15,
        "count": 0,
    }
    hashes = [connect.entry(ids[0], b"tag", b"x")["entry_hash"] for _ in range(1)]
    hashes.append(connect.entry(ids[0], b"tag", b"y")["entry_hash"])
    entries = connect.post(f"/v1/chains/{ids[0]}/entries/search", {"external_ids": [b64(b"tag")]})
    assert [e["entry_hash"] for e in entries.json()["data"]] == hashes
    assert set(entries.json()["data"][0]) == {"entry_hash", "external_ids", "href", "stage"}


def test_callback_stages_take_the_hosted_names(make_api: ApiFactory) -> None:
    api = make_api(resolver=lambda host: ["93.184.216.34"])  # a public address
    connect = Connect(api)
    hook = "https://hooks.example.org/cb"
    stages = ["replicated", "factom"]
    body = {"external_ids": [b64(b"cb")], "callback_url": hook, "callback_stages": stages}
    made = connect.post("/v1/chains", body)
    assert made.status_code == 202, made.text
    with api.services.db.read() as session:
        row = session.scalars(
            select(EntryRow).where(EntryRow.entry_hash == made.json()["entry_hash"])
        ).one()
        assert row.callback_stages == ["multi_az", "ledger"]
    wrong = {"external_ids": [b64(b"cb2")], "callback_url": hook, "callback_stages": ["done"]}
    assert connect.post("/v1/chains", wrong).status_code == 400


def test_another_accounts_chain_is_not_found(api: Api, connect: Connect) -> None:
    chain = connect.chain(b"mine")
    other = Connect(api, api.new_key())
    for path in [
        f"/v1/chains/{chain['chain_id']}",
        f"/v1/chains/{chain['chain_id']}/entries",
        f"/v1/chains/{chain['chain_id']}/entries/first",
        f"/v1/chains/{chain['chain_id']}/entries/{chain['entry_hash']}",
        f"/v1/identities/{chain['chain_id']}",
        f"/v1/receipts/{chain['entry_hash']}",
    ]:
        assert other.get(path).status_code == 404, path
    assert other.post("/v1/chains/search", {"external_ids": [b64(b"mine")]}).json()["count"] == 0
    appended = other.post(f"/v1/chains/{chain['chain_id']}/entries", {"content": b64(b"x")})
    assert appended.status_code == 422


# -- identities --------------------------------------------------------------------------------


def _replacement(chain_id: str, old: int, new: int, signer: int) -> dict[str, str]:
    signature = KEYS[signer].sign((chain_id + PUB[old] + PUB[new]).encode())
    return {
        "old_key": PUB[old],
        "new_key": PUB[new],
        "signature": base64.b64encode(signature).decode(),
        "signer_key": PUB[signer],
    }


def test_identity_keys_activate_in_blocks_and_pend_before(api: Api, connect: Connect) -> None:
    created = connect.post("/v1/identities", {"names": [b64(b"who")], "keys": PUB[:3]})
    assert created.status_code == 202
    chain_id = created.json()["chain_id"]
    assert chain_id == identity_first_entry([b"who"], PUB[:3]).chain_id.hex()
    identity = connect.get(f"/v1/identities/{chain_id}").json()["data"]
    assert identity["names"] == [b64(b"who")] and identity["version"] == 1
    assert [(k["key"], k["priority"], k["activated_height"]) for k in identity["active_keys"]] == [
        (PUB[0], 0, None),
        (PUB[1], 1, None),
        (PUB[2], 2, None),
    ]
    api.run_worker()
    first_block = api.ledger.mine_block()
    api.run_worker()
    replaced = connect.post(f"/v1/identities/{chain_id}/keys", _replacement(chain_id, 2, 3, 1))
    assert replaced.status_code == 202 and set(replaced.json()) == {"entry_hash", "stage"}
    pending = connect.get(f"/v1/identities/{chain_id}").json()["data"]
    assert pending["pending_key"] == {
        "key": PUB[3],
        "activated_height": None,
        "retired_height": None,
        "priority": 2,
        "entry_hash": replaced.json()["entry_hash"],
    }
    assert [k["key"] for k in pending["active_keys"]] == PUB[:3]  # not before its block
    again = connect.post(f"/v1/identities/{chain_id}/keys", _replacement(chain_id, 2, 3, 1))
    assert again.status_code == 422  # the pending replacement already took that place
    api.run_worker()
    second_block = api.ledger.mine_block()
    api.run_worker()
    after = connect.get(f"/v1/identities/{chain_id}").json()["data"]
    assert after["pending_key"] is None and after["created_height"] == first_block.height
    assert [k["key"] for k in after["active_keys"]] == [PUB[0], PUB[1], PUB[3]]
    old = connect.get(f"/v1/identities/{chain_id}/keys/{PUB[2]}").json()["data"]
    assert (old["activated_height"], old["retired_height"]) == (
        first_block.height,
        second_block.height,
    )
    keys = connect.get(f"/v1/identities/{chain_id}/keys", limit=2, offset=2).json()
    assert keys["count"] == 4 and [k["key"] for k in keys["data"]] == [PUB[2], PUB[3]]


@pytest.mark.parametrize(
    ("old", "new", "signer", "reason"),
    [
        (3, 0, 0, "old key"),
        (2, 1, 0, "new key"),
        (2, 3, 3, "signer key is not"),
        (0, 3, 1, "lower priority"),
    ],
)
def test_refused_replacements_are_422_with_the_reason(
    connect: Connect, old: int, new: int, signer: int, reason: str
) -> None:
    chain_id = connect.post("/v1/identities", {"names": [b64(b"r")], "keys": PUB[:3]}).json()[
        "chain_id"
    ]
    answer = connect.post(
        f"/v1/identities/{chain_id}/keys", _replacement(chain_id, old, new, signer)
    )
    assert answer.status_code == 422 and reason in answer.json()["error"]["message"]
    forged = {**_replacement(chain_id, 2, 3, 0), "signature": base64.b64encode(bytes(64)).decode()}
    refused = connect.post(f"/v1/identities/{chain_id}/keys", forged)
    assert refused.status_code == 422 and "signature" in refused.json()["error"]["message"]


def test_identity_requests_are_checked(connect: Connect) -> None:
    for body in (
        {"names": [b64(b"x")], "keys": []},
        {"names": [], "keys": PUB[:1]},
        {"names": [b64(b"x")], "keys": ["idpubnonsense"]},
        {"names": [b64(b"x")], "keys": [PUB[0], PUB[0]]},
        {"names": ["%%"], "keys": PUB[:1]},
    ):
        assert connect.post("/v1/identities", body).status_code == 400, body
    plain = connect.chain(b"plain")["chain_id"]
    assert connect.get(f"/v1/identities/{plain}").status_code == 404
    chain_id = connect.post("/v1/identities", {"names": [b64(b"s")], "keys": PUB[:2]}).json()[
        "chain_id"
    ]
    short = {**_replacement(chain_id, 1, 2, 0), "signature": base64.b64encode(b"x").decode()}
    assert connect.post(f"/v1/identities/{chain_id}/keys", short).status_code == 400
    content = json.loads(identity_first_entry([b"s"], PUB[:2]).content)
    assert content == {"keys": PUB[:2], "version": 1}


# -- receipts and anchors ------------------------------------------------------------------------


@pytest.fixture
def reads() -> FakeReads:
    return FakeReads()


@pytest.fixture
def read_api(make_api: ApiFactory, reads: FakeReads) -> Api:
    return make_api(ledger_reads=reads)


def test_receipts_and_anchors_from_the_node(read_api: Api, reads: FakeReads) -> None:
    connect = Connect(read_api)
    chain = connect.chain(b"proof")
    entry_hash = chain["entry_hash"]
    assert connect.get(f"/v1/receipts/{entry_hash}").status_code == 404  # not in a block yet
    branch = [{"left": entry_hash, "right": "11" * 32, "top": "22" * 32}]
    reads.receipts[entry_hash] = {
        "entry": {"entryhash": entry_hash, "raw": "00ff", "timestamp": 1_700_000_060},
        "merklebranch": branch,
        "entryblockkeymr": "33" * 32,
        "directoryblockkeymr": "44" * 32,
        "directoryblockheight": 7,
    }
    receipt = connect.get(f"/v1/receipts/{entry_hash}").json()["data"]
    assert receipt == {
        "entry_hash": entry_hash,
        "entry_serialized": "00ff",
        "created_at": iso_time(1_700_000_060),
        "merkle_branch": branch,
        "eblock": {"keymr": "33" * 32},
        "dblock": {"keymr": "44" * 32, "height": 7},
    }
    read_api.run_worker()
    read_api.ledger.mine_block()
    read_api.run_worker()
    detail = connect.get(f"/v1/chains/{chain['chain_id']}/entries/first").json()["data"]
    assert detail["eblock"] == {"keymr": "33" * 32}  # from the node's receipt
    reads.anchored[7] = {
        "directoryblockheight": 7,
        "directoryblockkeymr": "44" * 32,
        "anchor_pow": {"transactionhash": "55" * 32, "blockhash": "66" * 32},
        "anchor_contract": False,
    }
    reads.by_key[entry_hash] = 7
    by_height = connect.get("/v1/anchors/7").json()
    assert by_height == connect.get(f"/v1/anchors/{entry_hash}").json()
    assert by_height["data"] == {
        "dblock": {"keymr": "44" * 32, "height": 7},
        "anchors": [
            {"network": "pow", "status": "confirmed", "tx_hash": "55" * 32, "block_hash": "66" * 32}
        ],
    }
    assert connect.get("/v1/anchors/8").status_code == 404
    assert connect.get("/v1/anchors/not-a-hash").status_code == 404
    other = Connect(read_api, read_api.new_key())
    assert other.get(f"/v1/receipts/{entry_hash}").status_code == 404
    assert other.get(f"/v1/anchors/{entry_hash}").status_code == 404  # another account's entry
    assert other.get("/v1/anchors/7").status_code == 200  # a block is public


def test_without_a_node_receipts_and_anchors_are_503(connect: Connect) -> None:
    entry_hash = connect.chain(b"no node")["entry_hash"]
    assert connect.get(f"/v1/receipts/{entry_hash}").status_code == 503
    assert connect.get("/v1/anchors/1").status_code == 503


def test_the_sandbox_reports_no_anchor(
    make_api: ApiFactory, reads: FakeReads, tmp_path: Any
) -> None:
    box = make_api(
        ledger_reads=reads,
        sandbox=True,
        sandbox_database_url=f"sqlite:///{tmp_path / 'box.sqlite'}",
        key="k" * 43,  # not created by the factory: accounts live in the main database
    )
    with box.services.accounts_db.write() as session:
        box.key = create_account(session, "sandboxed", clock=box.clock)[1]
    reads.anchored[3] = {
        "directoryblockheight": 3,
        "directoryblockkeymr": "77" * 32,
        "anchor_pow": {"transactionhash": "88" * 32, "blockhash": "99" * 32},
        "anchor_contract": False,
    }
    assert Connect(box).get("/v1/anchors/3").json()["data"]["anchors"] == []


def test_exported_members_exist_and_are_listed_once() -> None:
    import ledger.api.connect as connect_package

    names = connect_package.__all__
    assert len(names) == len(set(names))
    assert [n for n in names if not hasattr(connect_package, n)] == []
    assert {"ConnectDispatch", "create_connect_app", "is_connect_request"} <= set(names)

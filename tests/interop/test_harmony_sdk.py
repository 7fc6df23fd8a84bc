"""The official Harmony Connect Python SDK (``factom-harmony-connect``), unchanged, against
the publishing API: every operation it offers for chains, entries, identities, receipts,
anchors and the API information, paging, stage filters and signature validation included.

The SDK authenticates with ``app_id`` + ``app_key``, so the API answers it in the hosted
service's shapes (``ledger.api.connect``); ``test_spec_clients_still_get_the_spec_shapes``
shows the same data in the spec's shapes to a ``user-key`` client.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import threading
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
import requests
from factom_sdk import FactomClient
from factom_sdk.utils.key_common import KeyCommon

from tests.harness.waiting import wait_until
from tests.interop.conftest import RunningStack

pytestmark = pytest.mark.e2e

STAGES = {"replicated", "factom", "anchored"}


@pytest.fixture(scope="module")
def sdk(running: RunningStack) -> FactomClient:
    return FactomClient(running.api_base, "notary-interop", running.api_key)


@pytest.fixture(scope="module")
def identity(sdk: FactomClient) -> dict[str, Any]:
    """An identity made by the SDK (three generated key pairs), once it is on the ledger."""
    created = sdk.identities.create(["notary-interop", str(uuid.uuid4())])
    assert created["stage"] == "replicated" and len(created["key_pairs"]) == 3
    wait_until(
        lambda: _at(sdk.identities.get(created["chain_id"])["data"], "factom"),
        timeout_s=60,
        interval_s=0.1,
        what="the identity chain in a block",
    )
    return created


def _at(resource: dict[str, Any], *stages: str) -> dict[str, Any] | None:
    return resource if resource["stage"] in stages else None


def _signed_chain(sdk: FactomClient, identity: dict[str, Any], tag: str) -> dict[str, Any]:
    return sdk.chains.create(
        f"chain {tag}",
        external_ids=["interop", tag],
        signer_chain_id=identity["chain_id"],
        signer_private_key=identity["key_pairs"][1]["private_key"],
    )


def test_api_info(sdk: FactomClient) -> None:
    info = sdk.api_info.get()
    assert info["version"] == "1.0.11"
    assert info["links"] == {"chains": "/v1/chains"}


def test_identity_create_get_and_keys(sdk: FactomClient, identity: dict[str, Any]) -> None:
    chain_id = identity["chain_id"]
    data = sdk.identities.get(chain_id)["data"]
    assert data["chain_id"] == chain_id and data["version"] == 1
    assert data["names"][0] == "notary-interop"  # decoded by the SDK
    assert data["all_keys_href"] == f"/v1/identities/{chain_id}/keys"
    publics = [pair["public_key"] for pair in identity["key_pairs"]]
    assert [k["key"] for k in data["active_keys"]] == publics
    assert [k["priority"] for k in data["active_keys"]] == [0, 1, 2]
    assert {k["activated_height"] for k in data["active_keys"]} == {data["created_height"]}
    assert data["pending_key"] is None and isinstance(data["created_height"], int)
    first_page = sdk.identities.keys.list(chain_id, limit=2)
    assert first_page["count"] == 3 and first_page["limit"] == 2
    rest = sdk.identities.keys.list(chain_id, limit=2, offset=2)
    assert [k["key"] for k in first_page["data"] + rest["data"]] == publics
    key = sdk.identities.keys.get(chain_id, publics[2])["data"]
    assert key["priority"] == 2 and key["retired_height"] is None
    assert key["entry_hash"] == identity["entry_hash"]
    stranger = KeyCommon.create_key_pair()["public_key"]
    with pytest.raises(requests.HTTPError) as missing:
        sdk.identities.keys.get(chain_id, stranger)
    assert missing.value.response.status_code == 404


def test_signed_chain_and_entries_validate(sdk: FactomClient, identity: dict[str, Any]) -> None:
    created = _signed_chain(sdk, identity, "signed")
    assert created["stage"] == "replicated"
    chain_id = created["chain_id"]
    got = sdk.chains.get(chain_id)
    assert got["status"] == "valid_signature"
    data = got["chain"]["data"]
    assert data["external_ids"][0] == "SignedChain" and data["external_ids"][1] == "0x01"
    assert data["external_ids"][2] == identity["chain_id"]
    assert data["external_ids"][6:] == ["interop", "signed"]
    assert data["content"] == "chain signed" and data["entries"]["href"].endswith("/entries")
    signer = {
        "signer_chain_id": identity["chain_id"],
        "signer_private_key": identity["key_pairs"][2]["private_key"],
    }
    entry = sdk.chains.entries.create(chain_id, "signed content", external_ids=["e1"], **signer)
    assert set(entry) >= {"entry_hash", "stage"} and entry["stage"] == "replicated"
    fetched = sdk.chains.entries.get(chain_id, entry["entry_hash"])
    assert fetched["status"] == "valid_signature"
    assert fetched["entry"]["data"]["content"] == "signed content"
    assert fetched["entry"]["data"]["chain"] == {
        "chain_id": chain_id,
        "href": f"/v1/chains/{chain_id}",
    }
    unsigned = sdk.chains.entries.create(
        chain_id, "plain", external_ids=["plain"], automatic_signing=False
    )
    plain = sdk.chains.entries.get(chain_id, unsigned["entry_hash"])
    assert plain["status"] == "not_signed/invalid_entry_format"
    raw = sdk.chains.entries.get(chain_id, unsigned["entry_hash"], signature_validation=False)
    assert raw["data"]["external_ids"] == ["plain"]
    custom = sdk.chains.entries.get(
        chain_id, unsigned["entry_hash"], signature_validation=lambda r: r["data"]["stage"]
    )
    assert custom["status"] in STAGES


def test_forged_signature_is_reported_invalid(sdk: FactomClient, identity: dict[str, Any]) -> None:
    chain_id = _signed_chain(sdk, identity, "forged")["chain_id"]
    public = identity["key_pairs"][1]["public_key"]
    forged = [
        "SignedEntry",
        bytes([1]),
        identity["chain_id"],
        public,
        bytes(64),
        "2024-01-01T00:00:00Z",
    ]
    entry = sdk.chains.entries.create(
        chain_id, "forged", external_ids=forged, automatic_signing=False
    )
    assert sdk.chains.entries.get(chain_id, entry["entry_hash"])["status"] == "invalid_signature"
    stranger = KeyCommon.create_key_pair()
    unknown_key = [*forged[:3], stranger["public_key"], *forged[4:]]
    other = sdk.chains.entries.create(
        chain_id, "unknown key", external_ids=unknown_key, automatic_signing=False
    )
    assert sdk.chains.entries.get(chain_id, other["entry_hash"])["status"] == "key_not_found"


def test_entries_list_first_last_and_paging(sdk: FactomClient) -> None:
    tag = str(uuid.uuid4())
    chain = sdk.chains.create("first", external_ids=["paging", tag], automatic_signing=False)
    chain_id = chain["chain_id"]
    hashes = [chain["entry_hash"]]
    for i in range(16):
        created = sdk.chains.entries.create(
            chain_id,
            f"entry {i}",
            external_ids=["paging", tag, str(i % 2)],
            automatic_signing=False,
        )
        hashes.append(created["entry_hash"])
    listed = sdk.chains.entries.list(chain_id)
    assert listed["count"] == 17 and listed["limit"] == 15 and listed["offset"] == 0
    assert [item["entry_hash"] for item in listed["data"]] == hashes[:15]
    item = listed["data"][1]
    assert item["href"] == f"/v1/chains/{chain_id}/entries/{hashes[1]}"
    assert item["chain"]["chain_id"] == chain_id and item["stage"] in STAGES
    tail = sdk.chains.entries.list(chain_id, limit=5, offset=15)
    assert [item["entry_hash"] for item in tail["data"]] == hashes[15:]
    assert sdk.chains.entries.get_first(chain_id)["entry"]["data"]["content"] == "first"
    last = sdk.chains.entries.get_last(chain_id, signature_validation=False)
    assert last["data"]["entry_hash"] == hashes[-1] and last["data"]["content"] == "entry 15"
    found = sdk.chains.entries.search(chain_id, ["paging", tag, "1"])
    assert found["count"] == 8 and [e["entry_hash"] for e in found["data"]] == hashes[2::2]
    assert found["data"][0]["external_ids"] == ["paging", tag, "1"]
    paged = sdk.chains.entries.search(chain_id, ["paging", tag], limit=3, offset=15)
    assert paged["count"] == 17 and [e["entry_hash"] for e in paged["data"]] == hashes[15:]
    nothing = sdk.chains.entries.search(chain_id, ["no such tag"])
    assert nothing == {"data": [], "offset": 0, "limit": 15, "count": 0}
    wait_until(
        lambda: _at(sdk.chains.entries.get_last(chain_id, signature_validation=False)["data"],
                    "factom", "anchored"),
        timeout_s=60, interval_s=0.1, what="the last entry in a block",
    )  # fmt: skip
    recorded = sdk.chains.entries.list(chain_id, stages=["factom", "anchored"], limit=100)
    assert recorded["count"] == 17
    assert sdk.chains.entries.list(chain_id, stages=["replicated"])["count"] == 0


def test_chains_list_search_and_stage_filter(sdk: FactomClient) -> None:
    tag = str(uuid.uuid4())
    made = [
        sdk.chains.create(f"c{i}", external_ids=["listing", tag, str(i)], automatic_signing=False)
        for i in range(3)
    ]
    everything = sdk.chains.list(limit=1000)
    mine = [c for c in everything["data"] if c["chain_id"] in {m["chain_id"] for m in made}]
    assert len(mine) == 3 and everything["count"] >= 3
    assert mine[0]["external_ids"] == ["listing", tag, "0"]
    assert mine[0]["href"] == f"/v1/chains/{made[0]['chain_id']}"
    one = sdk.chains.list(limit=1, offset=1)
    assert len(one["data"]) == 1 and one["limit"] == 1 and one["offset"] == 1
    found = sdk.chains.search(["listing", tag])
    assert [c["chain_id"] for c in found["data"]] == [m["chain_id"] for m in made]
    second = sdk.chains.search(["listing", tag], limit=1, offset=1)
    assert second["count"] == 3 and second["data"][0]["chain_id"] == made[1]["chain_id"]
    assert sdk.chains.search(["listing", tag, "2"])["data"][0]["chain_id"] == made[2]["chain_id"]
    assert sdk.chains.search(["nothing like it", tag])["data"] == []
    wait_until(
        lambda: _at(sdk.chains.get(made[2]["chain_id"], signature_validation=False)["data"],
                    "factom", "anchored"),
        timeout_s=60, interval_s=0.1, what="the chains in a block",
    )  # fmt: skip
    recorded = sdk.chains.list(stages=["factom", "anchored"], limit=1000)
    assert {m["chain_id"] for m in made} <= {c["chain_id"] for c in recorded["data"]}
    with pytest.raises(requests.HTTPError) as refused:
        sdk.chains.list(stages=["finalized"])
    assert refused.value.response.status_code == 400


def test_key_replacement_and_retired_key(sdk: FactomClient, identity: dict[str, Any]) -> None:
    chain_id = identity["chain_id"]
    pairs = identity["key_pairs"]
    replaced = sdk.identities.keys.replace(
        chain_id, pairs[2]["public_key"], pairs[1]["private_key"]
    )
    assert replaced["stage"] == "replicated" and set(replaced["key_pair"]) == {
        "public_key",
        "private_key",
    }
    new_key = replaced["key_pair"]["public_key"]
    pending = sdk.identities.get(chain_id)["data"]["pending_key"]
    assert pending is None or pending["key"] == new_key  # pending until in a block

    def replaced_in_a_block() -> dict[str, Any] | None:
        data = sdk.identities.get(chain_id)["data"]
        return data if new_key in [k["key"] for k in data["active_keys"]] else None

    data = wait_until(
        replaced_in_a_block, timeout_s=60, interval_s=0.1, what="the replacement in a block"
    )
    assert [k["key"] for k in data["active_keys"]] == [
        pairs[0]["public_key"],
        pairs[1]["public_key"],
        new_key,
    ]
    assert data["pending_key"] is None
    old = sdk.identities.keys.get(chain_id, pairs[2]["public_key"])["data"]
    new = sdk.identities.keys.get(chain_id, new_key)["data"]
    assert old["retired_height"] == new["activated_height"] is not None
    assert new["priority"] == 2 and new["entry_hash"] == replaced["entry_hash"]
    assert sdk.identities.keys.list(chain_id)["count"] == 4
    # a lower-priority key may not replace a higher one: refused before anything is stored
    with pytest.raises(requests.HTTPError) as refused:
        sdk.identities.keys.replace(
            chain_id, pairs[0]["public_key"], replaced["key_pair"]["private_key"]
        )
    assert refused.value.response.status_code == 422
    # an entry signed with the retired key, recorded after its retirement
    chain = _signed_chain(sdk, identity, "after-retirement")
    late = sdk.chains.entries.create(
        chain["chain_id"],
        "late",
        signer_chain_id=chain_id,
        signer_private_key=pairs[2]["private_key"],
    )
    wait_until(
        lambda: _at(
            sdk.chains.entries.get(chain["chain_id"], late["entry_hash"], signature_validation=False)["data"],
            "factom", "anchored",
        ),
        timeout_s=60, interval_s=0.1, what="the late entry in a block",
    )  # fmt: skip
    status = sdk.chains.entries.get(chain["chain_id"], late["entry_hash"])["status"]
    assert status == "retired_key"


def test_receipts_and_anchors(sdk: FactomClient) -> None:
    chain = sdk.chains.create(
        "receipt", external_ids=["receipt", str(uuid.uuid4())], automatic_signing=False
    )
    entry_hash = chain["entry_hash"]
    anchored = wait_until(
        lambda: _at(sdk.chains.entries.get_first(chain["chain_id"], signature_validation=False)["data"], "anchored"),
        timeout_s=60, interval_s=0.1, what="the entry anchored",
    )  # fmt: skip
    receipt = sdk.receipts.get(entry_hash)["data"]
    assert receipt["entry_hash"] == entry_hash
    assert receipt["dblock"] == {
        "keymr": anchored["dblock"]["keymr"],
        "height": anchored["dblock"]["height"],
    }
    assert receipt["eblock"] == anchored["eblock"] and anchored["eblock"]["keymr"]
    raw = bytes.fromhex(receipt["entry_serialized"])
    assert hashlib.sha256(hashlib.sha512(raw).digest() + raw).hexdigest() == entry_hash
    current = bytes.fromhex(entry_hash)
    for node in receipt["merkle_branch"]:  # each step: the missing side is where we are
        left, right = bytes.fromhex(node["left"]), bytes.fromhex(node["right"])
        assert current in (left, right)
        current = hashlib.sha256(left + right).digest()
        assert current.hex() == node["top"]
    assert current.hex() == receipt["dblock"]["keymr"]
    by_entry = sdk.anchors.get(entry_hash)["data"]
    by_height = sdk.anchors.get(receipt["dblock"]["height"])["data"]
    assert by_entry == by_height
    assert by_entry["dblock"] == receipt["dblock"]
    networks = {a["network"]: a for a in by_entry["anchors"]}
    assert "pow" in networks and networks["pow"]["status"] == "confirmed"
    assert len(networks["pow"]["block_hash"]) == 64
    with pytest.raises(requests.HTTPError) as unknown:
        sdk.receipts.get("ab" * 32)
    assert unknown.value.response.status_code == 404


class _Hooks(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("content-length") or 0))
        _Hooks.seen.append(dict(parse_qsl(urlsplit(self.path).query)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def hook_url(running: RunningStack) -> Iterator[str]:
    # The bundled stack's API calls back only its collector's port on loopback.
    port = running.settings.collector_port
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Hooks)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook?ref=sdk"
    finally:
        server.shutdown()


def test_callback_stages_by_the_hosted_names(sdk: FactomClient, hook_url: str) -> None:
    chain = sdk.chains.create(
        "callback",
        external_ids=["callback", str(uuid.uuid4())],
        automatic_signing=False,
        callback_url=hook_url,
        callback_stages=["replicated", "factom"],
    )
    wait_until(
        lambda: [h for h in _Hooks.seen if h.get("stage") == "ledger"] or None,
        timeout_s=60,
        interval_s=0.1,
        what="the ledger callback",
    )
    mine = [h for h in _Hooks.seen if h.get("ref") == "sdk"]
    assert {h["stage"] for h in mine} >= {"multi_az", "ledger"}
    assert any(h.get("entry_hash") == chain["entry_hash"] for h in mine)


def test_errors_reach_the_sdk_as_http_errors(sdk: FactomClient, running: RunningStack) -> None:
    for call in (
        lambda: sdk.chains.get("ab" * 32),
        lambda: sdk.chains.entries.get("ab" * 32, "cd" * 32),
        lambda: sdk.identities.get("ab" * 32),
    ):
        with pytest.raises(requests.HTTPError) as missing:
            call()
        assert missing.value.response.status_code == 404
    wrong = FactomClient(running.api_base, "notary-interop", "not-a-key")
    with pytest.raises(requests.HTTPError) as refused:
        wrong.chains.list()
    assert refused.value.response.status_code == 403


def test_spec_clients_still_get_the_spec_shapes(sdk: FactomClient, running: RunningStack) -> None:
    chain = sdk.chains.create("both", external_ids=["both", "shapes"], automatic_signing=False)
    url = running.api_base.rstrip("/")
    headers = {"user-key": running.api_key}
    spec = httpx.get(f"{url}/chains/{chain['chain_id']}", headers=headers).json()
    assert "data" not in spec and spec["chain_id"] == chain["chain_id"]
    assert spec["stage"] in {"multi_az", "ledger", "anchor"}
    assert spec["external_ids"] == [
        base64.b64encode(b"both").decode(),
        base64.b64encode(b"shapes").decode(),
    ]
    listing = httpx.get(f"{url}/chains", headers=headers).json()
    assert "items" in listing and "data" not in listing

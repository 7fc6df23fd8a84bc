"""Every wallet method through the real app (httpx.ASGITransport), errors and vectors."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.jsonrpc import AsyncJsonRpcClient
from ledger.jsonrpc.registry import MethodRegistry
from ledger.jsonrpc.server import create_jsonrpc_app
from ledger.wallet.node_link import NodeHeights
from ledger.wallet.store import MemoryWalletStore, StoredKey

from .conftest import PASSPHRASE, YELLOW

pytestmark = pytest.mark.anyio

ZERO_ES = "Es2Rf7iM6PdsqfYCo3D1tnAR65SkLENyWJG1deUzpRMQmbh9F3eG"
ZERO_EC = "EC2DKSYyRcNWf7RS963VFYgMExoHRYLHVeCfQ9PGPmNzwrcmgm2r"
SAND_FS = "Fs3E9gV6DXsYzf7Fqx1fVBQPQXV695eP3k5XbmHEZVRLkMdD9qCK"
SAND_FA = "FA2jK2HcLnRdS94dEcU27rF3meoJfpUcZPSinpb7AwQvPRY6RL1Q"
FA0 = {
    "public": "FA22de5NSG2FA2HmMaD4h8qSAZAJyztmmnwgLPghCQKoSekwYYct",
    "secret": "Fs1jQGc9GJjyWNroLPq7x6LbYQHveyjWNPXSqAvCEKpETNoTU5dP",
}
FA1 = {
    "public": "FA3heCmxKCk1tCCfiAMDmX8Ctg6XTQjRRaJrF5Jagc9rbo7wqQLV",
    "secret": "Fs2wZzM2iBn4HEbhwEUZjLfcbTo5Rf6ChRNjNJWDiyWmy9zkPQNP",
}
EC0 = {
    "public": "EC2KnJQN86MYq4pQyeSGTHSiVdkhRCPXS3udzD4im6BXRBjZFMmR",
    "secret": "Es37BZSs7jUpyn3HosZa79kENWfvj1AVUdZioWykTTqqvA2MRi9h",
}
ID0 = {
    "public": "idpub2Q7m3YwkQMmNQUVpfcED52b7nFmYFWkiMGGF41srZ9hZZYmC5p",
    "secret": "idsec2VZ2EJ1hoUeQYmFPeFthWts3xsGiPpRdfL4zABjzuHQshX4qvY",
}
TEST_CHAIN = "954d5a49fd70d9b8bcdb35d252267829957f7ef7fa6c74f88419bdc5e82209f4"
# docs/formats.md §2.5 (derived): zero-seed EC key, timestamp 0x0155ba3b3b3a
CHAIN_COMMIT = (
    "000155ba3b3b3a516870d4c0e1ee2d5f0d415e51fc10ae6b8d895561e9314afdc33048194d76f0cbce3a01007d9f"
    "b35aeb5700ba8cc6aac8e12ef13bb7361fa757e78d31a5b8e0be705a58aea4230e99881f625e74cd085b6ef455b9"
    "4ff144249b9a2f425e8f960b3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29223"
    "734a2030d161f7ac3f5e86b0cf4a91d4edc9a2abff9806015d384ac349b6ada800b53a6f8663f8378e555dfe4b6f6"
    "13b0d7ced8be2f945e12e393a4464401"
)
ENTRY_COMMIT = (
    "000155ba3b3b3a7956226d7510b175594ea4c54f2f4d72fd5919c2961d2c02aae9ad8dceb97373013b6a27bcceb6"
    "a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29f5ac3406ecafacf677bb2d0327daf02717f78c5d"
    "76537e6247350eed96486303c4503e17a249041b8b3919f5dcb3a03e5d73261c176fc92ae8c6bffed7a1ff0e"
)
HELLO_ENTRY = {"chainid": TEST_CHAIN, "extids": [b"Hello".hex()], "content": b"PayloadHere".hex()}


def _request(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 0, "params": params, "method": method}


# -- service methods ----------------------------------------------------------------------------


async def test_properties_and_get_height(make_rpc) -> None:
    async with make_rpc() as rpc:
        props = await rpc.result("properties")
        assert set(props) == {"walletversion", "walletapiversion"}
        assert props["walletapiversion"] == "2.0"
        assert await rpc.result("get-height") == {"height": 42}


async def test_get_height_asks_the_node_heights(make_rpc) -> None:
    node = MethodRegistry()

    @node.method("heights", blocking=False)
    def heights() -> dict[str, int]:
        return {
            "directoryblockheight": 7,
            "leaderheight": 8,
            "entryblockheight": 7,
            "entryheight": 7,
        }

    node_app = create_jsonrpc_app(node)
    client = AsyncJsonRpcClient("http://node/v2", transport=httpx.ASGITransport(app=node_app))
    async with make_rpc(heights=NodeHeights(client)) as rpc:
        assert await rpc.result("get-height") == {"height": 7}
    down = AsyncJsonRpcClient("http://127.0.0.1:1/v2", timeout_s=2)
    async with make_rpc(heights=NodeHeights(down)) as rpc:
        error = await rpc.error("get-height")
        assert error["code"] == -32603 and "heights" in error["data"]
    await client.aclose()
    await down.aclose()


async def test_envelope_errors_use_http_400(make_rpc) -> None:
    async with make_rpc() as rpc:
        assert (await rpc.error("no-such-method"))["code"] == -32601
        response = await rpc.client.post("/v2", content=b"{not json")
        assert response.status_code == 400 and response.json()["error"]["code"] == -32700
        got = await rpc.client.request(
            "GET", "/v2", content=b'{"jsonrpc":"2.0","id":3,"method":"properties"}'
        )
        assert got.json()["id"] == 3 and "result" in got.json()


# -- addresses ------------------------------------------------------------------------------------


async def test_generate_addresses_follow_the_vectors(make_rpc) -> None:
    async with make_rpc() as rpc:
        assert await rpc.result("generate-factoid-address") == FA0
        assert await rpc.result("generate-factoid-address") == FA1
        assert await rpc.result("generate-ec-address") == EC0
        assert await rpc.result("all-addresses") == {"addresses": [FA0, FA1, EC0]}
        assert await rpc.result("address", {"address": EC0["public"]}) == EC0


async def test_addresses_persist_across_restarts(make_rpc) -> None:
    async with make_rpc() as rpc:
        await rpc.result("generate-ec-address")
        await rpc.result("import-addresses", {"addresses": [{"secret": SAND_FS}]})
    async with make_rpc(restore_mnemonic=None) as rpc:  # existing file: the mnemonic is not reused
        listed = await rpc.result("all-addresses")
        assert listed["addresses"] == [{"public": SAND_FA, "secret": SAND_FS}, EC0]
        assert (await rpc.result("generate-ec-address"))["public"] != EC0["public"]


async def test_import_addresses(make_rpc) -> None:
    async with make_rpc() as rpc:
        result = await rpc.result(
            "import-addresses", {"addresses": [{"secret": ZERO_ES}, {"secret": SAND_FS}]}
        )
        assert result == {
            "addresses": [
                {"public": ZERO_EC, "secret": ZERO_ES},
                {"public": SAND_FA, "secret": SAND_FS},
            ]
        }
        bad = ZERO_ES[:-1] + "X"
        error = await rpc.error(
            "import-addresses",
            {
                "addresses": [
                    {"secret": "Fs1KWJrpLdfucvmYwN2nWrwepLn8ercpMbzXshd1g8zyhKXLVLWj"},
                    {"secret": bad},
                ]
            },
        )
        assert error == {"code": -32602, "message": "Invalid params", "data": "Invalid Address"}
        listed = await rpc.result("all-addresses")
        assert len(listed["addresses"]) == 2  # nothing of the failed batch was imported
        assert (await rpc.error("import-addresses", {"addresses": [{"secret": ID0["secret"]}]}))[
            "data"
        ] == "Invalid Address"
        assert (await rpc.error("import-addresses", {}))["code"] == -32602


async def test_import_koinify(make_rpc) -> None:
    async with make_rpc() as rpc:
        result = await rpc.result("import-koinify", {"words": YELLOW})
        assert result["public"] == "FA3cih2o2tjEUsnnFR4jX1tQXPpSXFwsp3rhVp6odL5PNCHWvZV1"
        assert (await rpc.error("import-koinify", {"words": "yellow yellow"}))["code"] == -32602


async def test_address_errors(make_rpc) -> None:
    async with make_rpc() as rpc:
        assert await rpc.error("address", {"address": ZERO_EC}) == {
            "code": -32602,
            "message": "Invalid params",
            "data": "Wallet: address not found",
        }
        assert (await rpc.error("address", {"address": "EC1nope"}))["data"] == "Invalid Address"
        assert (await rpc.error("address", {"address": ZERO_ES}))["data"] == "Invalid Address"
        assert (await rpc.error("address", {"address": ID0["public"]}))["data"] == "Invalid Address"
        assert "address" in (await rpc.error("address", {}))["data"]


async def test_remove_address(make_rpc) -> None:
    async with make_rpc() as rpc:
        await rpc.result("import-addresses", {"addresses": [{"secret": ZERO_ES}]})
        assert await rpc.result("remove-address", {"address": ZERO_EC}) == {"success": True}
        assert await rpc.result("all-addresses") == {"addresses": []}
        assert (await rpc.error("remove-address", {"address": ZERO_EC}))["data"] == (
            "Wallet: address not found"
        )
        composed = await rpc.error("compose-entry", {"entry": HELLO_ENTRY, "ecpub": ZERO_EC})
        assert composed["data"] == "Wallet: address not found"


# -- compose ----------------------------------------------------------------------------------------


async def test_compose_chain_matches_the_derived_vector(make_rpc) -> None:
    async with make_rpc() as rpc:
        await rpc.result("import-addresses", {"addresses": [{"secret": ZERO_ES}]})
        params = {
            "chain": {
                "firstentry": {
                    "chainid": "00" * 32,  # ignored: recomputed from the ExtIDs
                    "extids": [b"test".hex()],
                    "content": b"PayloadHere".hex(),
                }
            },
            "ecpub": ZERO_EC,
        }
        result = await rpc.result("compose-chain", params)
        first = Entry.first_entry([b"test"], b"PayloadHere")
        assert first.chain_id.hex() == TEST_CHAIN
        assert result == {
            "commit": _request(
                "commit-chain", {"message": CHAIN_COMMIT, "chainid": first.chain_id.hex()}
            ),
            "reveal": _request("reveal-chain", {"entry": first.marshal().hex()}),
        }
        assert list(result["commit"]) == ["jsonrpc", "id", "params", "method"]
        CommitChain.unmarshal(bytes.fromhex(CHAIN_COMMIT)).verify()


async def test_compose_entry_matches_the_derived_vector(make_rpc) -> None:
    async with make_rpc() as rpc:
        await rpc.result("import-addresses", {"addresses": [{"secret": ZERO_ES}]})
        result = await rpc.result(
            "compose-entry", {"entry": HELLO_ENTRY, "ecpub": ZERO_EC, "force": True}
        )
        assert result == {
            "commit": _request("commit-entry", {"message": ENTRY_COMMIT}),
            "reveal": _request(
                "reveal-entry", {"entry": Entry.from_json(HELLO_ENTRY).marshal().hex()}
            ),
        }
        rpc.clock.advance(1.5)
        later = await rpc.result("compose-entry", {"entry": HELLO_ENTRY, "ecpub": ZERO_EC})
        commit = CommitEntry.unmarshal(bytes.fromhex(later["commit"]["params"]["message"]))
        assert commit.timestamp_ms == 0x0155BA3B3B3A + 1500
        commit.verify()


async def test_compose_entry_cost_follows_the_payload(make_rpc) -> None:
    async with make_rpc() as rpc:
        ec = (await rpc.result("generate-ec-address"))["public"]
        entry = {"chainid": TEST_CHAIN, "extids": [], "content": "ab" * 5000}
        message = (await rpc.result("compose-entry", {"entry": entry, "ecpub": ec}))["commit"]
        assert CommitEntry.unmarshal(bytes.fromhex(message["params"]["message"])).credits == 5
        too_big = {"chainid": TEST_CHAIN, "extids": [], "content": "ab" * 10241}
        error = await rpc.error("compose-entry", {"entry": too_big, "ecpub": ec})
        assert error["code"] == -32602 and "10240" in error["data"]


async def test_compose_errors(make_rpc) -> None:
    async with make_rpc() as rpc:
        ec = (await rpc.result("generate-ec-address"))["public"]
        cases = [
            ({"entry": HELLO_ENTRY, "ecpub": ZERO_EC}, "Wallet: address not found"),
            ({"entry": HELLO_ENTRY, "ecpub": "EC-not-an-address"}, "Invalid Address"),
            ({"entry": HELLO_ENTRY, "ecpub": FA0["public"]}, "Invalid Address"),
            ({"entry": {**HELLO_ENTRY, "content": "zz"}, "ecpub": ec}, "content is not valid hex"),
            (
                {"entry": {**HELLO_ENTRY, "chainid": "ab"}, "ecpub": ec},
                "chain id must be 32 bytes, got 1",
            ),
        ]
        for params, data in cases:
            assert await rpc.error("compose-entry", params) == {
                "code": -32602,
                "message": "Invalid params",
                "data": data,
            }
        assert "ecpub" in (await rpc.error("compose-entry", {"entry": HELLO_ENTRY}))["data"]
        chain = {"chain": {"firstentry": {"extids": ["0g"]}}, "ecpub": ec}
        assert (await rpc.error("compose-chain", chain))["code"] == -32602


class CountingStore(MemoryWalletStore):
    """A MemoryWalletStore that counts every call made to it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def get_meta(self, name: str) -> bytes | None:
        self.calls += 1
        return super().get_meta(name)

    def list_keys(self, kinds=None) -> list[StoredKey]:  # type: ignore[no-untyped-def]
        self.calls += 1
        return super().list_keys(kinds)


async def test_compose_does_not_touch_the_store(make_rpc) -> None:
    store = CountingStore()
    async with make_rpc(store=store) as rpc:
        ec = (await rpc.result("generate-ec-address"))["public"]
        await rpc.result("compose-entry", {"entry": HELLO_ENTRY, "ecpub": ec})
        before = store.calls
        for i in range(50):
            entry = {**HELLO_ENTRY, "content": f"{i:04x}"}
            await rpc.result("compose-entry", {"entry": entry, "ecpub": ec})
        assert store.calls == before


# -- identity keys and identity compose ---------------------------------------------------------------


async def test_identity_key_methods(make_rpc) -> None:
    async with make_rpc() as rpc:
        assert await rpc.result("generate-identity-key") == ID0
        other = "idsec19zBQP2RjHg8Cb8xH2XHzhsB1a6ZkB23cbS21NSyH9pDbzhnN6"
        other_pub = "idpub2Cy86teq57qaxHyqLA8jHwe5JqqCvL1HGH4cKRcwSTbymTTh5n"
        imported = await rpc.result("import-identity-keys", {"keys": [{"secret": other}]})
        assert imported == {"keys": [{"public": other_pub, "secret": other}]}
        assert await rpc.result("all-identity-keys") == {
            "keys": [ID0, {"public": other_pub, "secret": other}]
        }
        assert await rpc.result("identity-key", {"public": other_pub}) == {
            "public": other_pub,
            "secret": other,
        }
        assert await rpc.result("remove-identity-key", {"public": other_pub}) == {"success": True}
        assert (await rpc.error("identity-key", {"public": other_pub}))["data"] == (
            "Wallet: identity key not found"
        )
        assert (await rpc.error("identity-key", {"public": EC0["public"]}))[
            "data"
        ] == "Invalid Address"
        assert (await rpc.error("import-identity-keys", {"keys": [{"secret": ZERO_ES}]}))[
            "data"
        ] == "Invalid Address"
        assert await rpc.result("all-addresses") == {"addresses": []}  # identity keys are separate


async def test_wallet_backup(make_rpc) -> None:
    async with make_rpc() as rpc:
        await rpc.result("generate-factoid-address")
        await rpc.result("generate-identity-key")
        assert await rpc.result("wallet-backup") == {
            "wallet-seed": YELLOW,
            "addresses": [FA0],
            "identity-keys": [ID0],
        }


async def test_compose_identity_chain(make_rpc) -> None:
    keys = [
        "idpub2EMSb17Rf9jWwoKigMa3EydLc3e8o7uhYbU5mDqpdcXuTymDWa",
        "idpub2ucJ6MTVNVGoGQdJKGk6DqtE7xcxYBa4WTuS8APuHHMHuh4M6W",
        "idpub2yrure3XynmbfY9DAhqiRcPbLhU84toDo1fw8X1TNgKmbkFWgn",
        "idpub3Frhv7tZeDhcGqtG9SZ7Ja7faBuhwxbxcAYJTMQ8HqEc2vth44",
    ]
    async with make_rpc() as rpc:
        await rpc.result("import-addresses", {"addresses": [{"secret": ZERO_ES}]})
        params = {
            "name": ["John", "Jacob", "Jingleheimer-Schmidt"],
            "pubkeys": keys,
            "ecpub": ZERO_EC,
        }
        result = await rpc.result("compose-identity-chain", params)
        entry = Entry.from_hex(result["reveal"]["params"]["entry"])
        assert (
            result["reveal"]["method"] == "reveal-chain"
            and result["commit"]["method"] == "commit-chain"
        )
        assert (
            entry.chain_id.hex()
            == "44abb806a2029ed77dca63770e2e4ac4b2fedd2e1847339ac59b180ee223eb84"
        )
        assert (
            entry.hash().hex() == "00b858373a4e55276542848b47e9af4a31b4333a4db262974096fa0b15595ea8"
        )
        commit = CommitChain.unmarshal(bytes.fromhex(result["commit"]["params"]["message"]))
        assert commit.entry_hash == entry.hash() and commit.credits == 11
        bad = await rpc.error("compose-identity-chain", {**params, "pubkeys": [ZERO_EC]})
        assert bad["data"] == "Invalid Address"


async def test_compose_identity_entries(make_rpc) -> None:
    chain = "44abb806a2029ed77dca63770e2e4ac4b2fedd2e1847339ac59b180ee223eb84"
    async with make_rpc() as rpc:
        ec = (await rpc.result("generate-ec-address"))["public"]
        signer = (await rpc.result("generate-identity-key"))["public"]
        replacement = await rpc.result(
            "compose-identity-key-replacement",
            {
                "chainid": chain,
                "oldkey": signer,
                "newkey": ID0["public"],
                "signerkey": signer,
                "ecpub": ec,
            },
        )
        entry = Entry.from_hex(replacement["reveal"]["params"]["entry"])
        assert entry.chain_id.hex() == chain and entry.external_ids[0] == b"ReplaceKey"
        assert replacement["commit"]["method"] == "commit-entry"
        attribute = await rpc.result(
            "compose-identity-attribute",
            {
                "receiver-chainid": chain,
                "destination-chainid": chain,
                "attributes": [{"key": "email", "value": "j@example.com"}],
                "signerkey": signer,
                "signer-chainid": chain,
                "ecpub": ec,
                "force": True,
            },
        )
        attribute_entry = Entry.from_hex(attribute["reveal"]["params"]["entry"])
        assert attribute_entry.content == b'[{"key":"email","value":"j@example.com"}]'
        endorsement = await rpc.result(
            "compose-identity-attribute-endorsement",
            {
                "destination-chainid": chain,
                "entry-hash": attribute_entry.hash().hex(),
                "signerkey": signer,
                "signer-chainid": chain,
                "ecpub": ec,
            },
        )
        endorsed = Entry.from_hex(endorsement["reveal"]["params"]["entry"])
        assert endorsed.content == attribute_entry.hash().hex().encode()
        unknown = await rpc.error(
            "compose-identity-attribute-endorsement",
            {
                "destination-chainid": chain,
                "entry-hash": "00" * 32,
                "signerkey": "idpub2Cy86teq57qaxHyqLA8jHwe5JqqCvL1HGH4cKRcwSTbymTTh5n",
                "signer-chainid": chain,
                "ecpub": ec,
            },
        )
        assert unknown["data"] == "Wallet: identity key not found"
        null_value = await rpc.error(
            "compose-identity-attribute",
            {
                "receiver-chainid": chain,
                "destination-chainid": chain,
                "attributes": [{"key": "email"}],
                "signerkey": signer,
                "signer-chainid": chain,
                "ecpub": ec,
            },
        )
        assert null_value["code"] == -32602


# -- encryption at rest -------------------------------------------------------------------------------

GATED = [
    ("generate-ec-address", None),
    ("generate-factoid-address", None),
    ("generate-identity-key", None),
    ("all-addresses", None),
    ("all-identity-keys", None),
    ("address", {"address": EC0["public"]}),
    ("remove-address", {"address": EC0["public"]}),
    ("identity-key", {"public": ID0["public"]}),
    ("remove-identity-key", {"public": ID0["public"]}),
    ("import-addresses", {"addresses": [{"secret": ZERO_ES}]}),
    ("import-identity-keys", {"keys": [{"secret": ID0["secret"]}]}),
    ("import-koinify", {"words": YELLOW}),
    ("wallet-backup", None),
    ("compose-entry", {"entry": HELLO_ENTRY, "ecpub": EC0["public"]}),
    (
        "compose-chain",
        {"chain": {"firstentry": {"extids": [], "content": ""}}, "ecpub": EC0["public"]},
    ),
]


async def test_encrypted_wallet_is_locked_until_unlocked(make_rpc) -> None:
    async with make_rpc(encrypted=True, passphrase=PASSPHRASE) as rpc:
        for method, params in GATED:
            assert await rpc.error(method, params) == {
                "code": -32001,
                "message": "Wallet is locked",
            }
        assert (await rpc.result("properties"))["walletapiversion"] == "2.0"
        assert await rpc.result("get-height") == {"height": 42}
        assert await rpc.error("unlock-wallet", {"passphrase": "nope", "timeout": 60}) == {
            "code": -32003,
            "message": "Incorrect passphrase",
        }
        unlocked = await rpc.result("unlock-wallet", {"passphrase": PASSPHRASE, "timeout": 60})
        assert unlocked == {"success": True, "unlockeduntil": int(rpc.clock.now()) + 60}
        assert await rpc.result("generate-ec-address") == EC0
        composed = await rpc.result("compose-entry", {"entry": HELLO_ENTRY, "ecpub": EC0["public"]})
        assert composed["commit"]["method"] == "commit-entry"
        rpc.clock.advance(61)
        assert (await rpc.error("compose-entry", {"entry": HELLO_ENTRY, "ecpub": EC0["public"]}))[
            "code"
        ] == -32001
    async with make_rpc(encrypted=True, passphrase=None) as rpc:  # restart: still encrypted, locked
        assert (await rpc.error("all-addresses"))["code"] == -32001
        await rpc.result("unlock-wallet", {"passphrase": PASSPHRASE, "timeout": 5})
        assert await rpc.result("all-addresses") == {"addresses": [EC0]}


async def test_unlock_on_a_plain_wallet_and_bad_params(make_rpc) -> None:
    async with make_rpc() as rpc:
        error = await rpc.error("unlock-wallet", {"passphrase": "x", "timeout": 5})
        assert error["code"] == -32603 and "non-encrypted" in error["data"]
        assert (await rpc.error("unlock-wallet", {"passphrase": "x", "timeout": -1}))[
            "code"
        ] == -32602


async def test_startup_imports_and_configuration_errors(make_rpc, wallet_file) -> None:
    from ledger.wallet import WalletSettings, WalletStateError, create_app

    async with make_rpc(
        encrypted=True, passphrase=PASSPHRASE, import_secrets=[ZERO_ES, SAND_FS]
    ) as rpc:
        assert (await rpc.error("all-addresses"))["code"] == -32001
        await rpc.result("unlock-wallet", {"passphrase": PASSPHRASE, "timeout": 5})
        publics = [a["public"] for a in (await rpc.result("all-addresses"))["addresses"]]
        assert publics == [SAND_FA, ZERO_EC]
    with pytest.raises(WalletStateError):
        create_app(WalletSettings(wallet_file=wallet_file.with_name("new.sqlite"), encrypted=True))
    plain = wallet_file.with_name("plain.sqlite")
    create_app(WalletSettings(wallet_file=plain))
    with pytest.raises(WalletStateError):
        create_app(WalletSettings(wallet_file=plain, encrypted=True, passphrase="x"))


async def test_secrets_never_reach_logs_or_errors(
    make_rpc, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bad_secret = SAND_FS[:-2] + "zz"
    async with make_rpc(encrypted=True, passphrase=PASSPHRASE) as rpc:
        replies = [
            await rpc.call("unlock-wallet", {"passphrase": "wrong-" + PASSPHRASE, "timeout": 5}),
            await rpc.call("unlock-wallet", {"passphrase": PASSPHRASE, "timeout": "soon"}),
        ]
        await rpc.result("unlock-wallet", {"passphrase": PASSPHRASE, "timeout": 60})
        replies.append(await rpc.call("import-addresses", {"addresses": [{"secret": bad_secret}]}))
        replies.append(await rpc.call("import-addresses", {"addresses": [{"secret": 5}]}))
    text = repr(replies) + caplog.text + repr(rpc.app.state.keyring) + repr(rpc.app.state.settings)
    for secret in (PASSPHRASE, bad_secret, SAND_FS[:20]):
        assert secret not in text

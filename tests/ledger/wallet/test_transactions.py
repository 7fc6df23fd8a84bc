"""Named transactions through the wallet app (httpx.ASGITransport) against a fake node."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.core.addresses import fct_secret_address, rcd_hash_from_fct_address
from ledger.core.transaction import Transaction
from tests.ledger.core.test_transaction import DERIVED_HEX, DERIVED_TXID

from .conftest import PASSPHRASE

pytestmark = pytest.mark.anyio

ZERO_FS = fct_secret_address(bytes(32))
ZERO_FA = "FA1zT4aFpEvcnPqPCigB3fvGu4Q4mTXY22iiuV69DqE1pNhdF2MC"
SAND_FA = "FA2jK2HcLnRdS94dEcU27rF3meoJfpUcZPSinpb7AwQvPRY6RL1Q"
ZERO_EC = "EC2DKSYyRcNWf7RS963VFYgMExoHRYLHVeCfQ9PGPmNzwrcmgm2r"
COIN = 10**8


async def funded(rpc: Any, fake_node: Any) -> None:
    await rpc.result("import-addresses", {"addresses": [{"secret": ZERO_FS}]})
    fake_node.balances[ZERO_FA] = (10 * COIN, 10 * COIN)


async def build(rpc: Any, name: str, *, inputs: int, outputs: int) -> dict[str, Any]:
    await rpc.result("new-transaction", {"tx-name": name})
    await rpc.result("add-input", {"tx-name": name, "address": ZERO_FA, "amount": inputs})
    return await rpc.result("add-output", {"tx-name": name, "address": SAND_FA, "amount": outputs})


async def test_step_by_step_matches_the_derived_vector(make_rpc, fake_node) -> None:
    async with make_rpc(node=fake_node.link) as rpc:
        await funded(rpc, fake_node)
        created = await rpc.result("new-transaction", {"tx-name": "pay"})
        assert created == {
            "feespaid": 0,
            "feesrequired": 1000,
            "signed": False,
            "name": "pay",
            "timestamp": 1467708291,
            "totalecoutputs": 0,
            "totalinputs": 0,
            "totaloutputs": 0,
            "inputs": None,
            "outputs": None,
            "ecoutputs": None,
            "txid": Transaction(0x0155BA3B3B3A).txid().hex(),
        }
        await rpc.result("add-input", {"tx-name": "pay", "address": ZERO_FA, "amount": COIN})
        out = await rpc.result("add-output", {"tx-name": "pay", "address": SAND_FA, "amount": COIN})
        assert out["inputs"] == [{"address": ZERO_FA, "amount": COIN}]
        assert out["outputs"] == [{"address": SAND_FA, "amount": COIN}]
        assert (out["feesrequired"], out["feespaid"]) == (12000, 0)
        paid = await rpc.result("add-fee", {"tx-name": "pay", "address": ZERO_FA})
        assert paid["inputs"] == [{"address": ZERO_FA, "amount": COIN + 12000}]
        assert paid["feespaid"] == paid["feesrequired"] == 12000
        signed = await rpc.result("sign-transaction", {"tx-name": "pay"})
        assert signed["signed"] is True and signed["txid"] == DERIVED_TXID
        assert await rpc.result("compose-transaction", {"tx-name": "pay"}) == {
            "jsonrpc": "2.0",
            "id": 0,
            "params": {"transaction": DERIVED_HEX},
            "method": "coin-submit",
        }
        assert await rpc.result("transaction-hash", {"tx-name": "pay"}) == {
            "name": "pay",
            "txid": DERIVED_TXID,
        }


async def test_inputs_and_outputs_are_set_per_address(make_rpc, fake_node) -> None:
    async with make_rpc(node=fake_node.link) as rpc:
        await funded(rpc, fake_node)
        await build(rpc, "t", inputs=5, outputs=3)
        again = await rpc.result("add-input", {"tx-name": "t", "address": ZERO_FA, "amount": 7})
        assert again["inputs"] == [{"address": ZERO_FA, "amount": 7}]
        two = await rpc.result("add-output", {"tx-name": "t", "address": ZERO_FA, "amount": 1})
        assert [o["address"] for o in two["outputs"]] == [SAND_FA, ZERO_FA]
        ec = await rpc.result("add-ec-output", {"tx-name": "t", "address": ZERO_EC, "amount": 2000})
        assert ec["ecoutputs"] == [{"address": ZERO_EC, "amount": 2000}]
        assert (ec["totalinputs"], ec["totaloutputs"], ec["totalecoutputs"]) == (7, 4, 2000)
        assert ec["feespaid"] == 0  # outputs exceed inputs: never shown below zero


async def test_step_errors(make_rpc, fake_node) -> None:
    async with make_rpc(node=fake_node.link) as rpc:
        await funded(rpc, fake_node)
        await rpc.result("new-transaction", {"tx-name": "t"})
        cases = [
            ("new-transaction", {"tx-name": "t"}, -32603, "wallet: Transaction name already exists"),
            ("new-transaction", {"tx-name": "bad name"}, -32603, None),
            ("add-input", {"tx-name": "nope", "address": ZERO_FA, "amount": 1}, -32603,
             "wallet: Transaction name was not found"),
            ("add-input", {"tx-name": "t", "address": SAND_FA, "amount": 1}, -32602,
             "Wallet: address not found"),
            ("add-input", {"tx-name": "t", "address": ZERO_EC, "amount": 1}, -32602, "Invalid Address"),
            ("add-output", {"tx-name": "t", "address": ZERO_EC, "amount": 1}, -32602, "Invalid Address"),
            ("add-ec-output", {"tx-name": "t", "address": SAND_FA, "amount": 1}, -32602,
             "Invalid Address"),
            ("add-input", {"tx-name": "t", "address": ZERO_FA, "amount": -1}, -32602, None),
            ("add-input", {"tx-name": "t", "address": ZERO_FA, "amount": "5"}, -32602, None),
            ("sign-transaction", {"tx-name": "t"}, -32603, "wallet: Transaction has no inputs"),
            ("compose-transaction", {"tx-name": "t"}, -32603, "wallet: Transaction is not signed"),
        ]  # fmt: skip
        for method, params, code, data in cases:
            error = await rpc.error(method, params)
            assert error["code"] == code, (method, params, error)
            if data is not None:
                assert error["data"] == data, (method, params, error)


async def test_fee_steps(make_rpc, fake_node) -> None:
    async with make_rpc(node=fake_node.link) as rpc:
        await funded(rpc, fake_node)
        await build(rpc, "t", inputs=COIN, outputs=COIN - 1)
        unbalanced = await rpc.error("add-fee", {"tx-name": "t", "address": ZERO_FA})
        assert unbalanced["data"] == "wallet: Inputs and outputs don't add up"
        await rpc.result("add-output", {"tx-name": "t", "address": SAND_FA, "amount": COIN})
        not_input = await rpc.error("add-fee", {"tx-name": "t", "address": SAND_FA})
        assert not_input["data"] == f"wallet: {SAND_FA} is not an input to the transaction"
        not_output = await rpc.error("sub-fee", {"tx-name": "t", "address": ZERO_FA})
        assert not_output["data"] == f"wallet: {ZERO_FA} is not an output to the transaction"
        taken = await rpc.result("sub-fee", {"tx-name": "t", "address": SAND_FA})
        assert taken["outputs"] == [{"address": SAND_FA, "amount": COIN - 12000}]
        assert taken["feespaid"] == taken["feesrequired"] == 12000
        await build(rpc, "ec", inputs=50_000, outputs=0)
        await rpc.result("add-output", {"tx-name": "ec", "address": SAND_FA, "amount": 0})
        await rpc.result("add-ec-output", {"tx-name": "ec", "address": ZERO_EC, "amount": 50_000})
        small = await rpc.error("sub-fee", {"tx-name": "ec", "address": SAND_FA})
        assert small["data"] == "wallet: the output is smaller than the fee"
        from_ec = await rpc.result("sub-fee", {"tx-name": "ec", "address": ZERO_EC})
        assert from_ec["ecoutputs"] == [{"address": ZERO_EC, "amount": 50_000 - 22_000}]
        fake_node.rate = 2000  # the fee follows the node's rate
        assert (await rpc.result("transaction-hash", {"tx-name": "ec"}))["name"] == "ec"
        tmp = {t["name"]: t for t in (await rpc.result("tmp-transactions"))["transactions"]}
        assert list(tmp) == ["t", "ec"] and tmp["ec"]["feesrequired"] == 44_000


async def test_fee_safeguards_and_force(make_rpc, fake_node) -> None:
    async with make_rpc(node=fake_node.link) as rpc:
        await funded(rpc, fake_node)
        required = 12000
        for paid, message in (
            (required - 1, "wallet: Insufficient Fee"),
            (0, "wallet: Insufficient Fee"),
            (10 * required, "wallet: Overpaying Fee"),
        ):
            name = f"fee{paid}"
            await build(rpc, name, inputs=COIN + paid, outputs=COIN)
            error = await rpc.error("sign-transaction", {"tx-name": name})
            assert error == {"code": -32603, "message": "Internal error", "data": message}
            forced = await rpc.result("sign-transaction", {"tx-name": name, "force": True})
            assert forced["signed"] is True
        await build(rpc, "edge", inputs=COIN + 10 * required - 1, outputs=COIN)
        assert (await rpc.result("sign-transaction", {"tx-name": "edge"}))["signed"] is True
        fake_node.balances[ZERO_FA] = (COIN, 20 * COIN)  # acknowledged balance too low
        await build(rpc, "poor", inputs=COIN + required, outputs=COIN)
        poor = await rpc.error("sign-transaction", {"tx-name": "poor"})
        assert poor["data"].startswith(f"wallet: Address {ZERO_FA} balance is too low")
        assert (await rpc.result("sign-transaction", {"tx-name": "poor", "force": True}))["signed"]


async def test_a_change_after_signing_drops_the_signature(make_rpc, fake_node) -> None:
    async with make_rpc(node=fake_node.link) as rpc:
        await funded(rpc, fake_node)
        await build(rpc, "t", inputs=COIN + 12000, outputs=COIN)
        await rpc.result("sign-transaction", {"tx-name": "t"})
        rpc.clock.advance(5)
        changed = await rpc.result("add-output", {"tx-name": "t", "address": SAND_FA, "amount": 1})
        assert changed["signed"] is False
        assert (await rpc.error("compose-transaction", {"tx-name": "t"}))["code"] == -32603
        await rpc.result("add-output", {"tx-name": "t", "address": SAND_FA, "amount": COIN})
        resigned = await rpc.result("sign-transaction", {"tx-name": "t"})
        assert resigned["timestamp"] == 1467708291 + 5  # stamped when signed
        request = await rpc.result("compose-transaction", {"tx-name": "t"})
        tx = Transaction.unmarshal(bytes.fromhex(request["params"]["transaction"]))
        tx.verify_signatures()
        assert tx.inputs[0].address == rcd_hash_from_fct_address(ZERO_FA)
        deleted = await rpc.result("delete-transaction", {"tx-name": "t"})
        assert deleted["txid"] == resigned["txid"] and deleted["signed"] is True
        assert await rpc.result("tmp-transactions") == {"transactions": []}
        gone = await rpc.error("delete-transaction", {"tx-name": "t"})
        assert gone["data"] == "wallet: Transaction name was not found"


async def test_transactions_survive_a_restart_and_are_sealed(
    make_rpc, fake_node, wallet_file
) -> None:
    settings = {"encrypted": True, "passphrase": PASSPHRASE}
    async with make_rpc(node=fake_node.link, **settings) as rpc:
        await rpc.result("unlock-wallet", {"passphrase": PASSPHRASE, "timeout": 60})
        await funded(rpc, fake_node)
        built = await build(rpc, "keep", inputs=COIN + 12000, outputs=COIN)
    stored = b"".join(p.read_bytes() for p in wallet_file.parent.glob("wallet.sqlite*"))
    assert rcd_hash_from_fct_address(SAND_FA).hex().encode() not in stored
    assert b"timestamp_ms" not in stored
    async with make_rpc(node=fake_node.link, encrypted=True) as rpc:
        assert (await rpc.error("tmp-transactions"))["code"] == -32001
        assert (await rpc.error("new-transaction", {"tx-name": "x"}))["code"] == -32001
        await rpc.result("unlock-wallet", {"passphrase": PASSPHRASE, "timeout": 60})
        assert await rpc.result("tmp-transactions") == {"transactions": [built]}


async def test_plain_wallet_keeps_transactions_across_restarts(make_rpc, fake_node) -> None:
    async with make_rpc(node=fake_node.link) as rpc:
        await funded(rpc, fake_node)
        built = await build(rpc, "keep", inputs=3, outputs=2)
    async with make_rpc(node=fake_node.link, restore_mnemonic=None) as rpc:
        assert (await rpc.result("tmp-transactions"))["transactions"] == [built]


async def test_wallet_balances_sum_the_node_balances(make_rpc, fake_node) -> None:
    async with make_rpc(node=fake_node.link) as rpc:
        assert await rpc.result("wallet-balances") == {
            "fctaccountbalances": {"ack": 0, "saved": 0},
            "ecaccountbalances": {"ack": 0, "saved": 0},
        }
        await funded(rpc, fake_node)
        await rpc.result("import-addresses", {"addresses": [{"secret": SAND_FS}]})
        fake_node.balances[SAND_FA] = (7, 5)
        fake_node.balances[ZERO_EC] = (300, 200)
        await rpc.result(
            "import-addresses",
            {"addresses": [{"secret": "Es2Rf7iM6PdsqfYCo3D1tnAR65SkLENyWJG1deUzpRMQmbh9F3eG"}]},
        )
        assert await rpc.result("wallet-balances") == {
            "fctaccountbalances": {"ack": 10 * COIN + 7, "saved": 10 * COIN + 5},
            "ecaccountbalances": {"ack": 300, "saved": 200},
        }


async def test_a_node_that_does_not_answer_changes_nothing(make_rpc) -> None:
    async with make_rpc(node_url="http://127.0.0.1:1/v2", node_timeout_s=2) as rpc:
        error = await rpc.error("new-transaction", {"tx-name": "t"})
        assert error["code"] == -32603 and "entry-credit-rate" in error["data"]
        await rpc.result("generate-ec-address")
        assert (await rpc.error("wallet-balances"))["code"] == -32603
        assert (await rpc.error("transaction-hash", {"tx-name": "t"}))["data"] == (
            "wallet: Transaction name was not found"
        )


SAND_FS = "Fs3E9gV6DXsYzf7Fqx1fVBQPQXV695eP3k5XbmHEZVRLkMdD9qCK"

"""Transaction methods of the wallet (docs/formats.md §4.3 and §9.4; docs/jsonrpc.md §5
(Wallet methods)).

| method | params | result |
|---|---|---|
| ``new-transaction`` / ``delete-transaction`` | ``tx-name`` | transaction object (the deleted one's last state) |
| ``add-input`` / ``add-output`` / ``add-ec-output`` | ``tx-name``, ``address``, ``amount`` (minor units) | transaction object |
| ``add-fee`` / ``sub-fee`` | ``tx-name``, ``address`` | transaction object |
| ``sign-transaction`` | ``tx-name``, ``force``? | transaction object (``signed`` true) |
| ``compose-transaction`` | ``tx-name`` | ``{"jsonrpc","id","params":{"transaction"},"method":"coin-submit"}`` |
| ``transaction-hash`` | ``tx-name`` | ``{"name","txid"}`` |
| ``tmp-transactions`` | - | ``{"transactions":[transaction object]}`` |
| ``transactions`` | ``txid`` / ``address`` / ``range{start,end}`` / none | ``{"transactions":[...]}`` from the node's coin blocks |
| ``wallet-balances`` | - | ``{"fctaccountbalances":{ack,saved},"ecaccountbalances":{ack,saved}}`` |

The EC rate of fees and ``feesrequired`` is asked of the node each time
(``entry-credit-rate``). ``add-input`` needs an address held by the wallet; outputs may go
anywhere. ``sign-transaction`` without ``force`` refuses a transaction whose inputs exceed
the node's acknowledged balances, that pays less than the fee, or 10 times it or more
(``FeeError``); with ``force`` it signs anyway. Signing re-stamps the transaction with the
current time, so a transaction built long ago stays inside the node's time window.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from ledger.core.addresses import (
    address_kind,
    fct_public_address,
    public_key_from_ec_address,
    rcd_hash_from_fct_address,
)
from ledger.core.errors import AddressError, DecodeError
from ledger.core.transaction import Transaction
from ledger.jsonrpc import InvalidParams
from ledger.jsonrpc.registry import MethodRegistry
from ledger.wallet.compose import rpc_request
from ledger.wallet.errors import NodeUnavailableError, TransactionError
from ledger.wallet.hdkeys import KeyKind
from ledger.wallet.keyring import Keyring
from ledger.wallet.node_link import NodeLink
from ledger.wallet.rpc_errors import rpc_errors
from ledger.wallet.tx_book import TransactionBook
from ledger.wallet.tx_build import (
    add_fee,
    check_fee,
    is_signed,
    set_ec_output,
    set_input,
    set_output,
    sub_fee,
    transaction_json,
    unsigned,
)

__all__ = ["add_transaction_methods"]

_FCT: frozenset[KeyKind] = frozenset({"fct"})
_EC: frozenset[KeyKind] = frozenset({"ec"})
Amount = Annotated[int, Field(strict=True, ge=0, lt=2**63)]


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, hide_input_in_errors=True)


class TxNameParams(_Params):
    tx_name: Annotated[str, Field(alias="tx-name")]


class TxAmountParams(TxNameParams):
    address: str
    amount: Amount


class TxAddressParams(TxNameParams):
    address: str


class SignParams(TxNameParams):
    force: bool = False


class HeightRange(_Params):
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class TransactionsParams(_Params):
    txid: str | None = None
    address: str | None = None
    range: HeightRange | None = None
    start: int | None = Field(default=None, ge=0)  # the PyPI factom-api client sends these flat
    end: int | None = Field(default=None, ge=0)


def add_transaction_methods(
    registry: MethodRegistry, *, keyring: Keyring, node: NodeLink, book: TransactionBook
) -> None:
    """Register the methods of the module table on ``registry``."""
    _add_building_methods(registry, keyring=keyring, node=node, book=book)
    _add_signing_methods(registry, keyring=keyring, node=node, book=book)
    _add_ledger_methods(registry, keyring=keyring, node=node)


Step = Callable[[Transaction, int], Transaction]


def _add_building_methods(
    registry: MethodRegistry, *, keyring: Keyring, node: NodeLink, book: TransactionBook
) -> None:
    async def step(name: str, change: Step, *, check: Callable[[], None] | None = None) -> Any:
        keyring.require_unlocked()
        if check is not None:
            check()
        rate = await node.ec_rate()

        def checked(tx: Transaction) -> Transaction:
            new = change(tx, rate)
            new.fee(rate)  # LimitError (nothing stored) when it grows over 10240 bytes
            return new

        tx = await anyio.to_thread.run_sync(book.update, name, checked)
        return transaction_json(tx, rate=rate, name=name)

    async def by_name(op: Callable[[str], Transaction], name: str) -> Any:
        """``op(name)`` on the book (off the loop), the transaction it returns as JSON."""
        keyring.require_unlocked()
        rate = await node.ec_rate()
        tx = await anyio.to_thread.run_sync(op, name)
        return transaction_json(tx, rate=rate, name=name)

    @registry.method("new-transaction", params=TxNameParams)
    @rpc_errors
    async def new_transaction(params: TxNameParams) -> Any:
        return await by_name(book.create, params.tx_name)

    @registry.method("delete-transaction", params=TxNameParams)
    @rpc_errors
    async def delete_transaction(params: TxNameParams) -> Any:
        return await by_name(book.delete, params.tx_name)

    @registry.method("add-input", params=TxAmountParams)
    @rpc_errors
    async def add_input(params: TxAmountParams) -> Any:
        rcd_hash = rcd_hash_from_fct_address(params.address)
        return await step(
            params.tx_name,
            lambda tx, _: set_input(tx, rcd_hash, params.amount),
            check=lambda: keyring.require_key(params.address, kinds=_FCT),
        )

    @registry.method("add-output", params=TxAmountParams)
    @rpc_errors
    async def add_output(params: TxAmountParams) -> Any:
        rcd_hash = rcd_hash_from_fct_address(params.address)
        return await step(params.tx_name, lambda tx, _: set_output(tx, rcd_hash, params.amount))

    @registry.method("add-ec-output", params=TxAmountParams)
    @rpc_errors
    async def add_ec_output(params: TxAmountParams) -> Any:
        key = public_key_from_ec_address(params.address)
        return await step(params.tx_name, lambda tx, _: set_ec_output(tx, key, params.amount))

    @registry.method("add-fee", params=TxAddressParams)
    @rpc_errors
    async def add_fee_method(params: TxAddressParams) -> Any:
        rcd_hash = rcd_hash_from_fct_address(params.address)
        name = params.tx_name
        return await step(name, lambda tx, rate: add_fee(tx, rcd_hash, rate, name=name))

    @registry.method("sub-fee", params=TxAddressParams)
    @rpc_errors
    async def sub_fee_method(params: TxAddressParams) -> Any:
        ec, raw = _output_address(params.address)
        name = params.tx_name
        return await step(name, lambda tx, rate: sub_fee(tx, raw, rate, name=name, ec=ec))


def _output_address(address: str) -> tuple[bool, bytes]:
    """``(is EC, raw 32 bytes)`` of an ``FA`` or ``EC`` public address; AddressError else."""
    kind = address_kind(address)
    if kind == "FA":
        return False, rcd_hash_from_fct_address(address)
    if kind == "EC":
        return True, public_key_from_ec_address(address)
    raise AddressError("not a coin or entry credit public address")


def _add_signing_methods(
    registry: MethodRegistry, *, keyring: Keyring, node: NodeLink, book: TransactionBook
) -> None:
    def sign(name: str, checked: Transaction) -> Transaction:
        def change(current: Transaction) -> Transaction:
            if current.ledger_part() != checked.ledger_part():
                raise TransactionError("wallet: Transaction changed while signing", name=name)
            keys = [
                keyring.signing_key(fct_public_address(item.address), kinds=_FCT)
                for item in current.inputs
            ]
            return unsigned(current, timestamp_ms=book.now_ms()).sign(keys)

        return book.update(name, change)

    @registry.method("sign-transaction", params=SignParams)
    @rpc_errors
    async def sign_transaction(params: SignParams) -> Any:
        keyring.require_unlocked()
        name = params.tx_name
        tx = await anyio.to_thread.run_sync(book.get, name)
        if not tx.inputs:
            raise TransactionError("wallet: Transaction has no inputs", name=name)
        rate = await node.ec_rate()
        if not params.force:
            check_fee(tx, rate, name=name)
            await _check_covered(node, tx, name)
        signed = await anyio.to_thread.run_sync(sign, name, tx)
        return transaction_json(signed, rate=rate, name=name)

    @registry.method("compose-transaction", params=TxNameParams)
    @rpc_errors
    def compose_transaction(params: TxNameParams) -> dict[str, Any]:
        tx = book.get(params.tx_name)
        if not is_signed(tx):
            raise TransactionError("wallet: Transaction is not signed", name=params.tx_name)
        tx.verify_signatures()
        return rpc_request("coin-submit", {"transaction": tx.marshal().hex()})

    @registry.method("transaction-hash", params=TxNameParams)
    @rpc_errors
    def transaction_hash(params: TxNameParams) -> dict[str, Any]:
        tx = book.get(params.tx_name)
        return {"name": params.tx_name, "txid": tx.txid().hex()}

    @registry.method("tmp-transactions")
    @rpc_errors
    async def tmp_transactions() -> dict[str, Any]:
        keyring.require_unlocked()
        rate = await node.ec_rate()
        items = await anyio.to_thread.run_sync(book.items)
        return {"transactions": [transaction_json(tx, rate=rate, name=n) for n, tx in items]}


async def _check_covered(node: NodeLink, tx: Transaction, name: str) -> None:
    """TransactionError when an input exceeds its address's acknowledged balance."""
    addresses = [fct_public_address(item.address) for item in tx.inputs]
    balances = await node.balances("fct", addresses)
    for address, item, balance in zip(addresses, tx.inputs, balances, strict=True):
        if balance.ack < item.amount:
            raise TransactionError(
                f"wallet: Address {address} balance is too low. "
                f"Available: {balance.ack} Needed: {item.amount}",
                name=name,
            )


def _add_ledger_methods(registry: MethodRegistry, *, keyring: Keyring, node: NodeLink) -> None:
    @registry.method("transactions", params=TransactionsParams)
    @rpc_errors
    async def transactions(params: TransactionsParams) -> dict[str, Any]:
        keyring.require_unlocked()
        matches = _matcher(params)
        start, end = _heights(params)
        top = await node.height()
        blocks = await node.coin_blocks(start, top if end is None else min(end, top))
        found = [
            transaction_json(tx, rate=block.exchange_rate, block_height=block.height)
            for block in blocks
            for tx in block.transactions
            if matches(tx)
        ]
        return {"transactions": found}

    @registry.method("wallet-balances")
    @rpc_errors
    async def wallet_balances() -> dict[str, Any]:
        result = {}
        for kind, key, kinds in (
            ("fct", "fctaccountbalances", _FCT),
            ("ec", "ecaccountbalances", _EC),
        ):
            balances = await node.balances(kind, keyring.publics(kinds))  # type: ignore[arg-type]
            if any(b.error for b in balances):
                raise NodeUnavailableError("the ledger node could not read a wallet balance")
            result[key] = {
                "ack": sum(b.ack for b in balances),
                "saved": sum(b.saved for b in balances),
            }
        return result


def _heights(params: TransactionsParams) -> tuple[int, int | None]:
    """``(start, end or None for the top)`` of a ``transactions`` query.

    Raises:
        InvalidParams: start > end.
    """
    end: int | None
    if params.range is not None:
        start, end = params.range.start, params.range.end
    else:
        start, end = params.start or 0, params.end
    if end is not None and start > end:
        raise InvalidParams("Starting block height must be less than ending block height")
    return start, end


def _matcher(params: TransactionsParams) -> Callable[[Transaction], bool]:
    """Predicate of the ``txid`` / ``address`` filter (all transactions when neither)."""
    if params.txid is not None:
        try:
            txid = bytes.fromhex(params.txid)
        except ValueError:
            raise DecodeError("txid must be 64 hexadecimal characters") from None
        if len(txid) != 32:
            raise DecodeError("txid must be 64 hexadecimal characters")
        return lambda tx: tx.txid() == txid
    if params.address is not None:
        ec, raw = _output_address(params.address)
        if ec:
            return lambda tx: any(o.address == raw for o in tx.ec_outputs)
        return lambda tx: any(a.address == raw for a in (*tx.inputs, *tx.outputs))
    return lambda tx: True

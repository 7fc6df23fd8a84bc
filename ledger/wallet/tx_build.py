"""Steps of a named coin transaction, as factom-walletd takes them (docs/formats.md §4.3 and §9.4).

Pure functions over the immutable ``ledger.core.transaction.Transaction``; every step
returns a new, unsigned transaction (any change drops earlier signatures):

| step | rule |
|---|---|
| ``set_input`` / ``set_output`` / ``set_ec_output`` | an address already present gets the new amount, else it is appended |
| ``add_fee`` | inputs must equal outputs + EC outputs; the named input grows by the fee |
| ``sub_fee`` | same precondition; the named coin (or EC) output shrinks by the fee |
| ``check_fee`` | sign-time safeguard: refuse ``paid < required`` and ``paid >= 10 x required`` |

Fees are ``Transaction.fee(rate)`` (the signed size, so unsigned and signed agree).
``transaction_json`` renders walletd's transaction object; ``to_record``/``from_record``
are the stored form (JSON, sealed by the caller).
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from ledger.core.addresses import ec_public_address, fct_public_address
from ledger.core.transaction import Transaction, TxAddress
from ledger.wallet.errors import FeeError, TransactionError

__all__ = [
    "FEE_CEILING_FACTOR",
    "add_fee",
    "check_fee",
    "check_name",
    "fee_paid",
    "from_record",
    "is_signed",
    "set_ec_output",
    "set_input",
    "set_output",
    "sub_fee",
    "to_record",
    "transaction_json",
    "unsigned",
]

FEE_CEILING_FACTOR = 10
MAX_NAME_CHARS = 128
_NAME = re.compile(r"[A-Za-z0-9_-]+")
_UNBALANCED = "wallet: Inputs and outputs don't add up"


def check_name(name: str) -> str:
    """``name`` if it is 1..128 characters of ``A-Z a-z 0-9 _ -``; TransactionError otherwise."""
    if not name:
        raise TransactionError("wallet: Transaction name cannot be empty")
    if len(name) > MAX_NAME_CHARS or not _NAME.fullmatch(name):
        raise TransactionError(
            "wallet: Transaction name must contain only alphanumeric characters, dashes, "
            f"and underscores (at most {MAX_NAME_CHARS})"
        )
    return name


def unsigned(tx: Transaction, **changes: Any) -> Transaction:
    """Copy of ``tx`` with ``changes`` applied and no RCDs or signatures."""
    return dataclasses.replace(tx, rcds=(), signatures=(), **changes)


def _set(items: tuple[TxAddress, ...], address: bytes, amount: int) -> tuple[TxAddress, ...]:
    new = TxAddress(amount, address)
    if any(item.address == address for item in items):
        return tuple(new if item.address == address else item for item in items)
    return (*items, new)


def set_input(tx: Transaction, rcd_hash: bytes, amount: int) -> Transaction:
    """Input of ``amount`` minor units from the coin address with this 32-byte RCD hash."""
    return unsigned(tx, inputs=_set(tx.inputs, rcd_hash, amount))


def set_output(tx: Transaction, rcd_hash: bytes, amount: int) -> Transaction:
    """Coin output of ``amount`` minor units to the address with this RCD hash."""
    return unsigned(tx, outputs=_set(tx.outputs, rcd_hash, amount))


def set_ec_output(tx: Transaction, public_key: bytes, amount: int) -> Transaction:
    """EC output paying ``amount`` minor units (``amount // rate`` credits) to an EC key."""
    return unsigned(tx, ec_outputs=_set(tx.ec_outputs, public_key, amount))


def _coin_outputs(tx: Transaction) -> int:
    return sum(item.amount for item in tx.outputs)


def _ec_outputs(tx: Transaction) -> int:
    return sum(item.amount for item in tx.ec_outputs)


def fee_paid(tx: Transaction) -> int:
    """Inputs minus coin and EC outputs, minor units (negative when outputs exceed inputs)."""
    return tx.total_inputs() - _coin_outputs(tx) - _ec_outputs(tx)


def is_signed(tx: Transaction) -> bool:
    """True when the transaction has inputs and every input carries a signature."""
    return bool(tx.inputs) and tx.is_signed


def _require_balanced(tx: Transaction, name: str) -> None:
    if fee_paid(tx) != 0:
        raise TransactionError(_UNBALANCED, name=name)


def add_fee(tx: Transaction, rcd_hash: bytes, rate: int, *, name: str) -> Transaction:
    """Add the fee at ``rate`` to the input from ``rcd_hash`` (walletd ``add-fee``).

    Raises:
        TransactionError: inputs differ from outputs, or the address is not an input.
    """
    _require_balanced(tx, name)
    fee = tx.fee(rate)
    for item in tx.inputs:
        if item.address == rcd_hash:
            return set_input(tx, rcd_hash, item.amount + fee)
    raise TransactionError(
        f"wallet: {fct_public_address(rcd_hash)} is not an input to the transaction", name=name
    )


def sub_fee(tx: Transaction, address: bytes, rate: int, *, name: str, ec: bool) -> Transaction:
    """Take the fee at ``rate`` from the coin output (``ec`` False) or EC output to ``address``.

    Raises:
        TransactionError: inputs differ from outputs, the address is not such an output, or
            the output is smaller than the fee.
    """
    _require_balanced(tx, name)
    fee = tx.fee(rate)
    items = tx.ec_outputs if ec else tx.outputs
    for item in items:
        if item.address != address:
            continue
        if item.amount < fee:
            raise TransactionError("wallet: the output is smaller than the fee", name=name)
        setter = set_ec_output if ec else set_output
        return setter(tx, address, item.amount - fee)
    text = ec_public_address(address) if ec else fct_public_address(address)
    raise TransactionError(f"wallet: {text} is not an output to the transaction", name=name)


def check_fee(tx: Transaction, rate: int, *, name: str) -> None:
    """Fee safeguard of ``sign-transaction`` without ``force`` (docs/formats.md §4.3, walletd
    checkFee).

    Raises:
        FeeError: "wallet: Insufficient Fee" when paid < required (or paid <= 0),
            "wallet: Overpaying Fee" when paid >= 10 x required.
    """
    paid, required = fee_paid(tx), tx.fee(rate)
    if paid <= 0 or paid < required:
        raise FeeError("wallet: Insufficient Fee", name=name, paid=paid, required=required)
    if paid >= required * FEE_CEILING_FACTOR:
        raise FeeError("wallet: Overpaying Fee", name=name, paid=paid, required=required)


def _addresses(items: tuple[TxAddress, ...], *, ec: bool) -> list[dict[str, Any]] | None:
    if not items:
        return None
    encode = ec_public_address if ec else fct_public_address
    return [{"address": encode(item.address), "amount": item.amount} for item in items]


def transaction_json(
    tx: Transaction, *, rate: int, name: str | None = None, block_height: int | None = None
) -> dict[str, Any]:
    """walletd's transaction object (Go client ``Transaction``), keys in its order.

    ``{"blockheight" (only for recorded ones), "feespaid", "feesrequired", "signed", "name"
    (only for named ones), "timestamp" (Unix s), "totalecoutputs", "totalinputs",
    "totaloutputs", "inputs", "outputs", "ecoutputs" ([{address, amount}] or null), "txid"}``.
    ``feespaid`` is inputs - outputs, never below 0; ``feesrequired`` is at ``rate``.
    """
    body: dict[str, Any] = {} if block_height is None else {"blockheight": block_height}
    body["feespaid"] = max(0, fee_paid(tx))
    body["feesrequired"] = tx.fee(rate)
    body["signed"] = is_signed(tx)
    if name is not None:
        body["name"] = name
    body.update(
        {
            "timestamp": tx.timestamp_ms // 1000,
            "totalecoutputs": _ec_outputs(tx),
            "totalinputs": tx.total_inputs(),
            "totaloutputs": _coin_outputs(tx),
            "inputs": _addresses(tx.inputs, ec=False),
            "outputs": _addresses(tx.outputs, ec=False),
            "ecoutputs": _addresses(tx.ec_outputs, ec=True),
            "txid": tx.txid().hex(),
        }
    )
    return body


def to_record(tx: Transaction) -> bytes:
    """Stored form: compact JSON of timestamp, address lists and signatures (hex)."""

    def items(values: tuple[TxAddress, ...]) -> list[list[Any]]:
        return [[item.amount, item.address.hex()] for item in values]

    doc = {
        "timestamp_ms": tx.timestamp_ms,
        "inputs": items(tx.inputs),
        "outputs": items(tx.outputs),
        "ec_outputs": items(tx.ec_outputs),
        "rcds": [rcd.hex() for rcd in tx.rcds],
        "signatures": [sig.hex() for sig in tx.signatures],
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def from_record(data: bytes) -> Transaction:
    """Inverse of ``to_record``. ValueError (or DecodeError) when the record is damaged."""
    doc = json.loads(data)

    def items(values: list[list[Any]]) -> tuple[TxAddress, ...]:
        return tuple(TxAddress(int(amount), bytes.fromhex(address)) for amount, address in values)

    return Transaction(
        int(doc["timestamp_ms"]),
        items(doc["inputs"]),
        items(doc["outputs"]),
        items(doc["ec_outputs"]),
        tuple(bytes.fromhex(r) for r in doc["rcds"]),
        tuple(bytes.fromhex(s) for s in doc["signatures"]),
    )

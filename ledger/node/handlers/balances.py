"""Balance methods: entry-credit-balance, coin-balance, multiple-ec-balances, multiple-fct-balances.

Addresses are human strings (``EC...`` / ``FA...``) or the raw 32-byte value in 64 hex
(docs/formats.md §3.1, last paragraph). Balances reported are the acknowledged ones
(saved blocks plus the process list); ``saved`` in the multiple-* forms is as of the last block.
"""

from __future__ import annotations

from typing import Any

from ledger.core.addresses import public_key_from_ec_address, rcd_hash_from_fct_address
from ledger.core.errors import LedgerFormatError
from ledger.jsonrpc.errors import InvalidParams
from ledger.jsonrpc.registry import MethodRegistry
from ledger.node.params import AddressesParams, AddressParams
from ledger.node.service import NodeService


def parse_address(text: str, *, kind: str) -> bytes:
    """Raw 32-byte key of an ``EC``/``FA`` address (``kind`` "ec" or "fct") or of 64 hex.

    Raises:
        InvalidParams: "Invalid Address".
    """
    if len(text) == 64:
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise InvalidParams("Invalid Address") from None
    try:
        if kind == "ec":
            return public_key_from_ec_address(text)
        return rcd_hash_from_fct_address(text)
    except LedgerFormatError as exc:
        raise InvalidParams("Invalid Address") from exc


def register(registry: MethodRegistry, service: NodeService) -> None:
    """Add the balance methods, bound to ``service``, to ``registry``."""

    @registry.method("entry-credit-balance", params=AddressParams, blocking=False)
    def ec_balance(params: AddressParams) -> dict[str, Any]:
        key = parse_address(params.address, kind="ec")
        return {"balance": service.balance("ec", key)}

    @registry.method(
        "coin-balance", params=AddressParams, aliases=("factoid-balance",), blocking=False
    )
    def coin_balance(params: AddressParams) -> dict[str, Any]:
        key = parse_address(params.address, kind="fct")
        return {"balance": service.balance("fct", key)}

    def multiple(kind: str, params: AddressesParams) -> dict[str, Any]:
        balances = []
        for text in params.addresses:
            try:
                key = parse_address(text, kind=kind)
            except InvalidParams:
                balances.append({"ack": 0, "saved": 0, "err": "Error decoding address"})
                continue
            balances.append(
                {
                    "ack": service.balance(kind, key),
                    "saved": service.balance(kind, key, saved=True),
                    "err": "",
                }
            )
        height = service.tip.height
        return {"currentheight": height, "lastsavedheight": height, "balances": balances}

    @registry.method("multiple-ec-balances", params=AddressesParams, blocking=False)
    def multiple_ec(params: AddressesParams) -> dict[str, Any]:
        return multiple("ec", params)

    @registry.method(
        "multiple-fct-balances",
        params=AddressesParams,
        aliases=("multiple-coin-balances",),
        blocking=False,
    )
    def multiple_fct(params: AddressesParams) -> dict[str, Any]:
        return multiple("fct", params)

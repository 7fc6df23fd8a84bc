"""Params models of the node's JSON-RPC methods (docs/jsonrpc.md §4 (Node methods)).

Hex on the wire, raw bytes inside: ``HashHex`` fields arrive as 64 hex characters and are
handed to handlers as 32 raw bytes; ``HexBytes`` fields as arbitrary even-length hex.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictStr

from ledger.core.hexbytes import hex_or_none

MAX_MESSAGE_HEX_CHARS = 2 * 1_000_000


def _hex_bytes(value: object) -> bytes:
    if not isinstance(value, str):
        raise ValueError("must be a hex string")
    if len(value) > MAX_MESSAGE_HEX_CHARS:
        raise ValueError("hex string too long")
    raw = hex_or_none(value)
    if raw is None:
        raise ValueError("must be an even-length hex string")
    return raw


def _hash(value: object) -> bytes:
    raw = _hex_bytes(value)
    if len(raw) != 32:
        raise ValueError("Invalid Hash: must be 64 hex characters")
    return raw


HexBytes = Annotated[bytes, BeforeValidator(_hex_bytes)]
HashHex = Annotated[bytes, BeforeValidator(_hash)]


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class MessageParams(_Params):
    """``commit-chain`` / ``commit-entry`` / ``send-raw-message``: ``message`` (hex)."""

    message: HexBytes


class CommitChainParams(MessageParams):
    """``commit-chain``: ``message`` (hex) and, optionally, ``chainid`` (64 hex).

    A commit carries only the chain ID's hash; a caller that knows the chain ID (the
    wallet's ``compose-chain`` puts it in the composed call) may send it, and the node
    checks it against the commit before echoing it in the result.
    """

    chainid: HashHex | None = None


class EntryParams(_Params):
    """``reveal-chain`` / ``reveal-entry``: ``entry`` (hex entry bytes)."""

    entry: HexBytes


class TransactionParams(_Params):
    """``coin-submit``: ``transaction`` (hex marshalled signed transaction)."""

    transaction: HexBytes


class HashParams(_Params):
    """Methods looked up by one hash: ``hash`` (64 hex)."""

    hash: HashHex


class KeyMRParams(_Params):
    """Block lookups by key: ``keymr`` (64 hex); ``noraw`` omits ``rawdata``."""

    keymr: HashHex
    noraw: StrictBool = False


class HeightParams(_Params):
    """Block lookups by height: ``height`` (integer >= 0); ``noraw`` omits ``rawdata``."""

    height: int = Field(ge=0, le=2**32 - 1, strict=True)
    noraw: StrictBool = False


class ChainIdParams(_Params):
    """``chain-head``: ``chainid`` (64 hex)."""

    chainid: HashHex


class AddressParams(_Params):
    """Balance calls: ``address`` (EC/FA human address or 64 hex)."""

    address: StrictStr = Field(max_length=128)


class AddressesParams(_Params):
    """``multiple-*-balances``: ``addresses`` (list of addresses)."""

    addresses: list[Annotated[StrictStr, Field(max_length=128)]] = Field(max_length=10_000)


class OptionalAddressParams(_Params):
    """``pending-transactions``: optional ``address``."""

    address: StrictStr | None = Field(default=None, max_length=128)


class OptionalChainParams(_Params):
    """``pending-entries``: optional ``chainid``."""

    chainid: HashHex | None = None


class ReceiptParams(_Params):
    """``receipt``: ``hash`` (entry hash), ``includerawentry`` (bool)."""

    hash: HashHex
    includerawentry: StrictBool = False


def _ack_chain(value: object) -> str:
    if value in ("c", "f"):
        return str(value)
    return _hash(value).hex()


class AckParams(_Params):
    """``ack``: ``hash``, ``chainid`` (``c``, ``f`` or a 64-hex chain id), optional ``fulltransaction``."""

    hash: HashHex | None = None
    chainid: Annotated[str, BeforeValidator(_ack_chain)]
    fulltransaction: HexBytes | None = None


class TxidParams(_Params):
    """``entry-ack`` / ``coin-ack``: ``txid`` or ``fulltransaction``."""

    txid: HashHex | None = None
    fulltransaction: HexBytes | None = None


class AnchorsParams(_Params):
    """``anchors``: ``height`` or ``hash``."""

    height: int | None = Field(default=None, ge=0, le=2**32 - 1, strict=True)
    hash: HashHex | None = None

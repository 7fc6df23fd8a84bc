"""``active-identity-keys`` and ``sign-data`` (docs/formats.md §8.1 and §9.4).

| method | params | result |
|---|---|---|
| ``active-identity-keys`` | ``chainid`` (64 hex), ``height``? (default: the node's height) | ``{"chainid","height","keys":[idpub...]}`` |
| ``sign-data`` | ``signer`` (FA / EC / idpub held by the wallet), ``data`` (base64) | ``{"pubkey","signature"}`` (base64) |

``active-identity-keys`` replays the identity chain from the node (entries of saved
entry blocks whose directory block height is at most ``height``) with the rules of
``ledger.wallet.identity_replay``; ``keys`` is [] before the chain existed. ``sign-data``
signs the raw bytes of ``data`` with ed25519 (walletd ``SignData``).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ledger.core.addresses import address_kind
from ledger.core.errors import AddressError, DecodeError
from ledger.jsonrpc.registry import MethodRegistry
from ledger.wallet.hdkeys import KeyKind
from ledger.wallet.identity_replay import active_identity_keys
from ledger.wallet.keyring import Keyring
from ledger.wallet.node_link import HeightSource, NodeLink
from ledger.wallet.rpc_errors import rpc_errors

__all__ = ["add_identity_replay_methods", "from_base64", "to_base64"]

_SIGNER_KINDS: dict[str, KeyKind] = {"FA": "fct", "EC": "ec", "idpub": "identity"}


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, hide_input_in_errors=True)


class ActiveKeysParams(_Params):
    chainid: str = Field(pattern=r"^[0-9a-fA-F]{64}$")
    height: int | None = Field(default=None, ge=0)


class SignDataParams(_Params):
    signer: str
    data: str


def to_base64(data: bytes) -> str:
    """Standard base64 with padding (Go's ``[]byte`` in JSON)."""
    return base64.b64encode(data).decode("ascii")


def from_base64(text: str) -> bytes:
    """Bytes of strict standard base64. DecodeError when not valid base64."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise DecodeError("data is not valid base64") from None


def add_identity_replay_methods(
    registry: MethodRegistry, *, keyring: Keyring, node: NodeLink, heights: HeightSource
) -> None:
    """Register ``active-identity-keys`` and ``sign-data`` on ``registry``."""

    @registry.method("active-identity-keys", params=ActiveKeysParams)
    @rpc_errors
    async def active_keys(params: ActiveKeysParams) -> dict[str, Any]:
        keyring.require_unlocked()
        chain_id = bytes.fromhex(params.chainid)
        height = await heights.height() if params.height is None else params.height
        entries = await node.chain_entries(chain_id, max_height=height)
        keys = active_identity_keys(chain_id, [item.entry for item in entries])
        return {"chainid": chain_id.hex(), "height": height, "keys": keys}

    @registry.method("sign-data", params=SignDataParams)
    @rpc_errors
    def sign_data(params: SignDataParams) -> dict[str, str]:
        keyring.require_unlocked()
        kind = _SIGNER_KINDS.get(address_kind(params.signer))
        if kind is None:
            raise AddressError("signer must be an FA, EC or idpub string")
        key = keyring.signing_key(params.signer, kinds={kind})
        signature = key.sign(from_base64(params.data))
        return {"pubkey": to_base64(key.public_key), "signature": to_base64(signature)}

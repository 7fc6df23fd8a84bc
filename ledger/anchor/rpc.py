"""JSON-RPC methods of the anchoring service (``{anchor_url}/v2``, default port 8091).

Txids and block hashes are display hex (byte-reversed, as Bitcoin shows them); raw
headers, transactions and Merkle path elements are plain hex of the bytes.

=================  ===========================  ===============================================
method             params                       result
=================  ===========================  ===============================================
pow-info           none                         chain, height, blockhash, bits, difficultybits,
                                                confirmations
pow-header         height or hash               height, blockhash, header, confirmations
pow-headers        start, count (<= 2000)       start, headers (raw hex, in height order)
pow-transaction    txid                         txid, transaction, blockhash, blockheight,
                                                txindex, confirmations, merklepath
anchor-status      height (directory block)     directoryblockheight, keymr, txid, blockhash,
                                                blockheight, confirmations, recorded,
                                                recordentryhash
anchor-proof       height, depth (optional)     anchor, contract (proof bundle sections)
=================  ===========================  ===============================================

Errors: -32008 (not found; ``data`` says why, e.g. "not confirmed"), -32602 (bad params),
-32603 (a Bitcoin node's backend failed; ``data`` names the reason, e.g.
``node-unreachable: ...``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ledger.anchor.backend import AnchorBackendError, NotConfirmed
from ledger.anchor.chain import BlockInfo, PowChain
from ledger.anchor.service import AnchorService
from ledger.core.errors import DecodeError
from ledger.core.pow.encoding import from_display_hex, to_display_hex
from ledger.jsonrpc import InternalError, InvalidParams, ObjectNotFound
from ledger.jsonrpc.registry import MethodRegistry

__all__ = ["build_registry"]

MAX_HEADERS = 2000


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class HeightOrHashParams(_Params):
    height: int | None = Field(default=None, ge=0)
    hash: str | None = Field(default=None, max_length=66)


class RangeParams(_Params):
    start: int = Field(ge=0)
    count: int = Field(ge=1, le=MAX_HEADERS)


class TxidParams(_Params):
    txid: str = Field(max_length=66)


class HeightParams(_Params):
    height: int = Field(ge=0)


class ProofParams(_Params):
    height: int = Field(ge=0)
    depth: int | None = Field(default=None, ge=1, le=MAX_HEADERS)


def _hash(text: str, what: str) -> bytes:
    try:
        return from_display_hex(text, what)
    except DecodeError as exc:
        raise InvalidParams(str(exc)) from exc


def build_registry(service: AnchorService, chain: PowChain | None) -> MethodRegistry:
    """The service's methods; the ``pow-*`` ones only when ``chain`` (embedded) is given."""
    registry = MethodRegistry()
    if chain is not None:
        _register_chain(registry, service, chain)

    remote = chain is None  # a Bitcoin node's backend answers over the network: off the loop

    @registry.method("anchor-status", params=HeightParams, blocking=remote)
    def anchor_status(params: HeightParams) -> dict[str, Any]:
        block = service.state.block(params.height)
        if block is None:
            raise ObjectNotFound(data=f"directory block {params.height} is not anchored yet")
        try:
            inc = service.backend.inclusion(block.anchor_txid)
        except AnchorBackendError as exc:
            raise InternalError(str(exc)) from exc
        return {
            "directoryblockheight": block.height,
            "keymr": block.keymr.hex(),
            "txid": to_display_hex(block.anchor_txid),
            "blockhash": None if inc is None else to_display_hex(inc.block_hash),
            "blockheight": None if inc is None else inc.block_height,
            "confirmations": 0 if inc is None else inc.confirmations,
            "recorded": block.record_entry is not None,
            "recordentryhash": None if block.record_entry is None else block.record_entry.hex(),
        }

    @registry.method("anchor-proof", params=ProofParams, blocking=remote)
    def anchor_proof(params: ProofParams) -> dict[str, Any]:
        try:
            return service.anchor_proof(params.height, depth=params.depth)
        except KeyError:
            raise ObjectNotFound(
                data=f"directory block {params.height} is not anchored yet"
            ) from None
        except NotConfirmed as exc:
            raise ObjectNotFound(data=f"not confirmed: {exc}") from exc
        except AnchorBackendError as exc:
            raise InternalError(str(exc)) from exc

    return registry


def _register_chain(registry: MethodRegistry, service: AnchorService, chain: PowChain) -> None:
    def header_json(block: BlockInfo) -> dict[str, Any]:
        return {
            "height": block.height,
            "blockhash": to_display_hex(block.hash),
            "header": block.header.marshal().hex(),
            "confirmations": chain.confirmations(block.height),
        }

    @registry.method("pow-info", blocking=False)
    def pow_info() -> dict[str, Any]:
        tip = chain.tip()
        params = chain.params
        return {
            "chain": params.chain,
            "height": -1 if tip is None else tip.height,
            "blockhash": None if tip is None else to_display_hex(tip.hash),
            "bits": params.bits,
            "difficultybits": params.difficulty_bits,
            "confirmations": service.settings.confirmations,
        }

    @registry.method("pow-header", params=HeightOrHashParams, blocking=False)
    def pow_header(params: HeightOrHashParams) -> dict[str, Any]:
        if params.hash is not None:
            block = chain.block_by_hash(_hash(params.hash, "hash"))
        elif params.height is not None:
            block = chain.block_at(params.height)
        else:
            raise InvalidParams("height or hash is required")
        if block is None:
            raise ObjectNotFound(ObjectNotFound.BLOCK)
        return header_json(block)

    @registry.method("pow-headers", params=RangeParams, blocking=False)
    def pow_headers(params: RangeParams) -> dict[str, Any]:
        headers = chain.headers(params.start, params.count)
        return {"start": params.start, "headers": [h.hex() for h in headers]}

    @registry.method("pow-transaction", params=TxidParams, blocking=False)
    def pow_transaction(params: TxidParams) -> dict[str, Any]:
        txid = _hash(params.txid, "txid")
        found = chain.transaction(txid)
        if found is None:
            raise ObjectNotFound()
        located = chain.merkle_path(txid)
        block = None if found.block_height is None else chain.block_at(found.block_height)
        return {
            "txid": to_display_hex(txid),
            "transaction": found.raw.hex(),
            "blockhash": None if block is None else to_display_hex(block.hash),
            "blockheight": found.block_height,
            "txindex": found.tx_index,
            "confirmations": 0 if block is None else chain.confirmations(block.height),
            "merklepath": [] if located is None else [h.hex() for h in located[1]],
        }

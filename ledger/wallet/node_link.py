"""The wallet's questions to the ledger node, over its JSON-RPC client.

| question | node methods (docs/jsonrpc.md) |
|---|---|
| ``height()`` (``get-height``, ``active-identity-keys``) | ``heights`` |
| ``ec_rate()`` (fees, transaction objects) | ``entry-credit-rate`` |
| ``balances(kind, addresses)`` (``wallet-balances``, ``sign-transaction``) | ``multiple-fct-balances`` / ``multiple-ec-balances`` |
| ``chain_entries(chain_id, max_height=)`` (``active-identity-keys``) | ``chain-head``, ``entry-block``, ``entry`` |
| ``coin_blocks(start, end)`` (``transactions``) | ``fblock-by-height`` |

Every failure becomes a ``WalletError``: ``NodeUnavailableError`` (no answer, or an answer
of the wrong shape), ``NodeRefusedError`` (a JSON-RPC error object), ``ChainNotFoundError``
(-32009 from ``chain-head``). Saved blocks never change, so parsed coin blocks are cached.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ledger.core.blocks.coin import FactoidBlock
from ledger.core.entry import Entry
from ledger.core.errors import LedgerFormatError
from ledger.core.hashing import ZERO_HASH
from ledger.jsonrpc.client import AsyncJsonRpcClient
from ledger.jsonrpc.codes import ErrorCode
from ledger.jsonrpc.errors import JsonRpcCallError, JsonRpcTransportError
from ledger.wallet.errors import ChainNotFoundError, NodeRefusedError, NodeUnavailableError

__all__ = ["Balance", "ChainEntry", "HeightSource", "NodeHeights", "NodeLink"]

_BATCH = 100  # calls per HTTP request (the node refuses bodies over 1 MiB)
_MAX_CACHED_BLOCKS = 20_000


class HeightSource(Protocol):
    """Something that knows the ledger's current directory block height."""

    async def height(self) -> int: ...


@dataclass(frozen=True)
class Balance:
    """One address's balance as the node reports it (minor units or entry credits).

    Attributes:
        ack: including acknowledged, not yet saved transactions. saved: as of the last block.
        error: the node's per-address error text ("" when fine).
    """

    ack: int
    saved: int
    error: str = ""


@dataclass(frozen=True)
class ChainEntry:
    """An entry of a chain with the directory block height of its entry block."""

    entry: Entry
    height: int


class NodeLink:
    """``HeightSource`` and the other node questions of the wallet (module table).

    Args:
        client: an ``AsyncJsonRpcClient`` pointed at ``{node_url}/v2`` (owned by the caller).
    """

    def __init__(self, client: AsyncJsonRpcClient) -> None:
        self._client = client
        self._coin_blocks: dict[int, FactoidBlock] = {}

    async def height(self) -> int:
        """``directoryblockheight`` of the node (highest saved directory block)."""
        result = await self._call("heights")
        return _read(lambda: int(result["directoryblockheight"]), "heights")

    async def ec_rate(self) -> int:
        """Minor units per entry credit (``entry-credit-rate``), > 0."""
        result = await self._call("entry-credit-rate")
        rate = _read(lambda: int(result["rate"]), "entry-credit-rate")
        if rate <= 0:
            raise NodeUnavailableError("the ledger node sent a non-positive entry credit rate")
        return rate

    async def balances(self, kind: Literal["fct", "ec"], addresses: Sequence[str]) -> list[Balance]:
        """Balances of ``FA``/``EC`` addresses, in order (one ``multiple-*-balances`` call)."""
        if not addresses:
            return []
        method = "multiple-fct-balances" if kind == "fct" else "multiple-ec-balances"
        result = await self._call(method, {"addresses": list(addresses)})

        def parse() -> list[Balance]:
            items = result["balances"]
            if len(items) != len(addresses):
                raise ValueError("one balance per address expected")
            return [Balance(int(b["ack"]), int(b["saved"]), str(b.get("err") or "")) for b in items]

        return _read(parse, method)

    async def chain_entries(self, chain_id: bytes, *, max_height: int) -> list[ChainEntry]:
        """Entries of chain ``chain_id`` in saved entry blocks up to ``max_height``, oldest first.

        Walks ``chain-head`` back through ``entry-block`` ``prevkeymr`` links, then fetches
        the entries in batches and checks each one hashes to the listed entry hash.

        Raises:
            ChainNotFoundError: the node has no such chain.
        """
        blocks = await self._entry_blocks(chain_id)
        wanted = [(h, height) for height, hashes in blocks if height <= max_height for h in hashes]
        results = await self._batch([("entry", {"hash": h}) for h, _ in wanted])
        entries = []
        for (entry_hash, height), result in zip(wanted, results, strict=True):
            entry = _read(lambda r=result: Entry.from_json(r), "entry")
            if entry.hash().hex() != entry_hash or entry.chain_id != chain_id:
                raise NodeUnavailableError("the ledger node sent an entry that does not match")
            entries.append(ChainEntry(entry, height))
        return entries

    async def coin_blocks(self, start: int, end: int) -> list[FactoidBlock]:
        """Coin blocks of heights ``start..end`` inclusive (those that exist), in order."""
        missing = [h for h in range(start, end + 1) if h not in self._coin_blocks]
        results = await self._batch([("fblock-by-height", {"height": h}) for h in missing])
        for height, result in zip(missing, results, strict=True):
            raw = _read(lambda r=result: bytes.fromhex(r["rawdata"]), "fblock-by-height")
            block = _read(lambda b=raw: FactoidBlock.unmarshal(b), "fblock-by-height")
            if len(self._coin_blocks) >= _MAX_CACHED_BLOCKS:
                self._coin_blocks.clear()
            self._coin_blocks[height] = block
        return [self._coin_blocks[h] for h in range(start, end + 1) if h in self._coin_blocks]

    # -- internals ------------------------------------------------------------------------

    async def _entry_blocks(self, chain_id: bytes) -> list[tuple[int, list[str]]]:
        """``(dbheight, [entry hash hex])`` of every saved entry block of the chain, oldest first."""
        try:
            head = await self._call("chain-head", {"chainid": chain_id.hex()})
        except NodeRefusedError as exc:
            if exc.code == ErrorCode.MISSING_CHAIN_HEAD:
                raise ChainNotFoundError(chain_id) from exc
            raise
        keymr = _read(lambda: str(head["chainhead"]), "chain-head")
        blocks: list[tuple[int, list[str]]] = []
        seen: set[str] = set()
        while keymr and keymr != ZERO_HASH.hex():
            if keymr in seen:
                raise NodeUnavailableError("the ledger node sent an entry block loop")
            seen.add(keymr)
            block = await self._call("entry-block", {"keymr": keymr})
            height, hashes, keymr = _read(lambda b=block: _eblock_links(b), "entry-block")
            blocks.append((height, hashes))
        blocks.reverse()
        return blocks

    async def _call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        try:
            return await self._client.call(method, params)
        except JsonRpcCallError as exc:
            detail = exc.message if exc.data is None else f"{exc.message}: {exc.data}"
            raise NodeRefusedError(method, exc.code, str(detail)) from exc
        except JsonRpcTransportError as exc:
            raise NodeUnavailableError(f"the ledger node did not answer '{method}'") from exc

    async def _batch(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
        results: list[Any] = []
        for start in range(0, len(calls), _BATCH):
            chunk = calls[start : start + _BATCH]
            try:
                replies = await self._client.batch(chunk)
            except JsonRpcCallError as exc:
                raise NodeRefusedError(chunk[0][0], exc.code, str(exc.message)) from exc
            except JsonRpcTransportError as exc:
                raise NodeUnavailableError(
                    f"the ledger node did not answer '{chunk[0][0]}'"
                ) from exc
            for (method, _), reply in zip(chunk, replies, strict=True):
                if isinstance(reply, JsonRpcCallError):
                    raise NodeRefusedError(method, reply.code, str(reply.message))
                results.append(reply)
        return results


#: ``NodeHeights(client)`` is the same object: a ``NodeLink`` used only for ``height()``.
NodeHeights = NodeLink


def _eblock_links(block: Any) -> tuple[int, list[str], str]:
    header = block["header"]
    hashes = [str(item["entryhash"]) for item in block["entrylist"]]
    return int(header["dbheight"]), hashes, str(header["prevkeymr"])


def _read(parse: Any, method: str) -> Any:
    """``parse()`` or NodeUnavailableError when the node's answer has the wrong shape."""
    try:
        return parse()
    except (KeyError, TypeError, ValueError, LedgerFormatError) as exc:
        raise NodeUnavailableError(f"the ledger node sent an unexpected '{method}' result") from exc

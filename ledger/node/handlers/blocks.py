"""Block methods: directory, admin, entry credit, coin and entry blocks by height or key; raw-data.

Every block is stored as its exact bytes and rendered by the ``ledger.core.blocks`` classes;
lookups try the primary key then the secondary key (docs/formats.md §9.3 "Block lookup keys").
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from ledger.core.blocks.admin import AdminBlock
from ledger.core.blocks.coin import FactoidBlock
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.blocks.entry_credit import EntryCreditBlock
from ledger.jsonrpc.errors import ObjectNotFound
from ledger.jsonrpc.registry import MethodRegistry
from ledger.node.params import HashParams, HeightParams, KeyMRParams
from ledger.node.service import NodeService
from ledger.node.store import row_by_either_key


@dataclass(frozen=True)
class BlockKind:
    """How one kind of height-indexed block is stored and rendered."""

    table: str
    primary: str
    secondary: str
    result_key: str
    cls: Any


DBLOCK = BlockKind("dblocks", "keymr", "full_hash", "dblock", DirectoryBlock)
ABLOCK = BlockKind("ablocks", "lookup_hash", "back_ref", "ablock", AdminBlock)
ECBLOCK = BlockKind("ecblocks", "header_hash", "full_hash", "ecblock", EntryCreditBlock)
FBLOCK = BlockKind("fblocks", "keymr", "ledger_keymr", "fblock", FactoidBlock)
HEIGHT_KINDS = (DBLOCK, ABLOCK, ECBLOCK, FBLOCK)


def raw_by_height(conn: sqlite3.Connection, kind: BlockKind, height: int) -> bytes | None:
    row = conn.execute(f"SELECT raw FROM {kind.table} WHERE height=?", (height,)).fetchone()
    return None if row is None else bytes(row[0])


def raw_by_key(conn: sqlite3.Connection, kind: BlockKind, key: bytes) -> bytes | None:
    """Exact bytes of the block whose primary or secondary key is ``key``."""
    sql = f"SELECT raw FROM {kind.table} WHERE {{column}}=?"
    row = row_by_either_key(conn, sql, (kind.primary, kind.secondary), key)
    return None if row is None else bytes(row[0])


def eblock_raw(conn: sqlite3.Connection, key: bytes) -> tuple[bytes, int] | None:
    """``(raw entry block, directory block timestamp in seconds)`` by KeyMR or full hash."""
    sql = (
        "SELECT b.raw, d.timestamp_min FROM eblocks b JOIN dblocks d ON d.height=b.height"
        " WHERE b.{column}=?"
    )
    row = row_by_either_key(conn, sql, ("keymr", "full_hash"), key)
    return None if row is None else (bytes(row[0]), int(row[1]) * 60)


def _render(kind: BlockKind, raw: bytes | None, *, noraw: bool = False) -> dict[str, Any]:
    """The block's JSON answer (with ``rawdata`` unless ``noraw``); ObjectNotFound when
    there is no such block (``raw`` None)."""
    if raw is None:
        raise ObjectNotFound(ObjectNotFound.BLOCK)
    result: dict[str, Any] = {kind.result_key: kind.cls.unmarshal(raw).to_json()}
    if not noraw:
        result["rawdata"] = raw.hex()
    return result


def register(registry: MethodRegistry, service: NodeService) -> None:
    """Add the block methods, bound to ``service``, to ``registry``."""
    read = service.store.read

    def by_height(kind: BlockKind) -> Any:
        def handler(params: HeightParams) -> dict[str, Any]:
            return _render(kind, raw_by_height(read, kind, params.height), noraw=params.noraw)

        return handler

    for name, kind in (
        ("dblock-by-height", DBLOCK),
        ("ablock-by-height", ABLOCK),
        ("ecblock-by-height", ECBLOCK),
        ("fblock-by-height", FBLOCK),
    ):
        registry.add(name, by_height(kind), params=HeightParams, blocking=False)

    def by_key(kind: BlockKind) -> Any:
        def handler(params: KeyMRParams) -> dict[str, Any]:
            return _render(kind, raw_by_key(read, kind, params.keymr), noraw=params.noraw)

        return handler

    registry.add("admin-block", by_key(ABLOCK), params=KeyMRParams, blocking=False)
    registry.add("entrycredit-block", by_key(ECBLOCK), params=KeyMRParams, blocking=False)
    registry.add(
        "coin-block",
        by_key(FBLOCK),
        params=KeyMRParams,
        aliases=("factoid-block",),
        blocking=False,
    )

    @registry.method("directory-block", params=KeyMRParams, blocking=False)
    def directory_block(params: KeyMRParams) -> dict[str, Any]:
        raw = raw_by_key(read, DBLOCK, params.keymr)
        if raw is None:
            raise ObjectNotFound(ObjectNotFound.BLOCK)
        return DirectoryBlock.unmarshal(raw).to_directory_block_json()

    @registry.method("directory-block-head", blocking=False)
    def directory_block_head() -> dict[str, Any]:
        return {"keymr": service.tip.dblock_keymr.hex()}

    @registry.method("entry-block", params=KeyMRParams, blocking=False)
    def entry_block(params: KeyMRParams) -> dict[str, Any]:
        found = eblock_raw(read, params.keymr)
        if found is None:
            raise ObjectNotFound(ObjectNotFound.BLOCK)
        raw, dblock_ts = found
        return EntryBlock.unmarshal(raw).to_json(directory_block_timestamp_s=dblock_ts)

    @registry.method("raw-data", params=HashParams, blocking=False)
    def raw_data(params: HashParams) -> dict[str, Any]:
        raw = find_raw(service, params.hash)
        if raw is None:
            raise ObjectNotFound(ObjectNotFound.OBJECT)
        return {"data": raw.hex()}


def find_raw(service: NodeService, key: bytes) -> bytes | None:
    """Exact bytes of the entry, commit, coin transaction or block stored under ``key``."""
    saved = service.saved_entry(key)
    if saved is not None:
        return saved.raw
    pending = service.pending_entry(key)
    if pending is not None:
        return pending[1]
    commit = service.find_commit(key)
    if commit is not None:
        return commit.raw
    found = service.find_transaction(key)
    if found is not None:
        return found[0].marshal()
    read = service.store.read
    for kind in HEIGHT_KINDS:
        raw = raw_by_key(read, kind, key)
        if raw is not None:
            return raw
    located = eblock_raw(read, key)
    return None if located is None else located[0]

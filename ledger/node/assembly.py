"""Turning a finished process list into the five blocks of one directory block height.

``chain_heads`` reads what assembly needs from the store; ``assemble_block`` is then pure
(it runs in a worker thread while the event loop goes on); the returned
``BlockSet`` carries the exact block bytes and ``save(conn)``, which writes every block,
entry index row, chain head and balance change of the height in one transaction, with the
journal floor and carry list that tell a restarted node what to replay (docs/formats.md
§5; ``ledger.node.store`` for the tables).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from ledger import devnet
from ledger.core.addresses import (
    public_key_from_ec_address,
    rcd_hash_from_fct_address,
    seed_from_fct_secret,
)
from ledger.core.blocks.admin import AdminBlock
from ledger.core.blocks.admin_entries import DBSignature
from ledger.core.blocks.coin import FactoidBlock
from ledger.core.blocks.directory import (
    ADMIN_CHAIN_ID,
    COIN_CHAIN_ID,
    DIRECTORY_HEADER_BYTES,
    EC_CHAIN_ID,
    DBlockEntry,
    DirectoryBlock,
)
from ledger.core.blocks.entry_block import EntryBlock, is_minute_marker
from ledger.core.blocks.entry_credit import (
    ECObject,
    EntryCreditBlock,
    MinuteNumber,
    ServerIndexNumber,
)
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import chain_id_from_external_ids
from ledger.core.hashing import ZERO_HASH, sha256, sha512_half
from ledger.core.keys import SigningKey
from ledger.core.transaction import Transaction, TxAddress
from ledger.node.process_list import MINUTES_PER_BLOCK, ProcessList
from ledger.node.settings import NodeSettings
from ledger.node.store import Store, insert_rows, put_meta
from ledger.node.tip import ChainTip

BalanceDeltas = dict[tuple[str, bytes], int]


@dataclass(frozen=True)
class NodeIdentity:
    """The node's signing key (admin block DB signatures) and its identity chain id."""

    key: SigningKey
    chain_id: bytes


def node_identity(store: Store) -> NodeIdentity:
    """Load the node's identity key from ``meta`` (created at genesis)."""
    seed = store.get_meta("identity_seed")
    if seed is None:
        raise RuntimeError("the node store has no identity key; was the genesis created?")
    key = SigningKey.from_seed(seed)
    return NodeIdentity(key, chain_id_from_external_ids([b"notary node identity", key.public_key]))


@dataclass(frozen=True)
class SealedEntryBlock:
    """An entry block with its hashes and bytes computed once."""

    block: EntryBlock
    key_mr: bytes
    full_hash: bytes
    raw: bytes

    @classmethod
    def seal(cls, block: EntryBlock) -> SealedEntryBlock:
        header = block.header()
        body = b"".join(block.items)
        body_mr = header[32:64]
        return cls(block, sha256(sha256(header) + body_mr), sha256(header + body), header + body)


@dataclass
class BlockSet:
    """The blocks of one height, ready to save, and what saving them changes.

    Hashes and exact bytes of every block are computed once, at construction.
    """

    height: int
    dblock: DirectoryBlock
    ablock: AdminBlock
    ecblock: EntryCreditBlock
    fblock: FactoidBlock
    eblocks: list[SealedEntryBlock]
    process_list: ProcessList
    balance_deltas: BalanceDeltas
    floor_seq: int = 0
    carry: tuple[int, ...] = ()
    meta: dict[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        d, a, e, f = self.dblock, self.ablock, self.ecblock, self.fblock
        self.dblock_raw, self.dblock_keymr, self.dblock_full = (
            d.marshal(),
            d.key_mr(),
            d.full_hash(),
        )
        self.ablock_raw = a.marshal()
        self.ablock_lookup, self.ablock_backref = (
            sha256(self.ablock_raw),
            sha512_half(self.ablock_raw),
        )
        self.ecblock_raw = e.marshal()
        self.ecblock_header_hash, self.ecblock_full = e.header_hash(), sha256(self.ecblock_raw)
        self.fblock_raw, self.fblock_keymr, self.fblock_ledger = (
            f.marshal(),
            f.key_mr(),
            f.ledger_key_mr(),
        )

    @property
    def tip(self) -> ChainTip:
        """The tip after this block set is saved."""
        return ChainTip(
            height=self.height,
            dblock_keymr=self.dblock_keymr,
            dblock_full_hash=self.dblock_full,
            dblock_header=self.dblock_raw[:DIRECTORY_HEADER_BYTES],
            timestamp_min=self.dblock.timestamp_min,
            ablock_back_ref=self.ablock_backref,
            ecblock_header_hash=self.ecblock_header_hash,
            ecblock_full_hash=self.ecblock_full,
            fblock_keymr=self.fblock_keymr,
            fblock_ledger_keymr=self.fblock_ledger,
        )

    def save(self, conn: sqlite3.Connection) -> None:
        """Write the whole height in the caller's transaction."""
        for key, value in self.meta.items():
            put_meta(conn, key, value)
        self._save_blocks(conn)
        self._save_entries(conn)
        self._save_balances(conn)
        self._save_journal(conn)

    def _save_blocks(self, conn: sqlite3.Connection) -> None:
        h = self.height
        conn.execute(
            "INSERT INTO dblocks(height, keymr, full_hash, timestamp_min, floor_seq, raw)"
            " VALUES (?,?,?,?,?,?)",
            (
                h,
                self.dblock_keymr,
                self.dblock_full,
                self.dblock.timestamp_min,
                self.floor_seq,
                self.dblock_raw,
            ),
        )
        conn.execute(
            "INSERT INTO ablocks(height, lookup_hash, back_ref, raw) VALUES (?,?,?,?)",
            (h, self.ablock_lookup, self.ablock_backref, self.ablock_raw),
        )
        conn.execute(
            "INSERT INTO ecblocks(height, header_hash, full_hash, raw) VALUES (?,?,?,?)",
            (h, self.ecblock_header_hash, self.ecblock_full, self.ecblock_raw),
        )
        conn.execute(
            "INSERT INTO fblocks(height, keymr, ledger_keymr, raw) VALUES (?,?,?,?)",
            (h, self.fblock_keymr, self.fblock_ledger, self.fblock_raw),
        )
        conn.executemany(
            "INSERT OR IGNORE INTO txs(txid, full_hash, height, fblock_keymr, raw) VALUES (?,?,?,?,?)",
            [
                (t.txid(), t.full_hash(), h, self.fblock_keymr, t.marshal())
                for t in self.fblock.transactions
            ],
        )

    def _save_entries(self, conn: sqlite3.Connection) -> None:
        h = self.height
        for sealed in self.eblocks:
            eb = sealed.block
            conn.execute(
                "INSERT INTO eblocks(keymr, full_hash, chain_id, sequence, height, raw)"
                " VALUES (?,?,?,?,?,?)",
                (sealed.key_mr, sealed.full_hash, eb.chain_id, eb.sequence, h, sealed.raw),
            )
            conn.execute(
                "INSERT INTO chains(chain_id, head_keymr, head_full_hash, sequence, created_height)"
                " VALUES (?,?,?,?,?) ON CONFLICT(chain_id) DO UPDATE SET head_keymr=excluded.head_keymr,"
                " head_full_hash=excluded.head_full_hash, sequence=excluded.sequence",
                (eb.chain_id, sealed.key_mr, sealed.full_hash, eb.sequence, h),
            )
        insert_rows(
            conn,
            "INSERT OR IGNORE INTO entry_index(entry_hash, height, reveal_seq, commit_seq)"
            " VALUES (?,?,?,?)",
            [
                (ehash, h, rec.reveal_seq, rec.commit_seq)
                for ehash, rec in self.process_list.entries.items()
            ],
        )

    def _save_balances(self, conn: sqlite3.Connection) -> None:
        conn.executemany(
            "INSERT INTO balances(kind, key, amount) VALUES (?,?,?) ON CONFLICT(kind, key)"
            " DO UPDATE SET amount = amount + excluded.amount",
            [(kind, key, delta) for (kind, key), delta in self.balance_deltas.items() if delta],
        )

    def _save_journal(self, conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM carry")
        conn.executemany("INSERT INTO carry(seq) VALUES (?)", [(seq,) for seq in self.carry])


ChainHead = tuple[int, bytes, bytes]


def chain_heads(pl: ProcessList, store: Store) -> dict[bytes, ChainHead]:
    """``(sequence, keymr, full hash)`` of the head entry block of every saved chain that
    receives entries in ``pl`` (read on the caller's thread, before assembling)."""
    heads: dict[bytes, ChainHead] = {}
    for chain_id in pl.eblock_items:
        row = store.read.execute(
            "SELECT sequence, head_keymr, head_full_hash FROM chains WHERE chain_id=?",
            (chain_id,),
        ).fetchone()
        if row is not None:
            heads[chain_id] = (int(row[0]), bytes(row[1]), bytes(row[2]))
    return heads


def _entry_blocks(pl: ProcessList, heads: dict[bytes, ChainHead]) -> list[SealedEntryBlock]:
    """One entry block per chain that received entries, sorted by chain id (section 5.3)."""
    blocks = []
    for chain_id, items in sorted(pl.eblock_items.items()):
        if not any(not is_minute_marker(item) for item in items):
            continue
        prev = heads.get(chain_id)
        block = EntryBlock(
            chain_id=chain_id,
            sequence=0 if prev is None else prev[0] + 1,
            height=pl.height,
            prev_key_mr=ZERO_HASH if prev is None else prev[1],
            prev_full_hash=ZERO_HASH if prev is None else prev[2],
            items=tuple(items),
        )
        blocks.append(SealedEntryBlock.seal(block))
    return blocks


class _SealedECBlock(EntryCreditBlock):
    """An ``EntryCreditBlock`` that marshals its body and header once (it is immutable);
    the core class recomputes them for every hash, which costs a full pass over thousands
    of commits each time. ``with_body`` gives it its body bytes ready-made."""

    def with_body(self, body: bytes) -> _SealedECBlock:
        object.__setattr__(self, "_body", body)
        return self

    def body(self) -> bytes:
        cached = self.__dict__.get("_body")
        if cached is None:
            cached = super().body()
            object.__setattr__(self, "_body", cached)
        return cached

    def header(self) -> bytes:
        cached = self.__dict__.get("_header")
        if cached is None:
            cached = super().header()
            object.__setattr__(self, "_header", cached)
        return cached


def _object_bytes(obj: ECObject) -> bytes:
    """One body object as the core marshals it (its ECID byte, then its bytes)."""
    return EntryCreditBlock(0, ZERO_HASH, ZERO_HASH, (obj,)).body()


_MARKER_BYTES = {m: _object_bytes(MinuteNumber(m)) for m in range(1, MINUTES_PER_BLOCK + 1)}
_SAMPLE_ENTRY_COMMIT = CommitEntry(0, bytes(32), 1, bytes(32), bytes(64))
_SAMPLE_CHAIN_COMMIT = CommitChain(0, bytes(32), bytes(32), bytes(32), 11, bytes(32), bytes(64))
#: The bytes before a marshalled commit in the body (its ECID), per commit class.
_COMMIT_PREFIX: dict[type, bytes] = {
    type(c): _object_bytes(c)[: -len(c.marshal())]
    for c in (_SAMPLE_ENTRY_COMMIT, _SAMPLE_CHAIN_COMMIT)
}


def _ec_objects(pl: ProcessList) -> tuple[ECObject, ...]:
    return tuple(MinuteNumber(obj) if isinstance(obj, int) else obj for obj in pl.ec_objects)


def _ec_body(pl: ProcessList, prefix: tuple[ECObject, ...]) -> bytes:
    """The EC block body of ``prefix`` then ``pl``'s objects, from the commits' bytes kept
    by the process list (what ``EntryCreditBlock.body()`` computes, without re-marshalling)."""
    parts = [_object_bytes(obj) for obj in prefix]
    for obj, raw in zip(pl.ec_objects, pl.ec_raw, strict=True):
        if isinstance(obj, int):
            parts.append(_MARKER_BYTES[obj])
        else:
            parts.append(_COMMIT_PREFIX[type(obj)] + raw)
    return b"".join(parts)


def _coinbase(pl: ProcessList, outputs: tuple[TxAddress, ...] = ()) -> Transaction:
    return Transaction(int(pl.start_s * 1000), outputs=outputs)


def _balance_deltas(pl: ProcessList, minutes: list[list[Transaction]], rate: int) -> BalanceDeltas:
    spent: dict[bytes, int] = {}
    for obj in pl.ec_objects:
        if not isinstance(obj, int):
            spent[obj.ec_public_key] = spent.get(obj.ec_public_key, 0) + obj.credits
    deltas: BalanceDeltas = {("ec", key): -credits for key, credits in spent.items()}

    def add(kind: str, key: bytes, amount: int) -> None:
        deltas[(kind, key)] = deltas.get((kind, key), 0) + amount

    for bucket in minutes:
        for tx in bucket:
            for item in tx.inputs:
                add("fct", item.address, -item.amount)
            for item in tx.outputs:
                add("fct", item.address, item.amount)
            for item in tx.ec_outputs:
                add("ec", item.address, item.amount // rate)
    return deltas


def _admin_block(tip: ChainTip, height: int, identity: NodeIdentity | None) -> AdminBlock:
    entries: tuple[DBSignature, ...] = ()
    if identity is not None and tip.dblock_header:
        signature = identity.key.sign(tip.dblock_header)
        entries = (DBSignature(identity.chain_id, identity.key.public_key, signature),)
    return AdminBlock(height, tip.ablock_back_ref, entries)


def _directory_block(
    settings: NodeSettings,
    tip: ChainTip,
    *,
    pl: ProcessList,
    special: tuple[bytes, bytes, bytes],
    eblocks: list[SealedEntryBlock],
) -> DirectoryBlock:
    entries = [
        DBlockEntry(ADMIN_CHAIN_ID, special[0]),
        DBlockEntry(EC_CHAIN_ID, special[1]),
        DBlockEntry(COIN_CHAIN_ID, special[2]),
        *(DBlockEntry(eb.block.chain_id, eb.key_mr) for eb in eblocks),
    ]
    return DirectoryBlock(
        height=pl.height,
        timestamp_min=int(pl.start_s // 60),
        network_id=settings.network_id,
        prev_key_mr=tip.dblock_keymr,
        prev_full_hash=tip.dblock_full_hash,
        entries=tuple(entries),
    )


def _build(
    pl: ProcessList,
    tip: ChainTip,
    *,
    settings: NodeSettings,
    heads: dict[bytes, ChainHead],
    ec_prefix: tuple[ECObject, ...] = (),
    coinbase_outputs: tuple[TxAddress, ...] = (),
    identity: NodeIdentity | None,
) -> BlockSet:
    eblocks = _entry_blocks(pl, heads)
    ecblock = _SealedECBlock(
        pl.height, tip.ecblock_header_hash, tip.ecblock_full_hash, ec_prefix + _ec_objects(pl)
    ).with_body(_ec_body(pl, ec_prefix))
    minutes = [list(bucket) for bucket in pl.transactions]
    minutes[0].insert(0, _coinbase(pl, coinbase_outputs))
    fblock = _coin_block(pl.height, tip, rate=settings.ec_rate, minutes=minutes)
    ablock = _admin_block(tip, pl.height, identity)
    special = (ablock.lookup_hash(), ecblock.header_hash(), fblock.key_mr())
    dblock = _directory_block(settings, tip, pl=pl, special=special, eblocks=eblocks)
    return BlockSet(
        height=pl.height,
        dblock=dblock,
        ablock=ablock,
        ecblock=ecblock,
        fblock=fblock,
        eblocks=eblocks,
        process_list=pl,
        balance_deltas=_balance_deltas(pl, minutes, settings.ec_rate),
    )


def _coin_block(
    height: int, tip: ChainTip, *, rate: int, minutes: list[list[Transaction]]
) -> FactoidBlock:
    """Coin block with a 0x00 marker after each minute's transactions (section 5.7)."""
    ends, total = [], 0
    for bucket in minutes:
        total += len(bucket)
        ends.append(total)
    transactions = tuple(tx for bucket in minutes for tx in bucket)
    return FactoidBlock(
        height, rate, tip.fblock_keymr, tip.fblock_ledger_keymr, transactions, tuple(ends)
    )


def assemble_block(
    pl: ProcessList,
    tip: ChainTip,
    *,
    settings: NodeSettings,
    heads: dict[bytes, ChainHead],
    identity: NodeIdentity,
    floor_seq: int,
    carry: tuple[int, ...] = (),
) -> BlockSet:
    """The blocks recording the complete process list ``pl`` on top of ``tip``.

    Pure (no I/O; safe in a worker thread while ``pl`` no longer changes): ``heads`` comes
    from :func:`chain_heads`. ``floor_seq`` is the last journal sequence number accepted
    before the cut; ``carry`` the journal rows at or below it that stay pending (held
    reveals, open commits).

    Requires ``pl.complete`` (ten minutes closed) and ``pl.height == tip.height + 1``.
    """
    if not pl.complete or pl.height != tip.height + 1:
        raise ValueError(f"cannot assemble height {pl.height} on tip {tip.height}")
    blocks = _build(pl, tip, settings=settings, heads=heads, identity=identity)
    blocks.floor_seq = floor_seq
    blocks.carry = carry
    return blocks


def genesis_block(settings: NodeSettings, now_s: float) -> BlockSet:
    """Height 0: empty admin block, EC block with server index 0 and ten minutes, and a coin
    block whose coinbase funds the development coin address, followed (dev network) by a
    purchase of entry credits for the development EC address."""
    pl = ProcessList(height=0, start_s=now_s)
    coinbase_outputs: tuple[TxAddress, ...] = ()
    if settings.dev_genesis:
        fct_key = SigningKey.from_seed(seed_from_fct_secret(devnet.DEV_FCT_SECRET))
        fct_rcd = rcd_hash_from_fct_address(devnet.DEV_FCT_ADDRESS)
        coinbase_outputs = (TxAddress(devnet.DEV_GENESIS_COINS, fct_rcd),)
        pl.transactions[0].append(_dev_purchase(settings, pl, fct_key, fct_rcd))
    for _ in range(MINUTES_PER_BLOCK):
        pl.end_minute()
    identity_seed = SigningKey.generate().seed
    blocks = _build(
        pl,
        ChainTip.empty(),
        settings=settings,
        heads={},
        ec_prefix=(ServerIndexNumber(0),),
        coinbase_outputs=coinbase_outputs,
        identity=None,
    )
    blocks.meta["identity_seed"] = identity_seed
    blocks.meta["genesis_time_ms"] = int(now_s * 1000).to_bytes(8, "big")
    return blocks


def _dev_purchase(
    settings: NodeSettings, pl: ProcessList, key: SigningKey, rcd: bytes
) -> Transaction:
    ec_pub = public_key_from_ec_address(devnet.DEV_EC_ADDRESS)
    spend = devnet.DEV_GENESIS_CREDITS * settings.ec_rate
    ts = int(pl.start_s * 1000) + 1
    draft = Transaction(ts, inputs=(TxAddress(spend, rcd),), ec_outputs=(TxAddress(spend, ec_pub),))
    fee = draft.sign([key]).fee(settings.ec_rate)
    final = Transaction(
        ts, inputs=(TxAddress(spend + fee, rcd),), ec_outputs=(TxAddress(spend, ec_pub),)
    )
    return final.sign([key])


__all__ = [
    "BlockSet",
    "ChainHead",
    "CommitChain",
    "CommitEntry",
    "NodeIdentity",
    "SealedEntryBlock",
    "assemble_block",
    "chain_heads",
    "genesis_block",
    "node_identity",
]

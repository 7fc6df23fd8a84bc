"""Turning a finished process list into the five blocks of one directory block height.

``assemble_block`` is pure apart from reading chain heads from the store; the returned
``BlockSet`` carries the exact block bytes and ``save(conn)``, which writes every block,
entry, chain head and balance change of the height in one transaction and clears the
journal rows the blocks now record (factom-formats section 5).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from ledger.core.addresses import public_key_from_ec_address, rcd_hash_from_fct_address
from ledger.core.addresses import seed_from_fct_secret
from ledger.core.blocks.admin import AdminBlock, DBSignature
from ledger.core.blocks.coin import FactoidBlock
from ledger.core.blocks.directory import DBlockEntry, DirectoryBlock
from ledger.core.blocks.directory import ADMIN_CHAIN_ID, COIN_CHAIN_ID, EC_CHAIN_ID
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.blocks.entry_credit import EntryCreditBlock, MinuteNumber, ServerIndexNumber
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import chain_id_from_external_ids
from ledger.core.keys import SigningKey
from ledger.core.transaction import Transaction, TxAddress
from ledger import devnet
from ledger.node.process_list import MINUTES_PER_BLOCK, ProcessList
from ledger.node.settings import NodeSettings
from ledger.node.store import Store, put_meta
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


@dataclass
class BlockSet:
    """The blocks of one height, ready to save, and what saving them changes."""

    height: int
    dblock: DirectoryBlock
    ablock: AdminBlock
    ecblock: EntryCreditBlock
    fblock: FactoidBlock
    eblocks: list[EntryBlock]
    process_list: ProcessList
    balance_deltas: BalanceDeltas
    new_chains: dict[bytes, int] = field(default_factory=dict)
    meta: dict[str, bytes] = field(default_factory=dict)

    @property
    def tip(self) -> ChainTip:
        d, e, f = self.dblock, self.ecblock, self.fblock
        return ChainTip(
            height=self.height,
            dblock_keymr=d.key_mr(),
            dblock_full_hash=d.full_hash(),
            dblock_header=d.header(),
            timestamp_min=d.timestamp_min,
            ablock_back_ref=self.ablock.back_reference_hash(),
            ecblock_header_hash=e.header_hash(),
            ecblock_full_hash=e.full_hash(),
            fblock_keymr=f.key_mr(),
            fblock_ledger_keymr=f.ledger_key_mr(),
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
        h, d, a, e, f = self.height, self.dblock, self.ablock, self.ecblock, self.fblock
        conn.execute(
            "INSERT INTO dblocks(height, keymr, full_hash, timestamp_min, raw) VALUES (?,?,?,?,?)",
            (h, d.key_mr(), d.full_hash(), d.timestamp_min, d.marshal()),
        )
        conn.execute(
            "INSERT INTO ablocks(height, lookup_hash, back_ref, raw) VALUES (?,?,?,?)",
            (h, a.lookup_hash(), a.back_reference_hash(), a.marshal()),
        )
        conn.execute(
            "INSERT INTO ecblocks(height, header_hash, full_hash, raw) VALUES (?,?,?,?)",
            (h, e.header_hash(), e.full_hash(), e.marshal()),
        )
        conn.execute(
            "INSERT INTO fblocks(height, keymr, ledger_keymr, raw) VALUES (?,?,?,?)",
            (h, f.key_mr(), f.ledger_key_mr(), f.marshal()),
        )
        fkeymr = f.key_mr()
        conn.executemany(
            "INSERT OR IGNORE INTO txs(txid, full_hash, height, fblock_keymr, raw) VALUES (?,?,?,?,?)",
            [(t.txid(), t.full_hash(), h, fkeymr, t.marshal()) for t in f.transactions],
        )

    def _save_entries(self, conn: sqlite3.Connection) -> None:
        entries = self.process_list.entries
        for eb in self.eblocks:
            keymr, full = eb.key_mr(), eb.full_hash()
            conn.execute(
                "INSERT INTO eblocks(keymr, full_hash, chain_id, sequence, height, raw)"
                " VALUES (?,?,?,?,?,?)",
                (keymr, full, eb.chain_id, eb.sequence, self.height, eb.marshal()),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO entries(entry_hash, chain_id, height, eblock_keymr, raw)"
                " VALUES (?,?,?,?,?)",
                [
                    (ehash, eb.chain_id, self.height, keymr, entries[ehash][1])
                    for ehash in eb.entry_hashes()
                ],
            )
            conn.execute(
                "INSERT INTO chains(chain_id, head_keymr, head_full_hash, sequence, created_height)"
                " VALUES (?,?,?,?,?) ON CONFLICT(chain_id) DO UPDATE SET head_keymr=excluded.head_keymr,"
                " head_full_hash=excluded.head_full_hash, sequence=excluded.sequence",
                (eb.chain_id, keymr, full, eb.sequence, self.height),
            )

    def _save_balances(self, conn: sqlite3.Connection) -> None:
        conn.executemany(
            "INSERT INTO balances(kind, key, amount) VALUES (?,?,?) ON CONFLICT(kind, key)"
            " DO UPDATE SET amount = amount + excluded.amount",
            [(kind, key, delta) for (kind, key), delta in self.balance_deltas.items() if delta],
        )

    def _save_journal(self, conn: sqlite3.Connection) -> None:
        pl = self.process_list
        conn.executemany(
            "UPDATE commits SET block_height=? WHERE txid=? AND block_height IS NULL",
            [(self.height, c.txid()) for c in pl.commits()],
        )
        conn.executemany(
            "UPDATE commits SET revealed=1 WHERE txid=?",
            [(txid,) for txid in pl.revealed_commit_txids],
        )
        conn.executemany(
            "DELETE FROM pending_reveals WHERE entry_hash=?", [(h,) for h in pl.entries]
        )
        conn.executemany(
            "DELETE FROM pending_txs WHERE txid=?",
            [(t.txid(),) for bucket in pl.transactions for t in bucket],
        )


def _chain_head(store: Store, chain_id: bytes) -> EntryBlock | None:
    row = store.read.execute(
        "SELECT b.raw FROM chains c JOIN eblocks b ON b.keymr = c.head_keymr WHERE c.chain_id=?",
        (chain_id,),
    ).fetchone()
    return None if row is None else EntryBlock.unmarshal(bytes(row[0]))


def _entry_blocks(pl: ProcessList, store: Store) -> list[EntryBlock]:
    blocks = []
    for chain_id, items in sorted(pl.eblock_items.items()):
        if not items:
            continue
        prev = _chain_head(store, chain_id)
        blocks.append(
            EntryBlock(
                chain_id=chain_id,
                sequence=0 if prev is None else prev.sequence + 1,
                height=pl.height,
                prev_key_mr=bytes(32) if prev is None else prev.key_mr(),
                prev_full_hash=bytes(32) if prev is None else prev.full_hash(),
                items=tuple(items),
            )
        )
    return blocks


def _ec_objects(pl: ProcessList) -> tuple[object, ...]:
    return tuple(MinuteNumber(obj) if isinstance(obj, int) else obj for obj in pl.ec_objects)


def _coinbase(pl: ProcessList, outputs: tuple[TxAddress, ...] = ()) -> Transaction:
    return Transaction(int(pl.start_s * 1000), outputs=outputs)


def _balance_deltas(pl: ProcessList, minutes: list[list[Transaction]], rate: int) -> BalanceDeltas:
    deltas: BalanceDeltas = {}

    def add(kind: str, key: bytes, amount: int) -> None:
        deltas[(kind, key)] = deltas.get((kind, key), 0) + amount

    for commit in pl.commits():
        add("ec", commit.ec_public_key, -commit.credits)
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
    eblocks: list[EntryBlock],
) -> DirectoryBlock:
    entries = [
        DBlockEntry(ADMIN_CHAIN_ID, special[0]),
        DBlockEntry(EC_CHAIN_ID, special[1]),
        DBlockEntry(COIN_CHAIN_ID, special[2]),
        *(DBlockEntry(eb.chain_id, eb.key_mr()) for eb in eblocks),
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
    store: Store,
    ec_prefix: tuple[object, ...] = (),
    coinbase_outputs: tuple[TxAddress, ...] = (),
    identity: NodeIdentity | None,
) -> BlockSet:
    eblocks = _entry_blocks(pl, store)
    ecblock = EntryCreditBlock(
        pl.height, tip.ecblock_header_hash, tip.ecblock_full_hash, ec_prefix + _ec_objects(pl)
    )
    minutes = [list(bucket) for bucket in pl.transactions]
    minutes[0].insert(0, _coinbase(pl, coinbase_outputs))
    fblock = FactoidBlock.build(prev=None, exchange_rate=settings.ec_rate, minutes=minutes)
    fblock = FactoidBlock(
        pl.height, settings.ec_rate, tip.fblock_keymr, tip.fblock_ledger_keymr,
        fblock.transactions, fblock.minute_ends,
    )
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


def assemble_block(
    pl: ProcessList, tip: ChainTip, *, settings: NodeSettings, store: Store, rules: object = None
) -> BlockSet:
    """The blocks recording the complete process list ``pl`` on top of ``tip``.

    Requires ``pl.complete`` (ten minutes closed) and ``pl.height == tip.height + 1``.
    """
    if not pl.complete or pl.height != tip.height + 1:
        raise ValueError(f"cannot assemble height {pl.height} on tip {tip.height}")
    return _build(pl, tip, settings=settings, store=store, identity=node_identity(store))


def genesis_block(settings: NodeSettings, now_s: float, store: Store) -> BlockSet:
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
        store=store,
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
    "CommitChain",
    "CommitEntry",
    "NodeIdentity",
    "assemble_block",
    "genesis_block",
    "node_identity",
]

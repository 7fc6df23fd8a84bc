"""The tip of the saved chain: what the next set of blocks links to."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ledger.core.hashing import ZERO_HASH


@dataclass(frozen=True)
class ChainTip:
    """Hashes of the last saved block of each kind (raw 32 bytes); ``height`` -1 before genesis."""

    height: int
    dblock_keymr: bytes
    dblock_full_hash: bytes
    dblock_header: bytes
    timestamp_min: int
    ablock_back_ref: bytes
    ecblock_header_hash: bytes
    ecblock_full_hash: bytes
    fblock_keymr: bytes
    fblock_ledger_keymr: bytes

    @classmethod
    def empty(cls) -> ChainTip:
        """The tip before the genesis block: height -1, all links zero."""
        z = ZERO_HASH
        return cls(-1, z, z, b"", 0, z, z, z, z, z)


def load_tip(conn: sqlite3.Connection) -> ChainTip:
    """Read the highest saved block set; ``ChainTip.empty()`` when nothing is saved."""
    row = conn.execute(
        "SELECT height, keymr, full_hash, timestamp_min, raw FROM dblocks ORDER BY height DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return ChainTip.empty()
    height = row[0]
    (back_ref,) = conn.execute("SELECT back_ref FROM ablocks WHERE height=?", (height,)).fetchone()
    ec_header, ec_full = conn.execute(
        "SELECT header_hash, full_hash FROM ecblocks WHERE height=?", (height,)
    ).fetchone()
    f_keymr, f_ledger = conn.execute(
        "SELECT keymr, ledger_keymr FROM fblocks WHERE height=?", (height,)
    ).fetchone()
    return ChainTip(
        height=height,
        dblock_keymr=bytes(row[1]),
        dblock_full_hash=bytes(row[2]),
        dblock_header=bytes(row[4])[:113],
        timestamp_min=row[3],
        ablock_back_ref=bytes(back_ref),
        ecblock_header_hash=bytes(ec_header),
        ecblock_full_hash=bytes(ec_full),
        fblock_keymr=bytes(f_keymr),
        fblock_ledger_keymr=bytes(f_ledger),
    )

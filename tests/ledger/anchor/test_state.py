"""The anchoring service's own store: which anchored blocks hold documents, and a file
written before that was recorded."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ledger.anchor.state import AnchoredBlock, AnchorState


def test_only_blocks_that_hold_documents_are_listed_for_timestamps(tmp_path: Path) -> None:
    state = AnchorState(tmp_path / "anchor.sqlite")
    blocks = [
        AnchoredBlock(h, bytes([h]) * 32, bytes(32), holds_documents=h in (1, 4)) for h in range(6)
    ]
    state.add(blocks, None)
    assert [b.height for b in state.blocks_with_documents(after=-1, limit=10)] == [1, 4]
    assert [b.height for b in state.blocks_with_documents(after=1, limit=10)] == [4]
    assert state.blocks_with_documents(after=4, limit=10) == []
    assert state.block(2) == blocks[2] and state.block(4) == blocks[4]
    state.close()


def test_a_store_from_before_the_column_keeps_its_blocks_as_holding_documents(
    tmp_path: Path,
) -> None:
    path = tmp_path / "anchor.sqlite"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE dblocks (height INTEGER PRIMARY KEY, keymr BLOB NOT NULL,"
        " anchor_txid BLOB NOT NULL, record_entry BLOB);"
        "INSERT INTO dblocks VALUES (0, zeroblob(32), zeroblob(32), NULL);"
    )
    old.commit()
    old.close()
    state = AnchorState(path)
    assert state.block(0) == AnchoredBlock(0, bytes(32), bytes(32), None, True)
    state.add([AnchoredBlock(1, bytes(32), bytes(32), holds_documents=False)], None)
    assert [b.height for b in state.blocks_with_documents(after=-1, limit=10)] == [0]
    state.close()

"""The independent timestamps of directory blocks (``block_timestamps``) as they arrive.

The anchoring service keeps the tokens and proofs themselves; the audit store keeps what a
report shows about them, per directory block (one KeyMR, every notarization of the block):
which TSAs stamped it and when, and the OpenTimestamps state (pending, or the Bitcoin
block it is attested in). ``awaiting`` lists the anchored blocks whose timestamps are not
final, for the ``collect`` sweep to ask again; ``record`` replaces a block's row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Table, delete, insert, select

from connectors.audit.models import AUDIT_METADATA
from connectors.audit.records import BlockTimestamps, TsaTimestamp, TsaWaiting
from connectors.audit.repository import Repository
from connectors.audit.sql import notarizations_table as _notarizations

__all__ = ["Timestamps"]

_table: Table = AUDIT_METADATA.tables["block_timestamps"]


class Timestamps(Repository):
    """The ``block_timestamps`` rows (module docstring)."""

    def awaiting(self, *, collection: str | None = None, limit: int = 200) -> list[tuple[int, str]]:
        """``(directory block height, KeyMR hex)`` of blocks holding anchored notarizations
        (of ``collection``, if given) whose timestamps are not final, lowest first."""
        n, t = _notarizations.c, _table.c
        final = select(t.dblock_height).where(t.final.is_(True))
        query = (
            select(n.dblock_height, n.dblock_keymr)
            .where(n.stage == "anchor", n.dblock_height.is_not(None))
            .where(n.dblock_height.not_in(final))
            .distinct()
        )
        if collection is not None:
            query = query.where(n.collection == collection)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(n.dblock_height).limit(limit))
            return [(int(r.dblock_height), str(r.dblock_keymr)) for r in rows]

    def record(self, stamps: Sequence[BlockTimestamps]) -> int:
        """Store ``stamps``, replacing the rows of their blocks; how many were stored."""
        if not stamps:
            return 0
        now = self._now()
        values = [
            {
                "dblock_height": s.dblock_height,
                "dblock_keymr": s.dblock_keymr,
                "rfc3161": [
                    {"tsa": t.tsa, "gentime": t.gen_time, "serial": t.serial, "subject": t.subject}
                    for t in s.rfc3161
                ],
                "ots_state": s.ots_state,
                "ots_bitcoin_heights": list(s.ots_bitcoin_heights),
                "final": s.final,
                "recorded_at": now,
                "tsa_waiting": [
                    {"tsa": w.tsa, "attempts": w.attempts, "lasterror": w.last_error}
                    for w in s.tsa_waiting
                ],
            }
            for s in stamps
        ]
        heights = [v["dblock_height"] for v in values]
        with self._engine.begin() as conn:
            conn.execute(delete(_table).where(_table.c.dblock_height.in_(heights)))
            conn.execute(insert(_table), values)
        return len(values)

    def of_blocks(self, heights: Iterable[int]) -> dict[int, BlockTimestamps]:
        """The stored rows of these directory blocks, by height."""
        wanted = sorted({int(h) for h in heights})
        if not wanted:
            return {}
        out: dict[int, BlockTimestamps] = {}
        with self._engine.connect() as conn:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                rows = conn.execute(select(_table).where(_table.c.dblock_height.in_(chunk)))
                for r in rows:
                    out[int(r.dblock_height)] = _record(r._mapping)
        return out


def _record(row: object) -> BlockTimestamps:
    m = dict(row)  # type: ignore[call-overload]
    tokens = tuple(
        TsaTimestamp(t["tsa"], t["gentime"], t["serial"], t["subject"]) for t in m["rfc3161"]
    )
    return BlockTimestamps(
        int(m["dblock_height"]),
        m["dblock_keymr"],
        tokens,
        m["ots_state"],
        tuple(int(h) for h in m["ots_bitcoin_heights"]),
        bool(m["final"]),
        m["recorded_at"],
        tuple(TsaWaiting(w["tsa"], int(w["attempts"]), w["lasterror"]) for w in m["tsa_waiting"]),
    )

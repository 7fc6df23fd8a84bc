"""The anchoring service's OpenTimestamps proofs: one row per directory block.

A table of its own in the service's SQLite file (``anchor.sqlite``, beside ``tsa_tokens``,
so a backup takes it with the rest), used from the service's event loop thread only::

    ots_stamps  height (PK) | keymr | nonce (the file's random nonce)
                | ots (the standard .ots file, as merged so far; NULL before any answer)
                | answered (JSON list of the calendar URLs whose answer is merged)
                | state | headers (the attested 80-byte Bitcoin headers, concatenated)
                | attempts | last_error | next_try (seconds since the epoch)

``state`` is ``submitting`` (fewer calendars answered than the minimum), ``pending``
(enough answered; waiting for a Bitcoin attestation and its headers) or ``complete``.
The row, with the file's random nonce, is written when the block is queued, before any
calendar is asked (so a retry after a restart submits the same tip), and every answer is merged into it as it arrives: a restart resumes
where the last round stopped and nothing is dropped after a failure, only retried.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ledger.anchor.ots_calendar import HEADER_BYTES
from ledger.anchor.state import open_store

__all__ = ["OtsRow", "OtsState", "OtsStore"]

OtsState = Literal["submitting", "pending", "complete"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS ots_stamps (
    height INTEGER PRIMARY KEY, keymr BLOB NOT NULL, nonce BLOB NOT NULL, ots BLOB,
    answered TEXT NOT NULL DEFAULT '[]', state TEXT NOT NULL DEFAULT 'submitting',
    headers BLOB NOT NULL DEFAULT x'', attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT, next_try REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS ots_stamps_due ON ots_stamps(state, next_try);
"""

_COLUMNS = "height, keymr, nonce, ots, answered, state, headers, attempts, last_error, next_try"


@dataclass(frozen=True)
class OtsRow:
    """The OpenTimestamps proof of directory block ``height`` (module docstring):
    ``nonce`` (the ``.ots``'s), ``ots`` (the .ots bytes, None before the first calendar
    answered), ``answered`` (calendar URLs merged), ``headers`` (80 bytes
    each), the failed or unfinished ``attempts`` in a row and when to try next."""

    height: int
    keymr: bytes
    nonce: bytes
    ots: bytes | None
    answered: tuple[str, ...]
    state: OtsState
    headers: tuple[bytes, ...]
    attempts: int
    last_error: str | None
    next_try: float


def _row(r: Sequence[object]) -> OtsRow:
    raw = bytes(r[6])  # type: ignore[call-overload]
    headers = tuple(raw[i : i + HEADER_BYTES] for i in range(0, len(raw), HEADER_BYTES))
    return OtsRow(
        int(r[0]),  # type: ignore[call-overload]
        bytes(r[1]),  # type: ignore[call-overload]
        bytes(r[2]),  # type: ignore[call-overload]
        None if r[3] is None else bytes(r[3]),  # type: ignore[call-overload]
        tuple(json.loads(str(r[4]))),
        str(r[5]),  # type: ignore[arg-type]
        headers,
        int(r[7]),  # type: ignore[call-overload]
        None if r[8] is None else str(r[8]),
        float(r[9]),  # type: ignore[arg-type]
    )


class OtsStore:
    """The ``ots_stamps`` table in the SQLite file ``path`` (see the module docstring)."""

    def __init__(self, path: Path, *, synchronous: str = "FULL") -> None:
        self._conn = open_store(path, SCHEMA, synchronous=synchronous)

    def close(self) -> None:
        self._conn.close()

    def last_height(self) -> int:
        """Highest directory block height queued, -1 when none."""
        row = self._conn.execute("SELECT MAX(height) FROM ots_stamps").fetchone()
        return -1 if row[0] is None else int(row[0])

    def queue(self, blocks: Sequence[tuple[int, bytes, bytes]]) -> None:
        """Queue ``(height, keymr, nonce)`` rows (a row already there is kept)."""
        self._conn.executemany(
            "INSERT OR IGNORE INTO ots_stamps(height, keymr, nonce) VALUES (?, ?, ?)", blocks
        )

    def due(self, now_s: float, limit: int) -> list[OtsRow]:
        """Unfinished rows whose next try is due at ``now_s``, oldest first."""
        rows = self._conn.execute(
            f"SELECT {_COLUMNS} FROM ots_stamps WHERE state != 'complete' AND next_try <= ?"
            " ORDER BY height LIMIT ?",
            (now_s, limit),
        ).fetchall()
        return [_row(r) for r in rows]

    def get(self, height: int) -> OtsRow | None:
        """The row of directory block ``height``, if queued."""
        found = self._conn.execute(
            f"SELECT {_COLUMNS} FROM ots_stamps WHERE height=?", (height,)
        ).fetchone()
        return None if found is None else _row(found)

    def save(self, row: OtsRow) -> None:
        """Write ``row``'s progress (everything but height and keymr)."""
        self._conn.execute(
            "UPDATE ots_stamps SET ots=?, answered=?, state=?, headers=?, attempts=?,"
            " last_error=?, next_try=? WHERE height=?",
            (
                row.ots,
                json.dumps(list(row.answered)),
                row.state,
                b"".join(row.headers),
                row.attempts,
                row.last_error,
                row.next_try,
                row.height,
            ),
        )

    def counts(self) -> dict[str, int]:
        """Rows by state (every state present, 0 when none)."""
        found = dict(self._conn.execute("SELECT state, COUNT(*) FROM ots_stamps GROUP BY state"))
        return {s: int(found.get(s, 0)) for s in ("submitting", "pending", "complete")}

    def stale(self, attempts: int, *, limit: int = 1000) -> list[OtsRow]:
        """Rows still ``submitting`` after ``attempts`` failed rounds or more."""
        rows = self._conn.execute(
            f"SELECT {_COLUMNS} FROM ots_stamps WHERE state='submitting' AND attempts>=?"
            " ORDER BY height LIMIT ?",
            (attempts, limit),
        ).fetchall()
        return [_row(r) for r in rows]

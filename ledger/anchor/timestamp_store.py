"""The anchoring service's RFC 3161 tokens: one row per (directory block, TSA).

A table of its own in the service's SQLite file (``anchor.sqlite``, so a backup takes it
with the rest), used from the service's event loop thread only::

    tsa_tokens  height | keymr | tsa (URL) | token (DER, NULL until verified and stored)
                | gen_time (ISO 8601) | serial (decimal text) | subject | attempts
                | last_error | next_try (seconds since the epoch)     PK (height, tsa)

A row is added for every configured TSA as soon as its directory block is anchored, and
stays until a token is stored: nothing is dropped after a failure, only retried later.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ledger.anchor.state import open_store

__all__ = ["StoredToken", "TimestampStore", "WaitingStamp"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS tsa_tokens (
    height INTEGER NOT NULL, keymr BLOB NOT NULL, tsa TEXT NOT NULL, token BLOB,
    gen_time TEXT, serial TEXT, subject TEXT, attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT, next_try REAL NOT NULL DEFAULT 0, PRIMARY KEY (height, tsa)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tsa_tokens_due ON tsa_tokens(token, next_try);
"""


@dataclass(frozen=True)
class WaitingStamp:
    """A root still without a token from ``tsa``: ``attempts`` so far, the last error."""

    height: int
    keymr: bytes
    tsa: str
    attempts: int
    last_error: str | None


@dataclass(frozen=True)
class StoredToken:
    """A verified token (DER) of directory block ``height`` from ``tsa`` (its URL)."""

    height: int
    keymr: bytes
    tsa: str
    token: bytes
    gen_time: str
    serial: str
    subject: str


class TimestampStore:
    """The ``tsa_tokens`` table in the SQLite file ``path`` (see the module docstring)."""

    def __init__(self, path: Path, *, synchronous: str = "FULL") -> None:
        self._conn = open_store(path, SCHEMA, synchronous=synchronous)

    def close(self) -> None:
        self._conn.close()

    def last_height(self) -> int:
        """Highest directory block height queued for stamping, -1 when none."""
        row = self._conn.execute("SELECT MAX(height) FROM tsa_tokens").fetchone()
        return -1 if row[0] is None else int(row[0])

    def queue(self, blocks: Sequence[tuple[int, bytes]], tsas: Sequence[str]) -> None:
        """Queue ``(height, keymr)`` for each TSA URL of ``tsas`` (kept if already queued)."""
        rows = [(h, k, t) for h, k in blocks for t in tsas]
        self._conn.executemany(
            "INSERT OR IGNORE INTO tsa_tokens(height, keymr, tsa) VALUES (?, ?, ?)", rows
        )

    def due(self, now_s: float, limit: int) -> list[WaitingStamp]:
        """Rows without a token whose next try is due at ``now_s``, oldest first."""
        rows = self._conn.execute(
            "SELECT height, keymr, tsa, attempts, last_error FROM tsa_tokens"
            " WHERE token IS NULL AND next_try <= ? ORDER BY height LIMIT ?",
            (now_s, limit),
        ).fetchall()
        return [WaitingStamp(int(r[0]), bytes(r[1]), r[2], int(r[3]), r[4]) for r in rows]

    def waiting(self, *, height: int | None = None, limit: int = 1000) -> list[WaitingStamp]:
        """Rows still without a token (due or not; of ``height`` only, if given), oldest
        first."""
        rows = self._conn.execute(
            "SELECT height, keymr, tsa, attempts, last_error FROM tsa_tokens"
            " WHERE token IS NULL AND (? IS NULL OR height = ?) ORDER BY height LIMIT ?",
            (height, height, limit),
        ).fetchall()
        return [WaitingStamp(int(r[0]), bytes(r[1]), r[2], int(r[3]), r[4]) for r in rows]

    def store_token(self, stamp: WaitingStamp, token: StoredToken) -> None:
        """Keep the verified ``token`` of ``stamp``'s row."""
        self._conn.execute(
            "UPDATE tsa_tokens SET token=?, gen_time=?, serial=?, subject=?, last_error=NULL"
            " WHERE height=? AND tsa=?",
            (token.token, token.gen_time, token.serial, token.subject, stamp.height, stamp.tsa),
        )

    def record_failure(self, stamp: WaitingStamp, error: str, *, next_try_s: float) -> None:
        """Count a failed attempt of ``stamp``'s row; try again from ``next_try_s``."""
        self._conn.execute(
            "UPDATE tsa_tokens SET attempts=attempts+1, last_error=?, next_try=?"
            " WHERE height=? AND tsa=?",
            (error, next_try_s, stamp.height, stamp.tsa),
        )

    def tokens(self, height: int) -> list[StoredToken]:
        """The stored tokens of directory block ``height``, by TSA URL."""
        rows = self._conn.execute(
            "SELECT height, keymr, tsa, token, gen_time, serial, subject FROM tsa_tokens"
            " WHERE height=? AND token IS NOT NULL ORDER BY tsa",
            (height,),
        ).fetchall()
        return [StoredToken(int(r[0]), bytes(r[1]), r[2], bytes(r[3]), *r[4:]) for r in rows]

    def count_tokens(self) -> int:
        """How many tokens are stored."""
        row = self._conn.execute("SELECT COUNT(*) FROM tsa_tokens WHERE token IS NOT NULL")
        return int(row.fetchone()[0])

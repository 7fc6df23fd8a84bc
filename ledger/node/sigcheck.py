"""Signature checks of commits and coin transactions off the event loop.

Ed25519 verification is the largest single cost of accepting a commit, and libsodium
releases the GIL while it runs, so a worker thread checks signatures while the event loop
keeps parsing and answering. ``preverify`` checks every commit of a JSON-RPC batch in one
call before the batch is dispatched (so the items still take effect in request order).
The checks themselves are the canonical ones of ``ledger.core`` (formats 0.6).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.errors import LedgerFormatError
from ledger.core.transaction import Transaction

Commit = CommitEntry | CommitChain

_COMMIT_METHODS: dict[str, type[CommitEntry] | type[CommitChain]] = {
    "commit-entry": CommitEntry,
    "commit-chain": CommitChain,
}


def commit_signature_ok(commit: Commit) -> bool:
    """True when the commit's signature verifies canonically."""
    try:
        commit.verify()
    except LedgerFormatError:
        return False
    return True


def transaction_signature_error(tx: Transaction) -> str | None:
    """None when every RCD and signature of ``tx`` checks out, else the reason."""
    try:
        tx.verify_signatures()
    except LedgerFormatError as exc:
        return str(exc)
    return None


class SignatureChecker:
    """Runs signature checks in a small thread pool and remembers batch pre-checks.

    Args:
        workers: threads of the pool (one is enough on two cores: the event loop has one).
    """

    def __init__(self, *, workers: int = 1) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="node-sig")
        self._preverified: dict[Commit, bool] = {}
        self._parsed: dict[str, Commit] = {}

    async def commit_ok(self, commit: Commit) -> bool:
        """Whether the commit's signature verifies (pre-checked result if there is one)."""
        known = self._preverified.pop(commit, None)
        if known is not None:
            return known
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, commit_signature_ok, commit)

    async def transaction_error(self, tx: Transaction) -> str | None:
        """None when the transaction's signatures verify, else the reason."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, transaction_signature_error, tx)

    async def preverify(self, requests: Iterable[Any]) -> list[tuple[str, Commit]]:
        """Check the signatures of every well-formed commit among batch ``requests`` at once.

        Returns ``(message hex, commit)`` of the commits checked; pass them to
        :meth:`forget` once the batch is done. Malformed items are skipped here: their
        handlers report the error. The parsed commits are kept for :meth:`parsed`.
        """
        found = [c for c in (_commit_of(r) for r in requests) if c is not None]
        if not found:
            return []
        loop = asyncio.get_running_loop()
        commits = [commit for _hex, commit in found]
        results = await loop.run_in_executor(self._pool, _check_all, commits)
        self._preverified.update(zip(commits, results, strict=True))
        self._parsed.update(found)
        return found

    def parsed(self, message: bytes) -> Commit | None:
        """The commit a batch pre-check already parsed from ``message`` (raw bytes), if any."""
        return self._parsed.get(message.hex()) if self._parsed else None

    def forget(self, checked: Iterable[tuple[str, Commit]]) -> None:
        """Drop pre-check results a batch did not use."""
        for message, commit in checked:
            self._preverified.pop(commit, None)
            self._parsed.pop(message, None)

    def close(self) -> None:
        """Stop the worker threads."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def _check_all(commits: list[Commit]) -> list[bool]:
    return [commit_signature_ok(c) for c in commits]


def _commit_of(request: Any) -> tuple[str, Commit] | None:
    if not isinstance(request, dict):
        return None
    cls = _COMMIT_METHODS.get(str(request.get("method")))
    params = request.get("params")
    if cls is None or not isinstance(params, dict):
        return None
    message = params.get("message")
    if not isinstance(message, str) or len(message) not in (272, 400):
        return None
    try:
        return message.lower(), cls.unmarshal(bytes.fromhex(message))
    except (ValueError, LedgerFormatError):
        return None

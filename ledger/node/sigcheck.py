"""Signature checks of commits and coin transactions off the event loop.

Ed25519 verification is the largest single cost of accepting a commit (about as much as
the rest of the node's work on the commit and its reveal together), and libsodium releases
the GIL while it runs, so one worker thread checks signatures while the event loop keeps
parsing and answering. Requests reach the thread through a plain queue and their results
come back with one loop wake-up per group of checks (the same hand-over as the store's
group commit): a ``ThreadPoolExecutor`` costs several times more event-loop CPU per
check (a ``concurrent.futures.Future`` with its condition variable, a wrapping future and a
wake-up per result). ``preverify`` checks every commit of a JSON-RPC batch in one job
before the batch is dispatched (so the items still take effect in request order). The
checks themselves are the canonical ones of ``ledger.core`` (docs/formats.md §0.6).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.errors import LedgerFormatError
from ledger.core.transaction import Transaction
from ledger.node.handoff import GroupWorker, settle

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


class _Check:
    """One queued check: ``fn(arg)`` whose result settles ``future`` on ``loop``."""

    __slots__ = ("fn", "arg", "loop", "future", "result", "error")

    def __init__(
        self,
        fn: Callable[[Any], Any],
        arg: Any,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
    ) -> None:
        self.fn, self.arg, self.loop, self.future = fn, arg, loop, future
        self.result: Any = None
        self.error: BaseException | None = None


class SignatureChecker:
    """Checks signatures in one worker thread and remembers batch pre-checks.

    One thread is enough on two cores: the event loop has the other.
    """

    def __init__(self) -> None:
        self._worker: GroupWorker[_Check] = GroupWorker(_run_checks, name="node-sig")
        # Keyed by the commit object's id (the very objects ``parsed`` hands out), the
        # object kept alongside so the id cannot be reused while listed: hashing a frozen
        # dataclass of five fields cost a Python call per look-up, twice per commit.
        self._preverified: dict[int, tuple[Commit, bool]] = {}
        self._parsed: dict[str, Commit] = {}

    async def _check(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        if self._worker.closed:
            raise RuntimeError("the signature checker is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._worker.put(_Check(fn, arg, loop, future))
        return await future

    async def commit_ok(self, commit: Commit) -> bool:
        """Whether the commit's signature verifies (pre-checked result if there is one)."""
        known = self._preverified.pop(id(commit), None)
        if known is not None and known[0] is commit:
            return known[1]
        return bool(await self._check(commit_signature_ok, commit))

    async def transaction_error(self, tx: Transaction) -> str | None:
        """None when the transaction's signatures verify, else the reason."""
        result: str | None = await self._check(transaction_signature_error, tx)
        return result

    async def preverify(self, requests: Iterable[Any]) -> list[tuple[str, Commit]]:
        """Check the signatures of every well-formed commit among batch ``requests`` at once.

        Returns ``(message hex, commit)`` of the commits checked; pass them to
        :meth:`forget` once the batch is done. Malformed items are skipped here: their
        handlers report the error. The parsed commits are kept for :meth:`parsed`.
        """
        found = [c for c in (_commit_of(r) for r in requests) if c is not None]
        if not found:
            return []
        commits = [commit for _hex, commit in found]
        results = await self._check(_check_all, commits)
        self._preverified.update((id(c), (c, ok)) for c, ok in zip(commits, results, strict=True))
        self._parsed.update(found)
        return found

    def parsed(self, message: bytes) -> Commit | None:
        """The commit a batch pre-check already parsed from ``message`` (raw bytes), if any."""
        return self._parsed.get(message.hex()) if self._parsed else None

    def forget(self, checked: Iterable[tuple[str, Commit]]) -> None:
        """Drop pre-check results a batch did not use."""
        for message, commit in checked:
            known = self._preverified.get(id(commit))
            if known is not None and known[0] is commit:
                del self._preverified[id(commit)]
            self._parsed.pop(message, None)

    def close(self) -> None:
        """Finish the queued checks, then stop the worker thread (idempotent)."""
        self._worker.close()


def _run_checks(group: list[_Check]) -> None:
    for item in group:
        try:
            item.result = item.fn(item.arg)
        except Exception as exc:  # reported to the awaiting caller
            item.error = exc
    settle(group)


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

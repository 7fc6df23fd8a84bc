"""Writes the publishing API gave up: their notarizations are failed, with the reason.

Plain functions (no Prefect). A write answered ``202`` that the API gives up (the ledger
refused it, or errors repeated too often) is at stage ``failed`` there, with a ``failure``
object on its read (docs/rest-api.md §3, §4); it will never be in a directory block, so
the ``ledger`` sweep would wait for it until it is overdue. ``sweep_failed_writes`` asks
the API, per chain with notarizations waiting for ``ledger``, for its failed entries (one
listing, operation 7 with ``stage=failed``), reads each one that the audit store is
waiting for (operation 11), and moves those notarizations to the terminal stage
``failed`` with the API's reason (``AuditStore.notarizations.mark_failed``), which ``notary report``
lists in ``problems.csv`` and the HTML. Writes still on their way are left alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from connectors.audit import AuditStore, NotarizationRow
from connectors.errors import ConnectorError, RequestRejected
from connectors.publishing import PublishingClient, WriteFailure, write_failure

__all__ = ["FailedWrites", "check_failed_writes", "failure_message", "sweep_failed_writes"]


@dataclass
class FailedWrites:
    """What one sweep did: notarizations moved to ``failed``, chains asked, messages."""

    marked: int = 0
    chains_checked: int = 0
    errors: list[str] = field(default_factory=list)


def failure_message(failure: WriteFailure) -> str:
    """The audit store's ``error`` text of a write the API gave up."""
    when = f", failed at {failure.failed_at}" if failure.failed_at else ""
    attempts = f"{failure.attempts} attempt{'s' if failure.attempts != 1 else ''}"
    return f"the publishing API gave the write up: {failure.reason} ({attempts}{when})"


def sweep_failed_writes(
    store: AuditStore,
    api: PublishingClient,
    *,
    collection: str | None = None,
    page_size: int = 1000,
) -> FailedWrites:
    """Mark failed every waiting notarization whose write the API gave up (module docstring).

    Args:
        collection: only this collection's rows (``None``: all).
        page_size: audit store rows per query.

    Raises:
        ConnectorError: the API could not be reached (nothing of that chain was marked).
    """
    outcome = FailedWrites()
    for chain_id, waiting in _waiting_by_chain(store, collection, page_size).items():
        outcome.chains_checked += 1
        try:
            given_up = [h for h in api.failed_entries(chain_id) if h in waiting]
        except RequestRejected as exc:  # an API without the stage filter: nothing to learn
            outcome.errors.append(f"failed writes of chain {chain_id} not listed: {exc}")
            continue
        errors: dict[int, str] = {}
        for entry_hash in given_up:
            entry = api.get_entry(chain_id, entry_hash)
            failure = None if entry is None else write_failure(entry)
            if failure is not None:  # every notarization the entry carries
                errors.update(dict.fromkeys(waiting[entry_hash], failure_message(failure)))
        if errors:
            store.notarizations.mark_failed(errors, retryable=False)
            outcome.marked += len(errors)
            outcome.errors.extend(list(errors.values())[: max(0, 20 - len(outcome.errors))])
    return outcome


def check_failed_writes(
    store: AuditStore, api: PublishingClient, *, collection: str | None = None
) -> FailedWrites:
    """``sweep_failed_writes`` for the collect sweep: an API that cannot be reached only
    postpones the check to the next sweep (the reason is in ``errors``)."""
    try:
        return sweep_failed_writes(store, api, collection=collection)
    except ConnectorError as exc:
        return FailedWrites(errors=[f"failed-write check skipped: {exc}"])


def _waiting_by_chain(
    store: AuditStore, collection: str | None, page_size: int
) -> dict[str, dict[str, list[int]]]:
    """Chain id -> {entry hash: notarization ids} of the rows waiting for ``ledger`` (one
    entry may carry several documents)."""
    by_chain: dict[str, dict[str, list[int]]] = {}
    for row in _waiting(store, collection, page_size):
        if row.entry_hash:
            by_chain.setdefault(row.chain_id, {}).setdefault(row.entry_hash, []).append(row.id)
    return by_chain


def _waiting(
    store: AuditStore, collection: str | None, page_size: int
) -> Iterator[NotarizationRow]:
    after_id = 0
    while True:
        rows = store.notarizations.pending(
            stage_from="published",
            stage_below="ledger",
            collection=collection,
            limit=page_size,
            after_id=after_id,
        )
        yield from rows
        if len(rows) < page_size:
            return
        after_id = rows[-1].id

"""Publishing notarizations through the publishing API (plain functions; no Prefect here).

Idempotency: every notarization's entry (a document's, or a batch's) is computed locally
(``tasks.documents.notarization_entry``), so its entry hash is known before the POST. Rows left at ``pending`` by an interrupted run are
first looked up by that hash and only posted if the API does not have them yet; the audit
store's unique (chain, SHA-256) constraint stops a document being queued twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from connectors.audit import AuditStore, CollectionRecord, NotarizationRow
from connectors.errors import ConnectorError
from connectors.publishing import NewEntry, PublishingClient
from ledger.core.entry import NEW_CHAIN_FEE_EC, Entry
from tasks.documents import EntryTooLarge, LedgerEntry, collection_entry, notarization_entry
from tasks.errors import TaskError


class ChainMismatch(TaskError, RuntimeError):
    """The API returned a chain ID other than the one computed from the external IDs."""


@dataclass
class PublishOutcome:
    """Counts of one publish batch, in documents (a batch entry counts its members);
    ``entries`` counts the entries accepted (published or already accepted),
    ``entries_written`` those of them this batch posted (not found already accepted), and
    ``entry_credits`` what those cost (``ledger.core.entry.entry_cost`` of each entry's
    payload: 1 EC per started KiB, docs/formats.md section 1.4); ``errors`` holds up to 20
    messages for the run record."""

    published: int = 0
    already_accepted: int = 0
    retryable_errors: int = 0
    failed: int = 0
    entries: int = 0
    entries_written: int = 0
    entry_credits: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, other: PublishOutcome) -> None:
        """Add ``other``'s counts to these (messages up to 20)."""
        self.entries += other.entries
        self.entries_written += other.entries_written
        self.entry_credits += other.entry_credits
        self.published += other.published
        self.already_accepted += other.already_accepted
        self.retryable_errors += other.retryable_errors
        self.failed += other.failed
        self.errors.extend(other.errors[: max(0, 20 - len(self.errors))])


def ensure_collection_chain(
    client: PublishingClient,
    collection: CollectionRecord,
    *,
    on_created: Callable[[int], None] | None = None,
) -> str:
    """Create the chain of ``collection`` unless it exists; return its hex chain ID.

    ``on_created`` is called with the entry credits the new chain cost (its first entry's
    ``entry_cost`` plus ``NEW_CHAIN_FEE_EC``, docs/formats.md section 1.4) when this call
    created it.

    Raises:
        ChainMismatch: the API computed a different chain ID (an incompatible service).
        ConnectorError: the API could not be reached or refused the request.
    """
    chain = collection_entry(collection)
    if chain.chain_id != collection.chain_id:
        raise ChainMismatch(f"collection chain {collection.chain_id}, entry names {chain.chain_id}")
    if client.get_chain(chain.chain_id) is not None:
        return chain.chain_id
    got = client.create_chain(list(chain.external_ids), chain.content)
    if got != chain.chain_id:
        raise ChainMismatch(f"API created chain {got}, expected {chain.chain_id}")
    if on_created is not None:
        on_created(_credits(chain) + NEW_CHAIN_FEE_EC)
    return chain.chain_id


def _credits(entry: LedgerEntry) -> int:
    """Entry credits to commit ``entry`` (``Entry.cost``: 1 EC per started KiB of payload)."""
    return Entry(bytes.fromhex(entry.chain_id), entry.external_ids, entry.content).cost()


def publish_rows(
    store: AuditStore,
    client: PublishingClient,
    rows: Sequence[NotarizationRow],
    *,
    recheck_ids: frozenset[int] = frozenset(),
    concurrency: int = 8,
) -> PublishOutcome:
    """Post the entries of ``rows`` (all in ``pending``) and record the outcome.

    Args:
        store: the audit store.
        client: publishing API client.
        rows: notarizations to publish.
        recheck_ids: ids of rows an earlier run may already have posted: looked up first.
        concurrency: simultaneous POSTs.

    Returns:
        the batch's counts. Entries answered 202 move to ``published`` then ``multi_az``
        (the API answers 202 only once the write is durable in its database).
    """
    outcome = PublishOutcome()
    entries: dict[int, LedgerEntry] = {}
    fatal: dict[int, str] = {}
    keys: dict[str, bytes | None] = {}
    for row in rows:
        if row.kind == "commitment" and row.collection not in keys:
            keys[row.collection] = store.collections.key(row.collection)
        try:
            entries[row.id] = notarization_entry(row, collection_key=keys.get(row.collection))
        except (EntryTooLarge, ValueError) as exc:
            fatal[row.id] = str(exc)
    accepted = _already_accepted(client, entries, recheck_ids)
    retry: dict[int, str] = {}
    todo = [rid for rid in entries if rid not in accepted]
    by_chain: dict[str, list[int]] = {}
    for rid in todo:
        by_chain.setdefault(entries[rid].chain_id, []).append(rid)
    for chain_id, ids in by_chain.items():
        posts = [NewEntry(entries[i].external_ids, entries[i].content) for i in ids]
        results = client.create_entries(chain_id, posts, concurrency=concurrency)
        for rid, result in zip(ids, results, strict=True):
            _classify(rid, result, entries[rid], accepted=accepted, retry=retry, fatal=fatal)
    _record(store, accepted, retry=retry, fatal=fatal)
    members = store.batches.member_counts([r.id for r in rows if r.kind == "batch"])

    def documents(ids: Iterable[int]) -> int:
        return sum(members.get(i, 1) for i in ids)

    outcome.entries = len(accepted)
    written = [rid for rid in todo if rid in accepted]
    outcome.entries_written = len(written)
    outcome.entry_credits = sum(_credits(entries[rid]) for rid in written)
    outcome.already_accepted = documents(set(accepted) - set(todo))
    outcome.published = documents(accepted) - outcome.already_accepted
    outcome.retryable_errors, outcome.failed = documents(retry), documents(fatal)
    outcome.errors = list({*retry.values(), *fatal.values()})[:20]
    return outcome


def _already_accepted(
    client: PublishingClient, entries: dict[int, LedgerEntry], recheck_ids: frozenset[int]
) -> dict[int, str]:
    found: dict[int, str] = {}
    for rid in recheck_ids & entries.keys():
        entry = entries[rid]
        try:
            if client.get_entry(entry.chain_id, entry.entry_hash) is not None:
                found[rid] = entry.entry_hash
        except ConnectorError:
            continue  # post it again below; a duplicate reveal only costs credits
    return found


def _classify(
    rid: int,
    result: object,
    entry: LedgerEntry,
    *,
    accepted: dict[int, str],
    retry: dict[int, str],
    fatal: dict[int, str],
) -> None:
    error = getattr(result, "error", None)
    got = getattr(result, "entry_hash", None)
    if error is None and got == entry.entry_hash:
        accepted[rid] = entry.entry_hash
    elif error is None:
        fatal[rid] = f"API returned entry hash {got}, expected {entry.entry_hash}"
    elif getattr(error, "retryable", False):
        retry[rid] = str(error)
    else:
        fatal[rid] = str(error)


def _record(
    store: AuditStore, accepted: dict[int, str], *, retry: dict[int, str], fatal: dict[int, str]
) -> None:
    if accepted:
        store.notarizations.mark_published(accepted, then="multi_az")
    if retry:
        store.notarizations.mark_failed(retry, retryable=True)
    if fatal:
        store.notarizations.mark_failed(fatal, retryable=False)

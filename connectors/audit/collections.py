"""The audit store's collections: each one's secret key, public identifier, mode and chain.

``AuditStore.collections`` (``connectors.audit.store``). A collection is registered the
first time a run uses it (``Collections.use``). Its key (32
random bytes) is the secret that every document's commitment nonce is derived from
(``ledger.core.commitment``); it stays in the audit store, never in a log or on the ledger.
A private collection (modes ``aggregate`` and ``entry``) is published in the chain whose
first entry names it by its identifier only (``ledger.core.notary_entry``); a ``clear``
one in the version-1 chain named by the collection's name (``tasks.documents``). The chain
is fixed at registration, so ``aggregate`` and ``entry`` may follow each other from run to
run (same chain), while a switch between ``clear`` and a private mode is refused
(``CollectionModeError``): it would start another chain and leave the old entries behind.

A collection that already has version-1 notarizations (an audit store from before
collections existed) is registered as ``clear`` with its existing chain; a run that does not
choose a mode (``mode_is_default``) goes on in whatever mode the collection has.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any, cast

from sqlalchemy import select, update

from connectors.audit.records import PUBLISH_MODES, CollectionRecord, PublishMode
from connectors.audit.repository import Repository
from connectors.audit.sql import aware_utc, collections_table, notarizations_table
from connectors.errors import ConnectorPackageError
from ledger.core.commitment import COLLECTION_KEY_BYTES, collection_identifier

__all__ = ["ChainNamer", "CollectionModeError", "Collections"]

#: ``(name, identifier, mode) -> hex chain id`` of a new collection (``tasks.documents``
#: knows the entry formats; the store only keeps the result).
ChainNamer = Callable[[str, bytes, PublishMode], str]


class CollectionModeError(ConnectorPackageError, ValueError):
    """A run asked for a publish mode its collection cannot switch to.

    Attributes:
        collection: the collection's name.
        registered: the mode it was registered with.
        requested: the mode asked for.
    """

    def __init__(self, collection: str, *, registered: str, requested: str) -> None:
        super().__init__(
            f"collection {collection!r} publishes in mode {registered!r}; it cannot switch to "
            f"{requested!r} (clear and private modes use different chains): run it with "
            f"--mode {registered} (NOTARY_PUBLISH_MODE={registered}) or use another "
            "collection name"
        )
        self.collection = collection
        self.registered = registered
        self.requested = requested


class Collections(Repository):
    """Collections: registered on first use, read back with their secret key."""

    def use(
        self,
        name: str,
        mode: PublishMode,
        *,
        chain_namer: ChainNamer,
        mode_is_default: bool = False,
    ) -> CollectionRecord:
        """The collection ``name``, registered with ``mode`` if it is new.

        Concurrent first uses are safe: one insert wins and every caller gets that row. A
        new name whose version-1 chain (``chain_namer(name, ..., "clear")``) already has
        notarizations is registered as ``clear`` with that chain. Between ``aggregate`` and
        ``entry`` the stored mode follows the request.

        Args:
            name: the collection's name.
            mode: the publish mode the run asks for.
            chain_namer: hex chain id of a new collection from its name, identifier, mode.
            mode_is_default: ``mode`` is only the default (nobody chose it): a registered
                collection then keeps its own mode, so an audit store of version-1
                collections goes on in ``clear`` with no option given.

        Raises:
            CollectionModeError: ``mode`` was chosen and it and the registered mode are not
                both private or both ``clear``.
            ValueError: an unknown mode.
        """
        if mode not in PUBLISH_MODES:
            raise ValueError(f"unknown publish mode {mode!r}; one of {PUBLISH_MODES}")
        record = self.find(name)
        if record is None:
            record = self._register(name, mode, chain_namer)
        if mode_is_default:
            return record
        if record.private != (mode != "clear"):
            raise CollectionModeError(name, registered=record.mode, requested=mode)
        if record.mode != mode:
            with self._engine.begin() as conn:
                c = collections_table.c
                conn.execute(update(collections_table).where(c.name == name).values(mode=mode))
            record = self.find(name) or record
        return record

    def find(self, name: str) -> CollectionRecord | None:
        """The registered collection ``name`` (with its key), or ``None``."""
        with self._engine.connect() as conn:
            row = conn.execute(
                select(collections_table).where(collections_table.c.name == name)
            ).first()
        return None if row is None else _record(row._mapping)

    def key(self, name: str) -> bytes | None:
        """The 32-byte secret key of collection ``name``; ``None`` if it is not registered."""
        record = self.find(name)
        return None if record is None else record.key

    def _register(self, name: str, mode: PublishMode, chain_namer: ChainNamer) -> CollectionRecord:
        key = secrets.token_bytes(COLLECTION_KEY_BYTES)
        identifier = collection_identifier(key)
        legacy = chain_namer(name, identifier, "clear")
        if mode != "clear" and self._has_notarizations(legacy):
            mode = "clear"
        chain_id = legacy if mode == "clear" else chain_namer(name, identifier, mode)
        values: dict[str, object] = {"name": name, "identifier": identifier.hex()}
        values["key"] = key.hex()
        values |= {"mode": mode, "chain_id": chain_id, "created_at": self._now()}
        with self._engine.begin() as conn:
            conn.execute(self._dialect.statements.add_collection, [values])
        found = self.find(name)
        if found is None:  # pragma: no cover - the row was just inserted or already there
            raise RuntimeError(f"collection {name!r} vanished after its registration")
        return found

    def _has_notarizations(self, chain_id: str) -> bool:
        n = notarizations_table.c
        with self._engine.connect() as conn:
            return (
                conn.execute(select(n.id).where(n.chain_id == chain_id).limit(1)).first()
                is not None
            )


def _record(mapping: Mapping[Any, Any]) -> CollectionRecord:
    return CollectionRecord(
        name=mapping["name"],
        identifier=bytes.fromhex(mapping["identifier"]),
        key=bytes.fromhex(mapping["key"]),
        mode=cast(PublishMode, mapping["mode"]),
        chain_id=mapping["chain_id"],
        created_at=aware_utc(mapping["created_at"]),
    )

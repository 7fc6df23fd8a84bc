"""The frozen value records the SQL audit store takes and returns, and the names of its
stages, run statuses, publish modes and notarization kinds.

Defined here once and exported by ``connectors.audit`` (the tables they are read from are
in ``connectors.audit.models``). Conventions as there: hashes and key Merkle roots are
lowercase hex strings (64 chars); times are timezone-aware UTC ``datetime`` values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "ALL_STAGES",
    "PUBLISH_MODES",
    "STAGE_ORDER",
    "AnchorRecord",
    "BatchRecord",
    "BlockTimestamps",
    "CollectionRecord",
    "DocumentIn",
    "NewMember",
    "NewNotarization",
    "NotarizationKind",
    "NotarizationRow",
    "ProofRecord",
    "PublishMode",
    "ReceiptRecord",
    "RunStatus",
    "Stage",
    "StageEventRecord",
    "TsaTimestamp",
    "TsaWaiting",
]

Stage = Literal["pending", "published", "multi_az", "ledger", "anchor", "failed"]

# Stages in the order a notarization moves through them; "failed" stands outside.
STAGE_ORDER: tuple[Stage, ...] = ("pending", "published", "multi_az", "ledger", "anchor")
ALL_STAGES: tuple[Stage, ...] = (*STAGE_ORDER, "failed")

RunStatus = Literal["running", "completed", "failed", "crashed"]

#: How a collection publishes (``docs/formats.md``): ``aggregate`` one entry per batch of
#: documents (their commitments in a Merkle tree), ``entry`` one commitment entry per
#: document, ``clear`` one version-1 entry per document with its path, size and SHA-256.
PublishMode = Literal["aggregate", "entry", "clear"]
PUBLISH_MODES: tuple[PublishMode, ...] = ("aggregate", "entry", "clear")

#: What a notarization row publishes: a version-1 document entry, a version-2 commitment
#: entry (one document), or a version-2 batch entry (the root of an aggregation tree).
NotarizationKind = Literal["document", "commitment", "batch"]


@dataclass(frozen=True)
class DocumentIn:
    """A document seen by a source: relative path (or row key), hex SHA-256, size in bytes."""

    path: str
    sha256: str
    size_bytes: int


@dataclass(frozen=True)
class NewNotarization:
    """A document hash to notarize in ``chain_id`` (hex) for ``collection``, as one entry of
    ``kind`` ``"document"`` (version 1, clear) or ``"commitment"`` (version 2)."""

    document_id: int
    collection: str
    chain_id: str
    sha256: str
    kind: NotarizationKind = "document"


@dataclass(frozen=True)
class NewMember:
    """A document of a batch: its id, hex SHA-256 and leaf index (its audit path is the
    store's to derive, ``connectors.audit.paths``)."""

    document_id: int
    sha256: str
    leaf_index: int


@dataclass(frozen=True)
class CollectionRecord:
    """A collection as the audit store keeps it (``key`` is secret: left out of ``repr``).

    Attributes:
        name: the collection's name (never published for a private mode).
        identifier: its 16-byte public identifier (names a private collection's chain).
        key: its 32-byte secret key.
        mode: how it publishes.
        chain_id: hex chain id of its chain.
        created_at: when it was registered.
    """

    name: str
    identifier: bytes
    key: bytes = field(repr=False)
    mode: PublishMode
    chain_id: str
    created_at: datetime

    @property
    def private(self) -> bool:
        """True unless the collection publishes clear-text version-1 entries."""
        return self.mode != "clear"


@dataclass(frozen=True)
class BatchRecord:
    """A batch notarization: its tree root and size, entry and stage.

    Attributes:
        id: the batch's notarization id.
        collection, chain_id: where it is published.
        root: hex root of its aggregation tree (the row's ``sha256``).
        size: leaves of the tree.
        members: documents recorded as its members (fewer than ``size`` when another
            worker aggregated some of its documents first).
        entry_hash, stage, dblock_height: as for any notarization.
    """

    id: int
    collection: str
    chain_id: str
    root: str
    size: int
    members: int
    entry_hash: str | None
    stage: Stage
    dblock_height: int | None


@dataclass(frozen=True)
class NotarizationRow:
    """A notarization joined with its document (``source``, ``path``, ``size_bytes``).

    For a batch row read to publish or sweep it, the document is the batch's pseudo
    document (``path`` and ``sha256`` are the root). A batch's member documents are read as
    rows of their own (``is_member``) by ``Proofs.records`` and ``Batches.members``.
    """

    id: int
    document_id: int
    collection: str
    chain_id: str
    sha256: str
    entry_hash: str | None
    stage: Stage
    attempts: int
    created_at: datetime
    updated_at: datetime
    published_at: datetime | None
    multi_az_at: datetime | None
    ledger_at: datetime | None
    anchored_at: datetime | None
    dblock_height: int | None
    dblock_keymr: str | None
    error: str | None
    source: str
    path: str
    size_bytes: int
    kind: NotarizationKind = "document"
    batch_size: int | None = None
    batch_root: str | None = None
    leaf_index: int | None = None
    audit_path: tuple[str, ...] = ()

    @property
    def is_member(self) -> bool:
        """True for a document of a batch: the row is its batch's notarization (id, stage,
        entry, times), with the document's ``document_id``, ``sha256``, ``path`` and
        ``size_bytes``, and ``batch_root``, ``leaf_index`` and ``audit_path`` set."""
        return self.leaf_index is not None


@dataclass(frozen=True)
class ReceiptRecord:
    """A receipt that the caller has verified (docs/formats.md §6), ready to store.

    Attributes:
        entry_hash: hex of the entry the receipt proves.
        merkle_branch: ``[{"left": hex, "right": hex, "top": hex}, ...]``.
        entry_block_keymr, directory_block_keymr: hex.
        directory_block_height: height of the directory block.
        raw: the node's receipt object as received.
        verified_at: when the caller verified it.
    """

    entry_hash: str
    merkle_branch: list[dict[str, str]]
    entry_block_keymr: str
    directory_block_keymr: str
    directory_block_height: int
    raw: dict[str, Any]
    verified_at: datetime

    @classmethod
    def from_node(cls, receipt: Mapping[str, Any], *, verified_at: datetime) -> ReceiptRecord:
        """Build from the node's ``receipt`` object (``NodeClient.receipts`` values).

        A missing ``directoryblockheight`` means 0 (factomd omits zero values).

        Raises:
            ValueError: a required field is missing or has the wrong type.
        """
        try:
            return cls(
                entry_hash=str(receipt["entry"]["entryhash"]),
                merkle_branch=[dict(node) for node in receipt["merklebranch"]],
                entry_block_keymr=str(receipt["entryblockkeymr"]),
                directory_block_keymr=str(receipt["directoryblockkeymr"]),
                directory_block_height=int(receipt.get("directoryblockheight", 0)),
                raw=dict(receipt),
                verified_at=verified_at,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a receipt object: {exc!r}") from exc


@dataclass(frozen=True)
class AnchorRecord:
    """An anchor of one directory block that the caller has verified, ready to store.

    Attributes:
        dblock_height: height of the anchored directory block.
        dblock_keymr: hex KeyMR of that directory block.
        anchor_block_hash: hex hash of the anchoring chain's block (``anchor_pow.blockhash``).
        transaction_id: hex id of the anchoring transaction (``anchor_pow.transactionhash``).
        confirmations: blocks of the anchoring chain on top of (and including) that block;
            0 when unknown.
        raw: the node's ``anchors`` result as received.
        verified_at: when the caller verified it.
    """

    dblock_height: int
    dblock_keymr: str
    anchor_block_hash: str
    transaction_id: str
    confirmations: int
    raw: dict[str, Any]
    verified_at: datetime

    @classmethod
    def from_node(
        cls,
        anchors: Mapping[str, Any],
        *,
        verified_at: datetime,
        confirmations: int | None = None,
    ) -> AnchorRecord:
        """Build from the node's ``anchors`` result (docs/formats.md §7.1).

        Reads ``directoryblockheight``, ``directoryblockkeymr`` and
        ``anchor_pow{transactionhash, blockhash}``; ``confirmations`` defaults to
        ``anchor_pow.confirmations`` when the node gives it, else 0.

        Raises:
            ValueError: a required field is missing, ``anchor_pow`` is absent/false, or a
                value has the wrong type.
        """
        try:
            pow_anchor = anchors["anchor_pow"]
            if not isinstance(pow_anchor, Mapping):
                raise TypeError(f"anchor_pow is {pow_anchor!r}")
            if confirmations is None:
                confirmations = int(pow_anchor.get("confirmations", 0))
            return cls(
                dblock_height=int(anchors.get("directoryblockheight", 0)),
                dblock_keymr=str(anchors["directoryblockkeymr"]),
                anchor_block_hash=str(pow_anchor["blockhash"]),
                transaction_id=str(pow_anchor["transactionhash"]),
                confirmations=int(confirmations),
                raw=dict(anchors),
                verified_at=verified_at,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not an anchors result with anchor_pow: {exc!r}") from exc


@dataclass(frozen=True)
class ProofRecord:
    """A notarization and its stored receipt (``None`` until one is saved)."""

    notarization: NotarizationRow
    receipt: ReceiptRecord | None


@dataclass(frozen=True)
class StageEventRecord:
    """One ``stage_events`` row: a stage name, ``"error"`` for retryable errors."""

    stage: str
    at: datetime
    details: dict[str, Any] | None


@dataclass(frozen=True)
class TsaTimestamp:
    """An RFC 3161 token the anchoring service verified and stored: the ``tsa`` (its URL),
    its ``gen_time`` (ISO 8601), ``serial`` (decimal) and the signer's ``subject``."""

    tsa: str
    gen_time: str
    serial: str
    subject: str


@dataclass(frozen=True)
class TsaWaiting:
    """A TSA the anchoring service still waits on for a block's token: its ``tsa`` (URL,
    credentials removed), the failed ``attempts`` so far and the ``last_error`` (None
    before the first answer)."""

    tsa: str
    attempts: int
    last_error: str | None


@dataclass(frozen=True)
class BlockTimestamps:
    """The independent timestamps of directory block ``dblock_height`` as they arrive.

    Attributes:
        dblock_height: the directory block.
        dblock_keymr: hex KeyMR the timestamps are over (None: the anchoring service has
            none queued for the block).
        rfc3161: the tokens stored so far.
        ots_state: ``submitting``, ``pending`` or ``complete`` (None: no OpenTimestamps
            proof).
        ots_bitcoin_heights: the Bitcoin blocks the OpenTimestamps proof is attested in.
        final: no TSA and no calendar is waited for any more.
        recorded_at: when the store last recorded it (None before).
        tsa_waiting: the TSAs still without a token, with their last error (a TSA that
            refuses, answers a token that fails its checks, or does not answer).
    """

    dblock_height: int
    dblock_keymr: str | None
    rfc3161: tuple[TsaTimestamp, ...] = ()
    ots_state: str | None = None
    ots_bitcoin_heights: tuple[int, ...] = ()
    final: bool = False
    recorded_at: datetime | None = None
    tsa_waiting: tuple[TsaWaiting, ...] = ()

    @classmethod
    def from_answer(cls, answer: Mapping[str, Any]) -> BlockTimestamps:
        """Build from the anchoring service's ``anchor-timestamps`` result
        (docs/jsonrpc.md; ``otsstatus`` and ``final`` absent from a service from before
        OpenTimestamps: then final when no TSA is waited for).

        Raises:
            ValueError: a required field is missing or has the wrong type.
        """
        try:
            tokens = tuple(
                TsaTimestamp(str(t["tsa"]), str(t["gentime"]), str(t["serial"]), str(t["subject"]))
                for t in answer.get("rfc3161") or []
            )
            ots = answer.get("otsstatus")
            state = None if not ots else str(ots["state"])
            heights = () if not ots else tuple(int(h) for h in ots.get("bitcoinheights") or [])
            final = answer.get("final")
            if final is None:  # a service from before ``final``: nothing is waited for
                final = not answer.get("waiting") and state in (None, "complete")
            keymr = answer.get("keymr")
            waiting = tuple(
                TsaWaiting(
                    str(w["tsa"]),
                    int(w["attempts"]),
                    None if w.get("lasterror") is None else str(w["lasterror"]),
                )
                for w in answer.get("waiting") or []
            )
            return cls(
                int(answer["directoryblockheight"]),
                None if keymr is None else str(keymr).lower(),
                tokens,
                state,
                heights,
                bool(final),
                tsa_waiting=waiting,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not an anchor-timestamps result: {exc!r}") from exc

    def rfc3161_text(self) -> str:
        """The tokens as a report shows them: ``subject at genTime``, then each TSA still
        waited for as ``waiting for URL (attempts, last error)``, joined by ``; ``."""
        tokens = [f"{t.subject} at {t.gen_time}" for t in self.rfc3161]
        waiting = [
            f"waiting for {w.tsa} ({w.attempts} attempts"
            + (f", last: {w.last_error})" if w.last_error else ")")
            for w in self.tsa_waiting
        ]
        return "; ".join(tokens + waiting)

    def ots_text(self) -> str:
        """The OpenTimestamps state as a report shows it: ``Bitcoin block N`` (the lowest
        attested), ``pending``, ``submitting`` or empty when none."""
        if self.ots_bitcoin_heights:
            return f"Bitcoin block {min(self.ots_bitcoin_heights)}"
        return self.ots_state or ""

"""The SQL audit store: the pipeline's record of truth (documents, notarizations, receipts).

``AuditStore`` (``connectors.audit.store``) composes one repository per aggregate; this
package is what flows and tasks import, and the one place each public name is exported:
the store, the value records and stage names it takes and returns
(``connectors.audit.records``), its errors, and the few helpers the pipeline shares with
it (batch sources, proof order, rebuilt audit paths, the unanchored backlog).
"""

from connectors.audit.backlog import UNANCHORED_STAGES, Unanchored, read_unanchored
from connectors.audit.batches import BATCH_SOURCE_PREFIX, batch_source
from connectors.audit.collections import ChainNamer, CollectionModeError
from connectors.audit.engine import WAL_AUTOCHECKPOINT_PAGES
from connectors.audit.paths import AuditPathError, batch_tree, commitment_of
from connectors.audit.proofs import PROOF_PAGE_ROWS, proof_order
from connectors.audit.records import (
    ALL_STAGES,
    PUBLISH_MODES,
    STAGE_ORDER,
    AnchorRecord,
    BatchRecord,
    BlockTimestamps,
    CollectionRecord,
    DocumentIn,
    NewMember,
    NewNotarization,
    NotarizationKind,
    NotarizationRow,
    ProofRecord,
    PublishMode,
    ReceiptRecord,
    RunStatus,
    Stage,
    StageEventRecord,
    TsaTimestamp,
    TsaWaiting,
)
from connectors.audit.store import AuditStore
from connectors.migrations import MigrationError

__all__ = [
    "ALL_STAGES",
    "BATCH_SOURCE_PREFIX",
    "PROOF_PAGE_ROWS",
    "PUBLISH_MODES",
    "STAGE_ORDER",
    "UNANCHORED_STAGES",
    "WAL_AUTOCHECKPOINT_PAGES",
    "AnchorRecord",
    "AuditPathError",
    "AuditStore",
    "BatchRecord",
    "BlockTimestamps",
    "ChainNamer",
    "CollectionModeError",
    "CollectionRecord",
    "DocumentIn",
    "MigrationError",
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
    "Unanchored",
    "batch_source",
    "batch_tree",
    "commitment_of",
    "proof_order",
    "read_unanchored",
]

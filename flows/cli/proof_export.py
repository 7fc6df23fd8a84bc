"""``notary proof export``: one proof bundle (JSON) per anchored document of the audit store.

For each notarization at the ``anchor`` stage the exporter takes the stored (verified)
receipt, fetches the directory block bytes from the node and the anchor proof from the
anchoring service, builds the bundle, verifies it completely, and writes
``<out>/<collection slug>/<relative path>.proof.json``. Files are written atomically
(temporary name, then rename). Anyone can later run ``notary verify FILE --proof BUNDLE``
with no service running.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from connectors.audit_store import NotarizationRow
from flows.pipeline import Services
from ledger.core.errors import LedgerFormatError
from tasks.proofs import bundle_for

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class ExportOutcome:
    """Bundles written, documents not anchored yet, bundles that failed verification."""

    written: list[Path] = field(default_factory=list)
    not_anchored: int = 0
    failed: list[str] = field(default_factory=list)


def slug(text: str) -> str:
    """A file-name-safe form of a collection name."""
    return _UNSAFE.sub("_", text).strip("_")[:100] or "collection"


def bundle_path(out_dir: Path, row: NotarizationRow) -> Path:
    """Where the bundle of ``row`` goes; never outside ``out_dir`` (no ``..`` or absolute parts)."""
    parts = [p for p in row.path.split("/") if p not in ("", ".", "..")]
    safe = [_UNSAFE.sub("_", p) for p in parts] or [row.sha256]
    path = out_dir / slug(row.collection) / Path(*safe)
    return path.with_name(path.name + ".proof.json")


def export_bundles(
    services: Services, out_dir: Path, *, collection: str | None = None
) -> ExportOutcome:
    """Write the verified bundle of every anchored notarization (of ``collection``)."""
    outcome = ExportOutcome()
    dblocks: dict[int, bytes] = {}
    proofs: dict[int, dict[str, object] | None] = {}
    for record in services.store.proofs(collection=collection):
        row = record.notarization
        if row.stage != "anchor" or record.receipt is None or row.dblock_height is None:
            outcome.not_anchored += row.stage != "failed"
            continue
        height = row.dblock_height
        if height not in dblocks:
            dblocks[height] = bytes.fromhex(services.node.dblock_by_height(height)["rawdata"])
            proofs[height] = services.anchor.anchor_proof(height)
        anchor_proof = proofs[height]
        if anchor_proof is None:
            outcome.not_anchored += 1
            continue
        try:
            bundle = bundle_for(
                row,
                receipt=record.receipt.raw,
                dblock_raw=dblocks[height],
                anchor_proof=anchor_proof,
            )
        except (LedgerFormatError, ValueError) as exc:
            outcome.failed.append(f"{row.path}: {exc}")
            continue
        outcome.written.append(_write(bundle_path(out_dir, row), bundle.dumps()))
    return outcome


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path

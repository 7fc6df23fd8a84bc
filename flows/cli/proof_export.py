"""``notary proof export``: one proof bundle (JSON) per anchored document of the audit store.

For each notarized document at the ``anchor`` stage (a batch's members each get their own
bundle: version 2 with the document's nonce and audit path; ``tasks.proofs.bundle_for``) the
exporter takes the stored (verified) receipt (a batch's, stored once), fetches the directory block bytes from the node and the anchor proof from the
anchoring service, builds the bundle, verifies it completely, and writes
``<out>/<collection slug>/<relative path>.proof.json`` (``tasks.proofs.bundle_relpath``).
With ``html``, it also writes the verification page (``ledger.core.verify_page``) as
``<out>/verify.html``; with ``pages``, a page per document with its bundle built in, beside
the bundle as ``<relative path>.verify.html``. Files are written atomically (temporary
name, then rename). Anyone can later run ``notary verify FILE --proof BUNDLE``, or open the
page, with no service running.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from connectors.audit import NotarizationRow
from flows.pipeline import Services
from ledger.core.errors import LedgerFormatError
from ledger.core.proof.bundle import ProofBundle
from ledger.core.timestamps.bundle_part import Rfc3161Token, TimestampsPart, tokens_from_answer
from ledger.core.timestamps.rfc3161 import response_from_token
from ledger.core.verify_page import render_verify_page
from tasks.proofs import PAGE_NAME, bundle_for, bundle_relpath, page_relpath

__all__ = ["ExportOutcome", "bundle_path", "export_bundles"]


@dataclass
class ExportOutcome:
    """What an export wrote and what it could not.

    Attributes:
        written: the bundles written.
        sources: bundle path -> the document's path in its collection (as notarized).
        page: the verification page written (``<out>/verify.html``), when asked for.
        pages: the per-document pages written (bundle built in), when asked for.
        not_anchored: documents not anchored yet.
        failed: ``"<path>: <reason>"`` of the bundles that did not verify.
        tokens: the RFC 3161 responses written beside the bundles (``<bundle>.tsr``).
    """

    written: list[Path] = field(default_factory=list)
    sources: dict[Path, str] = field(default_factory=dict)
    page: Path | None = None
    pages: list[Path] = field(default_factory=list)
    not_anchored: int = 0
    failed: list[str] = field(default_factory=list)
    tokens: list[Path] = field(default_factory=list)


def bundle_path(out_dir: Path, row: NotarizationRow) -> Path:
    """Where the bundle of ``row`` goes; never outside ``out_dir`` (no ``..`` or absolute parts)."""
    return out_dir / bundle_relpath(row.collection, row.path, row.sha256)


def export_bundles(
    services: Services,
    out_dir: Path,
    *,
    collection: str | None = None,
    html: bool = False,
    pages: bool = False,
) -> ExportOutcome:
    """Write the verified bundle of every anchored notarization (of ``collection``).

    Args:
        html: also write the verification page, ``<out_dir>/verify.html``.
        pages: also write each document's page with its bundle built in (implies ``html``).
    """
    outcome = ExportOutcome()
    dblocks: dict[int, bytes] = {}
    proofs: dict[int, dict[str, object] | None] = {}
    stamps: dict[int, TimestampsPart | None] = {}
    keys: dict[str, bytes | None] = {}
    for record in services.store.proofs.iter_records(collection=collection):
        row = record.notarization
        if row.stage != "anchor" or record.receipt is None or row.dblock_height is None:
            outcome.not_anchored += row.stage != "failed"
            continue
        height = row.dblock_height
        if height not in dblocks:
            dblocks[height] = bytes.fromhex(services.node.dblock_by_height(height)["rawdata"])
            proofs[height] = services.anchor.anchor_proof(height)
            stamps[height] = _timestamps(services, height)
        anchor_proof = proofs[height]
        if anchor_proof is None:
            outcome.not_anchored += 1
            continue
        if row.collection not in keys:
            keys[row.collection] = services.store.collections.key(row.collection)
        try:
            bundle = bundle_for(
                row,
                receipt=record.receipt.raw,
                dblock_raw=dblocks[height],
                anchor_proof=anchor_proof,
                collection_key=keys[row.collection],
                timestamps=stamps[height],
            )
        except (LedgerFormatError, ValueError) as exc:
            outcome.failed.append(f"{row.path}: {exc}")
            continue
        _write_bundle(outcome, out_dir, row, bundle, page=pages)
    if html or pages:
        outcome.page = _write(out_dir / PAGE_NAME, render_verify_page())
    return outcome


def _write_bundle(
    outcome: ExportOutcome, out_dir: Path, row: NotarizationRow, bundle: ProofBundle, *, page: bool
) -> None:
    relative = bundle_relpath(row.collection, row.path, row.sha256)
    path = _write(out_dir / relative, bundle.dumps())
    outcome.written.append(path)
    outcome.tokens += _write_tokens(path, bundle)
    outcome.sources[path] = row.path
    if page:
        title = f"Verify {row.path}"
        outcome.pages.append(
            _write(out_dir / page_relpath(relative), render_verify_page(bundle, title=title))
        )


def _timestamps(services: Services, height: int) -> TimestampsPart | None:
    """The block's RFC 3161 tokens from the anchoring service, None when it has none."""
    answer = services.anchor.timestamps(height)
    tokens = tokens_from_answer(answer)
    if not tokens:
        return None
    return TimestampsPart(
        bytes.fromhex(str((answer or {}).get("keymr", ""))),
        tuple(Rfc3161Token.of(t) for t in tokens),
    )


def _write_tokens(bundle_file: Path, bundle: ProofBundle) -> list[Path]:
    """Each RFC 3161 token of ``bundle`` as a response beside it: ``<bundle>.tsr``, then
    ``<bundle>.2.tsr``, ... (``openssl ts -verify -digest <root hex> -in <file>``)."""
    if bundle.timestamps is None:
        return []
    written = []
    for i, item in enumerate(bundle.timestamps.rfc3161):
        name = bundle_file.name + (".tsr" if i == 0 else f".{i + 1}.tsr")
        written.append(_write(bundle_file.with_name(name), response_from_token(item.token)))
    return written


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    if isinstance(data, bytes):
        tmp.write_bytes(data)
    else:
        tmp.write_text(data, encoding="utf-8")
    os.replace(tmp, path)
    return path

"""``notary proof export``: one proof bundle (JSON) per anchored document of the audit store.

For each notarized document at the ``anchor`` stage (a batch's members each get their own
bundle: version 2 with the document's nonce and audit path; ``tasks.proofs.bundle_for``) the
exporter takes the stored (verified) receipt (a batch's, stored once), fetches the directory
block bytes from the node and the anchor proof from the anchoring service, builds the
bundle, verifies it completely, and writes
``<out>/<collection>/<relative path>.<version>.proof.json`` (``tasks.proofs.bundle_relpath``:
each version of each path has a name of its own). With ``html``, it also writes the
verification page (``ledger.core.verify_page``) as ``<out>/verify.html``; with ``pages``, a
page per document with its bundle built in, beside the bundle as ``<...>.verify.html``;
a block's RFC 3161 tokens, as responses beside the bundle (``<bundle>.tsr``), and its
OpenTimestamps proofs as standard ``.ots`` files over the KeyMR (``<bundle>.ots``; the
stock client reads them: ``ots info``).

Nothing is overwritten: a bundle, page or token is written under a temporary name, then linked to
its own name only if that name is free; a file already there with the same bytes is left
as it is (``unchanged``), one with other bytes is left as it is and reported
(``refused``). ``<out>/index.json`` lists every bundle of the folder, old and new: the
collection, path (exactly as notarized), SHA-256 and notarization time of its document,
and its file (``INDEX_NAME``). Anyone can later run ``notary verify FILE --proof BUNDLE``,
or open the page, with no service running.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connectors.audit import NotarizationRow
from connectors.folder_source import display_path
from flows.pipeline import Services
from ledger.core.errors import LedgerFormatError
from ledger.core.proof.bundle import ProofBundle
from ledger.core.timestamps.bundle_part import (
    OtsStamp,
    Rfc3161Token,
    TimestampsPart,
    tokens_from_answer,
)
from ledger.core.timestamps.ots import parse_ots
from ledger.core.timestamps.rfc3161 import response_from_token
from ledger.core.verify_page import render_verify_page
from tasks.proofs import PAGE_NAME, bundle_for, bundle_relpath, page_relpath

__all__ = [
    "INDEX_NAME",
    "ExportOutcome",
    "bundle_path",
    "export_bundles",
    "write_timestamp_files",
]

#: The export folder's index of bundles (JSON: ``{"version": 1, "bundles": [...]}``).
INDEX_NAME = "index.json"


@dataclass
class ExportOutcome:
    """What an export wrote and what it could not.

    Attributes:
        written: the bundles written by this export (new files).
        unchanged: the bundles already there with the same bytes (left as they were).
        refused: ``"<file>: <reason>"`` of bundles or pages not written because a
            different file has their name (never overwritten).
        sources: bundle path -> the document's path in its collection (as notarized),
            for the bundles written and unchanged.
        page: the verification page written (``<out>/verify.html``), when asked for.
        pages: the per-document pages written (bundle built in), when asked for.
        index: the index written (``<out>/index.json``).
        not_anchored: documents not anchored yet.
        failed: ``"<path>: <reason>"`` of the bundles that did not verify or could not be
            written.
        entries: this export's lines of the index (``INDEX_NAME``).
        tokens: the RFC 3161 responses written beside the bundles (``<bundle>.tsr``).
        ots_files: the OpenTimestamps files written beside the bundles (``<bundle>.ots``).
    """

    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    sources: dict[Path, str] = field(default_factory=dict)
    page: Path | None = None
    pages: list[Path] = field(default_factory=list)
    index: Path | None = None
    not_anchored: int = 0
    failed: list[str] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    tokens: list[Path] = field(default_factory=list)
    ots_files: list[Path] = field(default_factory=list)


def bundle_path(out_dir: Path, row: NotarizationRow) -> Path:
    """Where the bundle of ``row`` goes; never outside ``out_dir`` (no ``..`` or absolute parts)."""
    return out_dir / bundle_relpath(row.collection, row.path, row.sha256, row.created_at)


def export_bundles(
    services: Services,
    out_dir: Path,
    *,
    collection: str | None = None,
    html: bool = False,
    pages: bool = False,
) -> ExportOutcome:
    """Write the verified bundle of every anchored notarization (of ``collection``), never
    over another file, and the folder's index (module docstring).

    Args:
        html: also write the verification page, ``<out_dir>/verify.html``.
        pages: also write each document's page with its bundle built in (implies ``html``).
    """
    outcome = ExportOutcome()
    policy = services.settings.policy()
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
            stamps[height] = _block_timestamps(outcome, services, height)
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
                policy=policy,
                timestamps=stamps[height],
            )
        except (LedgerFormatError, ValueError) as exc:
            outcome.failed.append(f"{display_path(row.path)}: {exc}")
            continue
        _write_bundle(outcome, out_dir, row, bundle, page=pages)
    if html or pages:
        outcome.page = _replace(out_dir / PAGE_NAME, render_verify_page())
    outcome.index = _write_index(out_dir, outcome.entries)
    return outcome


def _write_bundle(
    outcome: ExportOutcome, out_dir: Path, row: NotarizationRow, bundle: ProofBundle, *, page: bool
) -> None:
    relative = bundle_relpath(row.collection, row.path, row.sha256, row.created_at)
    path = out_dir / relative
    try:
        state = _write_new(path, bundle.dumps())
    except OSError as exc:
        outcome.failed.append(
            f"{display_path(row.path)}: cannot write {_shown(path)}: {exc.strerror}"
        )
        return
    if state == "refused":
        outcome.refused.append(f"{_shown(path)}: another file has its name; not overwritten")
        return
    (outcome.written if state == "written" else outcome.unchanged).append(path)
    outcome.sources[path] = row.path
    write_timestamp_files(outcome, path, bundle)
    entry: dict[str, Any] = {"collection": row.collection, "path": row.path}
    entry |= {"sha256": row.sha256}
    entry |= {"notarized_at": row.created_at.isoformat(), "bundle": str(relative), "page": None}
    if page:
        page_path = out_dir / page_relpath(relative)
        text = render_verify_page(bundle, title=f"Verify {row.path}")
        page_state = _write_new(page_path, text)
        if page_state == "refused":
            outcome.refused.append(f"{_shown(page_path)}: another file has its name")
        else:
            entry["page"] = str(page_relpath(relative))
            if page_state == "written":
                outcome.pages.append(page_path)
    outcome.entries.append(entry)


def _block_timestamps(
    outcome: ExportOutcome, services: Services, height: int
) -> TimestampsPart | None:
    """``_timestamps``; an answer that does not parse is reported in ``outcome.failed`` and
    the block's bundles are written without timestamps."""
    try:
        return _timestamps(services, height)
    except LedgerFormatError as exc:
        outcome.failed.append(f"timestamps of directory block {height}: {exc}")
        return None


def _timestamps(services: Services, height: int) -> TimestampsPart | None:
    """The block's RFC 3161 tokens and OpenTimestamps stamps from the anchoring service
    (its ``opentimestamps`` list holds elements in the bundle's own form,
    ``OtsStamp.to_json``), None when it has neither. The root is the answer's ``keymr``,
    else the digest the first stamp is over (the bundle's check compares it with the
    receipt's KeyMR)."""
    answer = services.anchor.timestamps(height) or {}
    tokens = tokens_from_answer(answer)
    stamps = tuple(OtsStamp.from_json(s) for s in answer.get("opentimestamps") or [])
    if not tokens and not stamps:
        return None
    keymr = answer.get("keymr")
    root = bytes.fromhex(keymr) if isinstance(keymr, str) else parse_ots(stamps[0].ots).file_digest
    return TimestampsPart(root, tuple(Rfc3161Token.of(t) for t in tokens), stamps)


def write_timestamp_files(outcome: ExportOutcome, bundle_file: Path, bundle: ProofBundle) -> None:
    """Each RFC 3161 token of ``bundle`` as a response beside it: ``<bundle>.tsr``, then
    ``<bundle>.2.tsr``, ... (``openssl ts -verify -digest <root hex> -in <file>``), and
    each OpenTimestamps stamp as its ``.ots`` file: ``<bundle>.ots``, ``<bundle>.2.ots``,
    ... (``ots info <file>``), never over another file."""
    if bundle.timestamps is None:
        return
    for i, item in enumerate(bundle.timestamps.rfc3161):
        name = bundle_file.name + (".tsr" if i == 0 else f".{i + 1}.tsr")
        token_file = bundle_file.with_name(name)
        state = _write_new(token_file, response_from_token(item.token))
        if state == "refused":
            outcome.refused.append(f"{_shown(token_file)}: another file has its name")
        elif state == "written":
            outcome.tokens.append(token_file)
    for i, stamp in enumerate(bundle.timestamps.opentimestamps):
        name = bundle_file.name + (".ots" if i == 0 else f".{i + 1}.ots")
        ots_file = bundle_file.with_name(name)
        state = _write_new(ots_file, stamp.ots)
        if state == "refused":
            outcome.refused.append(f"{_shown(ots_file)}: another file has its name")
        elif state == "written":
            outcome.ots_files.append(ots_file)


def _shown(path: Path) -> str:
    return display_path(str(path))


def _write_new(path: Path, text: str | bytes) -> str:
    """Write ``text`` (bytes, or text as UTF-8) as ``path`` unless that name is taken: ``"written"``, ``"unchanged"``
    (a file with these bytes is there) or ``"refused"`` (another file is there). The file
    appears whole or not at all (a temporary file, then a hard link to the name, which
    fails if the name exists: nothing is ever replaced).

    Raises:
        OSError: the folder cannot be made or written.
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    if path.exists():
        return "unchanged" if _same_bytes(path, data) else "refused"
    tmp = _temporary(path, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return "unchanged" if _same_bytes(path, data) else "refused"
    finally:
        tmp.unlink()
    return "written"


def _same_bytes(path: Path, data: bytes) -> bool:
    try:
        return path.is_file() and not path.is_symlink() and path.read_bytes() == data
    except OSError:
        return False


def _temporary(path: Path, data: bytes) -> Path:
    """``data`` in a new file beside ``path``, owner-only (mode 0600, as every file the
    command line writes: docs/security.md); share a bundle by copying it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=".export-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return Path(name)


def _replace(path: Path, text: str) -> Path:
    """Write a file of the export itself (the page, the index) atomically, replacing it."""
    tmp = _temporary(path, text.encode("utf-8"))
    os.replace(tmp, path)
    return path


def _write_index(out_dir: Path, entries: list[dict[str, Any]]) -> Path:
    """``<out_dir>/index.json``: the bundles listed there before (their files still
    present) and this export's, one entry per bundle file, sorted by file."""
    index = out_dir / INDEX_NAME
    by_bundle: dict[str, dict[str, Any]] = {}
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        for old in json.loads(index.read_text(encoding="utf-8"))["bundles"]:
            if (out_dir / old["bundle"]).is_file():
                by_bundle[old["bundle"]] = old
    for entry in entries:
        by_bundle[entry["bundle"]] = entry
    listed = [by_bundle[key] for key in sorted(by_bundle)]
    text = json.dumps({"version": 1, "bundles": listed}, indent=2, ensure_ascii=True) + "\n"
    return _replace(index, text)

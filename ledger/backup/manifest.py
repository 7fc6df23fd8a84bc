"""The manifest of a backup: what was copied, how big, its SHA-256, and when.

``manifest.json`` is written last, so a backup folder without one is unfinished. It
holds (README "Backups"):

- ``format`` (``"notary-backup"``) and ``version`` (1);
- ``created_at`` (UTC, ISO 8601) and ``duration_s``; ``versions``: notary, SQLite, Python;
- ``stores``, in copy order: each file's relative ``path``, ``size`` (bytes), ``sha256``
  (hex), ``mode`` (octal text), the store's ``name``, its schema ``user_version``, the
  result of ``PRAGMA quick_check`` on the copy, ``copy_s`` (seconds the store's read
  snapshot was held) and ``facts`` (the node's ``height``);
- ``secrets``: the secret files, the same fields without the store ones;
- ``absent`` (stores without a file when the backup was taken) and ``skipped`` (server
  databases, by name and URL without password);
- ``manifest_sha256``: SHA-256 (hex) of the RFC 8785 canonical JSON of everything else.

``read_manifest`` refuses a manifest that is not valid JSON of exactly this shape, whose
digest does not match its body, or that names a path outside the backup folder;
``verify_files`` refuses a listed file whose size or SHA-256 differs. Together they catch
a corrupted or edited manifest or file. Someone rewriting both a file and the manifest
consistently is caught only by comparing the digest with one kept elsewhere
(``notary backup`` prints it; ``notary restore --manifest-sha256`` checks it).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Annotated, Any, Literal

import rfc8785
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ledger.backup.errors import ManifestError
from ledger.backup.layout import SECRET_NAME, check_archive_name

__all__ = [
    "MANIFEST_NAME",
    "FileRecord",
    "Manifest",
    "SkippedStore",
    "file_sha256",
    "fsync_path",
    "read_manifest",
    "verify_files",
    "write_manifest",
]

MANIFEST_NAME = "manifest.json"


def _octal_mode(text: str) -> str:
    mode = int(text, 8)
    if not 0 <= mode <= 0o777 or len(text) != 4:
        raise ValueError("a mode is four octal digits, at most 0777")
    return text


def _secret_name(text: str) -> str:
    if not SECRET_NAME.fullmatch(text):
        raise ValueError("a secret file is a plain name at the top of the backup")
    return text


Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Mode = Annotated[str, Field(pattern=r"^0[0-7]{3}$"), AfterValidator(_octal_mode)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class FileRecord(_Strict):
    """One copied file (module docstring); the store fields are None for a secret file."""

    path: str
    size: int = Field(ge=0)
    sha256: Sha256Hex
    mode: Mode
    store: str | None = None
    user_version: int | None = None
    quick_check: str | None = None
    copy_s: float | None = None
    facts: dict[str, int | float | str | None] = Field(default_factory=dict)

    @property
    def mode_bits(self) -> int:
        """The permission bits (``0o600``)."""
        return int(self.mode, 8)


class StoreRecord(FileRecord):
    """A copied store: its path is a relative path inside the backup."""

    path: Annotated[str, AfterValidator(check_archive_name)]
    store: str


class SecretRecord(FileRecord):
    """A copied secret file: a plain name at the top of the backup."""

    path: Annotated[str, AfterValidator(_secret_name)]


class SkippedStore(_Strict):
    """A store not copied: a server database (``location``: its URL without password)."""

    name: str
    location: str


class Manifest(_Strict):
    """The whole manifest (module docstring)."""

    format: Literal["notary-backup"] = "notary-backup"
    version: Literal[1] = 1
    created_at: str
    duration_s: float = Field(ge=0)
    versions: dict[str, str]
    stores: list[StoreRecord]
    secrets: list[SecretRecord]
    absent: list[str] = Field(default_factory=list)
    skipped: list[SkippedStore] = Field(default_factory=list)

    def body(self) -> dict[str, Any]:
        """The JSON object the digest covers (everything but the digest)."""
        return self.model_dump(mode="json")

    def digest(self) -> str:
        """SHA-256 (hex) of the RFC 8785 canonical JSON of ``body``."""
        return hashlib.sha256(rfc8785.dumps(self.body())).hexdigest()

    def store(self, name: str) -> StoreRecord | None:
        """The record of store ``name``, None when it was not copied."""
        return next((s for s in self.stores if s.store == name), None)

    def files(self) -> list[FileRecord]:
        """Every copied file, stores first."""
        return [*self.stores, *self.secrets]


def write_manifest(folder: Path, manifest: Manifest) -> str:
    """Write ``folder/manifest.json`` (with its digest) durably; return the digest.

    Raises:
        OSError: the file could not be written.
    """
    digest = manifest.digest()
    document = {**manifest.body(), "manifest_sha256": digest}
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    part = folder / (MANIFEST_NAME + ".part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    part.replace(folder / MANIFEST_NAME)
    fsync_path(folder)
    return digest


def read_manifest(folder: Path, *, expected_sha256: str | None = None) -> Manifest:
    """Read and check ``folder/manifest.json`` (module docstring).

    Args:
        folder: the backup folder.
        expected_sha256: the digest ``notary backup`` printed, when kept elsewhere.

    Raises:
        ManifestError: missing, not JSON, not this shape, digest mismatch, or not the
            expected digest.
    """
    path = folder / MANIFEST_NAME
    try:
        document = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ManifestError("no manifest: not a finished notary backup", path=path) from None
    except (OSError, ValueError) as exc:
        raise ManifestError(f"unreadable manifest ({type(exc).__name__})", path=path) from None
    if not isinstance(document, dict):
        raise ManifestError("the manifest is not a JSON object", path=path)
    claimed = document.pop("manifest_sha256", None)
    try:
        manifest = Manifest.model_validate(document)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise ManifestError(
            f"malformed manifest (fields: {', '.join(fields)})", path=path
        ) from None
    digest = manifest.digest()
    if claimed != digest:
        raise ManifestError("the manifest does not match its own digest (edited?)", path=path)
    if expected_sha256 is not None and expected_sha256.lower() != digest:
        raise ManifestError(
            f"manifest digest {digest} is not the expected {expected_sha256}", path=path
        )
    return manifest


def verify_files(folder: Path, manifest: Manifest) -> None:
    """Check that every file the manifest lists is in ``folder`` with its size and SHA-256.

    Raises:
        ManifestError: a file is missing, not a regular file, or differs.
    """
    for record in manifest.files():
        path = folder / record.path
        try:
            info = path.lstat()
        except FileNotFoundError:
            raise ManifestError("listed in the manifest but missing", path=path) from None
        if not stat.S_ISREG(info.st_mode):
            raise ManifestError("not a regular file", path=path)
        if info.st_size != record.size:
            raise ManifestError(
                f"size {info.st_size} bytes, the manifest says {record.size}", path=path
            )
        if file_sha256(path) != record.sha256:
            raise ManifestError("SHA-256 differs from the manifest's", path=path)


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of the file at ``path``."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def fsync_path(path: Path) -> None:
    """Make a file's bytes, or a folder's entries (new, renamed files), durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

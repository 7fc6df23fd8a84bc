"""File names of exported proofs: one name per document version, never shared.

A document's path may hold anything a file system allows (spaces, ``+``, ``%``, newlines,
non-ASCII letters, names that differ only in case) and an export folder may be on a file
system that folds case (macOS, Windows) or normalizes Unicode. Each path component is
therefore written as ``encode_component`` makes it, a form that is

- *safe*: only ``A-Z a-z 0-9 . _ -``, ``%`` and ``~``, at most ``MAX_COMPONENT_BYTES``;
- *unique, also where case is folded*: every other byte of the name's UTF-8 form is
  percent-encoded as ``%XX`` (upper-case hex; ``%`` and ``~`` themselves included), and a
  name with capital letters gets ``~<hex>``, the mask of which of its letters are capitals
  (bit *i* for its *i*-th letter): ``README`` becomes ``README~3f``, ``ReadMe``
  ``ReadMe~11``, and folding case keeps them apart;
- *reversible* (``decode_component``), except for a name too long once encoded: it is cut
  (at a whole ``%XX``) and ends with ``~h`` and 16 hex digits of the SHA-256 of its UTF-8
  bytes, where the index of the export (``flows.cli.proof_export``) names it in full.

A collection's folder is ``collection_slug``: the name itself when it is made of lower-case
letters, digits, ``.``, ``_`` and ``-`` only, else a readable form and ``~`` with 12 hex
digits of its SHA-256. A version is told apart by ``version_stamp``: the notarization's
time (UTC, to the second) and the first 8 hex digits of the document's SHA-256.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

__all__ = [
    "MAX_COMPONENT_BYTES",
    "collection_slug",
    "decode_component",
    "encode_component",
    "version_stamp",
]

#: Longest encoded component: with a version stamp and ``.verify.html`` a bundle's or
#: page's file name stays under the 255 bytes most file systems allow (``NAME_MAX``).
MAX_COMPONENT_BYTES = 200
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_ESCAPE = re.compile(r"%([0-9A-F]{2})")
_MASK = re.compile(r"~([0-9a-f]+)\Z")
_HASHED = re.compile(r"~h[0-9a-f]{16}\Z")
_SLUG_SAFE = re.compile(r"[a-z0-9._-]{1,100}")
_SLUG_UNSAFE = re.compile(r"[^a-z0-9._-]+")


def _utf8(name: str) -> bytes:
    """The name's bytes (a name that is not UTF-8 keeps its own, ``surrogateescape``)."""
    return name.encode("utf-8", "surrogateescape")


def encode_component(name: str) -> str:
    """The file-name form of one path component (module docstring).

    Requires ``name`` not empty, without ``/``.

    Raises:
        ValueError: an empty name or one with ``/``.
    """
    if not name or "/" in name:
        raise ValueError(f"not one path component: {name!r}")
    raw = _utf8(name)
    encoded = "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in raw)
    mask = _capitals_mask(encoded)
    full = f"{encoded}~{mask:x}" if mask else encoded
    if len(full) <= MAX_COMPONENT_BYTES:
        return full
    keep = MAX_COMPONENT_BYTES - 18
    cut = encoded[:keep]
    if "%" in cut[-2:]:  # never half an escape
        cut = cut[: cut.rindex("%")]
    return f"{cut}~h{hashlib.sha256(raw).hexdigest()[:16]}"


def decode_component(encoded: str) -> str | None:
    """The name ``encode_component`` made ``encoded`` from; ``None`` for a long name that
    was cut (look it up in the export's index).

    Raises:
        ValueError: ``encoded`` is not such a form.
    """
    if _HASHED.search(encoded):
        return None
    body, mask = encoded, 0
    if found := _MASK.search(encoded):
        body, mask = encoded[: found.start()], int(found.group(1), 16)
    if "~" in body or re.search(r"%(?![0-9A-F]{2})", body) or mask != _capitals_mask(body):
        raise ValueError(f"not an encoded name: {encoded!r}")
    if mask == 0 and found:
        raise ValueError(f"not an encoded name: {encoded!r}")
    raw = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), body).encode("latin-1")
    return raw.decode("utf-8", "surrogateescape")


def _capitals_mask(encoded: str) -> int:
    """Bit *i* set when the *i*-th letter of ``encoded`` (escapes ``%XX`` skipped) is a
    capital."""
    letters = _ESCAPE.sub("", encoded)
    mask = 0
    for i, char in enumerate(c for c in letters if c.isascii() and c.isalpha()):
        if char.isupper():
            mask |= 1 << i
    return mask


def collection_slug(name: str) -> str:
    """A collection's folder name in an export (module docstring): never empty, at most
    113 characters, two names never share one (nor do they where case is folded)."""
    if _SLUG_SAFE.fullmatch(name):
        return name
    readable = _SLUG_UNSAFE.sub("_", name.lower()).strip("_.")[:100] or "collection"
    return f"{readable}~{hashlib.sha256(_utf8(name)).hexdigest()[:12]}"


def version_stamp(notarized_at: datetime, sha256: str) -> str:
    """``<YYYYMMDDTHHMMSSZ>-<first 8 hex of sha256>``: what tells a version of a path from
    another in its bundle's name (a naive ``notarized_at`` is taken as UTC)."""
    when = notarized_at if notarized_at.tzinfo else notarized_at.replace(tzinfo=UTC)
    return f"{when.astimezone(UTC):%Y%m%dT%H%M%SZ}-{sha256[:8]}"

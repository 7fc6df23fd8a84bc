"""Encodings at the REST edge: Base64 for external IDs and content, hex for hashes and chain IDs.

Raw bytes inside; these named helpers convert at the edge with exact checks.
"""

from __future__ import annotations

import base64
import binascii

from ledger.api.errors import LedgerApiError
from ledger.core.hexbytes import hex_or_none

__all__ = ["EncodingError", "from_base64", "from_hash_hex", "is_hash_hex", "to_base64"]


class EncodingError(LedgerApiError, ValueError):
    """A string that is not valid in its declared encoding.

    Attributes:
        field: the request field that held it (``external_ids[1]``, ``content``, ...).
    """

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def to_base64(data: bytes) -> str:
    """Standard Base64 (RFC 4648 section 4) with padding."""
    return base64.b64encode(data).decode("ascii")


def from_base64(text: str, *, field: str) -> bytes:
    """Decode standard, padded Base64 strictly (no whitespace, no URL-safe alphabet).

    Raises:
        EncodingError: not a string, characters outside the alphabet, or bad padding.
    """
    if not isinstance(text, str):
        raise EncodingError("expected a Base64 string", field=field)
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise EncodingError("not valid Base64", field=field) from exc


def is_hash_hex(text: str) -> bool:
    """True for exactly 64 hexadecimal characters (a chain ID or entry hash)."""
    return from_hash_hex(text) is not None


def from_hash_hex(text: str) -> bytes | None:
    """The 32 raw bytes of a 64-character hex hash, or ``None`` when ``text`` is not one."""
    return hex_or_none(text, size=32)

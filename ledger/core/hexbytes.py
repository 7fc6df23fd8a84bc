"""Hex at the edges: the one strict hex decoder, and its encoder.

Raw ``bytes`` inside, hex only where JSON or a command line needs text. Decoding is
strict: a ``str`` of ASCII hex digits, of even length, and nothing else (no whitespace,
no sign, no ``0x`` unless the caller's format allows it, exactly ``size`` bytes when a size
is given). Upper-case digits are accepted unless ``lowercase=True``: Factom's and
Bitcoin's JSON write lower case, and decoders have always read either. Each failure is a
``DecodeError`` naming the field::

    "<what> must be a hex string"              not a str
    "<what> is not valid hex"                  odd length, a non-hex or non-ASCII character,
                                               whitespace, a prefix where none is allowed
    "<what> must be 32 bytes (64 hex characters)"   wrong size
    "<what> must be lowercase hex"             upper-case digits where only lower is allowed

Encoding is ``bytes.hex()``: lower case, no prefix. Speed matters here: a receipt sweep
decodes tens of thousands of 32-byte hashes per second, so the accepting path is one
``isascii`` test, one ``bytes.fromhex`` and two length comparisons, and 32-byte hashes
have their own keyword-free function, ``hash32_from_hex``.
"""

from __future__ import annotations

from typing import NewType

from ledger.core.errors import DecodeError

__all__ = [
    "Hash32",
    "from_hex",
    "from_hex_list",
    "hash32_from_hex",
    "hex_or_none",
    "is_hash_hex",
    "to_hex",
]

#: Exactly 32 raw bytes: a SHA-256 / SHA256d digest, an entry hash, a KeyMR, a chain ID.
Hash32 = NewType("Hash32", bytes)

_PREFIXES = ("0x", "0X")


def to_hex(data: bytes | bytearray | memoryview) -> str:
    """Lowercase hex of ``data``, no prefix (two characters per byte)."""
    return bytes(data).hex()


def from_hex(
    text: object,
    what: str,
    *,
    size: int | None = None,
    allow_0x: bool = False,
    lowercase: bool = False,
) -> bytes:
    """The bytes that strict hex ``text`` encodes.

    Args:
        text: the hex string (anything else is refused).
        what: the field's name, for the error message.
        size: the exact number of bytes required, if any.
        allow_0x: accept (and drop) one leading ``0x`` or ``0X``.
        lowercase: refuse the digits ``A``-``F``.

    Raises:
        DecodeError: not a string, not strict hex, or not ``size`` bytes (module docstring).
    """
    if isinstance(text, str) and text.isascii():
        if allow_0x and text[:2] in _PREFIXES:
            text = text[2:]
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raise DecodeError(f"{what} is not valid hex") from None
        # fromhex skips ASCII whitespace: strict hex has none, so every character must
        # have become half a byte
        if (
            2 * len(raw) == len(text)
            and (size is None or len(raw) == size)
            and (not lowercase or text == text.lower())
        ):
            return raw
    raise _refusal(text, what, size=size)


def _refusal(text: object, what: str, *, size: int | None) -> DecodeError:
    """The error for ``text`` (its prefix dropped) that ``from_hex`` did not accept."""
    if not isinstance(text, str):
        return DecodeError(f"{what} must be a hex string")
    if not text.isascii() or len(bytes.fromhex(text)) * 2 != len(text):
        return DecodeError(f"{what} is not valid hex")
    if size is not None and len(text) != 2 * size:
        return DecodeError(f"{what} must be {size} bytes ({2 * size} hex characters)")
    return DecodeError(f"{what} must be lowercase hex")


def hash32_from_hex(text: object, what: str) -> Hash32:
    """The 32 bytes of a 64-character strict hex hash (either case, no prefix).

    Same rules and messages as ``from_hex(text, what, size=32)``, on a path of its own:
    receipts and Merkle branches decode one of these per node, and keyword options cost
    the general decoder a tenth of its time.

    Raises:
        DecodeError: not a string of exactly 64 hex digits.
    """
    if isinstance(text, str) and text.isascii():
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raise DecodeError(f"{what} is not valid hex") from None
        # 32 bytes from 64 characters leaves no room for the whitespace fromhex skips
        if len(raw) == 32 and len(text) == 64:
            # a NewType call is a Python-level call per hash; the value is these bytes
            return raw  # type: ignore[return-value]
    raise _refusal(text, what, size=32)


def from_hex_list(
    value: object,
    what: str,
    *,
    size: int | None = None,
    allow_0x: bool = False,
    lowercase: bool = False,
) -> tuple[bytes, ...]:
    """Decode a JSON array (list or tuple) of strict hex strings, items named ``what[i]``.

    Raises:
        DecodeError: ``value`` is not a list or tuple, or an item is refused by ``from_hex``.
    """
    if not isinstance(value, list | tuple):
        raise DecodeError(f"{what} must be a list of hex strings")
    return tuple(
        from_hex(item, f"{what}[{i}]", size=size, allow_0x=allow_0x, lowercase=lowercase)
        for i, item in enumerate(value)
    )


def is_hash_hex(text: object) -> bool:
    """True when ``text`` is a 32-byte hash in strict hex: 64 hex digits of either case,
    nothing else (the rule of ``hash32_from_hex``), for edges that only need to check."""
    return hex_or_none(text, size=32) is not None


def hex_or_none(text: object, *, size: int | None = None, lowercase: bool = False) -> bytes | None:
    """``from_hex``'s bytes, or None where it would raise: for edges that answer a refusal
    in their own words (a REST 404, a JSON-RPC ``Invalid Hash``)."""
    try:
        return from_hex(text, "hex", size=size, lowercase=lowercase)
    except DecodeError:
        return None

"""Entries: binary layout, entry hash, chain ID and EC cost (docs/formats.md §1).

Layout (section 1.1)::

    offset  size  field
    0       1     version, always 0
    1       32    chain ID
    33      2     N = byte length of the ExtID section (uint16 big-endian)
    35      N     ExtIDs, each [uint16 big-endian length || bytes]
    35+N    rest  content (no length field: the end of the buffer delimits it)

"Payload" is everything after the 35-byte header (ExtID section plus content); it may
be at most 10240 bytes. Every ``Entry`` instance satisfies these limits, so an instance
can always be marshalled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.core.errors import DecodeError, LimitError
from ledger.core.hashing import entry_hash, sha256
from ledger.core.hexbytes import from_hex, from_hex_list

__all__ = [
    "CHAIN_ID_BYTES",
    "ENTRY_HEADER_BYTES",
    "ENTRY_VERSION",
    "MAX_ENTRY_BYTES",
    "MAX_ENTRY_PAYLOAD_BYTES",
    "MAX_ENTRY_COST_EC",
    "NEW_CHAIN_FEE_EC",
    "Entry",
    "chain_id_from_external_ids",
    "entry_cost",
]

ENTRY_VERSION = 0
CHAIN_ID_BYTES = 32
ENTRY_HEADER_BYTES = 35
MAX_ENTRY_PAYLOAD_BYTES = 10240
MAX_ENTRY_BYTES = ENTRY_HEADER_BYTES + MAX_ENTRY_PAYLOAD_BYTES  # 10275
MAX_ENTRY_COST_EC = 10
NEW_CHAIN_FEE_EC = 10  # added to the first entry's cost by a commit-chain (section 1.4)
_EXT_ID_LENGTH_BYTES = 2


def chain_id_from_external_ids(external_ids: Sequence[bytes]) -> bytes:
    """Chain ID (32 bytes) of a chain whose first entry has these ExtIDs (section 1.3).

    ``SHA256(SHA256(ext_0) || SHA256(ext_1) || ...)``; no ExtIDs gives ``SHA256(b"")``.
    """
    return sha256(b"".join(sha256(bytes(ext_id)) for ext_id in external_ids))


def entry_cost(payload_bytes: int) -> int:
    """Entry credits a client pays to commit an entry of this payload size (section 1.4).

    ``max(1, ceil(payload_bytes / 1024))``, so 1..10. A new chain costs this plus
    ``NEW_CHAIN_FEE_EC``.

    Raises:
        LimitError: ``payload_bytes`` negative or above ``MAX_ENTRY_PAYLOAD_BYTES``.
    """
    if payload_bytes < 0 or payload_bytes > MAX_ENTRY_PAYLOAD_BYTES:
        raise LimitError(
            f"entry payload of {payload_bytes} bytes outside 0..{MAX_ENTRY_PAYLOAD_BYTES}"
        )
    return max(1, -(-payload_bytes // 1024))


@dataclass(frozen=True)
class Entry:
    """One entry (section 1.1). All fields are raw bytes.

    Attributes:
        chain_id: 32 bytes.
        external_ids: ExtIDs in order (a list given here is stored as a tuple).
        content: the content bytes.

    Raises (on construction):
        DecodeError: chain ID not 32 bytes, or a field that is not bytes-like.
        LimitError: payload (ExtID section + content) above 10240 bytes.
    """

    chain_id: bytes
    external_ids: tuple[bytes, ...]
    content: bytes

    def __post_init__(self) -> None:
        if not _plain_fields(self.chain_id, self.external_ids, self.content):
            object.__setattr__(self, "chain_id", _as_bytes(self.chain_id, "chain_id"))
            object.__setattr__(
                self,
                "external_ids",
                tuple(_as_bytes(x, "external id") for x in self.external_ids),
            )
            object.__setattr__(self, "content", _as_bytes(self.content, "content"))
        if len(self.chain_id) != CHAIN_ID_BYTES:
            raise DecodeError(f"chain id must be 32 bytes, got {len(self.chain_id)}")
        if self.payload_size() > MAX_ENTRY_PAYLOAD_BYTES:
            raise LimitError(
                f"entry payload of {self.payload_size()} bytes exceeds {MAX_ENTRY_PAYLOAD_BYTES}"
            )

    @classmethod
    def first_entry(cls, external_ids: Iterable[bytes], content: bytes) -> Entry:
        """The first entry of a new chain: its chain ID is computed from ``external_ids``."""
        ext_ids = tuple(external_ids)
        return cls(chain_id_from_external_ids(ext_ids), ext_ids, content)

    def _ext_id_section(self) -> bytes:
        return b"".join(len(x).to_bytes(2, "big") + x for x in self.external_ids)

    def marshal(self) -> bytes:
        """Entry bytes as revealed and hashed (35-byte header + payload)."""
        ext_section = self._ext_id_section()
        header = bytes([ENTRY_VERSION]) + self.chain_id + len(ext_section).to_bytes(2, "big")
        return header + ext_section + self.content

    @classmethod
    def unmarshal(cls, data: bytes) -> Entry:
        """Parse entry bytes (section 1.1); the whole buffer is the entry.

        Raises:
            DecodeError: shorter than 35 bytes, version not 0, or ExtID lengths that do not
                exactly fill the declared ExtID section.
            LimitError: payload above 10240 bytes.
        """
        data = _as_bytes(data, "entry")
        if len(data) < ENTRY_HEADER_BYTES:
            raise DecodeError(f"entry of {len(data)} bytes is shorter than its 35-byte header")
        if data[0] != ENTRY_VERSION:
            raise DecodeError(f"entry version {data[0]} is not 0")
        if len(data) - ENTRY_HEADER_BYTES > MAX_ENTRY_PAYLOAD_BYTES:
            raise LimitError(f"entry payload of {len(data) - ENTRY_HEADER_BYTES} bytes too large")
        section_end = ENTRY_HEADER_BYTES + int.from_bytes(data[33:35], "big")
        if section_end > len(data):
            raise DecodeError("ExtID section runs past the end of the entry")
        ext_ids = _parse_ext_ids(data, ENTRY_HEADER_BYTES, section_end)
        return cls(data[1:33], ext_ids, data[section_end:])

    def hash(self) -> bytes:
        """Entry hash, 32 bytes: ``SHA256(SHA512(entry) || entry)`` (section 1.2)."""
        return entry_hash(self.marshal())

    def payload_size(self) -> int:
        """Bytes after the 35-byte header: ExtID section (with length prefixes) + content."""
        ext_bytes = sum(_EXT_ID_LENGTH_BYTES + len(x) for x in self.external_ids)
        return ext_bytes + len(self.content)

    def ksize(self) -> int:
        """factomd's KSize: ``ceil(payload / 1024)``; 0 for an empty payload (section 1.4)."""
        return -(-self.payload_size() // 1024)

    def cost(self) -> int:
        """EC a client pays to commit this entry: ``entry_cost(payload_size())``, 1..10."""
        return entry_cost(self.payload_size())

    def is_first_entry_of_chain(self) -> bool:
        """True when ``chain_id`` equals the chain ID computed from the ExtIDs (section 1.3)."""
        return self.chain_id == chain_id_from_external_ids(self.external_ids)

    def to_hex(self) -> str:
        """Lowercase hex of ``marshal()`` (the ``entry`` param of ``reveal-entry``)."""
        return self.marshal().hex()

    @classmethod
    def from_hex(cls, text: str) -> Entry:
        """Inverse of ``to_hex``. Raises DecodeError (bad hex or bytes) or LimitError."""
        return cls.unmarshal(from_hex(text, "entry"))

    def to_json(self) -> dict[str, Any]:
        """Client JSON form ``{"chainid": hex, "extids": [hex, ...], "content": hex}`` (1.1)."""
        return {
            "chainid": self.chain_id.hex(),
            "extids": [x.hex() for x in self.external_ids],
            "content": self.content.hex(),
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Entry:
        """Parse the JSON form of ``to_json``.

        ``"chainname": [hex, ...]`` may replace ``"chainid"`` (the chain ID is then computed
        from those names, as the Go client does). Missing ``extids``/``content`` mean empty.

        Raises:
            DecodeError: not a mapping, bad hex, wrong types, or neither chainid nor chainname.
            LimitError: payload above 10240 bytes.
        """
        if not isinstance(obj, Mapping):
            raise DecodeError("entry JSON must be an object")
        ext_ids = from_hex_list(obj.get("extids") or [], "extids")
        content = from_hex(obj.get("content") or "", "content")
        if obj.get("chainid") is not None:
            chain_id = from_hex(obj["chainid"], "chainid")
        elif obj.get("chainname") is not None:
            chain_id = chain_id_from_external_ids(from_hex_list(obj["chainname"], "chainname"))
        else:
            raise DecodeError("entry JSON needs 'chainid' or 'chainname'")
        return cls(chain_id, ext_ids, content)


def _parse_ext_ids(data: bytes, start: int, end: int) -> tuple[bytes, ...]:
    """Split the ExtID section ``data[start:end]``; lengths must fill it exactly."""
    ext_ids: list[bytes] = []
    pos = start
    while pos < end:
        if pos + _EXT_ID_LENGTH_BYTES > end:
            raise DecodeError("ExtID length prefix does not fit in the ExtID section")
        size = int.from_bytes(data[pos : pos + _EXT_ID_LENGTH_BYTES], "big")
        pos += _EXT_ID_LENGTH_BYTES
        if pos + size > end:
            raise DecodeError(f"ExtID of {size} bytes overruns the ExtID section")
        ext_ids.append(data[pos : pos + size])
        pos += size
    return tuple(ext_ids)


def _plain_fields(chain_id: object, external_ids: object, content: object) -> bool:
    """Whether the fields already are what ``Entry`` keeps (``bytes``, a tuple of
    ``bytes``): then nothing needs converting. The usual case (the node, the wallet and
    the API each build entries from bytes for every write), and a test of types costs
    less than a copy of the tuple and three attribute writes."""
    if type(chain_id) is not bytes or type(content) is not bytes:
        return False
    if type(external_ids) is not tuple:
        return False
    for item in external_ids:  # noqa: SIM110 - a loop: all() of a generator costs twice
        if type(item) is not bytes:
            return False
    return True


def _as_bytes(value: object, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise DecodeError(f"{what} must be bytes, got {type(value).__name__}")

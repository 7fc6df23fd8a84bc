"""Transactions of the proof-of-work chain, in Bitcoin's legacy serialization.

Layout (integers little-endian, counts and script lengths CompactSize)::

    version u32 | input count | inputs | output count | outputs | locktime u32
    input  = previous txid (32) | previous output index u32 | script | sequence u32
    output = value u64 | script

txid = SHA256d(serialization), internal byte order. The bundled chain only carries
anchor transactions (one null input, one zero-value ``OP_RETURN`` output) and one coinbase
per block (whose input script holds the block height, so txids never repeat), but the
parser reads any legacy Bitcoin transaction, so a real chain's anchor can be checked too.
Segregated-witness serializations are refused (a zero input count); a txid is always
the hash of the legacy form anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ledger.core.errors import DecodeError, LimitError
from ledger.core.hashing import sha256d
from ledger.core.pow.encoding import LEReader, encode_compact_size

__all__ = [
    "NULL_TXID",
    "OP_RETURN",
    "PowTransaction",
    "TxIn",
    "TxOut",
    "anchor_transaction",
    "coinbase_transaction",
    "op_return_data",
    "op_return_script",
]

OP_RETURN = 0x6A
OP_PUSHDATA1 = 0x4C
NULL_TXID = bytes(32)
NULL_INDEX = 0xFFFFFFFF
MAX_TX_BYTES = 100_000
_COINBASE_TAG = b"notary pow"


def _u32(value: int, what: str) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 32:
        raise LimitError(f"{what} must be a uint32, got {value!r}")
    return value.to_bytes(4, "little")


def _script(script: bytes) -> bytes:
    return encode_compact_size(len(script)) + script


@dataclass(frozen=True)
class TxIn:
    """An input: the output it spends (``prev_txid`` internal order, ``prev_index``), its
    unlocking ``script`` and ``sequence``."""

    prev_txid: bytes
    prev_index: int
    script: bytes
    sequence: int = 0xFFFFFFFF

    def marshal(self) -> bytes:
        if len(self.prev_txid) != 32:
            raise DecodeError("an input's previous txid must be 32 bytes")
        return (
            self.prev_txid
            + _u32(self.prev_index, "prev_index")
            + _script(self.script)
            + _u32(self.sequence, "sequence")
        )


@dataclass(frozen=True)
class TxOut:
    """An output: ``value`` (uint64, smallest units) locked by ``script``."""

    value: int
    script: bytes

    def marshal(self) -> bytes:
        if not 0 <= self.value < 1 << 64:
            raise LimitError("an output value must be a uint64")
        return self.value.to_bytes(8, "little") + _script(self.script)


@dataclass(frozen=True)
class PowTransaction:
    """A transaction; ``marshal``/``unmarshal`` are exact inverses."""

    version: int
    inputs: tuple[TxIn, ...]
    outputs: tuple[TxOut, ...]
    locktime: int = 0

    def marshal(self) -> bytes:
        """The legacy serialization (what the txid hashes)."""
        if not self.inputs:
            raise DecodeError("a transaction needs at least one input")
        parts = [_u32(self.version, "version"), encode_compact_size(len(self.inputs))]
        parts += [i.marshal() for i in self.inputs]
        parts.append(encode_compact_size(len(self.outputs)))
        parts += [o.marshal() for o in self.outputs]
        parts.append(_u32(self.locktime, "locktime"))
        return b"".join(parts)

    @classmethod
    def unmarshal(cls, data: bytes) -> PowTransaction:
        """Parse one whole transaction.

        Raises:
            DecodeError: short data, trailing bytes, no inputs (segwit marker), counts that
                cannot fit, or more than ``MAX_TX_BYTES``.
        """
        if isinstance(data, bytes | bytearray) and len(data) > MAX_TX_BYTES:
            raise DecodeError(f"transaction larger than {MAX_TX_BYTES} bytes")
        reader = LEReader(data, "transaction")
        version = reader.uint(4)
        inputs = tuple(_read_input(reader) for _ in range(_count(reader, 41, "input")))
        if not inputs:
            raise DecodeError("transaction: no inputs (segwit serialization is not accepted)")
        outputs = tuple(_read_output(reader) for _ in range(_count(reader, 9, "output")))
        locktime = reader.uint(4)
        reader.expect_end()
        return cls(version, inputs, outputs, locktime)

    def txid(self) -> bytes:
        """SHA256d of ``marshal()`` (internal order)."""
        return sha256d(self.marshal())

    def op_return_payloads(self) -> list[bytes]:
        """Data pushed by every ``OP_RETURN <push>`` output, in output order."""
        found = (op_return_data(o.script) for o in self.outputs)
        return [data for data in found if data is not None]


def _count(reader: LEReader, min_item_bytes: int, what: str) -> int:
    count = reader.compact_size()
    if count * min_item_bytes > reader.remaining:
        raise DecodeError(f"transaction: {count} {what}s cannot fit in {reader.remaining} bytes")
    return count


def _read_input(reader: LEReader) -> TxIn:
    prev, index = reader.take(32), reader.uint(4)
    script = reader.take(reader.compact_size())
    return TxIn(prev, index, script, reader.uint(4))


def _read_output(reader: LEReader) -> TxOut:
    value = reader.uint(8)
    return TxOut(value, reader.take(reader.compact_size()))


def op_return_script(data: bytes) -> bytes:
    """``OP_RETURN`` followed by one push of ``data`` (direct push up to 75 bytes,
    ``OP_PUSHDATA1`` up to 255)."""
    if len(data) <= 75:
        return bytes([OP_RETURN, len(data)]) + data
    if len(data) <= 255:
        return bytes([OP_RETURN, OP_PUSHDATA1, len(data)]) + data
    raise LimitError("OP_RETURN data is limited to 255 bytes here")


def op_return_data(script: bytes) -> bytes | None:
    """The data of a script that is exactly ``OP_RETURN <one push>``; None otherwise."""
    if len(script) < 2 or script[0] != OP_RETURN:
        return None
    if 1 <= script[1] <= 75:
        data, size = script[2:], script[1]
    elif script[1] == OP_PUSHDATA1 and len(script) >= 3:
        data, size = script[3:], script[2]
    else:
        return None
    return data if len(data) == size else None


def anchor_transaction(scripts: Iterable[bytes]) -> PowTransaction:
    """The bundled chain's transaction carrying ``scripts`` as zero-value outputs.

    One null input (no coins move); the txid depends only on the scripts, so submitting
    the same anchor twice yields the same transaction.
    """
    outputs = tuple(TxOut(0, script) for script in scripts)
    return PowTransaction(1, (TxIn(NULL_TXID, NULL_INDEX, b""),), outputs)


def coinbase_transaction(height: int) -> PowTransaction:
    """The first transaction of block ``height``: its input script pushes the height."""
    script = b"\x04" + _u32(height, "height")
    return PowTransaction(
        1, (TxIn(NULL_TXID, NULL_INDEX, script),), (TxOut(0, op_return_script(_COINBASE_TAG)),)
    )

"""A Bitcoin transaction's legacy serialization: the bytes its txid hashes (BIP 144).

A wallet that spends segregated-witness outputs (every current Bitcoin Core and Litecoin
Core wallet) signs transactions serialized as BIP 144 defines::

    version u32 | marker 0x00 | flag 0x01 | inputs | outputs | witnesses | locktime u32

The txid is SHA256d of the legacy form, the same fields without marker, flag and
witnesses; that form is what a proof bundle carries (``ledger.core.pow.tx`` refuses the
witness form). ``legacy_serialization`` turns either form into the legacy one, checked by
re-parsing it with ``PowTransaction``.

Pure: no I/O.
"""

from __future__ import annotations

from ledger.core.errors import DecodeError
from ledger.core.pow.encoding import LEReader
from ledger.core.pow.tx import PowTransaction

__all__ = ["legacy_serialization"]

_MARKER = 0x00
_WITNESS_FLAG = 0x01


def legacy_serialization(raw: bytes) -> bytes:
    """The legacy serialization of transaction ``raw`` (witness form or legacy form).

    Args:
        raw: one whole serialized transaction, as ``gettransaction`` / ``getrawtransaction``
            return it (bytes, not hex).

    Returns:
        The bytes whose SHA256d is the txid (``raw`` itself when it has no witness).

    Raises:
        DecodeError: not one whole transaction (cut short, trailing bytes, an unknown flag
            such as Litecoin's MWEB flag 0x08, witness stacks that do not fit).
    """
    data = bytes(raw)
    if len(data) < 6 or data[4] != _MARKER:
        return PowTransaction.unmarshal(data).marshal()
    if data[5] != _WITNESS_FLAG:
        raise DecodeError(f"transaction: unknown serialization flag {data[5]:#04x}")
    reader = LEReader(data, "witness transaction", offset=6)
    start = reader.position
    inputs = reader.compact_size()
    if inputs == 0:
        raise DecodeError("witness transaction: no inputs")
    for _ in range(inputs):
        reader.take(36)
        reader.take(reader.compact_size())
        reader.take(4)
    for _ in range(reader.compact_size()):
        reader.take(8)
        reader.take(reader.compact_size())
    body = data[start : reader.position]
    for _ in range(inputs):
        for _ in range(reader.compact_size()):
            reader.take(reader.compact_size())
    locktime = reader.take(4)
    reader.expect_end()
    legacy = data[:4] + body + locktime
    return PowTransaction.unmarshal(legacy).marshal()

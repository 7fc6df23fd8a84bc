"""A fixed-size Bloom filter over commit txids: the node's replay filter's fast path.

Every commit txid ever journaled is added; ``might_contain`` answering False proves a txid
is new without a database read, True (a repeat, or rarely a false positive) sends the
caller to the journal. Txids are SHA-256 outputs, so their bytes already are independent
uniform hashes: the ``k`` bit positions are read straight from them.

With the default 2**26 bits (8 MiB) and k = 4 the false positive rate is about 1e-5 after
one million txids and about 2 % after ten million.
"""

from __future__ import annotations

DEFAULT_BITS_LOG2 = 26
HASHES = 4


class TxidFilter:
    """Bloom filter of 32-byte txids.

    Args:
        bits_log2: log2 of the number of bits (16..32).
    """

    def __init__(self, *, bits_log2: int = DEFAULT_BITS_LOG2) -> None:
        if not 16 <= bits_log2 <= 32:
            raise ValueError("bits_log2 must be 16..32")
        self._mask = (1 << bits_log2) - 1
        self._bits = bytearray(1 << (bits_log2 - 3))
        self.count = 0

    def _positions(self, txid: bytes) -> list[int]:
        mask = self._mask
        return [int.from_bytes(txid[4 * i : 4 * i + 4], "little") & mask for i in range(HASHES)]

    def add(self, txid: bytes) -> None:
        """Record ``txid`` (raw 32 bytes)."""
        bits = self._bits
        for pos in self._positions(txid):
            bits[pos >> 3] |= 1 << (pos & 7)
        self.count += 1

    def might_contain(self, txid: bytes) -> bool:
        """False if ``txid`` was never added; True if it (probably) was."""
        bits = self._bits
        return all(bits[pos >> 3] & (1 << (pos & 7)) for pos in self._positions(txid))

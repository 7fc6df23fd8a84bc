"""A run's notarization ids, kept in memory that does not grow with its documents.

A run remembers which notarizations its documents map to (to count them by stage at the
end) and which of those it created. As a ``Counter`` and a ``set`` that cost ~120 bytes per
document: 12 MB at 100,000 documents in the entry mode, 120 MB at 1,000,000, the one thing
in a run's memory that grew with its size. The ids a run meets come in long increasing
stretches (it creates them in order; documents it finds known were created in scan order
by an earlier run), so ``IdTally`` keeps them as ranges: two integers per stretch, plus a
count for the few ids that more than one document maps to (copies, aggregation batches).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator

__all__ = ["IdTally"]


class IdTally:
    """A multiset of non-negative integer ids, stored as sorted disjoint ranges.

    ``add`` is O(log r) for an id that extends or joins a range and O(r) (a move of two
    arrays) for one that starts a range in the middle, r being the number of ranges;
    ``in`` and ``count`` are O(log r). Memory: 16 bytes per range and ~100 bytes per id
    counted more than once.
    """

    def __init__(self) -> None:
        self._starts = array("q")  # range i holds the ids starts[i] <= id < ends[i]
        self._ends = array("q")
        self._extra: Counter[int] = Counter()  # count - 1 of ids counted more than once
        self._size = 0

    def add(self, nid: int, count: int = 1) -> None:
        """Count ``nid`` ``count`` more times.

        Raises:
            ValueError: ``nid`` is negative or ``count`` is below 1.
        """
        if nid < 0 or count < 1:
            raise ValueError(f"need an id >= 0 and a count >= 1, got {nid}, {count}")
        if nid in self:
            self._extra[nid] += count
            return
        if count > 1:
            self._extra[nid] += count - 1
        self._size += 1
        starts, ends = self._starts, self._ends
        i = bisect_right(starts, nid) - 1  # the range starting at or before nid, or -1
        joins_left = i >= 0 and ends[i] == nid
        joins_right = i + 1 < len(starts) and starts[i + 1] == nid + 1
        if joins_left and joins_right:  # fills the gap between two ranges
            ends[i] = ends[i + 1]
            del starts[i + 1], ends[i + 1]
        elif joins_left:
            ends[i] = nid + 1
        elif joins_right:
            starts[i + 1] = nid
        else:
            starts.insert(i + 1, nid)
            ends.insert(i + 1, nid + 1)

    def __contains__(self, nid: object) -> bool:
        if not isinstance(nid, int):
            return False
        i = bisect_right(self._starts, nid) - 1
        return i >= 0 and nid < self._ends[i]

    def count(self, nid: int) -> int:
        """How many times ``nid`` was added (0 if never)."""
        return 1 + self._extra.get(nid, 0) if nid in self else 0

    def __len__(self) -> int:
        """How many distinct ids."""
        return self._size

    def __iter__(self) -> Iterator[int]:
        """The distinct ids, in increasing order."""
        for start, end in zip(self._starts, self._ends, strict=True):
            yield from range(start, end)

    @property
    def ranges(self) -> int:
        """How many ranges hold the ids (what the memory grows with)."""
        return len(self._starts)

"""Reveals the node holds while they wait for their commit or their chain
(docs/formats.md §1.4, §2.2).

A reveal that arrives before its commit (or, for an entry, before its chain exists) is held
and recorded once they arrive. Held reveals cost memory and nothing else (no credits), so
they are capped by count and by entry bytes; those older than the commit window are
dropped. ``HeldReveals`` is the container: oldest first (a reveal sent again replaces the
held one and moves to the end), indexed by chain so a new chain releases its waiting
reveals without a scan. The acceptance rules that decide what is held are
``ledger.node.rules``'s.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from dataclasses import dataclass

from ledger.core.entry import Entry
from ledger.node.errors import HeldRevealLimit

__all__ = ["HeldReveal", "HeldReveals"]


@dataclass(frozen=True, slots=True)
class HeldReveal:
    """A reveal waiting for its commit (or its chain); ``seq`` its journal sequence number."""

    entry: Entry
    raw: bytes
    received_ms: int
    seq: int


class HeldReveals(Mapping[bytes, HeldReveal]):
    """Held reveals by raw 32-byte entry hash, oldest first, within two caps.

    Args:
        max_count: most reveals held at once.
        max_bytes: most entry bytes held at once.
    """

    def __init__(self, *, max_count: int, max_bytes: int) -> None:
        self.max_count, self.max_bytes = max_count, max_bytes
        self._items: dict[bytes, HeldReveal] = {}
        self._by_chain: dict[bytes, set[bytes]] = {}
        self.total_bytes = 0
        """Entry bytes held now."""

    # Mapping, with the dict's own methods on the hot paths (every reveal looks itself up).
    def __getitem__(self, ehash: bytes) -> HeldReveal:
        return self._items[ehash]

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, ehash: object) -> bool:
        return ehash in self._items

    def get(self, ehash: bytes, default: HeldReveal | None = None) -> HeldReveal | None:  # type: ignore[override]
        return self._items.get(ehash, default)

    def items(self) -> ItemsView[bytes, HeldReveal]:
        return self._items.items()

    def values(self) -> ValuesView[HeldReveal]:
        return self._items.values()

    def hold(self, ehash: bytes, item: HeldReveal) -> None:
        """Hold ``item`` (a reveal sent again replaces the held one and moves to the end)."""
        self.unhold(ehash)
        self._items[ehash] = item
        self.total_bytes += len(item.raw)
        self._by_chain.setdefault(item.entry.chain_id, set()).add(ehash)

    def unhold(self, ehash: bytes) -> HeldReveal | None:
        """Stop holding the reveal of ``ehash``; returns it, or None if none was held."""
        item = self._items.pop(ehash, None)
        if item is not None:
            self.total_bytes -= len(item.raw)
            waiting = self._by_chain.get(item.entry.chain_id)
            if waiting is not None:
                waiting.discard(ehash)
                if not waiting:
                    del self._by_chain[item.entry.chain_id]
        return item

    def waiting_for(self, chain_id: bytes) -> list[bytes]:
        """Entry hashes held for the 32-byte ``chain_id``, in journal order."""
        waiting = [(self._items[h].seq, h) for h in self._by_chain.get(chain_id, ())]
        return [ehash for _seq, ehash in sorted(waiting)]

    def make_room(self, ehash: bytes, size: int, *, expire_before_ms: int) -> None:
        """Check that one more held reveal of ``size`` bytes (replacing the one held under
        ``ehash``, if any) fits the caps, dropping those received before
        ``expire_before_ms`` first.

        Raises:
            HeldRevealLimit: it does not fit.
        """
        if self._fits(ehash, size):
            return
        self.expire(expire_before_ms)
        if not self._fits(ehash, size):
            raise HeldRevealLimit(len(self), self.total_bytes, self.max_count, self.max_bytes)

    def expire(self, before_ms: int, *, all_of_them: bool = False) -> int:
        """Drop held reveals received before ``before_ms``; returns how many were dropped.

        Stops at the first one still young (oldest first, bar the rare reveal put back by an
        undo), so that a sender held at the cap costs O(1) per refusal; ``all_of_them``
        looks at every one (once per block).
        """
        dropped = 0
        for ehash, item in list(self._items.items()):
            if item.received_ms >= before_ms:
                if all_of_them:
                    continue
                break
            self.unhold(ehash)
            dropped += 1
        return dropped

    def _fits(self, ehash: bytes, size: int) -> bool:
        prior = self._items.get(ehash)
        count = len(self._items) + (prior is None)
        total = self.total_bytes + size - (0 if prior is None else len(prior.raw))
        return count <= self.max_count and total <= self.max_bytes

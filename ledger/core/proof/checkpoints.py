"""Bitcoin mainnet checkpoints: one real header per difficulty period, shipped as data.

Why: a trust policy's least work per header (``ledger.core.proof.policy``) is set for
today's chain (bitcoin-mainnet: a quarter of block 840,000's work, difficulty about
2.2e13), so a header from 2015 (difficulty about 4.9e10, about 440 times easier) can never
meet it, although it is the real block an OpenTimestamps proof of that year attests. These
checkpoints let a verifier *place* such a historic header offline (``Checkpoints.place``,
used by ``TrustPolicy.place``):

- **checkpoint**: its hash is one of the shipped headers' hashes (exact);
- **era**: its height lies in a shipped difficulty period (mainnet retargets every 2016
  blocks and every block of a period carries the period's ``bits``), its ``bits`` are that
  period's, its hash meets them, and its time lies between the period's first header's
  time and the next period's first header's time, give or take ``TIME_SLACK_S``. A forger
  must then spend one block of that period's real work, and the date it claims stays
  inside that period (about two weeks). That work is what the placement is worth, and it
  is small next to today's blocks (a block of May 2015, 2**67.5 hashes, is about 1/2000
  of one of 2025, 2**78.7): the placement states it, and a period whose block is below
  ``MIN_PERIOD_WORK`` (2**64 hashes, first reached at block 292,320 in April 2014; a
  2011 block is 2**51, minutes of one mining machine) places nothing;
- **chain**: the headers that follow it, given with it, link it (each naming the previous
  one's hash) to the checkpoint that starts the next period (``link``). This is exact: to
  fake a header there, a forger would need a header chain ending in the real hash the
  checkpoint names as its previous block;
- **work**: its target is at least as hard as the policy's least work (``max_target``), as
  for chain anchors.

The data is bitcoinj's ``org.bitcoin.production.checkpoints.txt`` (bitcoinj/bitcoinj,
``core/src/main/resources/``, commit 4c70646ab75de6b56bfb57330029de350343464b, January
2025), copied unchanged as ``ledger/core/proof/data/bitcoin-mainnet.checkpoints.txt``:
``TXT CHECKPOINTS 1``, the number of signatures (0), the number of checkpoints, then one
base64 ``StoredBlock`` a line (12-byte chain work, 4-byte big-endian height, the 80-byte
header) at heights 2016, 4032, ... 878,976. Loading re-checks every header's own proof of
work and the heights' spacing: the file is data to check, not to trust blindly. Pure; the
file is read once, through ``importlib.resources``.
"""

from __future__ import annotations

import base64
import binascii
import math
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Literal

from ledger.core.errors import DecodeError, LedgerFormatError
from ledger.core.pow.header import HEADER_BYTES, BlockHeader

__all__ = [
    "BITCOIN_MAINNET_CHECKPOINTS",
    "MIN_PERIOD_WORK",
    "RETARGET_INTERVAL",
    "TIME_SLACK_S",
    "Checkpoint",
    "Checkpoints",
    "Placement",
    "bitcoin_mainnet_checkpoints",
    "block_work",
]

#: Blocks per difficulty period on Bitcoin mainnet (``consensus.DifficultyAdjustmentInterval``).
RETARGET_INTERVAL = 2016
#: How far a header's time may lie outside its period's checkpoint times (two days:
#: consensus lets a block's time run up to two hours ahead and below the previous blocks').
TIME_SLACK_S = 2 * 86_400
#: The least work (expected hashes) a period's block must stand for to place a header by
#: its period: 2**64, first reached at block 292,320 (April 2014).
MIN_PERIOD_WORK = 1 << 64
#: The name of the shipped set (a policy file names it in ``checkpoints``).
BITCOIN_MAINNET_CHECKPOINTS = "bitcoinj-mainnet"

_MAGIC = "TXT CHECKPOINTS 1"
_RECORD_BYTES = 12 + 4 + HEADER_BYTES
_DATA_FILE = "bitcoin-mainnet.checkpoints.txt"


@dataclass(frozen=True)
class Checkpoint:
    """One shipped header: its ``height`` and the header; ``hash`` is SHA256d (internal order)."""

    height: int
    header: BlockHeader
    hash: bytes


@dataclass(frozen=True)
class Placement:
    """How a header was placed under a policy: ``basis`` (module docstring) and a sentence."""

    basis: Literal["checkpoint", "chain", "era", "work"]
    detail: str


@dataclass(frozen=True, eq=False)
class Checkpoints:
    """Checkpoint headers every ``RETARGET_INTERVAL`` blocks (module docstring).

    Attributes:
        name: the set's name (``BITCOIN_MAINNET_CHECKPOINTS``), printed in verdicts.
        source: where the data comes from, one line.
        entries: the checkpoints by ascending height, consecutive periods.
    """

    name: str
    source: str
    entries: tuple[Checkpoint, ...]
    _heights: tuple[int, ...] = field(init=False, repr=False)
    _by_hash: dict[bytes, Checkpoint] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        heights = tuple(c.height for c in self.entries)
        object.__setattr__(self, "_heights", heights)
        object.__setattr__(self, "_by_hash", {c.hash: c for c in self.entries})

    @property
    def last_height(self) -> int:
        """The last height a shipped period covers (its checkpoint's height + 2015)."""
        return self._heights[-1] + RETARGET_INTERVAL - 1 if self._heights else -1

    def period_start(self, height: int) -> Checkpoint | None:
        """The checkpoint that starts ``height``'s difficulty period, None when not shipped."""
        i = bisect_right(self._heights, height) - 1
        if i < 0 or height >= self._heights[i] + RETARGET_INTERVAL:
            return None
        return self.entries[i]

    def period_end(self, height: int) -> Checkpoint | None:
        """The checkpoint that starts the period after ``height``'s, None when not shipped."""
        start = self.period_start(height)
        return None if start is None else self._by_height(start.height + RETARGET_INTERVAL)

    def by_hash(self, block_hash: bytes) -> Checkpoint | None:
        """The checkpoint whose header hashes to ``block_hash`` (internal order), if any."""
        return self._by_hash.get(block_hash)

    def place(self, header: BlockHeader, height: int) -> Placement | str:
        """Place ``header``, claimed at ``height``, by checkpoint or by era (module docstring).

        Requires: the header meets its own target (the caller checked it).

        Returns:
            A ``Placement`` with basis ``checkpoint`` or ``era``, else the reason it cannot
            be placed by this set (one sentence).
        """
        exact = self.by_hash(header.hash())
        if exact is not None:
            if exact.height != height:
                return f"the header is checkpoint {exact.height}, not block {height}"
            return Placement("checkpoint", f"block {height} is a {self.name} checkpoint")
        start = self.period_start(height)
        if start is None:
            return (
                f"block {height} is outside the {self.name} checkpoints (up to {self.last_height})"
            )
        if start.height == height:
            return f"block {height} is a {self.name} checkpoint, and this header is not it"
        if header.bits != start.header.bits:
            return (
                f"bits {header.bits:#010x} are not those of block {height}'s difficulty period"
                f" ({start.header.bits:#010x}, from block {start.height})"
            )
        work = block_work(start.header.target())
        if work < MIN_PERIOD_WORK:
            return (
                f"block {height}'s difficulty period stands for 2**{math.log2(work):.1f} hashes"
                " a block, below the 2**64 needed to place a header by its period"
            )
        end = self.period_end(height)
        low = start.header.timestamp - TIME_SLACK_S
        high = None if end is None else end.header.timestamp + TIME_SLACK_S
        if header.timestamp < low or (high is not None and header.timestamp > high):
            return f"the header's time lies outside block {height}'s difficulty period"
        return Placement(
            "era",
            f"bits {header.bits:#010x} are those of its difficulty period (blocks"
            f" {start.height}-{start.height + RETARGET_INTERVAL - 1}, {self.name}): as costly to"
            f" forge as one block of that period, about 2**{math.log2(work):.1f} hashes",
        )

    def link(
        self, header: BlockHeader, height: int, following: dict[bytes, BlockHeader]
    ) -> tuple[Placement, list[BlockHeader]] | None:
        """Place ``header``, claimed at ``height``, by linking it through ``following``
        (headers by their previous block's hash) to the first shipped checkpoint above
        ``height`` (basis ``chain``).

        Returns:
            The placement and the headers the link used, or None when none leads from
            ``header`` to that checkpoint.
        """
        target = self._by_height((height // RETARGET_INTERVAL + 1) * RETARGET_INTERVAL)
        if target is None:
            return None
        used: list[BlockHeader] = []
        current, at = header, height
        while at < target.height:
            nxt = following.get(current.hash())
            if nxt is None:
                return None
            used.append(nxt)
            current, at = nxt, at + 1
        if current.hash() != target.hash:
            return None
        detail = (
            f"linked by {len(used)} header(s) to the {self.name} checkpoint at block"
            f" {target.height}: it is that chain's block {height}"
        )
        return Placement("chain", detail), used

    def _by_height(self, height: int) -> Checkpoint | None:
        i = bisect_right(self._heights, height) - 1
        return self.entries[i] if i >= 0 and self._heights[i] == height else None

    @classmethod
    def from_bitcoinj_text(cls, text: str, *, name: str, source: str) -> Checkpoints:
        """Read bitcoinj's text checkpoint format (module docstring).

        Raises:
            DecodeError: a bad header line, count, base64 or record length; a header whose
                hash misses its own target; heights that are not consecutive periods.
        """
        lines = text.splitlines()
        if len(lines) < 3 or lines[0] != _MAGIC or lines[1] != "0" or not lines[2].isdigit():
            raise DecodeError("not a bitcoinj text checkpoint file without signatures")
        records = lines[3 : 3 + int(lines[2])]
        if len(records) != int(lines[2]) or any(line.strip() for line in lines[3 + len(records) :]):
            raise DecodeError("the checkpoint count does not match the lines")
        entries = tuple(_record(line) for line in records)
        for before, after in zip(entries, entries[1:], strict=False):
            if after.height != before.height + RETARGET_INTERVAL:
                raise DecodeError(f"checkpoint {after.height} does not follow {before.height}")
        return cls(name=name, source=source, entries=entries)


def _record(line: str) -> Checkpoint:
    try:
        raw = base64.b64decode(line, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DecodeError(f"checkpoint line is not base64: {exc}") from exc
    if len(raw) != _RECORD_BYTES:
        raise DecodeError(f"a checkpoint is {_RECORD_BYTES} bytes, got {len(raw)}")
    height = int.from_bytes(raw[12:16], "big")
    header = BlockHeader.unmarshal(raw[16:])
    try:
        meets = header.meets_target()
    except LedgerFormatError as exc:
        raise DecodeError(f"checkpoint {height}: {exc}") from exc
    if not meets or height % RETARGET_INTERVAL:
        raise DecodeError(f"checkpoint {height} is not a period's first block meeting its target")
    return Checkpoint(height, header, header.hash())


def block_work(target: int) -> int:
    """Expected hashes to meet ``target`` (Bitcoin Core's ``GetBlockProof``): 2**256 / (target + 1)."""
    return (1 << 256) // (target + 1)


@cache
def bitcoin_mainnet_checkpoints() -> Checkpoints:
    """The shipped Bitcoin mainnet checkpoints (module docstring), read once."""
    text = resources.files("ledger.core.proof").joinpath("data", _DATA_FILE).read_text("ascii")
    return Checkpoints.from_bitcoinj_text(
        text,
        name=BITCOIN_MAINNET_CHECKPOINTS,
        source="bitcoinj org.bitcoin.production.checkpoints.txt (2016-block periods to 880,991)",
    )

"""Errors raised by the node's ledger rules; the JSON-RPC layer renders them.

Exception tree::

    NodeError
    ├── RuleViolation         a well-formed message the ledger rules refuse (balance, cost, window)
    │   └── HeldRevealLimit   a reveal would wait for its commit, and the held ones are at the cap
    ├── RepeatedCommitError   a commit with equal or greater payment is pending, or the very
    │                         same commit (txid) was accepted before (-32011)
    ├── DuplicateTransaction  a coin transaction with this txid was accepted before
    ├── UnknownObject         no block, entry or transaction under that key (-32008)
    ├── UnknownChain          no chain with that id (-32009)
    └── NotInBlockError       the entry is not (yet) in a directory block, no receipt (-32010)
"""

from __future__ import annotations


class NodeError(Exception):
    """Base of the node's rule errors."""


class RuleViolation(NodeError):
    """A message that parses but breaks a ledger rule (factom-formats sections 1.4, 2.4, 4.3)."""


class HeldRevealLimit(RuleViolation):
    """A reveal arrived before its commit (or chain) and the node already holds as many
    such reveals, or entry bytes, as it is configured to (``NodeSettings.max_held_reveals*``).

    Rendered like every ``RuleViolation`` (Invalid params, -32602): nothing was kept, and
    sending the commit first (or again later) succeeds.

    Attributes:
        held / held_bytes: reveals and entry bytes held now.
        max_held / max_held_bytes: the caps.
    """

    def __init__(self, held: int, held_bytes: int, max_held: int, max_held_bytes: int) -> None:
        super().__init__(
            f"too many reveals are waiting for their commit ({held} reveals, {held_bytes} "
            f"bytes held; the limits are {max_held} and {max_held_bytes}): send the commit first"
        )
        self.held, self.held_bytes = held, held_bytes
        self.max_held, self.max_held_bytes = max_held, max_held_bytes


class RepeatedCommitError(NodeError):
    """A commit for the same entry hash with equal or greater credits is already pending,
    or this exact commit (same txid) was accepted before (formats 2.4).

    Attributes:
        entry_hash: raw 32-byte entry hash of the repeated commit.
    """

    def __init__(self, entry_hash: bytes) -> None:
        super().__init__("A commit with equal or greater payment already exists")
        self.entry_hash = entry_hash


class DuplicateTransaction(NodeError):
    """A coin transaction with the same txid was already accepted (the replay filter, 4.3).

    Attributes:
        txid: raw 32-byte txid.
    """

    def __init__(self, txid: bytes) -> None:
        super().__init__(f"transaction {txid.hex()} was already submitted")
        self.txid = txid


class UnknownObject(NodeError):
    """Nothing is stored under the requested key."""


class UnknownChain(NodeError):
    """The chain has no head: it does not exist, not even in the process list."""


class NotInBlockError(NodeError):
    """A receipt was asked for an entry that no directory block records yet."""

"""Errors raised by the node's ledger rules; the JSON-RPC layer renders them.

Exception tree::

    NodeError
    ├── RuleViolation         a well-formed message the ledger rules refuse (balance, cost, window)
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

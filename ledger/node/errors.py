"""Errors raised by the node's ledger rules; the JSON-RPC layer renders them.

Exception tree::

    NodeError
    ├── RuleViolation        a well-formed message the ledger rules refuse (balance, cost, window)
    ├── RepeatedCommitError  a commit with equal or greater payment is pending (-32011)
    ├── UnknownObject        no block, entry or transaction under that key (-32008)
    ├── UnknownChain         no chain with that id (-32009)
    └── NotInBlockError      the entry is not (yet) in a directory block, no receipt (-32010)
"""

from __future__ import annotations


class NodeError(Exception):
    """Base of the node's rule errors."""


class RuleViolation(NodeError):
    """A message that parses but breaks a ledger rule (factom-formats sections 1.4, 2.4, 4.3)."""


class RepeatedCommitError(NodeError):
    """A commit for the same entry hash with equal or greater credits is already pending.

    Attributes:
        entry_hash: raw 32-byte entry hash of the repeated commit.
    """

    def __init__(self, entry_hash: bytes) -> None:
        super().__init__("A commit with equal or greater payment already exists")
        self.entry_hash = entry_hash


class UnknownObject(NodeError):
    """Nothing is stored under the requested key."""


class UnknownChain(NodeError):
    """The chain has no head: it does not exist, not even in the process list."""


class NotInBlockError(NodeError):
    """A receipt was asked for an entry that no directory block records yet."""

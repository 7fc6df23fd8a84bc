"""Errors raised by the node's ledger rules; the JSON-RPC layer renders them.

``ledger.node.handlers.errors.node_errors`` renders each as the JSON-RPC error on the right
(``ledger.jsonrpc.errors``); the rules never build wire errors themselves.

Exception tree::

    NodeError
    ├── RuleViolation         a well-formed message the ledger rules refuse   -> InvalidParams (-32602)
    │   │                     (balance, cost, window)
    │   └── HeldRevealLimit   a reveal would wait for its commit, and the     -> InvalidParams (-32602)
    │                         held ones are at the cap
    ├── DuplicateCommit       a commit with equal or greater payment is       -> RepeatedCommit (-32011)
    │                         pending, or the very same commit (txid) was
    │                         accepted before
    ├── DuplicateTransaction  a coin transaction with this txid was           -> none: the service
    │                         accepted before                                    answers its txid
    ├── UnknownObject         no block, entry or transaction under that key   -> ObjectNotFound (-32008)
    ├── UnknownChain          no chain with that id                           -> MissingChainHead (-32009)
    └── StoreError            (also RuntimeError; ``ledger.node.store``) a    -> InternalError (-32603)
        │                     write the store could not complete
        └── SchemaMismatch    the database holds another schema version

A receipt asked for an entry that no directory block records yet is refused by the
``receipt`` handler itself (``ReceiptCreationError``, -32010); a block that does not hold
the entry is ``ledger.core.receipt.NotInBlockError``.
"""

from __future__ import annotations


class NodeError(Exception):
    """Root of the ``ledger.node`` package's errors: the rules' and the store's."""


class RuleViolation(NodeError):
    """A message that parses but breaks a ledger rule (docs/formats.md §1.4, §2.4, §4.3)."""


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


class DuplicateCommit(NodeError):
    """A commit for the same entry hash with equal or greater credits is already pending,
    or this exact commit (same txid) was accepted before (docs/formats.md §2.4).

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

"""What an error answered by the wallet or node means for an accepted write (pure).

The worker's submitter (``ledger.api.outbox.submitter``) sends three calls per write: the
wallet's ``compose-*``, then the node's ``commit-*`` and ``reveal-*``
(docs/jsonrpc.md §4.3, §5.2). An error object answered for one of them is one of:

==============  ===========================================================  ==============
kind            what the wallet or node said                                 the write
==============  ===========================================================  ==============
``unfunded``    commit, -32602 ``entry credit balance B is less than the C   held at
                credits committed`` (docs/formats.md §2.4, rule 5): the      ``multi_az``;
                paying address runs dry                                      no attempt used
``permanent``   commit or reveal, -32602 about the message itself (invalid   ``failed`` at
                entry, commit or signature, bad params), or -32600 / -32700: once
                sending the same write again is refused again
``transient``   anything else: compose refusals (wallet locked, key not      retried with
                found: the wallet's state), -32603 (disk full, database      back-off;
                error), -32008/-32009, the commit's time window, the cap on  ``failed``
                held reveals (docs/jsonrpc.md §4.3 rules 4-5, §7)            after
                                                                             ``max_attempts``
==============  ===========================================================  ==============

Outages (no answer at all) are not refusals: ``GatewayUnavailable`` leaves every row as
it was. The node words its -32602 refusals in ``data`` (docs/jsonrpc.md §7); the
under-funded text is matched exactly as the node's rules write it, and a contract test
(``tests/ledger/api/test_refusals.py``) runs the node's own rule to keep the two in step.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Literal

from ledger.api.outbox.gateway import RpcFailure
from ledger.jsonrpc.codes import ErrorCode

__all__ = ["Refusal", "RefusalKind", "Step", "classify"]

Step = Literal["compose", "commit", "reveal"]

#: The node's under-funded commit (``ledger/node/rules.py``, commit rule 5).
_UNFUNDED = re.compile(
    r"entry credit balance (?P<balance>\d+) is less than the (?P<credits>\d+) credits committed"
)
#: -32602 answers about the node's state at the time, not about the write: the commit's
#: timestamp window (a new composition has a new timestamp) and the cap on held reveals.
_TRANSIENT_RULES = (
    re.compile(r"minutes from the node clock"),
    re.compile(r"too many reveals are waiting"),
)
_MALFORMED = frozenset({ErrorCode.INVALID_REQUEST, ErrorCode.PARSE_ERROR})


class RefusalKind(enum.StrEnum):
    """How the worker treats a refusal (module table)."""

    UNFUNDED = "unfunded"
    PERMANENT = "permanent"
    TRANSIENT = "transient"


@dataclass(frozen=True)
class Refusal:
    """One classified error answer.

    Attributes:
        kind: the class (module table).
        step: the call that was refused.
        text: ``"<step>: <code> <message> (<data>)"``, for logs and failure reasons.
        balance_ec, needed_ec: for ``unfunded``, the balance and the credits of the commit
            as the node gave them; ``None`` otherwise.
    """

    kind: RefusalKind
    step: Step
    text: str
    balance_ec: int | None = None
    needed_ec: int | None = None


def classify(step: Step, failure: RpcFailure) -> Refusal:
    """The kind of ``failure``, answered for the ``step`` call of one write (module table)."""
    text = f"{step}: {failure.describe()}"
    detail = failure.data if isinstance(failure.data, str) else ""
    if step == "compose":
        return Refusal(RefusalKind.TRANSIENT, step, text)
    if failure.code == ErrorCode.INVALID_PARAMS:
        unfunded = _UNFUNDED.search(detail) if step == "commit" else None
        if unfunded is not None:
            balance, needed = int(unfunded["balance"]), int(unfunded["credits"])
            return Refusal(RefusalKind.UNFUNDED, step, text, balance, needed)
        if any(rule.search(detail) for rule in _TRANSIENT_RULES):
            return Refusal(RefusalKind.TRANSIENT, step, text)
        return Refusal(RefusalKind.PERMANENT, step, text)
    if failure.code in _MALFORMED:
        return Refusal(RefusalKind.PERMANENT, step, text)
    return Refusal(RefusalKind.TRANSIENT, step, text)

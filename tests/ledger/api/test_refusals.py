"""Refusals of wallet and node, classified (``ledger.api.outbox.refusals``).

The contract tests run the node's own rules (``ledger.node.rules``) and its JSON-RPC
rendering (``ledger.node.handlers.errors``), so a change of the node's wording that the
API would no longer recognise fails here, not in production.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from ledger.api.outbox.gateway import RpcFailure
from ledger.api.outbox.refusals import RefusalKind, Step, classify
from ledger.core.commit import CommitEntry
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey
from ledger.jsonrpc.errors import InvalidParams, JsonRpcError
from ledger.node.errors import HeldRevealLimit
from ledger.node.handlers.errors import node_errors
from ledger.node.process_list import ProcessList
from ledger.node.rules import LedgerRules

NOW_MS = 1_700_000_000_000
KEY = SigningKey.from_seed(bytes([3]) * 32)
ENTRY = Entry(bytes(32), (b"refusals",), b"x" * 1500)  # 2 credits


def rules(credits: int) -> LedgerRules:
    made = LedgerRules(
        ec_rate=1000,
        commit_window_ms=3_600_000,
        known_chain=lambda _c: True,
        process_list=ProcessList(height=1, start_s=NOW_MS / 1000),
    )
    made.ec_balances[KEY.public_key] = credits
    return made


def node_answer(action: Callable[[], object]) -> RpcFailure:
    """The error object the node's JSON-RPC layer answers for ``action``'s refusal."""
    with pytest.raises(JsonRpcError) as raised, node_errors():
        action()
    return RpcFailure.of(raised.value)


def test_the_nodes_under_funded_commit_is_recognised_with_its_figures() -> None:
    commit = CommitEntry.create(KEY, ENTRY, timestamp_ms=NOW_MS)
    answer = node_answer(lambda: rules(1).accept_commit(commit, now_ms=NOW_MS))
    refusal = classify("commit", answer)
    assert refusal.kind is RefusalKind.UNFUNDED
    assert (refusal.balance_ec, refusal.needed_ec) == (1, 2)
    assert refusal.text.startswith("commit: -32602 Invalid params (entry credit balance 1")


def test_the_nodes_time_window_and_held_reveal_cap_are_transient() -> None:
    late = CommitEntry.create(KEY, ENTRY, timestamp_ms=NOW_MS + 2 * 3_600_000)
    window = node_answer(lambda: rules(100).accept_commit(late, now_ms=NOW_MS))
    assert classify("commit", window).kind is RefusalKind.TRANSIENT

    def capped() -> None:
        raise HeldRevealLimit(10, 1000, 10, 1000)

    assert classify("reveal", node_answer(capped)).kind is RefusalKind.TRANSIENT


def test_a_commit_with_a_broken_signature_is_refused_for_good() -> None:
    commit = CommitEntry.create(KEY, ENTRY, timestamp_ms=NOW_MS)
    signature = bytearray(commit.signature)
    signature[0] ^= 1
    forged = dataclasses.replace(commit, signature=bytes(signature))
    answer = node_answer(lambda: rules(100).accept_commit(forged, now_ms=NOW_MS))
    refusal = classify("commit", answer)
    assert refusal.kind is RefusalKind.PERMANENT
    assert "invalid commit signature" in refusal.text


@pytest.mark.parametrize(
    ("step", "failure", "kind"),
    [
        ("reveal", RpcFailure.of(InvalidParams("Invalid Entry: truncated")), "permanent"),
        ("commit", RpcFailure(-32600, "Invalid Request"), "permanent"),
        ("reveal", RpcFailure(-32700, "Parse error"), "permanent"),
        ("commit", RpcFailure(-32603, "Internal error", "disk full: retry later"), "transient"),
        ("reveal", RpcFailure(-32009, "Missing Chain Head"), "transient"),
        ("commit", RpcFailure(-32601, "Method not found"), "transient"),
        # the wallet's refusals are about its own state (locked, key not held): retried
        ("compose", RpcFailure(-32602, "Invalid params", "Wallet: address not found"), "transient"),
        ("compose", RpcFailure(-32001, "Wallet is locked"), "transient"),
        # an under-funded text only means it on a commit
        (
            "reveal",
            RpcFailure(
                -32602,
                "Invalid params",
                "entry credit balance 0 is less than the 1 credits committed",
            ),
            "permanent",
        ),
        ("commit", RpcFailure(-32602, "Invalid params", {"not": "text"}), "permanent"),
    ],
)
def test_classification_table(step: Step, failure: RpcFailure, kind: str) -> None:
    refusal = classify(step, failure)
    assert refusal.kind == kind
    assert refusal.step == step and refusal.text.startswith(f"{step}: {failure.code} ")
    assert refusal.balance_ec is None and refusal.needed_ec is None

"""``__all__`` of the anchoring modules and of the ``verify`` command: what the lead and
the pipeline code against. A change here is a change of the public surface. (The proof
modules, now in ``ledger.core``, are listed in ``tests/ledger/core/test_exported_members.py``.)"""

from __future__ import annotations

import importlib

import pytest

EXPECTED = {
    "ledger.anchor.backend": {
        "AnchorBackend",
        "AnchorBackendError",
        "EmbeddedPowBackend",
        "Inclusion",
        "InclusionProof",
        "NotConfirmed",
    },
    "ledger.anchor.bitcoin_rpc": {"NETWORKS", "BitcoinRpcBackend", "chain_name"},
    "ledger.anchor.legacy_tx": {"legacy_serialization"},
    "ledger.anchor.app": {"AnchorRuntime", "build_runtime", "create_app"},
    "ledger.anchor.export": {"fetch_bundle"},
    "ledger.anchor.chain": {"BlockInfo", "MiningExhausted", "PowChain", "TxLocation", "mine"},
    "flows.cli.proof_check": {"hash_file", "load_tsa_trust", "read_policy", "verify_command"},
    "ledger.anchor.timestamping": {
        "RETRY_BASE_S",
        "RETRY_MAX_S",
        "STALE_ATTEMPTS",
        "StampRound",
        "TsaAccess",
        "TsaRequester",
        "add_timestamp_observability",
        "public_url",
        "tsa_access",
    },
    "ledger.anchor.timestamp_store": {"StoredToken", "TimestampStore", "WaitingStamp"},
    "ledger.anchor.timestamp_rpc": {"register_timestamp_methods"},
    "ledger.anchor.ots_calendar": {
        "ACCEPT",
        "HEADER_BYTES",
        "MAX_ANSWER_BYTES",
        "NONCE_BYTES",
        "CalendarClient",
        "CalendarError",
        "HeaderSource",
        "PendingPoint",
        "bitcoin_points",
        "merge_at_tip",
        "new_stamp",
        "pending_points",
        "stamp_tip",
    },
    "ledger.anchor.ots_store": {"OtsRow", "OtsState", "OtsStore"},
    "ledger.anchor.ots_stamping": {
        "RETRY_BASE_S",
        "RETRY_MAX_S",
        "STALE_ATTEMPTS",
        "UPGRADE_BASE_S",
        "UPGRADE_MAX_S",
        "OtsAccess",
        "OtsRound",
        "OtsStamper",
        "add_ots_observability",
        "ots_access",
    },
}


@pytest.mark.parametrize("module_name", sorted(EXPECTED))
def test_all_lists_the_public_surface(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert set(module.__all__) == EXPECTED[module_name]
    assert all(hasattr(module, name) for name in module.__all__)
    assert len(module.__all__) == len(set(module.__all__))


def test_the_proof_module_pulls_in_no_io() -> None:
    """The shared verifier stays pure: importing it loads no storage or HTTP modules of ours."""
    import subprocess
    import sys

    code = (
        "import sys, ledger.core.proof.bundle, ledger.core.proof.verify;"
        "bad=[m for m in sys.modules if m.startswith(('ledger.anchor.chain','ledger.anchor.app',"
        "'ledger.anchor.service','ledger.node','httpx','sqlite3'))];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr

"""``__all__`` of the core modules this layer's users code against, and the core's import
rule: ``ledger.core`` loads no service package, no HTTP and no database module."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import ledger.core

EXPECTED = {
    "ledger.core.timestamps.errors": {"Check", "OtsError", "TimestampError", "TimestampRejected"},
    "ledger.core.timestamps.ots": {
        "BITCOIN_MAINNET_GENESIS",
        "OtsAttestation",
        "OtsCheck",
        "attested_heights",
        "check_ots",
        "ots_file",
        "parse_ots",
    },
    "ledger.core.proof.checkpoints": {
        "BITCOIN_MAINNET_CHECKPOINTS",
        "MIN_PERIOD_WORK",
        "RETARGET_INTERVAL",
        "TIME_SLACK_S",
        "Checkpoint",
        "Checkpoints",
        "Placement",
        "bitcoin_mainnet_checkpoints",
        "block_work",
    },
    "ledger.core.timestamps.rfc3161": {
        "TimestampVerdict",
        "build_request",
        "response_from_token",
        "token_from_response",
        "verify_response",
        "verify_token",
    },
    "ledger.core.timestamps.tsa_chain": {
        "TsaTrust",
        "check_carried_certificates",
        "check_signer_certificate",
    },
    "ledger.core.timestamps.bundle_part": {
        "OtsStamp",
        "Rfc3161Token",
        "TimestampCheck",
        "TimestampsPart",
        "check_timestamps",
        "token_certificates",
        "tokens_from_answer",
    },
    "ledger.core.errors": {
        "AddressError",
        "DecodeError",
        "LedgerFormatError",
        "LimitError",
        "MerkleProofError",
        "NotInBlockError",
        "PositionError",
        "SignatureError",
    },
    "ledger.core.hexbytes": {
        "Hash32",
        "from_hex",
        "from_hex_list",
        "hash32_from_hex",
        "hex_or_none",
        "is_hash_hex",
        "to_hex",
    },
    "ledger.core.pow.encoding": {
        "LEReader",
        "decode_compact_size",
        "encode_compact_size",
        "from_display_hex",
        "to_display_hex",
    },
    "ledger.core.pow.header": {
        "BlockHeader",
        "HEADER_BYTES",
        "bits_to_target",
        "difficulty_target",
        "target_to_bits",
    },
    "ledger.core.pow.merkle": {"merkle_path", "merkle_root", "root_from_path"},
    "ledger.core.pow.params": {
        "DEV_POW_CHAIN_NAME",
        "DEV_POW_CONFIRMATIONS",
        "DEV_POW_DIFFICULTY_BITS",
        "PowParams",
    },
    "ledger.core.pow.work": {"PowFunction", "block_work", "meets_target", "pow_hash"},
    "ledger.core.pow.tx": {
        "NULL_TXID",
        "OP_RETURN",
        "PowTransaction",
        "TxIn",
        "TxOut",
        "anchor_transaction",
        "coinbase_transaction",
        "op_return_data",
        "op_return_script",
    },
    "ledger.core.proof.anchor_steps": {
        "check_anchor_inclusion",
        "check_anchor_payload",
        "check_contract",
        "check_headers",
        "check_links",
        "check_proof_of_work",
        "work_report",
    },
    "ledger.core.proof.bundle": {
        "BUNDLE_FORMAT",
        "BUNDLE_VERSIONS",
        "Aggregation",
        "AnchorPart",
        "ContractPart",
        "Node",
        "ProofBundle",
        "ReceiptPart",
        "TxProof",
        "build_bundle",
    },
    "ledger.core.proof.document_steps": {
        "check_aggregation",
        "check_commitment",
        "check_entry",
        "check_file_hash",
    },
    "ledger.core.proof.ledger_steps": {
        "check_directory_block",
        "check_receipt",
        "directory_block_report",
    },
    "ledger.core.proof.policy": {
        "DEVNET",
        "SHIPPED",
        "PolicyError",
        "TrustPolicy",
        "policy_for_chain",
        "policy_named",
    },
    "ledger.core.proof.steps": {"ProofError", "Step", "StepReport"},
    "ledger.core.proof.verdict": {"Verdict", "format_utc"},
    "ledger.core.proof.verify": {"verify_bundle"},
    "ledger.core.receipt": {
        "NodeMemo",
        "Receipt",
        "ReceiptError",
        "build_receipt",
        "directory_branch",
        "verify_receipt",
    },
    "ledger.core.block_receipts": {"BlockReceipts"},
}


@pytest.mark.parametrize("module_name", sorted(EXPECTED))
def test_all_lists_the_public_surface(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert set(module.__all__) == EXPECTED[module_name]
    assert all(hasattr(module, name) for name in module.__all__)
    assert len(module.__all__) == len(set(module.__all__))


def test_the_core_imports_no_service_and_no_io() -> None:
    """Importing every ``ledger.core`` module loads none of the services, HTTP or SQL."""
    modules = [m.name for m in pkgutil.walk_packages(ledger.core.__path__, "ledger.core.")]
    assert "ledger.core.proof.verify" in modules and "ledger.core.pow.tx" in modules
    forbidden = (
        "ledger.node", "ledger.wallet", "ledger.api", "ledger.anchor", "ledger.jsonrpc",
        "ledger.stack", "connectors", "tasks", "flows", "httpx", "sqlite3", "sqlalchemy",
    )  # fmt: skip
    code = (
        f"import importlib, sys\nfor name in {modules!r}: importlib.import_module(name)\n"
        f"bad = sorted(m for m in sys.modules if m.startswith({forbidden!r}))\n"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_reading_and_writing_bundles_loads_no_cms_or_ots_code() -> None:
    """The processes that only read or write bundles (the API, the pipeline) do not pay for
    the CMS, X.509 and OpenTimestamps libraries; the checks load them when they run."""
    heavy = ("asn1crypto", "cryptography", "opentimestamps")
    code = (
        "import sys, ledger.core.proof.bundle, ledger.core.timestamps.bundle_part\n"
        f"bad = sorted({{m.split('.')[0] for m in sys.modules if m.startswith({heavy!r})}})\n"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr

"""``notary verify`` with OpenTimestamps stamps: a line per stamp, every anchor in one
place with the overall date, and exit code 1 for an invalid stamp."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from flows.cli.exit_codes import ExitCode
from flows.cli.proof_check import verify_command
from flows.cli.proof_export import ExportOutcome, write_timestamp_files
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.policy import TrustPolicy
from ledger.core.timestamps.bundle_part import OtsStamp
from ledger.core.timestamps.ots import ots_file
from tests.ledger.anchor.bundles import DOCUMENT, Forged, forge_bundle
from tests.ledger.core.ots_stamps import attested_over, pending_over, with_stamps


@pytest.fixture(scope="module")
def forged() -> Forged:
    return forge_bundle()


def _run(tmp_path: Path, bundle: ProofBundle, policy: TrustPolicy) -> tuple[int, str]:
    document, proof = tmp_path / "doc.txt", tmp_path / "doc.proof.json"
    document.write_bytes(DOCUMENT)
    proof.write_text(bundle.dumps())
    out = io.StringIO()
    code = verify_command(document, proof, policy=policy, console=Console(file=out, width=300))
    return code, out.getvalue()


def test_notary_verify_prints_the_stamps_and_all_anchors(tmp_path: Path, forged: Forged) -> None:
    root = forged.bundle.receipt.directory_block_keymr
    ots, header = attested_over(root, 500_000)
    bundle = with_stamps(
        forged, OtsStamp(ots, (header,)), OtsStamp(ots_file(pending_over(root)), ())
    )
    code, text = _run(tmp_path, bundle, forged.policy)
    assert code == ExitCode.OK
    assert "placed under policy bitcoin-mainnet" in text
    assert "stamp 1: unverifiable" in text and "stamp 2: pending" in text
    assert "All anchors of this proof:" in text
    assert "chain anchor (notary-devnet-pow): verified (not independent" in text
    assert "No independent anchor verifies" in text


def test_notary_verify_fails_on_an_invalid_stamp(tmp_path: Path, forged: Forged) -> None:
    ots, header = attested_over(hashlib.sha256(b"another root").digest(), 500_000)
    code, text = _run(tmp_path, with_stamps(forged, OtsStamp(ots, (header,))), forged.policy)
    assert code == ExitCode.INCOMPLETE
    assert "stamp 1: invalid" in text and "not the root" in text


def test_export_writes_each_stamp_as_a_standard_ots_file_beside_the_bundle(
    tmp_path: Path, forged: Forged
) -> None:
    root = forged.bundle.receipt.directory_block_keymr
    first, second = ots_file(pending_over(root)), attested_over(root, 500_000)[0]
    bundle = with_stamps(forged, OtsStamp(first, ()), OtsStamp(second, ()))
    bundle_file = tmp_path / "doc.txt.1.proof.json"
    bundle_file.write_text(bundle.dumps())
    outcome = ExportOutcome()
    write_timestamp_files(outcome, bundle_file, bundle)
    names = [p.name for p in outcome.ots_files]
    assert names == ["doc.txt.1.proof.json.ots", "doc.txt.1.proof.json.2.ots"]
    assert outcome.ots_files[0].read_bytes() == first
    again = ExportOutcome()
    write_timestamp_files(again, bundle_file, bundle)  # the same bytes: left as they are
    assert again.ots_files == [] and again.refused == []
    outcome.ots_files[1].write_bytes(b"other")
    write_timestamp_files(again, bundle_file, bundle)  # never over another file
    assert len(again.refused) == 1 and outcome.ots_files[1].read_bytes() == b"other"
    ots_bin = Path(sys.executable).parent / "ots"
    done = subprocess.run(
        [str(ots_bin), "info", str(outcome.ots_files[0])],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and f"File sha256 hash: {root.hex()}" in done.stdout

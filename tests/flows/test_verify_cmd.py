"""``verify_command`` (behind ``notary verify FILE --proof BUNDLE``): numbered steps, exit codes."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from flows.cli.exit_codes import ExitCode
from flows.cli.proof_check import hash_file, verify_command
from ledger.core.hashing import sha256
from tests.ledger.anchor.bundles import DOCUMENT, Forged, forge_bundle


@pytest.fixture(scope="module")
def forged() -> Forged:
    return forge_bundle()


def run(file: Path, proof: Path, forged: Forged) -> tuple[int, str]:
    out = io.StringIO()
    code = verify_command(file, proof, policy=forged.policy, console=Console(file=out, width=300))
    return code, out.getvalue()


@pytest.fixture
def files(tmp_path: Path, forged: Forged) -> tuple[Path, Path]:
    document = tmp_path / "report.txt"
    document.write_bytes(DOCUMENT)
    proof = tmp_path / "report.txt.proof.json"
    proof.write_text(forged.bundle.dumps())
    return document, proof


def test_every_step_is_printed_in_order_and_the_exit_code_is_zero(
    files: tuple[Path, Path], forged: Forged
) -> None:
    code, text = run(*files, forged)
    assert code == ExitCode.OK
    numbers = [int(m) for m in re.findall(r"^\s+(\d+) ✓", text, flags=re.MULTILINE)]
    assert numbers == [0, 1, *range(4, 12)]
    skipped = re.findall(r"^\s+(\d+) - (\w+)\s+(.*)$", text, flags=re.MULTILINE)
    version_1 = "version 1: the entry carries the document hash itself"
    assert skipped == [("2", "commitment", version_1), ("3", "aggregation", version_1)]
    assert "Verified" in text


@pytest.mark.parametrize("private", ["aggregated", "document"])
def test_a_version_2_bundle_shows_its_commitment_and_aggregation_steps(
    tmp_path: Path, private: str
) -> None:
    v2 = forge_bundle(private=private)  # type: ignore[arg-type]
    document = tmp_path / "report.txt"
    document.write_bytes(DOCUMENT)
    proof = tmp_path / "report.txt.proof.json"
    proof.write_text(v2.bundle.dumps())
    code, text = run(document, proof, v2)
    assert code == ExitCode.OK, text
    numbers = [int(m) for m in re.findall(r"^\s+(\d+) ✓", text, flags=re.MULTILINE)]
    assert numbers == [s for s in range(12) if not (s == 3 and private == "document")]
    assert re.search(r"^\s+2 ✓ commitment\s+commitment [0-9a-f]{64}", text, flags=re.MULTILINE)


def test_another_file_fails_at_step_one(files: tuple[Path, Path], forged: Forged) -> None:
    document, proof = files
    document.write_bytes(DOCUMENT + b"!")
    code, text = run(document, proof, forged)
    assert code == ExitCode.INCOMPLETE
    assert re.search(r"^\s+1 ✗ file hash", text, flags=re.MULTILINE)
    assert "expected" in text and "computed" in text and "failed at step 1" in text


def test_a_forged_bundle_fails_at_its_step(files: tuple[Path, Path], forged: Forged) -> None:
    document, proof = files
    obj = json.loads(proof.read_text())
    obj["anchor"]["tx_index"] ^= 1
    proof.write_text(json.dumps(obj))
    code, text = run(document, proof, forged)
    assert code == ExitCode.INCOMPLETE
    passed = [int(m) for m in re.findall(r"^\s+(\d+) ✓", text, flags=re.MULTILINE)]
    assert passed == [0, 1, 4, 5, 6, 7]
    assert "failed at step 8" in text


def test_a_bundle_that_is_not_json_fails_at_step_zero(
    files: tuple[Path, Path], forged: Forged
) -> None:
    document, proof = files
    proof.write_text(forged.bundle.dumps() + "trailing")
    code, text = run(document, proof, forged)
    assert code == ExitCode.INCOMPLETE and "failed at step 0" in text


def test_missing_files_are_usage_errors(
    tmp_path: Path, files: tuple[Path, Path], forged: Forged
) -> None:
    document, proof = files
    assert run(tmp_path / "nope", proof, forged)[0] == ExitCode.USAGE
    assert run(document, tmp_path / "nope.json", forged)[0] == ExitCode.USAGE


def test_hash_file_streams(tmp_path: Path) -> None:
    big = tmp_path / "big"
    data = bytes(range(256)) * 9000
    big.write_bytes(data)
    assert hash_file(big) == sha256(data)

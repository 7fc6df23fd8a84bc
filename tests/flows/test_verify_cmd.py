"""``verify_command`` (behind ``notary verify FILE --proof BUNDLE``): numbered steps, exit codes."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from flows.cli.application import app
from flows.cli.exit_codes import ExitCode
from flows.cli.proof_check import hash_file, read_policy, verify_command
from ledger.core.hashing import sha256
from ledger.core.proof.policy import DEVNET, SHIPPED, PolicyError
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


# -- the trust policy ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def devnet_bundle() -> Forged:
    return forge_bundle(chain=DEVNET.chain, headers=DEVNET.confirmations)


def _write(tmp_path: Path, bundle_text: str) -> tuple[Path, Path]:
    document = tmp_path / "report.txt"
    document.write_bytes(DOCUMENT)
    proof = tmp_path / "report.txt.proof.json"
    proof.write_text(bundle_text)
    return document, proof


def test_without_a_policy_the_bundles_chain_names_it_and_the_output_says_so(
    tmp_path: Path, devnet_bundle: Forged
) -> None:
    out = io.StringIO()
    document, proof = _write(tmp_path, devnet_bundle.bundle.dumps())
    code = verify_command(document, proof, policy=None, console=Console(file=out, width=300))
    text = out.getvalue()
    assert code == ExitCode.OK, text
    assert (
        "Policy devnet: assumed from the bundle's chain 'notary-devnet-pow' (no --policy given)."
        in text
    )
    assert "Verified under policy devnet: every step holds, but this chain is not independent" in (
        text
    )
    assert "the operator's own chain: not independent evidence" in text
    assert "existed no later than 2023-11-14 22:13:20 UTC (the anchor block's header time)" in text
    assert "is the operator's claim, not the proof's" in text


def test_a_chain_no_shipped_policy_names_needs_policy(
    tmp_path: Path, devnet_bundle: Forged
) -> None:
    unknown = devnet_bundle.bundle.to_json()
    unknown["anchor"]["chain"] = "dogecoin"
    out = io.StringIO()
    document, proof = _write(tmp_path, json.dumps(unknown))
    code = verify_command(document, proof, policy=None, console=Console(file=out, width=300))
    assert code == ExitCode.USAGE
    assert "no shipped policy trusts chain 'dogecoin': pass --policy" in out.getvalue()


def test_notary_verify_policy_by_name_or_file(tmp_path: Path, devnet_bundle: Forged) -> None:
    document, proof = _write(tmp_path, devnet_bundle.bundle.dumps())
    runner = CliRunner()
    mainnet = runner.invoke(
        app, ["verify", str(document), "--proof", str(proof), "--policy", "bitcoin-mainnet"]
    )
    assert mainnet.exit_code == ExitCode.INCOMPLETE, mainnet.output
    assert "Policy bitcoin-mainnet (given with --policy)." in mainnet.output
    assert "under policy bitcoin-mainnet" in mainnet.output
    policy_file = tmp_path / "mine.json"
    policy_file.write_text(json.dumps(replace(DEVNET, name="my-devnet").to_json()))
    mine = runner.invoke(
        app, ["verify", str(document), "--proof", str(proof), "--policy", str(policy_file)]
    )
    assert mine.exit_code == ExitCode.OK, mine.output
    assert "Verified under policy my-devnet" in mine.output
    unknown = runner.invoke(
        app, ["verify", str(document), "--proof", str(proof), "--policy", "bitcoin"]
    )
    assert unknown.exit_code == ExitCode.USAGE
    assert "no policy named 'bitcoin'" in unknown.output


def test_read_policy_refuses_a_bad_policy_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x"')
    with pytest.raises(PolicyError, match="policy file"):
        read_policy(str(bad))
    bad.write_text(json.dumps(DEVNET.to_json() | {"trust": "all"}))
    with pytest.raises(PolicyError, match="unknown policy keys: trust"):
        read_policy(str(bad))
    assert read_policy("litecoin-mainnet") is SHIPPED["litecoin-mainnet"]

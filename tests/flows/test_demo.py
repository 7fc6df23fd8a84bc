"""``notary demo`` on a small folder: notarized, anchored, proofs exported, a check shown.

The demo runs in this process (Typer's runner) against its own stack on free ports, with
the test Prefect server. Its ending must show the three stages and a proof a newcomer can
check at once: the printed ``notary verify`` command passes, the printed ``file://`` page
is the verification page, and the page URL names the publishing API's ``/verify``. Its
local test timestamp authority (OpenSSL's) is named as one, and the printed ``openssl ts
-verify`` command accepts the exported ``.tsr``; without ``openssl`` the demo says so and
runs without it.
"""

from __future__ import annotations

import io
import re
import shlex
import stat
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import pytest
from rich.console import Console
from typer.testing import CliRunner

from flows.cli import app
from flows.cli.exit_codes import ExitCode
from flows.cli.proof_check import verify_command
from ledger.core.proof.bundle import ProofBundle
from ledger.core.verify_page import render_verify_page
from tests.harness.ports import free_port
from tests.harness.tsa import openssl

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

DOCUMENTS = {f"doc-{i}.txt": f"the demo's document {i}\n".encode() for i in range(3)}


@pytest.fixture
def ports(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The stack's ports, free ones, as ``notary demo`` reads them (``NOTARY_STACK_*``)."""
    chosen = {name: free_port() for name in ("NODE", "WALLET", "API", "ANCHOR")}
    for name, port in chosen.items():
        monkeypatch.setenv(f"NOTARY_STACK_{name}_PORT", str(port))
    for name in ("NOTARY_API_URL", "NOTARY_NODE_URL", "NOTARY_ANCHOR_URL", "NOTARY_AUDIT_DB_URL"):
        monkeypatch.delenv(name, raising=False)
    return chosen


def test_demo_ends_with_anchored_proofs_and_the_ways_to_check_one(
    tmp_path: Path, ports: dict[str, int]
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, data in DOCUMENTS.items():
        (folder / name).write_bytes(data)
    data_dir = tmp_path / "data"
    openssl()  # the demo finds it on PATH (installed here when missing)
    args = ["demo", str(folder), "--data-dir", str(data_dir), "--block-time", "1"]
    result = CliRunner().invoke(app, [*args, "--anchor-wait", "240"], env={"COLUMNS": "400"})
    text = result.output
    assert result.exit_code == ExitCode.OK, text
    assert "RFC 3161 tokens from a LOCAL TEST AUTHORITY (not independent evidence)" in text

    assert "waiting for the anchor stage" in text
    assert re.search(r"^anchored 3 of 3$", text, flags=re.MULTILINE), text
    assert "3 documents anchored in" in text
    proofs = data_dir / "proofs"
    assert f"Wrote 3 proof bundles and the verification page to {proofs} in " in text

    command = next(line.strip() for line in text.splitlines() if "notary verify " in line)
    argv = shlex.split(command)
    assert argv[:2] == ["notary", "verify"] and argv[3] == "--proof"
    document, bundle = Path(argv[2]), Path(argv[4])
    assert document.parent == folder and document.name in DOCUMENTS
    assert bundle.is_relative_to(proofs) and bundle.name.startswith(document.name + ".")
    assert bundle.name.endswith(".proof.json")  # <name>.<time>-<sha256 prefix>.proof.json
    out = io.StringIO()
    assert (
        verify_command(document, bundle, policy=None, console=Console(file=out, width=200)) == 0
    ), out
    assert ProofBundle.loads(bundle.read_text()).document_sha256.hex() in out.getvalue()

    page_uri = next(line.strip() for line in text.splitlines() if "file://" in line)
    page = Path(urlparse(page_uri).path)
    assert page == (proofs / "verify.html").resolve()
    assert page.read_text(encoding="utf-8") == render_verify_page()
    assert f"http://127.0.0.1:{ports['API']}/verify" in text

    # The shown proof's token, from the LOCAL TEST AUTHORITY, checks with OpenSSL as printed.
    assert "from the demo's LOCAL TEST AUTHORITY (not independent evidence)" in text
    line = next(line.strip() for line in text.splitlines() if "openssl ts -verify" in line)
    command = shlex.split(line)
    assert command[command.index("-in") + 1] == f"{bundle}.tsr"
    ca_file = Path(command[command.index("-CAfile") + 1])
    assert ca_file == data_dir / "local-tsa" / "ca.pem"
    assert stat.S_IMODE(ca_file.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((ca_file.parent / "tsa.key").stat().st_mode) == 0o600
    done = subprocess.run([openssl(), *command[1:]], capture_output=True, text=True)
    assert done.returncode == 0 and "Verification: OK" in done.stdout, done


def test_demo_without_waiting_for_anchors_stops_after_the_summary(
    tmp_path: Path, ports: dict[str, int]
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "one.txt").write_bytes(b"one\n")
    (folder / "link.txt").symlink_to(folder / "one.txt")
    data_dir = tmp_path / "data"
    args = ["demo", str(folder), "--data-dir", str(data_dir), "--block-time", "1"]
    result = CliRunner().invoke(app, [*args, "--anchor-wait", "0"], env={"COLUMNS": "400"})
    assert result.exit_code == ExitCode.OK, result.output
    assert "waiting for the anchor stage" not in result.output
    assert not (data_dir / "proofs").exists()
    # The default aggregate mode: one document, the collection's new chain (1 + 10 EC) and
    # one batch entry (1 EC); the refused link in one line that names its list.
    lines = [" ".join(line.split()) for line in result.output.splitlines()]
    assert "│ published now │ 1 │" in lines and "│ ledger entries written │ 2 │" in lines
    assert "│ entry credits spent (EC) │ 12 │" in lines
    listed = data_dir / "runs" / "refused-run-1.txt"
    note = f"note: 1 entries refused (links, special files, unreadable); the list is in {listed}"
    assert [line for line in lines if line.startswith("note:")] == [note]
    assert listed.read_text(encoding="utf-8").startswith("link.txt\t")


def test_demo_without_openssl_runs_without_a_timestamp_authority_and_says_so(
    tmp_path: Path, ports: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A test double of a machine without the openssl command: its lookup finds nothing.
    monkeypatch.setattr("ledger.stack.find_openssl", lambda: None)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "one.txt").write_bytes(b"one\n")
    data_dir = tmp_path / "data"
    args = ["demo", str(folder), "--data-dir", str(data_dir), "--block-time", "1"]
    result = CliRunner().invoke(app, [*args, "--anchor-wait", "0"], env={"COLUMNS": "400"})
    assert result.exit_code == ExitCode.OK, result.output
    text = " ".join(result.output.split())
    assert "note: no openssl command: the demo runs without a local test timestamp" in text
    assert "LOCAL TEST AUTHORITY" not in text
    assert not (data_dir / "local-tsa").exists()

"""RFC 3161 end to end: the bundled stack with OpenSSL's TSA, notarize, collect, export a
version-3 bundle and ``<bundle>.tsr``; ``openssl ts -verify`` and ``notary verify
--tsa-ca`` accept them; a token under another CA is refused by name."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from flows.cli.proof_check import verify_command
from flows.cli.proof_export import export_bundles
from flows.collect_proofs import collect_proofs
from flows.notarize_folder import notarize_folder
from flows.pipeline import open_services
from ledger.core.timestamps.tsa_chain import TsaTrust
from tests.harness.stack import running_stack, settings_for
from tests.harness.tsa import issue_tsa, openssl, tsa_server
from tests.harness.waiting import WaitTimeout, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def test_exported_tsr_verifies_with_openssl_and_notary_verify(tmp_path: Path) -> None:
    authority = issue_tsa(tmp_path / "tsa")
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"doc-{i}.txt").write_text(f"contract number {i}\n")
    with (
        tsa_server(authority) as tsa,
        running_stack(
            tmp_path / "data", tsa_urls=[f"{tsa.url}/tsr"], tsa_ca_file=authority.ca_file
        ) as stack,
    ):
        settings = settings_for(stack).model_copy(update={"publish_mode": "aggregate"})
        notarize_folder(str(folder), "stamped", settings, True)
        result: dict = {}

        def stamped() -> bool:
            result.clear()
            result.update(collect_proofs(settings, "stamped"))
            if result["stages"]["anchor"] != 3:
                return False
            with open_services(settings) as services:
                heights = {
                    r.notarization.dblock_height
                    for r in services.store.proofs.iter_records(collection="stamped")
                }
                return all(
                    (services.anchor.timestamps(h) or {}).get("rfc3161")
                    for h in heights
                    if h is not None
                )

        with contextlib.suppress(WaitTimeout):
            wait_until(stamped, 90, 1.0)
        assert result["stages"]["anchor"] == 3, result
        with open_services(settings) as services:
            outcome = export_bundles(services, tmp_path / "out", collection="stamped")
        requests = tsa.requests
    assert len(outcome.written) == 3 and not outcome.failed
    assert len(outcome.tokens) == 3
    bundle_file = outcome.written[0]
    bundle = json.loads(bundle_file.read_text())
    assert bundle["version"] == 3
    root = bundle["timestamps"]["root"]
    assert root == bundle["receipt"]["directoryblockkeymr"]
    # one request per directory block, never per document
    assert requests <= _blocks_anchored(tmp_path)

    tsr = bundle_file.with_name(bundle_file.name + ".tsr")
    done = subprocess.run(
        [openssl(), "ts", "-verify", "-digest", root, "-in", str(tsr),
         "-CAfile", str(authority.ca_file)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "Verification: OK" in done.stdout, done.stdout + done.stderr

    document = folder / outcome.sources[bundle_file]
    trust = TsaTrust.from_pem(authority.ca_file.read_bytes(), name="ca.pem")
    said = _said(document, bundle_file, trust)
    assert said[0] == 0
    assert "✓ token 1: CN=notary test TSA at" in said[1] and "trusted by ca.pem" in said[1]
    assert "existed no later than" in said[1]

    unchecked = _said(document, bundle_file, None)
    assert unchecked[0] == 0 and "present, not checked" in unchecked[1]

    other = issue_tsa(tmp_path / "other")
    untrusted = _said(
        document, bundle_file, TsaTrust.from_pem(other.ca_file.read_bytes(), name="other-ca.pem")
    )
    assert untrusted[0] == 1
    assert "✗ token 1: check 9 (chain)" in untrusted[1] and "other-ca.pem" in untrusted[1]


def _said(document: Path, bundle: Path, trust: TsaTrust | None) -> tuple[int, str]:
    buffer = io.StringIO()
    code = verify_command(
        document, bundle, policy=None, tsa_trust=trust, console=Console(file=buffer, width=200)
    )
    return int(code), buffer.getvalue()


def _blocks_anchored(tmp_path: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(tmp_path / "data" / "anchor" / "anchor.sqlite")
    try:
        return int(conn.execute("SELECT COUNT(*) FROM dblocks").fetchone()[0])
    finally:
        conn.close()

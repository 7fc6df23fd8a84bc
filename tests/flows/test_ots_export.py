"""OpenTimestamps through ``notary proof export``: the bundled stack anchors a block, the
anchoring service's answer is given an OpenTimestamps stamp over the block's KeyMR (by a
test double of the service's client: the real calendars and their storage are the
anchoring service's, tested beside it), and the export writes a version-3 bundle that
carries the stamp and ``<bundle>.ots``, which the stock ``ots`` client reads;
``notary verify`` lists the stamp as pending among the anchors."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from flows.cli.exit_codes import ExitCode
from flows.cli.proof_check import verify_command
from flows.cli.proof_export import export_bundles
from flows.collect_proofs import collect_proofs
from flows.notarize_folder import notarize_folder
from flows.pipeline import open_services
from flows.settings import PipelineSettings
from ledger.core.proof.policy import DEVNET
from ledger.core.timestamps.bundle_part import OtsStamp
from ledger.core.timestamps.ots import ots_file
from tests.harness.waiting import WaitTimeout, wait_until
from tests.ledger.core.ots_stamps import pending_over

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


class StampingAnchorDouble:
    """A test double of ``connectors.anchor.AnchorClient``: every call goes to the real
    client, and ``timestamps`` answers also carry one pending stamp over the KeyMR."""

    def __init__(self, real: Any, node: Any) -> None:
        self._real, self._node = real, node

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def timestamps(self, height: int) -> dict[str, Any]:
        answer = dict(self._real.timestamps(height) or {})
        keymr = bytes.fromhex(self._node.dblock_by_height(height)["dblock"]["keymr"])
        stamp = OtsStamp(ots_file(pending_over(keymr)), ())
        return answer | {"keymr": keymr.hex(), "opentimestamps": [stamp.to_json()]}


def test_export_writes_the_stamp_and_its_ots_file(
    tmp_path: Path, pipeline_settings: PipelineSettings, stack: object
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "doc.txt").write_text("a contract\n")
    settings = pipeline_settings.model_copy(
        update={"anchor_url": stack.settings.anchor_url}  # type: ignore[attr-defined]
    )
    notarize_folder(str(folder), "ots", settings, True)
    result: dict = {}

    def anchored() -> bool:
        result.clear()
        result.update(collect_proofs(settings, "ots"))
        return bool(result["stages"]["anchor"] == 1)

    with contextlib.suppress(WaitTimeout):
        wait_until(anchored, 90, 1.0)
    assert result["stages"]["anchor"] == 1, result
    with open_services(settings) as services:
        doubled = dataclasses.replace(
            services, anchor=StampingAnchorDouble(services.anchor, services.node)
        )
        outcome = export_bundles(doubled, tmp_path / "out", collection="ots")
    assert len(outcome.written) == 1 and not outcome.failed, outcome.failed
    bundle_file = outcome.written[0]
    bundle = json.loads(bundle_file.read_text())
    assert bundle["version"] == 3 and len(bundle["timestamps"]["opentimestamps"]) == 1
    root = bundle["receipt"]["directoryblockkeymr"]
    assert outcome.ots_files == [bundle_file.with_name(bundle_file.name + ".ots")]
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ots"), "info", str(outcome.ots_files[0])],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and f"File sha256 hash: {root}" in done.stdout

    out = io.StringIO()
    code = verify_command(
        folder / "doc.txt", bundle_file, policy=DEVNET, console=Console(file=out, width=300)
    )
    text = out.getvalue()
    assert code == ExitCode.OK, text
    assert "stamp 1: pending" in text and "OpenTimestamps stamp 1: pending" in text

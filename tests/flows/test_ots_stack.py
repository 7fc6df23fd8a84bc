"""OpenTimestamps end to end: the bundled stack with a calendar test double, an Esplora
header double (tests/harness/ots_calendar.py) and OpenSSL's TSA; notarize, collect: the
audit store and the report show the block's proof pending, then, once the calendar puts
it in a (fabricated, regtest-difficulty) Bitcoin block, ``Bitcoin block N``, beside the
TSA's token; the anchoring service holds the complete ``.ots`` and the header, the
exported bundles carry them and ``<bundle>.ots`` beside each, the offline check finds
them sound but never places the fabricated block ("unverifiable"), and one verdict lists
all three kinds of anchor."""

from __future__ import annotations

import base64
import contextlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from flows.cli.proof_check import verify_command
from flows.cli.proof_export import export_bundles
from flows.collect_proofs import collect_proofs
from flows.notarize_folder import notarize_folder
from flows.pipeline import open_services
from flows.settings import PipelineSettings
from ledger.anchor.ots_calendar import bitcoin_points
from ledger.core.proof.policy import policy_named
from ledger.core.timestamps.bundle_part import OtsStamp
from ledger.core.timestamps.ots import check_ots, parse_ots
from ledger.core.timestamps.tsa_chain import TsaTrust
from tasks.report import build_report, load_report_data
from tests.harness.ots_calendar import esplora, ots_calendar
from tests.harness.stack import running_stack, settings_for
from tests.harness.tsa import issue_tsa, tsa_server
from tests.harness.waiting import WaitTimeout, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

BITCOIN_HEIGHT = 812_345


def _column(settings: PipelineSettings, name: str = "opentimestamps") -> list[str]:
    with open_services(settings) as services:
        report = build_report(load_report_data(services.store), now=datetime.now(UTC))
    return list(report.documents[name])


def test_pending_then_bitcoin_in_the_report_and_three_anchors_in_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTARY_ANCHOR_OTS_UPGRADE_BASE_S", "0.2")
    monkeypatch.setenv("NOTARY_ANCHOR_OTS_UPGRADE_MAX_S", "0.5")
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"doc-{i}.txt").write_text(f"contract number {i}\n")
    authority = issue_tsa(tmp_path / "tsa")
    with (
        tsa_server(authority) as tsa,
        ots_calendar() as calendar,
        ots_calendar(fault="garbage") as garbage,
        esplora(calendar.headers) as headers,
        running_stack(
            tmp_path / "data",
            ots_calendars=[calendar.url, garbage.url],
            ots_headers_url=headers.url,
            tsa_urls=[f"{tsa.url}/tsr"],
            tsa_ca_file=authority.ca_file,
        ) as stack,
    ):
        settings = settings_for(stack).model_copy(update={"publish_mode": "aggregate"})
        notarize_folder(str(folder), "stamped", settings, True)

        def shown(text: str) -> bool:
            result = collect_proofs(settings, "stamped")
            return result["stages"]["anchor"] == 3 and _column(settings) == [text] * 3

        with contextlib.suppress(WaitTimeout):
            wait_until(lambda: shown("pending"), 90, 0.5)
        assert _column(settings) == ["pending"] * 3
        assert calendar.submissions >= 1

        header = calendar.confirm(BITCOIN_HEIGHT)
        with contextlib.suppress(WaitTimeout):
            wait_until(lambda: shown(f"Bitcoin block {BITCOIN_HEIGHT}"), 60, 0.5)
        assert _column(settings) == [f"Bitcoin block {BITCOIN_HEIGHT}"] * 3
        tokens = _column(settings, "rfc3161_timestamps")
        assert all(t.startswith("CN=notary test TSA at ") for t in tokens), tokens

        with open_services(settings) as services:
            (height,) = {
                r.notarization.dblock_height
                for r in services.store.proofs.iter_records(collection="stamped")
            }
            answer = services.anchor.timestamps(height)
            outcome = export_bundles(services, tmp_path / "out", collection="stamped")
    assert answer is not None and answer["final"] is True
    (element,) = answer["opentimestamps"]
    assert element["headers"] == [header.hex()]
    stamp_bytes = base64.b64decode(element["ots"])
    stamp = parse_ots(stamp_bytes)
    assert stamp.file_digest.hex() == answer["keymr"]
    ((block, merkle_root),) = bitcoin_points(stamp.timestamp)
    assert (block, merkle_root) == (BITCOIN_HEIGHT, header[36:68])
    assert answer["otsstatus"]["calendars"] == [calendar.url]  # the garbage one skipped

    # the bundles carry the complete .ots and the header; `notary proof export` wrote the
    # standard file beside each
    assert len(outcome.written) == 3 and not outcome.failed
    for bundle_file in outcome.written:
        part = json.loads(bundle_file.read_text())["timestamps"]
        assert part["opentimestamps"] == [element]
        assert bundle_file.with_name(bundle_file.name + ".ots").read_bytes() == stamp_bytes
    ots = OtsStamp.from_json(element)
    keymr = bytes.fromhex(answer["keymr"])
    regtest = check_ots(ots, keymr, policy=policy_named("bitcoin-regtest"))
    mainnet = check_ots(ots, keymr, policy=policy_named("bitcoin-mainnet"))
    # the op chain reaches the header and the header meets its own target (not "invalid");
    # mainnet has neither the work nor a checkpoint for it, and OpenTimestamps attestations
    # are Bitcoin mainnet's, so no policy places the fabricated block: never "verified"
    for check in (regtest, mainnet):
        assert (check.state, check.heights) == ("unverifiable", (BITCOIN_HEIGHT,)), check

    # one verdict lists all three kinds of anchor: the chain's, the token, the stamp
    bundle_file = outcome.written[0]
    buffer = io.StringIO()
    code = verify_command(
        folder / outcome.sources[bundle_file],
        bundle_file,
        policy=None,
        tsa_trust=TsaTrust.from_pem(authority.ca_file.read_bytes(), name="ca.pem"),
        console=Console(file=buffer, width=200),
    )
    said = buffer.getvalue()
    print(said)  # the verdict, for whoever runs the test with -s
    assert code == 0, said
    assert "✓ token 1: CN=notary test TSA at" in said
    assert "OpenTimestamps" in said and "unverifiable" in said

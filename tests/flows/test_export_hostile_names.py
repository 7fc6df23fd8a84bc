"""A folder of hostile names, notarized twice, anchored and exported: one bundle file per
document version (none shared, also where case is folded), nothing overwritten, the count
printed the count written, the index naming every bundle, and every bundle verifying
against its own file with ``notary verify``."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from flows.cli.proof_check import hash_file, verify_command
from flows.cli.proof_export import INDEX_NAME, export_bundles
from flows.collect_proofs import collect_proofs
from flows.notarize_folder import notarize_folder
from flows.pipeline import open_services
from flows.settings import PipelineSettings
from tests.harness.waiting import WaitTimeout, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

#: Names that collided before (all to ``a_b.txt``, ``r_sum_.txt``, ``_.txt``), names
#: that differ only in case, a newline, and names past 255 bytes once encoded.
NAMES = [
    "a b.txt",
    "a_b.txt",
    "a+b.txt",
    "résumé.txt",
    "r_sum_.txt",
    "日本.txt",
    "Ωμέγα.txt",
    "_.txt",
    "Case.txt",
    "case.txt",
    "line\nbreak.txt",
    "%41.txt",
    "A.txt",
    "é" * 125 + ".txt",
    "sub dir/inner+1.txt",
    "sub_dir/inner 1.txt",
]


def notary_verify(document: Path, bundle: Path) -> tuple[int, str]:
    """``notary verify DOCUMENT --proof BUNDLE``: its exit code and what it printed."""
    out = io.StringIO()
    code = verify_command(document, bundle, policy=None, console=Console(file=out, width=200))
    return int(code), out.getvalue()


def test_a_hostile_folder_exports_one_verifying_bundle_per_version(
    tmp_path: Path, pipeline_settings: PipelineSettings, stack: object
) -> None:
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "sub dir").mkdir()
    (folder / "sub_dir").mkdir()
    for i, name in enumerate(NAMES):
        (folder / name).write_text(f"document {i}: {name!r}\n")
    # a name that is not UTF-8 is refused (no faithful text form), and said so
    os.close(os.open(os.fsencode(folder) + b"/bad\xffname.txt", os.O_CREAT | os.O_WRONLY))
    settings = pipeline_settings.model_copy(
        update={"anchor_url": stack.settings.anchor_url}  # type: ignore[attr-defined]
    )
    collection = "hostile names"
    first = notarize_folder(str(folder), collection, settings, True)
    assert first["queued"] == len(NAMES) and first["refused"] == 1
    refused = Path(first["refused_list"]).read_text(encoding="utf-8")
    assert refused.startswith("bad\\xffname.txt\t"), refused

    old_version = (folder / "a b.txt").read_bytes()
    kept = tmp_path / "a b.txt, first version"
    kept.write_bytes(old_version)
    (folder / "a b.txt").write_text("document 0, second version\n")
    second = notarize_folder(str(folder), collection, settings, True)
    assert second["queued"] == 1
    versions = len(NAMES) + 1

    result: dict = {}

    def anchored() -> bool:
        result.clear()
        result.update(collect_proofs(settings, collection))
        return bool(result["stages"]["anchor"] == versions)

    with contextlib.suppress(WaitTimeout):
        wait_until(anchored, 120, 1.0)
    assert result["stages"]["anchor"] == versions, result

    out = tmp_path / "proofs"
    with open_services(settings) as services:
        outcome = export_bundles(services, out, collection=collection, html=True, pages=True)
    assert not outcome.failed and not outcome.refused and not outcome.unchanged
    assert len(outcome.written) == versions == len(set(outcome.written))
    on_disk = sorted(p for p in out.rglob("*.proof.json"))
    assert on_disk == sorted(outcome.written)  # every bundle counted is a file
    assert len({str(p.relative_to(out)).casefold() for p in on_disk}) == versions
    assert all(len(part.encode()) <= 255 for p in on_disk for part in p.parts)
    assert len(outcome.pages) == versions

    index = json.loads((out / INDEX_NAME).read_text(encoding="utf-8"))["bundles"]
    assert len(index) == versions
    assert sorted(e["path"] for e in index) == sorted([*NAMES, "a b.txt"])
    for entry in index:
        bundle = out / entry["bundle"]
        assert json.loads(bundle.read_text())["document"]["sha256"] == entry["sha256"]
        document = folder / entry["path"]
        if hash_file(document).hex() != entry["sha256"]:  # the first version of "a b.txt"
            assert entry["path"] == "a b.txt"
            document = kept
        code, printed = notary_verify(document, bundle)
        assert code == 0, printed

    # again into the same folder: nothing written, nothing overwritten
    with open_services(settings) as services:
        again = export_bundles(services, out, collection=collection)
    assert not again.written and len(again.unchanged) == versions and not again.refused
    # a file in a bundle's place is never replaced
    victim = sorted(outcome.written)[0]
    victim.write_text("somebody else's file\n")
    with open_services(settings) as services:
        third = export_bundles(services, out, collection=collection)
    assert len(third.refused) == 1 and "not overwritten" in third.refused[0]
    assert victim.read_text() == "somebody else's file\n"

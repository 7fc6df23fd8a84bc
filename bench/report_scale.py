"""The audit report at archive scale: peak RSS and seconds of one report of N documents.

Usage: ``python -m bench.report_scale [--docs 10000,100000] [--dir DIR] [--keep]``
(minutes at 1,000,000; not part of CI).

For each N an SQLite audit store is filled once (cached in ``--dir`` as
``report-<N>.db``, so an A/B of two report implementations reads the same store) through
the ``AuditStore`` API, 5,000 documents per call: every document published, 95 % in a
directory block with a stored receipt (a synthetic one: re-verification rejects it, which
exercises the problems path), the receipts of every other block anchored, 1 % failed,
the rest left at ``published`` (overdue at report time). Then the report (read, a
re-verification sample of 50 against a node that has no block, every file written) runs
in a child process of its own, so that its peak RSS (``ru_maxrss``) is the report's:
``rss_base_mb`` is the child's RSS after its imports, before reading the store.

Both implementations are driven: ``tasks.report_stream.stream_report`` when the checkout has it,
else ``load_report_data`` / ``reverify_receipts`` / ``build_report`` / ``write_report``
(run the same file with ``PYTHONPATH=<other checkout>`` for the before figures).
Writes ``bench/results/report_scale.json`` (``--results`` names another file).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import Figure, print_table, write_json

CHUNK = 5000
START_S = 1_700_000_000.0


def _hex(*parts: object) -> str:
    return hashlib.sha256("-".join(map(str, parts)).encode()).hexdigest()


def fill(path: Path, docs: int) -> None:
    """An SQLite audit store at ``path`` with ``docs`` notarizations (module docstring)."""
    from connectors.audit import (
        AnchorRecord,
        AuditStore,
        DocumentIn,
        NewNotarization,
        ReceiptRecord,
    )
    from ledger.core.clock import ManualClock

    clock = ManualClock(START_S)
    chain = _hex("chain")
    with AuditStore(f"sqlite:///{path}", clock=clock) as store:
        for first in range(0, docs, CHUNK):
            numbers = range(first, min(first + CHUNK, docs))
            doc_ids = store.notarizations.upsert_documents(
                "folder:/bench",
                [DocumentIn(f"d/{i // 1000}/{i}.txt", _hex("doc", i), 1000 + i) for i in numbers],
            )
            ids = store.notarizations.add(
                [
                    NewNotarization(d, "bench", chain, _hex("doc", i))
                    for d, i in zip(doc_ids, numbers, strict=True)
                ]
            )
            entries = {n: _hex("entry", i) for n, i in zip(ids, numbers, strict=True)}
            clock.advance(3)
            store.notarizations.mark_published(entries)
            failed = {
                n: "rejected: 422" for n, i in zip(ids, numbers, strict=True) if i % 100 == 99
            }
            if failed:
                store.notarizations.mark_failed(failed, retryable=False)
            height = first // CHUNK
            keymr = _hex("keymr", height)
            in_block = [e for n, e in entries.items() if n not in failed and int(e, 16) % 20]
            clock.advance(7)
            store.notarizations.record_ledger({e: (height, keymr) for e in in_block})
            verified = datetime.fromtimestamp(clock.now(), UTC)
            receipts = [
                {
                    "entry": {"entryhash": e},
                    "merklebranch": [{"left": e, "right": _hex("r", e), "top": _hex("t", e)}],
                    "entryblockkeymr": _hex("eb", height),
                    "directoryblockkeymr": keymr,
                    "directoryblockheight": height,
                }
                for e in in_block
            ]
            store.proofs.save_receipts(
                [ReceiptRecord.from_node(r, verified_at=verified) for r in receipts]
            )
            if height % 2 == 0:
                clock.advance(60)
                anchor = {
                    "directoryblockheight": height,
                    "directoryblockkeymr": keymr,
                    "anchor_pow": {
                        "transactionhash": _hex("tx", height),
                        "blockhash": _hex("blk", height),
                        "confirmations": 3,
                    },
                }
                store.proofs.record_anchors([AnchorRecord.from_node(anchor, verified_at=verified)])


def run_report(db: Path, out_dir: Path) -> dict[str, Any]:
    """One report of every collection of ``db`` into ``out_dir``: seconds, CPU, peak RSS."""
    from connectors.audit import AuditStore
    from tasks import report as rpt
    from tasks import report_output as out

    def no_node(height: int) -> bytes:
        raise LookupError(height)

    now = datetime.fromtimestamp(START_S, UTC) + timedelta(days=1)
    rss_base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wall, cpu = time.perf_counter(), time.process_time()
    with AuditStore(f"sqlite:///{db}") as store:
        if hasattr(rpt, "ReportBuilder"):  # this checkout streams (tasks.report_stream)
            from tasks.report_stream import stream_report

            kind = "streamed"
            streamed = stream_report(store, out_dir, now=now, sample=50, seed=0)
            report = streamed.finish(rpt.reverify_chosen(streamed.sampled, no_node))
            out.write_report(report, out_dir)
        else:
            kind = "in memory"
            data = rpt.load_report_data(store)
            checked = rpt.reverify_receipts(data.proofs, no_node, sample=50, seed=0)
            report = rpt.build_report(data, now=now, reverification=checked)
            out.write_report(report, out_dir)
    return {
        "implementation": kind,
        "seconds": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "rss_base_mb": rss_base,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "documents": report.summary["documents"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="10000,100000", help="comma-separated counts")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "report-bench")
    parser.add_argument("--results", default="report_scale")
    parser.add_argument("--run", nargs=2, metavar=("DB", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:  # the child: one report, its figures as JSON on stdout
        print(json.dumps(run_report(Path(args.run[0]), Path(args.run[1]))))
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    figures, runs = [], []
    for docs in [int(n) for n in args.docs.split(",")]:
        db = args.dir / f"report-{docs}.db"
        if not db.exists():
            started = time.perf_counter()
            fill(args.dir / "filling.db", docs)
            (args.dir / "filling.db").rename(db)
            print(f"filled {docs:,} documents in {time.perf_counter() - started:.0f} s")
        with tempfile.TemporaryDirectory(dir=args.dir) as out_dir:
            child = subprocess.run(
                [sys.executable, "-m", "bench.report_scale", "--run", str(db), out_dir],
                check=True,
                capture_output=True,
                text=True,
            )
        run = json.loads(child.stdout.strip().splitlines()[-1]) | {"n": docs}
        runs.append(run)
        extra = {k: run[k] for k in ("implementation", "cpu_s", "rss_base_mb", "documents")}
        figures.append(
            Figure(f"peak RSS, {docs:,} docs", run["peak_rss_mb"], "MB", higher_is_better=False,
                   baseline=run["rss_base_mb"], baseline_name="after imports", extra=extra)
        )  # fmt: skip
        figures.append(
            Figure(f"report seconds, {docs:,} docs", run["seconds"], "s", higher_is_better=False,
                   extra=extra)
        )  # fmt: skip
    print_table(f"Audit report at scale ({runs[0]['implementation']})", figures)
    write_json(args.results, {"runs": runs})


if __name__ == "__main__":
    main()

"""Archive scale: many small files to every document's proof verified and stored, per
publishing mode, beside the floor measured in the same run.

Usage: ``python -m bench.pipeline_scale [--files 100000 ...] [--modes aggregate,entry]
[--dir DIR] [--profile]`` (``make bench-scale``; minutes per run, not part of CI).

For each file count the files are generated once (``--size`` bytes each, every file
distinct, ``--per-dir`` to a folder), after a check that the disk has room for them and
the runs' data folders. Then for each mode, in a fresh data folder:

1. the bundled stack starts in its own process, as ``notary up`` (2 s blocks; the same
   ``StackProcess`` as ``bench/pipeline_e2e.py``), and one block time is measured on it;
2. the ``notarize_folder`` flow runs in a child process of its own (so that its peak RSS
   is its own), with ``NOTARY_PUBLISH_MODE=<mode>`` in its environment and the Prefect
   server this benchmark started, until every document's proof is verified and stored
   (the flow waits for the ledger stage). The RSS of the child and of the stack is
   sampled while it runs, and the stack's CPU seconds read before and after, each with
   its descendants (the stack's proof-of-work miner is a child process);
3. ``entries_published``: the entries of the collection's chain, counted on the node
   (walking its entry blocks), less the chain's first entry; ``entry_credits_spent``:
   the credits the commits of that chain's entries paid (first entry included), read
   from the entry credit blocks made during the run. ``extra.address_credits_spent`` is
   the paying address's balance before the flow less after it: more, because the bundled
   anchoring service pays its anchor records (two entries per anchored directory block)
   from the same development address.

``floor_seconds`` is ``sha256sum`` over the same files (``find | xargs``, the faster of a
run before and one after the flow) plus the block time measured on the stack; ``ratio``
is ``seconds / floor_seconds``. ``seconds`` is the flow's wall time from its start to its
return (Prefect's server and the child's imports excluded, as in ``pipeline_e2e``).

A mode the pipeline does not know is passed through all the same (``PipelineSettings``
ignores unknown ``NOTARY_`` variables): the run records the mode asked for.

``--profile`` runs the child under cProfile (every thread) and writes the top functions
to ``bench/results/pipeline_scale_profile.txt``; the profiler slows the run down, so its
timings are marked ``profiled``. Everything written (files, data folders, the Prefect
server's home) is under one temporary folder, removed at the end, on error and on Ctrl-C.
Writes ``bench/results/pipeline_scale.json`` (``--results`` names another file).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (
    RESULTS_DIR,
    process_rss_mb,
    require_free_space,
    write_json,
)
from bench.hash_small import make_tree, measure, sha256sum
from bench.pipeline_e2e import REPO, StackProcess
from tests.harness.ports import free_port

BLOCK_TIME_S = 2.0
#: Room kept free beyond the estimate, bytes.
SPARE_BYTES = 1 << 30
#: Disk per document beyond its file's blocks: the stack's and the audit store's rows,
#: receipts and indexes (about 3 KB measured at 10,000 files, doubled), bytes.
DATA_BYTES_PER_DOCUMENT = 8 * 1024
PROFILE_TOP = 30


# -- the parent: files, stack, child, figures -------------------------------------------


@dataclass
class Run:
    """One (mode, files) run's figures (the keys of ``pipeline_scale.json``)."""

    mode: str
    files: int
    seconds: float
    floor_seconds: float
    ratio: float
    peak_rss_mb: float
    stack_peak_rss_mb: float | None
    entries_published: int
    entry_credits_spent: int
    stage_seconds: dict[str, float]
    extra: dict[str, Any] = field(default_factory=dict)


def needed_bytes(files: int, size: int) -> int:
    """Disk the runs of one file count need: the files (whole 4 KiB blocks) and one data
    folder (each mode's is removed before the next mode runs)."""
    per_file = -(-size // 4096) * 4096
    return files * (per_file + DATA_BYTES_PER_DOCUMENT)


def check_space(where: Path, files: int, size: int) -> None:
    """Exit with the figures if ``where`` lacks the room or the inodes for a run."""
    require_free_space(
        where,
        needed_bytes(files, size) + SPARE_BYTES,
        what=f"{files:,} files of {size} B (files, data folder and 1 GiB spare)",
        hint="give fewer --files or a --dir elsewhere",
    )
    inodes = os.statvfs(where).f_favail
    if 0 < inodes < files * 2:  # 0: the file system does not count inodes
        raise SystemExit(
            f"{files:,} files need {files * 2:,} free inodes under {where}; {inodes:,}"
        )


def block_time_s(node_url: str, *, timeout_s: float = 60.0) -> float:
    """Seconds between two directory blocks of the running node (the first change of
    height starts the clock, the next stops it)."""
    from connectors.node import NodeClient

    with NodeClient(node_url) as node:
        marks: list[float] = []
        height = node.heights()["directoryblockheight"]
        deadline = time.monotonic() + timeout_s
        while len(marks) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no two directory blocks within {timeout_s:.0f} s")
            time.sleep(0.02)
            now = node.heights()["directoryblockheight"]
            if now != height:
                height = now
                marks.append(time.perf_counter())
    return marks[1] - marks[0]


def ec_balance(node_url: str) -> int:
    """Entry credits of the address the stack's publishing API pays from (``notary up``
    pays from the development network's address: ``ledger/stack/``)."""
    from connectors.node import NodeClient
    from ledger import devnet

    with NodeClient(node_url) as node:
        return int(node.call("entry-credit-balance", {"address": devnet.DEV_EC_ADDRESS})["balance"])


def chain_entries(node_url: str, chain_id: str) -> list[str]:
    """Entry hashes (hex) of ``chain_id`` in directory blocks, its first entry included,
    found by walking its entry blocks from the chain head back to the first (none when
    the chain has no block yet)."""
    from connectors.node import NodeClient

    first = "0" * 64
    hashes: list[str] = []
    with NodeClient(node_url) as node:
        keymr = node.call("chain-head", {"chainid": chain_id}).get("chainhead") or first
        while keymr != first:
            block = node.call("entry-block", {"keymr": keymr})
            hashes += [item["entryhash"] for item in block["entrylist"]]
            keymr = block["header"]["prevkeymr"]
    return hashes


def directory_height(node_url: str) -> int:
    """Height of the node's newest directory block."""
    from connectors.node import NodeClient

    with NodeClient(node_url) as node:
        return int(node.call("heights")["directoryblockheight"])


def credits_paid_for(node_url: str, entry_hashes: set[str], heights: range) -> int:
    """Entry credits the commits of ``entry_hashes`` paid, summed over the entry credit
    blocks of the directory blocks at ``heights`` (the ledger's own record: the balance
    of the paying address also pays the anchoring service's anchor records)."""
    from connectors.node import NodeClient

    ec_chain = "0" * 63 + "c"
    paid = 0
    with NodeClient(node_url) as node:
        for height in heights:
            dblock = node.call("dblock-by-height", {"height": height})["dblock"]
            for item in dblock["dbentries"]:
                if item["chainid"] != ec_chain:
                    continue
                block = node.call("entrycredit-block", {"keymr": item["keymr"]})["ecblock"]
                for entry in block["body"]["entries"]:
                    if entry.get("entryhash") in entry_hashes:
                        paid += int(entry["credits"])
    return paid


class RssSampler:
    """Largest resident set size of some processes, sampled every ``period_s``."""

    def __init__(self, pids: dict[str, int | None], period_s: float = 0.2) -> None:
        self.peaks: dict[str, float] = {}
        self._pids = {name: pid for name, pid in pids.items() if pid is not None}
        self._period_s = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._period_s):
            for name, pid in self._pids.items():
                rss = process_rss_mb(pid)
                if rss is not None:
                    self.peaks[name] = max(rss, self.peaks.get(name, 0.0))


def run_one(
    folder: Path, data: Path, *, mode: str, prefect_url: str, profile: Path | None
) -> dict[str, Any]:
    """Stack + child flow for one mode; the measured figures (``Run`` fields but the floor)."""
    collection = f"bench-scale-{mode}"
    with StackProcess(data, block_time_s=BLOCK_TIME_S) as stack:
        urls = stack.urls
        block_s = block_time_s(urls.node_url)
        credits_before = ec_balance(urls.node_url)
        height_before = directory_height(urls.node_url)
        out = data / "child-result.json"
        command = [sys.executable, "-m", "bench.scale_child", str(folder)]
        command += ["--data", str(data), "--out", str(out)]
        command += ["--collection", collection, "--urls", json.dumps(urls.__dict__)]
        command += ["--profile", str(profile)] if profile else []
        env = os.environ | {"NOTARY_PUBLISH_MODE": mode, "PREFECT_API_URL": prefect_url}
        stack_cpu = stack.cpu_s()
        with (
            _child(command, env, data / "pipeline.log") as child,
            RssSampler({"pipeline": child.pid, "stack": stack.pid}) as sampler,
        ):
            code = child.wait()
        stack_cpu_after = stack.cpu_s()
        if code != 0:
            log = (data / "pipeline.log").read_text(errors="replace")[-4000:]
            raise RuntimeError(f"the pipeline exited with {code}:\n{log}")
        result = json.loads(out.read_text())
        summary = result["summary"]
        credits_after = ec_balance(urls.node_url)
        entries = chain_entries(urls.node_url, summary["chain_id"])
        heights = range(height_before + 1, directory_height(urls.node_url) + 1)
        chain_credits = credits_paid_for(urls.node_url, set(entries), heights)
    stack_peaks = [p for p in (stack.peak_rss_mb, sampler.peaks.get("stack")) if p is not None]
    return {
        "seconds": result["wall_s"],
        "block_time_s": block_s,
        "peak_rss_mb": max(result["peak_rss_mb"], sampler.peaks.get("pipeline", 0.0)),
        "stack_peak_rss_mb": max(stack_peaks) if stack_peaks else None,
        "entries_published": max(len(entries) - 1, 0),  # less the chain's first entry
        "entry_credits_spent": chain_credits,
        "address_credits_spent": credits_before - credits_after,
        "summary": summary,
        "pipeline_cpu_s": result["cpu_s"],
        "stack_cpu_s": (
            None if stack_cpu is None or stack_cpu_after is None else stack_cpu_after - stack_cpu
        ),
    }


@contextlib.contextmanager
def _child(
    command: list[str], env: dict[str, str], log_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """The pipeline child, killed if the benchmark stops before it ends (Ctrl-C, error)."""
    with log_path.open("wb") as log:
        child = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def measure_files(root: Path, files: int, args: argparse.Namespace, prefect_url: str) -> list[Run]:
    """Every mode's run over one set of ``files`` generated files."""
    folder = root / f"files-{files}"
    make_tree(folder, files=files, size=args.size, per_dir=args.per_dir)
    os.sync()  # the files' write-back is not part of any run
    runs = []
    for mode in args.modes:
        before, _cpu = measure(lambda: sha256sum(folder), children=True)
        data = root / f"data-{mode}-{files}"
        profile = RESULTS_DIR / f"{args.results}.prof" if args.profile else None
        got = run_one(folder, data, mode=mode, prefect_url=prefect_url, profile=profile)
        after, _cpu = measure(lambda: sha256sum(folder), children=True)
        shutil.rmtree(data, ignore_errors=True)
        runs.append(_run_figures(mode, files, got, min(before, after), args.profile))
        if profile is not None:
            _write_profile(profile, RESULTS_DIR / f"{args.results}_profile.txt", mode, files)
    shutil.rmtree(folder, ignore_errors=True)
    return runs


def _run_figures(
    mode: str, files: int, got: dict[str, Any], sha256sum_s: float, profiled: bool
) -> Run:
    summary = got["summary"]
    floor = sha256sum_s + got["block_time_s"]
    verified = int(summary["documents_with_receipt"])
    extra = {
        "sha256sum_s": round(sha256sum_s, 3),
        "block_time_s": round(got["block_time_s"], 3),
        "receipts_verified": verified,
        "complete": verified == files and not summary["documents_waiting"],
        "pipeline_cpu_s": got["pipeline_cpu_s"],
        "stack_cpu_s": None if got["stack_cpu_s"] is None else round(got["stack_cpu_s"], 2),
        "published": summary["published"],
        "address_credits_spent": got["address_credits_spent"],
        "load_average_1m": round(os.getloadavg()[0], 2),
        "profiled": profiled,
        "errors": summary["errors"][:5],
    }
    return Run(
        mode=mode,
        files=files,
        seconds=round(got["seconds"], 3),
        floor_seconds=round(floor, 3),
        ratio=round(got["seconds"] / floor, 2),
        peak_rss_mb=round(got["peak_rss_mb"], 1),
        stack_peak_rss_mb=None
        if got["stack_peak_rss_mb"] is None
        else round(got["stack_peak_rss_mb"], 1),
        entries_published=got["entries_published"],
        entry_credits_spent=got["entry_credits_spent"],
        stage_seconds=summary["stage_seconds"],
        extra=extra,
    )


#: Calls that wait (for a lock, a queue, a socket, a timer) rather than work: left out of
#: the profile's "working" list, where they would hide the work (the profiles of all
#: threads are summed, and most threads wait most of the time).
WAITING_CALLS = (
    "'get' of '_queue.SimpleQueue'",
    "'acquire' of '_thread.lock'",
    "'recv_into' of '_socket.socket'",
    "'recv' of '_socket.socket'",
    "'poll' of 'select.poll'",
    "time.sleep",
    "'wait' of",
)


def _write_profile(stats_file: Path, path: Path, mode: str, files: int) -> None:
    """Write the top functions of the child's profile: working (waits left out) by own
    time, then all by own time and by cumulative time."""
    text = io.StringIO()
    text.write(f"pipeline process, mode {mode}, {files:,} files (cProfile, every thread; ")
    text.write("times are summed over threads)\n")
    stats = pstats.Stats(str(stats_file), stream=text)
    text.write(f"\n=== top {PROFILE_TOP} by own time, waiting calls left out\n")
    text.write("  own s   cum s     calls  function\n")
    rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)  # type: ignore[attr-defined]
    shown = 0
    for (file, line, name), (_cc, calls, own, cum, _callers) in rows:
        where = f"{name}" if file == "~" else f"{Path(file).name}:{line}({name})"
        if any(w in where for w in WAITING_CALLS):
            continue
        text.write(f"{own:7.1f} {cum:7.1f} {calls:9d}  {where}\n")
        shown += 1
        if shown == PROFILE_TOP:
            break
    for order in ("tottime", "cumulative"):
        text.write(f"\n=== top {PROFILE_TOP} by {order}\n")
        stats.sort_stats(order).print_stats(PROFILE_TOP)
    path.write_text(text.getvalue())
    print(f"profile: {path}")


def print_runs(runs: list[Run]) -> None:
    """The runs as a table, then each run's stage seconds."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Pipeline at scale (2 s blocks)")
    columns = ("mode", "files", "seconds", "floor", "ratio", "RSS MB", "stack MB")
    for column in (*columns, "entries", "EC spent", "complete"):
        table.add_column(column, justify="right")
    for r in runs:
        table.add_row(
            r.mode,
            f"{r.files:,}",
            f"{r.seconds:.1f}",
            f"{r.floor_seconds:.1f}",
            f"{r.ratio:.1f}",
            f"{r.peak_rss_mb:.0f}",
            "" if r.stack_peak_rss_mb is None else f"{r.stack_peak_rss_mb:.0f}",
            f"{r.entries_published:,}",
            f"{r.entry_credits_spent:,}",
            "yes" if r.extra["complete"] else "NO",
        )
    console = Console(width=120)
    console.print(table)
    for r in runs:
        stages = ", ".join(f"{k} {v:.1f}" for k, v in r.stage_seconds.items())
        console.print(f"{r.mode} {r.files:,}: {stages} s")


@contextlib.contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """SIGTERM ends the benchmark as Ctrl-C does, so the ``finally`` blocks clean up; the
    previous handler comes back after."""

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    runs: list[Run] = []
    with (
        _sigterm_as_ctrl_c(),
        tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-scale-") as tmp,
    ):
        root = Path(tmp)
        for files in args.files:
            check_space(root, files, args.size)
        from flows.cli.prefect_server import PrefectServer
        from flows.settings import quiet_prefect_defaults

        quiet_prefect_defaults(root)
        server = PrefectServer(root, root / "prefect-api-url", host="127.0.0.1", port=free_port())
        try:
            prefect_url = server.start(timeout_s=240)
            for files in args.files:
                runs += measure_files(root, files, args, prefect_url)
        finally:
            server.stop()
    print_runs(runs)
    print(write_json(args.results, {"runs": [r.__dict__ for r in runs]}))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, nargs="+", default=[100_000])
    parser.add_argument("--modes", default="aggregate,entry", help="comma-separated")
    parser.add_argument("--size", type=int, default=4096, help="bytes per file")
    parser.add_argument("--per-dir", type=int, default=1000, help="files per folder")
    parser.add_argument("--dir", type=Path, default=None, help="where to put files and data")
    parser.add_argument("--profile", action="store_true", help="cProfile the pipeline")
    parser.add_argument(
        "--results", default="pipeline_scale", help="results file: bench/results/<name>.json"
    )
    return parser


if __name__ == "__main__":
    main()

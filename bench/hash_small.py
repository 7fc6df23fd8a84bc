"""The hash stage alone on many small files, beside ``sha256sum`` on the same files.

Usage: ``python -m bench.hash_small [--files 100000] [--size 4096] [--per-dir 1000]
[--rounds 3] [--workers 4] [--profile]``. Writes ``bench/results/hash_small.json``.

The files (``--size`` bytes each, ``--per-dir`` to a folder, every file distinct) are
written once, flushed to disk (so write-back does not run during the timings) and read
once to warm the page cache. Then, ``--rounds`` times in turn:

- ``find -type f -print0 | xargs -0 sha256sum`` over the folder (the baseline);
- ``connectors.folder_source.scan`` of the folder (the flow's scan stage);
- the pipeline's ``hash_batch`` task body (``tasks.steps.hash_batch.fn``: the Prefect task
  run around it costs milliseconds per batch, not per file) over the scanned
  ``ScanEntry`` list in batches of ``--batch`` files, as ``notarize_folder`` hands them
  out: as the flow does by default (a batch of small files goes to the hashing child
  process, ``tasks.hash_process``), and in this process (``small_files="thread"``) with
  ``--workers`` threads and with one.

Each figure is the best of the rounds (the machine is shared: the best round is the one
least disturbed), in wall seconds; the CPU seconds of the same rounds (the process's with
its living children, so the hashing child counts, or the waited-for children's for
``sha256sum``, user + system) are in ``extra``: on a busy machine they
are steadier than wall time. Goal: the hash stage within 1.5 x ``sha256sum``.
``--profile`` adds a cProfile of one single-threaded pass, top functions by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from bench.common import (
    Figure,
    peak_rss_mb,
    print_table,
    process_cpu_s,
    rusage_cpu_s,
    write_results,
)
from connectors.folder_source import ScanEntry, scan

#: Files per hash batch: ``PipelineSettings.batch_size``'s default.
BATCH_FILES = 2_000


def make_tree(root: Path, *, files: int, size: int, per_dir: int) -> None:
    """``files`` distinct files of ``size`` bytes, ``per_dir`` to a folder ("d0000/...")."""
    block = os.urandom(max(size, 8))
    for i in range(files):
        folder = root / f"d{i // per_dir:04d}"
        if i % per_dir == 0:
            folder.mkdir(parents=True)
        with (folder / f"f{i:07d}.bin").open("wb") as handle:
            handle.write((i.to_bytes(8, "big") + block[8:])[:size])


def measure(fn: Callable[[], object], *, children: bool = False) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` of ``fn()`` (CPU of the waited-for children with
    ``children``, else of this process, all threads, and its living children)."""

    def cpu() -> float:
        if children:
            return rusage_cpu_s(resource.RUSAGE_CHILDREN)
        return process_cpu_s(os.getpid()) or rusage_cpu_s(resource.RUSAGE_SELF)

    before, start = cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - start, cpu() - before


def sha256sum(root: Path) -> None:
    """``find -type f -print0 | xargs -0 sha256sum`` over ``root``, output discarded."""
    command = "find . -type f -print0 | xargs -0 sha256sum > /dev/null"
    subprocess.run(["sh", "-c", command], cwd=root, check=True)


def hash_stage(
    root: Path, entries: Sequence[ScanEntry], workers: int, batch: int, small_files: str = "thread"
) -> None:
    """The flow's hash stage: ``hash_batch`` over consecutive batches of the scan."""
    from tasks.steps import hash_batch

    for start in range(0, len(entries), batch):
        window = entries[start : start + batch]
        results = hash_batch.fn(
            window, workers=workers, root=str(root), small_files=small_files
        ).items
        if not all(r.ok for r in results):
            raise RuntimeError(f"hash errors: {[r.error for r in results if not r.ok][:3]}")


def profile(root: Path, entries: Sequence[ScanEntry], batch: int, top: int = 15) -> str:
    """cProfile of one single-threaded hash stage and one scan: top functions by own time."""
    out = io.StringIO()
    for name, fn in (
        ("hash stage, 1 thread", lambda: hash_stage(root, entries, 1, batch)),
        ("scan", lambda: list(scan(root))),
    ):
        profiler = cProfile.Profile()
        profiler.runcall(fn)
        out.write(f"--- {name}\n")
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def run(root: Path, args: argparse.Namespace) -> list[Figure]:
    make_tree(root, files=args.files, size=args.size, per_dir=args.per_dir)
    os.sync()  # no write-back of the new files during the timings
    sha256sum(root)  # warm the page cache
    entries = list(scan(root))
    if len(entries) != args.files:
        raise RuntimeError(f"scan found {len(entries)} files, wrote {args.files}")
    timings: dict[str, list[tuple[float, float]]] = {}
    # (key, label, threads, where small batches go): the flow's default first.
    variants = [("child", "in the hashing child (default)", args.workers, "process")]
    for n in sorted({1, args.workers}):
        variants.append((f"hash{n}", f"{n} thread{'s' if n > 1 else ''}", n, "thread"))
    for _ in range(args.rounds):
        timings.setdefault("sha256sum", []).append(measure(lambda: sha256sum(root), children=True))
        timings.setdefault("scan", []).append(measure(lambda: list(scan(root))))
        for key, _label, n, where in variants:
            timings.setdefault(key, []).append(
                measure(partial(hash_stage, root, entries, n, args.batch, where))
            )
    best = {key: min(values) for key, values in timings.items()}
    base_wall, base_cpu = best["sha256sum"]
    label = f"{args.files:,} files of {args.size} B"
    figures = []
    for key, name, _n, _where in variants:
        wall, cpu = best[key]
        figures.append(
            Figure(
                f"hash stage, {label}, {name}",
                wall,
                "s",
                base_wall,
                "sha256sum",
                goal=1.5 * base_wall,
                higher_is_better=False,
                extra=_extra(timings[key], base_cpu, args.batch),
            )
        )
    figures.append(
        Figure(
            f"scan, {label}",
            best["scan"][0],
            "s",
            base_wall,
            "sha256sum",
            higher_is_better=False,
            extra=_extra(timings["scan"], base_cpu, None),
        )
    )
    figures.append(Figure("hash_small peak RSS", peak_rss_mb(), "MB", higher_is_better=False))
    if args.profile:
        text = profile(root, entries, args.batch)
        print(text)
        figures[0].extra["profile"] = text
    return figures


def _extra(rounds: list[tuple[float, float]], base_cpu: float, batch: int | None) -> dict[str, Any]:
    cpu = min(c for _w, c in rounds)
    extra: dict[str, Any] = {
        "wall_s_rounds": [round(w, 3) for w, _c in rounds],
        "cpu_s": round(cpu, 3),
        "sha256sum_cpu_s": round(base_cpu, 3),
        "cpu_ratio": round(cpu / base_cpu, 2) if base_cpu else None,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    if batch is not None:
        extra["batch_files"] = batch
    return extra


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=4096, help="bytes per file")
    parser.add_argument("--per-dir", type=int, default=1000, help="files per folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4, help="hash_batch threads")
    parser.add_argument("--batch", type=int, default=BATCH_FILES, help="files per hash_batch")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the files")
    parser.add_argument("--profile", action="store_true", help="cProfile one 1-thread pass")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        figures = run(Path(tmp), args)
    print_table("Hash stage on small files", figures)
    print(write_results("hash_small", figures))


if __name__ == "__main__":
    main()

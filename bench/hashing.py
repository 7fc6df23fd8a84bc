"""Hashing throughput of the pipeline's hash step against ``sha256sum`` on the same files.

Usage: ``python -m bench.hashing [--gib 1.0] [--files 64] [--dir DIR]``. Writes
``bench/results/hashing.json``. Files are written once and read twice per tool (the first
read warms the page cache, so both tools are compared on cached reads).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

from bench.common import Figure, peak_rss_mb, print_table, stopwatch, write_results
from tasks.hashing import hash_files

CHUNK = 1 << 20


def make_files(folder: Path, *, total_bytes: int, count: int) -> list[Path]:
    """``count`` files of random bytes adding up to ``total_bytes``."""
    size = total_bytes // count
    paths = []
    block = os.urandom(CHUNK)
    for i in range(count):
        path = folder / f"f{i:04d}.bin"
        with path.open("wb") as handle:
            left = size
            while left > 0:
                handle.write(block[: min(CHUNK, left)])
                left -= CHUNK
        paths.append(path)
    return paths


def time_sha256sum(paths: list[Path]) -> float:
    with stopwatch() as elapsed:
        subprocess.run(["sha256sum", *map(str, paths)], check=True, stdout=subprocess.DEVNULL)
    return elapsed()


def time_pipeline(paths: list[Path], workers: int) -> float:
    # As the folder flows hash: by path relative to the scanned folder, never leaving it.
    root = paths[0].parent
    relative = [p.name for p in paths]
    with stopwatch() as elapsed:
        results = hash_files(relative, max_workers=workers, root=root)
    assert all(r.ok for r in results)
    return elapsed()


def run(total_bytes: int, count: int, folder: Path, workers: int) -> list[Figure]:
    paths = make_files(folder, total_bytes=total_bytes, count=count)
    mib = total_bytes / (1 << 20)
    time_sha256sum(paths)  # warm the page cache
    base = min(time_sha256sum(paths) for _ in range(2))
    ours_1 = min(time_pipeline(paths, 1) for _ in range(2))
    ours_n = min(time_pipeline(paths, workers) for _ in range(2))
    return [
        Figure(
            "hash step, 1 thread",
            mib / ours_1,
            "MiB/s",
            mib / base,
            "sha256sum",
            goal=0.9 * mib / base,
        ),
        Figure(
            f"hash step, {workers} threads",
            mib / ours_n,
            "MiB/s",
            mib / base,
            "sha256sum",
            goal=0.9 * mib / base,
        ),
        Figure("hashing peak RSS", peak_rss_mb(), "MB", goal=300, higher_is_better=False),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        figures = run(int(args.gib * (1 << 30)), args.files, Path(tmp), args.workers)
    print_table("Hashing", figures)
    print(write_results("hashing", figures))


if __name__ == "__main__":
    main()

"""End to end: files in a folder to verified receipts in the audit store, through the
bundled stack (node, wallet, API, anchoring on free loopback ports, 2 s blocks).

Usage: ``python -m bench.pipeline_e2e [--small 10000] [--large 0] [--large-mib 100]``.

- ``--small N``: N files of 4 KiB (goal: under 30 s wall from flow start to every receipt
  verified and stored). Baseline in the same run: ``sha256sum`` over the files plus one block
  time (the floors of the hash and ledger stages).
- ``--large N``: N files of ``--large-mib`` MiB (goal: within 1.2 x of ``sha256sum`` of the
  same files). Off by default: 100 x 100 MiB writes 10 GiB.

Writes ``bench/results/pipeline_e2e.json``. Prefect's temporary server start is measured
apart (it is paid once per process, not per file).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import tempfile
from pathlib import Path

from bench.common import Figure, peak_rss_mb, print_table, stopwatch, write_results

BLOCK_TIME_S = 2.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _make(folder: Path, count: int, size: int) -> None:
    folder.mkdir(parents=True)
    chunk = os.urandom(1 << 20)
    for i in range(count):
        with (folder / f"f{i:06d}.bin").open("wb") as handle:
            left = size
            handle.write(i.to_bytes(8, "big"))  # every file distinct
            left -= 8
            while left > 0:
                handle.write(chunk[: min(len(chunk), left)])
                left -= len(chunk)


def _sha256sum(folder: Path) -> float:
    files = sorted(str(p) for p in folder.iterdir())
    with stopwatch() as elapsed:
        for start in range(0, len(files), 2000):
            subprocess.run(
                ["sha256sum", *files[start : start + 2000]], check=True, stdout=subprocess.DEVNULL
            )
    return elapsed()


def _run(folder: Path, data: Path, collection: str) -> dict[str, object]:
    from flows.notarize_folder import notarize_folder
    from flows.settings import PipelineSettings
    from ledger.stack import Stack, StackSettings, StackThread

    stack = Stack(
        StackSettings(
            data_dir=data,
            node_port=_free_port(),
            wallet_port=_free_port(),
            api_port=_free_port(),
            anchor_port=_free_port(),
            block_time_s=BLOCK_TIME_S,
        )
    )
    stack.prepare()
    thread = StackThread(stack)
    thread.start()
    try:
        s = stack.settings
        settings = PipelineSettings(
            data_dir=data, api_url=s.api_url, node_url=s.node_url, anchor_url=s.anchor_url
        )
        with stopwatch() as elapsed:
            summary = notarize_folder(str(folder), collection, settings, True)
        summary["wall_s"] = elapsed()
        return summary
    finally:
        thread.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=0)
    parser.add_argument("--large-mib", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        os.environ.setdefault("PREFECT_HOME", str(root / "prefect"))
        from prefect import flow

        with stopwatch() as prefect_start:
            flow(lambda: None, name="warm-up")()
        figures.append(
            Figure("Prefect temporary server start", prefect_start(), "s", higher_is_better=False)
        )
        if args.small:
            _make(root / "small", args.small, 4096)
            base = _sha256sum(root / "small") + BLOCK_TIME_S
            run = _run(root / "small", root / "data-small", "bench-small")
            assert run["receipts_verified"] == args.small, run
            figures.append(
                Figure(
                    f"{args.small} files of 4 KiB to verified receipts",
                    float(run["wall_s"]),
                    "s",
                    base,
                    "sha256sum + 1 block",
                    goal=30.0,
                    higher_is_better=False,
                    extra={"stage_seconds": run["stage_seconds"]},
                )
            )
        if args.large:
            _make(root / "large", args.large, args.large_mib << 20)
            base = _sha256sum(root / "large")
            run = _run(root / "large", root / "data-large", "bench-large")
            figures.append(
                Figure(
                    f"{args.large} files of {args.large_mib} MiB",
                    float(run["wall_s"]),
                    "s",
                    base,
                    "sha256sum",
                    goal=1.2 * base,
                    higher_is_better=False,
                    extra={"stage_seconds": run["stage_seconds"]},
                )
            )
    figures.append(
        Figure("pipeline + stack peak RSS", peak_rss_mb(), "MB", goal=300, higher_is_better=False)
    )
    print_table("End to end", figures)
    print(write_results("pipeline_e2e", figures))


if __name__ == "__main__":
    main()

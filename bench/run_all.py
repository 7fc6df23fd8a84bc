"""``make bench``: run every benchmark, each beside its baseline, and print one summary.

Runs the benchmarks one after another (they would disturb each other on a 2-core
machine) as separate processes, then merges their JSON figures into
``bench/results/summary.json``. Each benchmark also works on its own (``python -m
bench.<name> --help``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from bench.common import RESULTS_DIR, machine

BENCHMARKS: list[tuple[str, list[str]]] = [
    ("hashing", ["-m", "bench.hashing", "--gib", "1.0"]),
    ("receipts", ["-m", "bench.receipts"]),
    ("node_ingest", ["bench/node_ingest.py", "--entries", "30000", "--single-entries", "3000"]),
    ("api_writes", ["bench/api_writes.py", "--seconds", "6", "--chain-entries", "50000"]),
    ("pipeline_e2e", ["-m", "bench.pipeline_e2e", "--small", "10000"]),
    ("verify_page", ["-m", "bench.verify_page"]),
]


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    summary: dict[str, object] = {"machine": machine(), "runs": {}}
    for name, args in BENCHMARKS:
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, *args], cwd=root, check=False)
        runs = summary["runs"]
        assert isinstance(runs, dict)
        runs[name] = {"exit": done.returncode, "seconds": round(time.perf_counter() - start, 1)}
        result = RESULTS_DIR / f"{name}.json"
        if result.exists():
            runs[name]["figures"] = json.loads(result.read_text())
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / "summary.json"
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"summary: {out}")
    failed = [n for n, r in summary["runs"].items() if r["exit"] != 0]  # type: ignore[union-attr]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

"""SIGKILL each service of the bundled ledger, and the pipeline runner, under load.

Services (node, wallet, publishing API), each its own process (``LedgerProcesses``):
client threads write entries through the REST API (``POST /v1/chains/{id}/entries``),
retrying a write whose answer was lost or giving it up, and remember every entry hash
answered 202. Meanwhile a randomly ordered schedule SIGKILLs one service at a random
moment and restarts it after a short random pause; some restarts are themselves killed
at a random moment (a crash during recovery) before the service starts for good.
Afterwards:

1. every 202-acknowledged entry is in the node's entry blocks, exactly once; no entry
   hash appears twice anywhere;
2. directory block heights run from 0 without a gap and each block links to the one
   before (previous KeyMR and full hash), as do the entry blocks of every chain;
3. the API reports acknowledged entries at stage ``ledger`` in the directory block where
   the node has it (no row stuck behind): a random sample of 500 in the short case and
   2,000 in the long one (one ``GET`` each, about 5 ms apiece on a busy machine).

Pipeline runner: ``notary notarize FOLDER`` (a subprocess against the running services,
its own audit database, a shared Prefect server) on a few hundred small files is
SIGKILLed at a random point of its work (a step it has not finished: recording,
publishing, ``ledger``, receipts, and a random count of documents into it), rerun with a
few dozen new files dropped in, killed again, and so on; then a last run and
``notary collect`` complete it. Afterwards the audit store holds
every file exactly once, with the entry the document determines, that entry is in the
collection's chain exactly once (the chain holds nothing else but its first entry), and
every stored receipt verifies (``tasks.verify.verify_node_receipt``) against the
directory block the node serves at its height.

Each case prints its figures (``-s`` shows them). The short cases run in CI; the long
loops are marked ``slow`` (``make test-reliability`` runs them).
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlmodel import col

from connectors.audit import BATCH_SOURCE_PREFIX, AuditStore, ProofRecord
from connectors.audit.models import Document
from ledger.core.entry import Entry
from tasks.documents import notarization_entry
from tasks.verify import ReceiptRejected, verify_node_receipt
from tests.harness.processes import child_env
from tests.harness.services import LedgerProcesses, entry_body
from tests.harness.waiting import WaitTimeout, wait_until
from tests.reliability.ledger_audit import LedgerAudit

pytestmark = pytest.mark.e2e

KILLABLE = ("node", "wallet", "api")
#: Chance that a writer gives up a write whose answer was lost instead of sending it again
#: (it may or may not be stored: it must then appear at most once).
ABANDON = 0.2
#: Chance that a restart is itself SIGKILLed at a random moment (while the service imports,
#: replays its journal, opens its database...) before the service is started for good.
RECOVERY_CRASH = 0.3
COLLECTION = "crash-matrix"


# -- writers --------------------------------------------------------------------------------


@dataclass
class WriteLog:
    """What the writers sent and what the API acknowledged (shared by the threads)."""

    acked: dict[bytes, bytes] = field(default_factory=dict)  # entry hash -> chain id
    attempts: int = 0
    lost_answers: int = 0  # connection refused or reset, timeouts
    resent: int = 0
    abandoned: int = 0
    unexpected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, name: str) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)


def post_write(
    http: httpx.Client,
    url: str,
    entry: Entry,
    log: WriteLog,
    stop: threading.Event,
    rng: random.Random,
) -> bool:
    """POST ``entry`` until the API answers it (or the writer gives it up); True on 202."""
    expected = entry.hash()
    while True:
        log.count("attempts")
        try:
            response = http.post(url, json=entry_body(entry))
        except httpx.TransportError:
            log.count("lost_answers")
            if stop.is_set() or rng.random() < ABANDON:
                log.count("abandoned")
                return False
            log.count("resent")
            stop.wait(0.05)
            continue
        if response.status_code == 202:
            answered = response.json()["entry_hash"]
            with log.lock:
                if answered != expected.hex():
                    log.unexpected.append(f"202 for {answered}, sent {expected.hex()}")
                log.acked[expected] = entry.chain_id
            return True
        if response.status_code in (429, 503):  # rate limit, or shutting down: send again
            if stop.is_set():
                log.count("abandoned")
                return False
            stop.wait(0.05)
            continue
        with log.lock:
            log.unexpected.append(f"{response.status_code} {response.text[:300]}")
        return False


def write_loop(
    api: str,
    key: str,
    chain_id: bytes,
    tag: bytes,
    log: WriteLog,
    stop: threading.Event,
    seed: float,
) -> None:
    """Append entries to ``chain_id`` one after the other until ``stop`` is set."""
    rng = random.Random(seed)
    url = f"{api}/chains/{chain_id.hex()}/entries"
    with httpx.Client(timeout=10.0, headers={"user-key": key}) as http:
        number = 0
        while not stop.is_set():
            entry = Entry(chain_id, (tag, str(number).encode()), rng.randbytes(rng.randrange(200)))
            number += 1
            post_write(http, url, entry, log, stop, rng)


def create_chains(ledger: LedgerProcesses, count: int, log: WriteLog, tag: str) -> list[bytes]:
    """``count`` new chains of the API account (their first entries count as writes)."""
    chains = []
    never, rng = threading.Event(), random.Random(tag)
    with httpx.Client(timeout=10.0, headers={"user-key": ledger.api_key}) as http:
        for index in range(count):
            first = Entry.first_entry((b"crash matrix", tag.encode(), str(index).encode()), b"")
            while not post_write(http, f"{ledger.api_url}/chains", first, log, never, rng):
                assert not log.unexpected, log.unexpected
            chains.append(first.chain_id)
    return chains


# -- the service matrix ---------------------------------------------------------------------


class Stopwatch:
    """Wall time of consecutive phases, seconds (``lap`` ends one)."""

    def __init__(self) -> None:
        self.started = self._last = time.monotonic()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = round(now - self._last, 1)
        self._last = now

    @property
    def total(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def __str__(self) -> str:
        return ", ".join(f"{name} {seconds} s" for name, seconds in self.laps.items())


@dataclass
class MatrixFigures:
    """Figures of one service matrix run (printed, and checked by the tests)."""

    seed: int
    kills: dict[str, int]
    start_kills: dict[str, int]
    acked: int
    found: int
    duplicates: int
    seconds: float


def run_service_matrix(
    tmp_path: Path, *, kills_per_service: int, writers: int, api_sample: int, seed: int
) -> MatrixFigures:
    """Writes under SIGKILLs of node, wallet and API (module docstring); returns figures.

    ``api_sample``: how many acknowledged entries (chosen at random) are asked of the API
    one by one for their stage (all of them when there are fewer).
    """
    rng = random.Random(seed)
    clock = Stopwatch()
    log = WriteLog()
    schedule = [name for name in KILLABLE for _ in range(kills_per_service)]
    rng.shuffle(schedule)
    with LedgerProcesses(tmp_path / "ledger") as ledger:
        chains = create_chains(ledger, writers, log, f"services {seed}")
        clock.lap("start")
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=write_loop,
                args=(ledger.api_url, ledger.api_key, chain, b"w%d" % i, log, stop, rng.random()),
                name=f"writer-{i}",
                daemon=True,
            )
            for i, chain in enumerate(chains)
        ]
        for thread in threads:
            thread.start()
        try:
            for name in schedule:  # the killer: a random moment under load, a random pause
                time.sleep(rng.uniform(0.3, 1.5))
                assert ledger.kill9(name), f"{name} was not running when it was to be killed"
                time.sleep(rng.uniform(0.05, 1.0))
                interrupt = rng.uniform(0.1, 2.5) if rng.random() < RECOVERY_CRASH else None
                ledger.restart(name, interrupt_after_s=interrupt)
            time.sleep(0.5)
        finally:
            stop.set()
            for thread in threads:
                thread.join(30)
        clock.lap("load and kills")
        assert not any(t.is_alive() for t in threads), "a writer did not stop"
        assert not log.unexpected, log.unexpected[:10]
        assert log.acked, "no write was acknowledged"
        with LedgerAudit(ledger.node_url) as audit:
            missing = audit.wait_for(set(log.acked), timeout_s=120)
            assert not missing, _explain_missing(ledger, missing)
            clock.lap("until every write is in a block")
            duplicates = audit.duplicates()
            assert not duplicates, f"{len(duplicates)} entries recorded more than once"
            checked = dict(rng.sample(sorted(log.acked.items()), min(api_sample, len(log.acked))))
            behind = api_stage_problems(ledger, checked, audit, timeout_s=60)
            assert not behind, behind[:10]
            clock.lap("API stage check")
        figures = MatrixFigures(
            seed,
            ledger.kills(),
            ledger.start_kills(),
            len(log.acked),
            len(set(log.acked) & audit.entries.keys()),
            len(duplicates),
            clock.total,
        )
    print(
        f"\nservice crash matrix (seed {seed}): crashes injected {figures.kills}, and while "
        f"restarting {figures.start_kills}; "
        f"writes sent {log.attempts} (answers lost {log.lost_answers}, sent again "
        f"{log.resent}, given up {log.abandoned}); writes acknowledged {figures.acked}; "
        f"found in blocks {figures.found}; duplicates {figures.duplicates}; entries in "
        f"blocks {sum(audit.entries.values())} up to height {audit.tip}; API stage checked "
        f"for {len(checked)}; "
        f"{figures.seconds} s ({clock})"
    )
    return figures


def api_stage_problems(
    ledger: LedgerProcesses, acked: dict[bytes, bytes], audit: LedgerAudit, *, timeout_s: float
) -> list[str]:
    """Acknowledged entries the API does not (yet, after ``timeout_s``) report at stage
    ``ledger`` in the directory block where the node has them (``GET`` each, 4 at once)."""
    remaining = dict(acked)
    problems: list[str] = []
    with (
        httpx.Client(timeout=10.0, headers={"user-key": ledger.api_key}) as http,
        ThreadPoolExecutor(4) as pool,
    ):

        def stage(item: tuple[bytes, bytes]) -> tuple[bytes, Any]:
            entry_hash, chain_id = item
            url = f"{ledger.api_url}/chains/{chain_id.hex()}/entries/{entry_hash.hex()}"
            return entry_hash, http.get(url).json()

        def all_at_ledger() -> bool:
            for entry_hash, data in pool.map(stage, list(remaining.items())):
                if data.get("stage") not in ("ledger", "anchor"):
                    continue
                del remaining[entry_hash]
                if data.get("dblock_height") != audit.height_of[entry_hash]:
                    problems.append(
                        f"{entry_hash.hex()}: API says height {data.get('dblock_height')}, "
                        f"node {audit.height_of[entry_hash]}"
                    )
            return not remaining

        with contextlib.suppress(WaitTimeout):  # what is left is reported below
            wait_until(all_at_ledger, timeout_s, 0.2)
    return problems + [f"{h.hex()}: still not at stage ledger in the API" for h in remaining]


def _explain_missing(ledger: LedgerProcesses, missing: set[bytes]) -> str:
    """The API's own record of a few missing entries (state, attempts, last error)."""
    db = ledger.root / "api" / "api.sqlite"
    lines = [f"{len(missing)} acknowledged entries are not in any block"]
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        for entry_hash in sorted(missing)[:10]:
            row = conn.execute(
                "SELECT stage, state, attempts, last_error FROM entries WHERE entry_hash = ?",
                (entry_hash.hex(),),
            ).fetchone()
            lines.append(f"  {entry_hash.hex()}: {row}")
    return "\n".join(lines)


def test_services_killed_under_write_load_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    figures = run_service_matrix(
        tmp_path,
        kills_per_service=1,
        writers=4,
        api_sample=500,
        seed=random.SystemRandom().randrange(2**32),
    )
    assert all(figures.kills[name] >= 1 for name in KILLABLE), figures.kills


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_services_killed_under_write_load_lose_and_duplicate_nothing_long(tmp_path: Path) -> None:
    figures = run_service_matrix(
        tmp_path,
        kills_per_service=10,
        writers=6,
        api_sample=2000,
        seed=random.SystemRandom().randrange(2**32),
    )
    assert all(figures.kills[name] >= 10 for name in KILLABLE), figures.kills


# -- the pipeline runner --------------------------------------------------------------------


def make_documents(
    folder: Path, count: int, rng: random.Random, *, first: int = 0
) -> dict[str, bytes]:
    """``count`` small files of distinct content in a few subfolders, numbered from
    ``first``; relative path -> bytes."""
    files: dict[str, bytes] = {}
    for index in range(first, first + count):
        relative = f"part{index % 7}/doc-{index:04d}.txt"
        data = f"document {index}\n".encode() + rng.randbytes(rng.randrange(16, 400))
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        files[relative] = data
    return files


@dataclass(frozen=True)
class Progress:
    """How far the pipeline got, read from the audit database: flow runs started, and
    notarizations recorded, published (past ``pending``), at ``ledger`` and with a stored
    receipt."""

    runs: int = 0
    recorded: int = 0
    published: int = 0
    ledger: int = 0
    receipts: int = 0

    def __str__(self) -> str:
        return (
            f"recorded {self.recorded}, published {self.published}, ledger {self.ledger}, "
            f"receipts {self.receipts}"
        )


# Documents at each step: a document of its own row, or a member at its batch's stage.
_DOCUMENTS_AT = """(SELECT count(*) FROM notarizations n WHERE n.kind != 'batch' AND {where})
     + (SELECT count(*) FROM batch_members m JOIN notarizations n ON n.id = m.batch_id
        WHERE {where})"""
_PROGRESS_SQL = f"""
SELECT (SELECT count(*) FROM runs),
       {_DOCUMENTS_AT.format(where="1 = 1")},
       {_DOCUMENTS_AT.format(where="n.stage NOT IN ('pending', 'failed')")},
       {_DOCUMENTS_AT.format(where="n.stage IN ('ledger', 'anchor')")},
       {_DOCUMENTS_AT.format(where="n.id IN (SELECT notarization_id FROM receipts)")}
"""


def read_progress(db: Path) -> Progress:
    """``Progress`` read with plain SQL (the runner under test may be creating the schema,
    which the audit store's own opening would race with)."""
    if not db.exists():
        return Progress()
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return Progress(*conn.execute(_PROGRESS_SQL).fetchone())
    except sqlite3.OperationalError:  # no tables yet
        return Progress()


@dataclass
class FlowFigures:
    """Figures of one flow runner matrix run (printed, and checked by the tests)."""

    seed: int
    crashes: int
    files: int
    entries_in_chain: int
    receipts_verified: int
    seconds: float


def run_flow_matrix(
    tmp_path: Path,
    prefect_api_url: str,
    *,
    files: int,
    added_per_run: int,
    kills: int,
    window_s: float,
    seed: int,
) -> FlowFigures:
    """``notary notarize`` SIGKILLed ``kills`` times, then completed (module docstring).

    The folder starts with ``files`` documents; ``added_per_run`` new ones are dropped in
    before each later run, so that every run has work of each step to be killed in.
    """
    rng = random.Random(seed)
    clock = Stopwatch()
    folder = tmp_path / "docs"
    contents = make_documents(folder, files, rng)
    audit_db = tmp_path / "audit.sqlite"
    audit_url = f"sqlite:///{audit_db}"
    with LedgerProcesses(tmp_path / "ledger") as ledger:
        env = child_env(
            {
                "NOTARY_API_URL": ledger.api_url,
                "NOTARY_NODE_URL": ledger.node_url,
                "NOTARY_ANCHOR_URL": ledger.anchor_url,  # not running: anchors stay for later
                "NOTARY_AUDIT_DB_URL": audit_url,
                "NOTARY_BATCH_SIZE": "40",
                "NOTARY_AGGREGATE_BATCH_SIZE": "50",  # several batch entries per run
                "NOTARY_LEDGER_WAIT_S": "60",
                "PREFECT_API_URL": prefect_api_url,
                "COLUMNS": "200",
            }
        )
        cli = [sys.executable, "-m", "flows.cli"]
        data = ["--data-dir", str(ledger.root)]
        notarize = [*cli, "notarize", str(folder), "--collection", COLLECTION, *data]
        clock.lap("start")
        kill_points: list[Progress | int] = []
        for index in range(kills):
            if index:
                contents |= make_documents(folder, added_per_run, rng, first=len(contents))
            run = f"notarize-{index}"
            files_now = len(contents)
            kill_points.append(
                kill_run(ledger, run, notarize, env, audit_db, files_now, window_s, rng)
            )
        clock.lap("killed runs")
        last = ledger.launch("notarize-last", notarize, env)
        status = last.wait(300)
        assert status in (0, 1), f"last run: status {status}\n{last.log_tail()}"
        clock.lap("last run")
        for attempt in range(10):  # until nothing waits (status 1: some still waiting)
            collect = ledger.launch(f"collect-{attempt}", [*cli, "collect", *data], env)
            if collect.wait(300) == 0:
                break
            time.sleep(1.0)
        else:
            pytest.fail(f"notary collect did not complete:\n{collect.log_tail()}")
        clock.lap("collect")
        with LedgerAudit(ledger.node_url) as audit:
            audit.scan()
            verified = check_audit_store(audit_url, audit, contents)
        clock.lap("checks")
    crashes = [point for point in kill_points if isinstance(point, Progress)]
    finished = [point for point in kill_points if isinstance(point, int)]
    assert all(status in (0, 1) for status in finished), f"exit statuses {finished}"
    figures = FlowFigures(
        seed,
        len(crashes),
        len(contents),
        len(audit.chains[bytes.fromhex(collection_chain(audit_url))]),
        verified,
        clock.total,
    )
    print(
        f"\nflow runner crash matrix (seed {seed}): crashes injected {figures.crashes} "
        f"(runs that finished before their kill: {len(finished)}, statuses {finished}); "
        f"progress at each kill: "
        f"{' | '.join(str(p) for p in crashes)}; files {figures.files}; entries in the chain "
        f"{figures.entries_in_chain} (first entry + batches); receipts verified "
        f"{verified}; {figures.seconds} s ({clock})"
    )
    return figures


def kill_run(
    ledger: LedgerProcesses,
    name: str,
    argv: list[str],
    env: dict[str, str],
    audit_db: Path,
    files: int,
    window_s: float,
    rng: random.Random,
) -> Progress | int:
    """Start a run and SIGKILL it at a random point of the work it has left: a step it has
    not finished (recording, publishing, ``ledger``, receipts) and a random count of
    documents in it; when nothing is left, up to ``window_s`` after its flow started.

    Returns the progress at the kill, or the run's exit status when it finished first.
    """
    before = read_progress(audit_db)
    steps = [
        s for s in ("recorded", "published", "ledger", "receipts") if getattr(before, s) < files
    ]
    step = rng.choice(steps) if steps else None
    target = rng.randint(getattr(before, step) + 1, files) if step else 0
    runner = ledger.launch(name, argv, env)

    def reached() -> bool:
        now = read_progress(audit_db)
        return getattr(now, step) >= target if step else now.runs > before.runs

    wait_until(
        lambda: not runner.alive or reached(),
        300,
        0.01,
        what=lambda: f"the run to reach its kill point; stuck:\n{runner.log_tail()}",
    )
    if step is None:
        with contextlib.suppress(subprocess.TimeoutExpired):  # a while, or until it ends
            runner.wait(rng.uniform(0.0, window_s))
    point = read_progress(audit_db)
    if runner.kill9():
        return point
    assert runner.returncode is not None
    return runner.returncode


def collection_chain(audit_url: str) -> str:
    """Hex chain id of the test collection (registered by the first run)."""
    with AuditStore(audit_url) as store:
        record = store.collections.find(COLLECTION)
    assert record is not None
    return record.chain_id


def check_audit_store(audit_url: str, audit: LedgerAudit, contents: dict[str, bytes]) -> int:
    """The audit store against the files and the ledger; returns receipts verified.

    Raises:
        AssertionError: listing every problem found (a file missing or twice, an entry
            missing or twice in the chain, a row short of ``ledger``, a receipt missing,
            at the wrong height, or not verifying).
    """
    with AuditStore(audit_url) as store:
        record = store.collections.find(COLLECTION)
        assert record is not None, "the collection was never registered"
        with store.engine.connect() as conn:
            path = col(Document.path)
            own = col(Document.source).not_like(f"{BATCH_SOURCE_PREFIX}%")  # not batch roots
            query = select(path, func.count()).where(own).group_by(path)
            per_path = Counter({path: count for path, count in conn.execute(query)})
        proofs = store.proofs.records(collection=COLLECTION)
        batches = store.batches.read(collection=COLLECTION, limit=10**6)
    chain_id = record.chain_id
    chain = audit.chains.get(bytes.fromhex(chain_id), [])
    in_chain = Counter(chain)
    problems = [f"{h.hex()} is {n} times in the chain" for h, n in in_chain.items() if n > 1]
    if len(chain) != len(batches) + 1:
        problems.append(f"the chain holds {len(chain)} entries for {len(batches)} batches")
    once = Counter(dict.fromkeys(contents, 1))
    for table, counts in (
        ("documents", per_path),
        ("notarizations", Counter(p.notarization.path for p in proofs)),
    ):
        if counts != once:
            extra, absent = sorted(counts - once)[:5], sorted(once - counts)[:5]
            problems.append(f"{table}: not each file once (extra {extra}, missing {absent})")
    verified = 0
    for proof in proofs:
        problem = _proof_problem(proof, record.key, contents, in_chain, audit)
        if problem is None:
            verified += 1
        else:
            problems.append(f"{proof.notarization.path}: {problem}")
    assert not problems, f"{len(problems)} problems, first ones:\n" + "\n".join(problems[:15])
    return verified


def _proof_problem(
    proof: ProofRecord,
    collection_key: bytes,
    contents: dict[str, bytes],
    in_chain: Counter[bytes],
    audit: LedgerAudit,
) -> str | None:
    """What is wrong with one notarization and its receipt, or ``None``."""
    row, receipt = proof.notarization, proof.receipt
    if row.sha256 != hashlib.sha256(contents[row.path]).hexdigest():
        return "wrong SHA-256"
    expected = notarization_entry(row, collection_key=collection_key)
    entry_hash = bytes.fromhex(expected.entry_hash)
    if row.entry_hash != expected.entry_hash:
        return f"entry hash {row.entry_hash}, the document's is {expected.entry_hash}"
    if in_chain[entry_hash] != 1:
        return f"its entry is {in_chain[entry_hash]} times in the chain"
    if row.stage not in ("ledger", "anchor"):
        return f"stage {row.stage} ({row.error})"
    if receipt is None:
        return f"stage {row.stage} but no receipt stored"
    height = audit.height_of[entry_hash]
    if not receipt.directory_block_height == row.dblock_height == height:
        return f"receipt height {receipt.directory_block_height}, row {row.dblock_height}, node {height}"
    try:
        verify_node_receipt(
            receipt.raw, entry_hash=row.entry_hash, dblock_raw=audit.dblocks[height]
        )
    except ReceiptRejected as exc:
        return f"stored receipt does not verify: {exc}"
    return None


@pytest.fixture
def prefect_api_url(prefect_harness: None) -> Iterator[str]:
    """The URL of the session's Prefect test server, for runner subprocesses."""
    from prefect.settings import PREFECT_API_URL

    yield str(PREFECT_API_URL.value())


def test_flow_runner_killed_mid_run_is_completed_without_duplicates(
    tmp_path: Path, prefect_api_url: str
) -> None:
    figures = run_flow_matrix(
        tmp_path,
        prefect_api_url,
        files=200,
        added_per_run=50,
        kills=2,
        window_s=3.0,
        seed=random.SystemRandom().randrange(2**32),
    )
    assert figures.receipts_verified == figures.files


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_flow_runner_killed_mid_run_is_completed_without_duplicates_long(
    tmp_path: Path, prefect_api_url: str
) -> None:
    figures = run_flow_matrix(
        tmp_path,
        prefect_api_url,
        files=300,
        added_per_run=100,
        kills=12,
        window_s=5.0,
        seed=random.SystemRandom().randrange(2**32),
    )
    assert figures.receipts_verified == figures.files

"""The worker: submission through the gateway, block following, anchors, restarts."""

from __future__ import annotations

from sqlalchemy import select, update

from ledger.api.models import EntryRow, ServiceState
from ledger.api.outbox.gateway import GatewayUnavailable, RpcFailure
from ledger.api.outbox.worker import LAST_HEIGHT_KEY
from ledger.api.sandbox.memory_ledger import InMemoryLedger
from tests.harness.waiting import wait_until

from .conftest import Api, ApiFactory


def rows(api: Api) -> dict[str, EntryRow]:
    with api.services.db.read() as session:
        return {r.entry_hash: r for r in session.scalars(select(EntryRow))}


def make_chain_with_entries(api: Api, n: int, tag: bytes = b"w") -> tuple[str, list[str]]:
    answer = api.post_chain([tag], b"first").json()
    hashes = [answer["entry_hash"]]
    for i in range(n):
        hashes.append(
            api.post_entry(answer["chain_id"], [tag, str(i).encode()], b"c").json()["entry_hash"]
        )
    return answer["chain_id"], hashes


def test_stages_progress_from_multi_az_to_ledger_to_anchor(
    make_api: ApiFactory, database_url: str
) -> None:
    api = make_api(database_url=database_url)
    chain_id, hashes = make_chain_with_entries(api, 2)
    assert {r.stage for r in rows(api).values()} == {"multi_az"}

    report = api.run_worker()
    assert (report.committed, report.revealed, report.errors) == (3, 3, [])
    assert all(api.ledger.is_revealed(h) for h in hashes)
    assert {(r.stage, r.state) for r in rows(api).values()} == {("multi_az", "revealed")}

    block = api.ledger.mine_block()
    api.clock.advance(600)
    assert api.run_worker().confirmed == 3
    for entry_hash in hashes:
        body = api.get(f"/v1/chains/{chain_id}/entries/{entry_hash}").json()
        assert (body["stage"], body["dblock_keymr"], body["dblock_height"]) == (
            "ledger",
            block.keymr,
            block.height,
        )
    chain = api.get(f"/v1/chains/{chain_id}").json()
    assert (chain["stage"], chain["dblock_height"]) == ("ledger", block.height)
    assert all(r.ledger_at == api.clock.now() for r in rows(api).values())

    api.ledger.anchor_block(block.height, "ff" * 32)
    assert api.run_worker().anchored == 3
    stored = rows(api)
    assert {r.stage for r in stored.values()} == {"anchor"}
    assert {r.anchor_block_hash for r in stored.values()} == {"ff" * 32}
    assert api.get(f"/v1/chains/{chain_id}/entries/last").json()["stage"] == "anchor"


def test_each_step_is_one_batch(api: Api) -> None:
    for i in range(3):
        make_chain_with_entries(api, 4, tag=bytes([i]))
    api.run_worker()
    submit_batches = [
        b for b in api.ledger.batches if b[0].startswith(("compose", "commit", "reveal"))
    ]
    assert [b[0] for b in submit_batches] == [
        "compose-chain",
        "commit-chain",
        "reveal-chain",
        "compose-entry",
        "commit-entry",
        "reveal-entry",
    ]
    assert [len(b) for b in submit_batches] == [3, 3, 3, 12, 12, 12]


def test_entries_wait_until_their_chain_is_revealed(api: Api) -> None:
    chain_id, hashes = make_chain_with_entries(api, 2)
    api.ledger.refuse_compose[hashes[0]] = RpcFailure(-32603, "Internal error", "wallet busy")
    report = api.run_worker()
    assert report.committed == 0 and api.ledger.calls["compose-entry"] == 0
    assert rows(api)[hashes[0]].attempts == 1
    assert "wallet busy" in (rows(api)[hashes[0]].last_error or "")

    del api.ledger.refuse_compose[hashes[0]]
    api.clock.advance(60)
    report = api.run_worker()
    assert (report.committed, report.revealed) == (3, 3)
    order = [m for b in api.ledger.batches for m in b if m.startswith("reveal")]
    assert order == ["reveal-chain", "reveal-entry", "reveal-entry"]


def test_repeated_commit_is_success_and_the_reveal_follows(api: Api) -> None:
    _, hashes = make_chain_with_entries(api, 0)
    api.ledger.lose_reply_next("commit-chain")  # commit done, answer lost
    report = api.run_worker()
    assert report.errors and rows(api)[hashes[0]].state == "pending"
    report = api.run_worker()
    assert (report.committed, report.revealed, report.errors) == (1, 1, [])
    assert api.ledger.commits_sent[hashes[0]] == 2  # second answered -32011
    assert api.ledger.reveals_sent[hashes[0]] == 1


def test_restart_after_a_lost_commit_reply_submits_nothing_twice(
    make_api: ApiFactory, database_url: str
) -> None:
    ledger = InMemoryLedger()
    first = make_api(database_url=database_url, ledger=ledger)
    _, hashes = make_chain_with_entries(first, 2)
    ledger.lose_reply_next("commit-chain")
    first.run_worker()
    first.close()  # the process goes away

    second = make_api(database_url=database_url, ledger=ledger, key=first.key)
    second.run_worker()
    assert all(ledger.is_revealed(h) for h in hashes)
    assert ledger.reveals_sent == {h: 1 for h in hashes}
    assert ledger.commits_sent == {hashes[0]: 2, hashes[1]: 1, hashes[2]: 1}


def test_restart_after_recorded_commit_sends_only_the_reveal(
    make_api: ApiFactory, database_url: str
) -> None:
    ledger = InMemoryLedger()
    first = make_api(database_url=database_url, ledger=ledger)
    _, hashes = make_chain_with_entries(first, 1)
    ledger.fail_next("reveal-chain")  # outage right before the reveal
    first.run_worker()
    assert rows(first)[hashes[0]].state == "committed"
    first.close()

    second = make_api(database_url=database_url, ledger=ledger, key=first.key)
    report = second.run_worker()
    assert report.revealed == 2 and report.committed == 1  # the entry's commit only
    assert ledger.commits_sent == {h: 1 for h in hashes}
    assert ledger.reveals_sent == {h: 1 for h in hashes}
    assert ledger.calls["compose-chain"] == 1


def test_a_database_older_than_the_node_is_reconciled_not_submitted_again(
    make_api: ApiFactory, database_url: str
) -> None:
    """A restored backup: the API's snapshot predates writes the node's snapshot holds."""
    ledger = InMemoryLedger()
    first = make_api(database_url=database_url, ledger=ledger)
    _, hashes = make_chain_with_entries(first, 3)
    first.run_worker()
    ledger.mine_block()  # the chain and two entries in a block, the third acknowledged only
    late = make_chain_with_entries(first, 0, tag=b"late")[1][0]
    first.run_worker()
    assert ledger.is_revealed(late)
    with first.services.db.transaction() as connection:  # the API's copy is older
        connection.execute(
            update(EntryRow)
            .where(EntryRow.entry_hash.in_(hashes[:2]))
            .values(state="committed", reveal_call=None)
        )
        connection.execute(
            update(EntryRow)
            .where(EntryRow.entry_hash.in_([hashes[3], late]))
            .values(state="pending")
        )
    never_sent = make_chain_with_entries(first, 0, tag=b"new")[1][0]
    first.close()
    commits, reveals = dict(ledger.commits_sent), dict(ledger.reveals_sent)

    second = make_api(database_url=database_url, ledger=ledger, key=first.key)
    report = second.run_worker()
    assert report.revealed == 5 and report.committed == 1  # four reconciled, one new
    assert {h: ledger.commits_sent[h] for h in commits} == commits
    assert {h: ledger.reveals_sent[h] for h in reveals} == reveals
    assert ledger.is_revealed(never_sent) and ledger.commits_sent[never_sent] == 1
    assert {r.state for r in rows(second).values()} == {"revealed"}


def test_reconciling_waits_for_the_node(make_api: ApiFactory, database_url: str) -> None:
    ledger = InMemoryLedger()
    api = make_api(database_url=database_url, ledger=ledger)
    _, hashes = make_chain_with_entries(api, 1)
    ledger.fail_next("ack")
    report = api.run_worker()
    assert report.errors and ledger.calls["compose-chain"] == 0  # nothing submitted
    assert api.run_worker().revealed == 2


def test_restart_resumes_block_following_after_the_last_height(
    make_api: ApiFactory, database_url: str
) -> None:
    ledger = InMemoryLedger(start_height=7)
    first = make_api(database_url=database_url, ledger=ledger)
    chain_id, _ = make_chain_with_entries(first, 0)
    first.run_worker()
    ledger.mine_block()  # height 8
    assert first.run_worker().confirmed == 1
    first.close()

    second = make_api(database_url=database_url, ledger=ledger, key=first.key)
    new_hash = second.post_entry(chain_id, [b"after restart"]).json()["entry_hash"]
    second.run_worker()
    for _ in range(3):
        ledger.mine_block()  # heights 9, 10, 11; the entry is in 9
    assert second.run_worker().confirmed == 1
    assert rows(second)[new_hash].dblock_height == 9
    assert ledger.calls["dblock-by-height"] == 1 + 3  # height 8 once, then 9..11
    with second.services.db.read() as session:
        assert session.get(ServiceState, LAST_HEIGHT_KEY).value == "11"  # type: ignore[union-attr]


def test_first_pass_starts_at_the_current_height(make_api: ApiFactory) -> None:
    api = make_api(ledger=InMemoryLedger(start_height=500))
    make_chain_with_entries(api, 0)
    api.run_worker()
    api.ledger.mine_block()
    assert api.run_worker().confirmed == 1
    assert api.ledger.calls["dblock-by-height"] == 1


def test_idle_worker_does_not_fetch_blocks(api: Api) -> None:
    api.run_worker()
    for _ in range(5):
        api.ledger.mine_block()
        api.run_worker()
    assert api.ledger.calls["dblock-by-height"] == 0


def test_block_catch_up_is_bounded_by_the_batch_size(make_api: ApiFactory) -> None:
    api = make_api(worker_batch_size=2)
    make_chain_with_entries(api, 0)
    api.run_worker()
    for _ in range(4):
        api.ledger.mine_block()  # the entry is in the first of them (height 1)
    make_chain_with_entries(api, 0, tag=b"late")
    api.run_worker()  # heights 1-2 handled; the late chain is revealed
    api.ledger.mine_block()  # height 5 holds the late chain
    confirmed = [api.run_worker().confirmed for _ in range(3)]
    assert sum(confirmed) == 1
    assert {r.dblock_height for r in rows(api).values()} == {1, 5}


def test_entry_revealed_with_lost_reply_is_found_in_the_block_and_not_revealed_again(
    api: Api,
) -> None:
    chain_id, hashes = make_chain_with_entries(api, 1)
    api.ledger.lose_reply_next("reveal-entry")
    api.run_worker()
    assert rows(api)[hashes[1]].state == "committed"
    api.ledger.mine_block()
    report = api.run_worker()  # blocks are followed before submission
    assert report.confirmed == 2
    assert rows(api)[hashes[1]].state == "revealed" and rows(api)[hashes[1]].stage == "ledger"
    assert api.ledger.reveals_sent[hashes[1]] == 1


def test_outage_leaves_rows_as_they_were(api: Api) -> None:
    _, hashes = make_chain_with_entries(api, 0)
    api.ledger.fail_next("compose-chain")
    report = api.run_worker()
    assert report.errors and report.committed == 0
    row = rows(api)[hashes[0]]
    assert (row.state, row.attempts) == ("pending", 0)
    assert api.run_worker().revealed == 1


def test_errors_back_off_exponentially_then_give_up(make_api: ApiFactory) -> None:
    api = make_api(submit_max_attempts=3, submit_retry_base_s=10)
    _, hashes = make_chain_with_entries(api, 0)
    api.ledger.refuse_compose[hashes[0]] = RpcFailure(
        -32602, "Invalid params", "no such ec address"
    )
    api.run_worker()
    assert api.ledger.calls["compose-chain"] == 1
    api.run_worker()
    assert api.ledger.calls["compose-chain"] == 1  # not yet due
    api.clock.advance(10)
    api.run_worker()
    assert api.ledger.calls["compose-chain"] == 2
    api.clock.advance(19)
    api.run_worker()
    assert api.ledger.calls["compose-chain"] == 2  # second delay is 20 s
    api.clock.advance(1)
    api.run_worker()
    row = rows(api)[hashes[0]]
    assert (row.state, row.attempts) == ("failed", 3)
    api.clock.advance(10_000)
    api.run_worker()
    assert api.ledger.calls["compose-chain"] == 3


def test_anchor_lookups_are_throttled(make_api: ApiFactory) -> None:
    api = make_api(anchor_poll_interval_s=30)
    make_chain_with_entries(api, 0)
    api.run_worker()
    api.ledger.mine_block()
    api.run_worker()
    api.run_worker()
    assert api.ledger.calls["anchors"] == 1
    api.clock.advance(30)
    api.run_worker()
    assert api.ledger.calls["anchors"] == 2


def test_worker_thread_runs_in_the_lifespan(make_api: ApiFactory) -> None:
    api = make_api(worker_enabled=True, worker_poll_interval_s=0.01)
    worker = api.services.worker
    assert worker is not None and worker.running
    _, hashes = make_chain_with_entries(api, 1)
    wait_until(lambda: all(api.ledger.is_revealed(h) for h in hashes), 5.0, 0.01)
    api.ledger.mine_block()
    wait_until(lambda: {r.stage for r in rows(api).values()} == {"ledger"}, 5.0, 0.01)
    api.close()
    assert not worker.running


def test_large_backlogs_go_in_chunks_with_composition_ahead(make_api: ApiFactory) -> None:
    api = make_api(submit_chunk_rows=4, submit_rows_per_pass=10)
    _, hashes = make_chain_with_entries(api, 13)
    first = api.run_worker()
    assert (first.committed, first.revealed, first.backlog) == (11, 11, True)
    second = api.run_worker()
    assert (second.committed, second.revealed, second.backlog) == (3, 3, False)
    assert all(api.ledger.is_revealed(h) for h in hashes)
    assert api.ledger.commits_sent == {h: 1 for h in hashes}
    assert api.ledger.reveals_sent == {h: 1 for h in hashes}
    entry_batches = [len(b) for b in api.ledger.batches if b[0] == "compose-entry"]
    assert entry_batches == [4, 4, 2, 3]  # 10 rows per pass, 4 per chunk


def test_outage_in_a_later_chunk_keeps_the_chunks_already_done(make_api: ApiFactory) -> None:
    api = make_api(submit_chunk_rows=2)
    chain_id, _ = make_chain_with_entries(api, 0)
    api.run_worker()  # the chain is revealed
    hashes = [api.post_entry(chain_id, [b"e", bytes([i])]).json()["entry_hash"] for i in range(5)]
    real_submit, reveal_batches = api.ledger.submit, []

    def submit(calls):  # the second reveal batch meets an outage
        if calls and calls[0].method == "reveal-entry":
            reveal_batches.append(len(calls))
            if len(reveal_batches) == 2:
                raise GatewayUnavailable("node went away")
        return real_submit(calls)

    api.ledger.submit = submit  # type: ignore[method-assign]
    report = api.run_worker()
    assert report.errors and (report.committed, report.revealed) == (2, 2)
    states = [rows(api)[h].state for h in hashes]
    assert states == ["revealed", "revealed", "committed", "committed", "pending"]
    api.run_worker()
    assert {rows(api)[h].state for h in hashes} == {"revealed"}
    assert set(api.ledger.commits_sent.values()) == {1}
    assert all(api.ledger.reveals_sent[h] == 1 for h in hashes)


def test_nothing_is_submitted_before_the_block_cursor_is_known(api: Api) -> None:
    _, hashes = make_chain_with_entries(api, 0)
    api.ledger.fail_next("heights")
    report = api.run_worker()
    assert report.errors and api.ledger.calls["compose-chain"] == 0
    assert rows(api)[hashes[0]].state == "pending"
    report = api.run_worker()
    assert (report.committed, report.revealed) == (1, 1)

"""Atomic acquisition under 8 racing processes, on SQLite and PostgreSQL."""

from __future__ import annotations

import multiprocessing
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from airflow_provider_deltacc.leases import store_from_url
from tests.integration.leases import workers

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]

ROUNDS = 6


@dataclass
class Racers:
    """Eight spawned processes waiting for race commands, one queue each."""

    commands: list[Any]
    results: Any
    processes: list[Any]


@pytest.fixture(scope="module")
def racers() -> Iterator[Racers]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(workers.RACERS)
    results = ctx.Queue()
    commands = [ctx.Queue() for _ in range(workers.RACERS)]
    processes = [
        ctx.Process(target=workers.serve, args=(i, barrier, commands[i], results), daemon=True)
        for i in range(workers.RACERS)
    ]
    for process in processes:
        process.start()
    yield Racers(commands, results, processes)
    for queue in commands:
        queue.put(None)
    for process in processes:
        process.join(timeout=30)
        if process.is_alive():
            process.kill()


def test_exactly_one_maintenance_wins_and_no_update_is_lost(store_url: str, racers: Racers) -> None:
    prefix = f"race-{uuid.uuid4().hex[:8]}"
    store_from_url(store_url).close()  # create the schema before the race
    for queue in racers.commands:
        queue.put((store_url, prefix, ROUNDS))
    expected = workers.RACERS * (ROUNDS + 1)
    received = [racers.results.get(timeout=120) for _ in range(expected)]
    assert all(process.is_alive() for process in racers.processes)

    rounds: dict[int, list[tuple[str, str | None]]] = defaultdict(list)
    shared_ids: list[str] = []
    for round_no, index, op_or_count, payload in received:
        if round_no == "shared":
            assert op_or_count == workers.INSERTS_PER_RACER, f"racer {index} lost heartbeats"
            shared_ids += payload
        else:
            rounds[round_no].append((op_or_count, payload))

    with store_from_url(store_url) as store:
        for round_no, outcomes in sorted(rounds.items()):
            won = [(op, lease_id) for op, lease_id in outcomes if lease_id is not None]
            maintenance = [lease_id for op, lease_id in won if op == "optimize"]
            writers = [lease_id for op, lease_id in won if op == "merge"]
            if round_no % 2 == 0:
                assert len(maintenance) == 1 and not writers, f"round {round_no}: {won}"
            else:
                # Ordered: either one OPTIMIZE and no MERGE, or MERGEs (which never block each other) only.
                assert (len(maintenance) == 1 and not writers) or (not maintenance and writers), won
            recorded = store.history(f"{prefix}-round{round_no}")
            assert sorted(lease.lease_id for lease in recorded) == sorted(lease_id for _, lease_id in won)

        shared = store.history(f"{prefix}-shared")
        assert len(shared_ids) == len(set(shared_ids)) == workers.RACERS * workers.INSERTS_PER_RACER
        assert sorted(lease.lease_id for lease in shared) == sorted(shared_ids)
        assert all(lease.heartbeat_at > lease.acquired_at for lease in shared)

"""RedisStore against a real ``redis-server`` started for these tests on a free loopback port."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from policy.language.loader import load_policy
from policy.model.events import Scope, ToolCall
from policy.runtime.loops.detector import LoopDetector
from policy.runtime.loops.state import ScopeState
from policy.stores.redis import LockLostError, RedisStore, StoreBusyError, StoreUnavailableError

if TYPE_CHECKING:
    from redis import Redis

    from tests.conftest import RestartableRedis

redis = pytest.importorskip("redis")
RedisConnectionError = redis.exceptions.ConnectionError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def client(redis_port: int) -> Redis:
    connection: Redis = redis.Redis(port=redis_port)
    connection.flushdb()
    return connection


def test_a_scope_starts_empty_and_its_changes_are_saved(client: Redis, redis_port: int) -> None:
    store = RedisStore(client)
    with store.scope(Scope("t1", "r1")) as state:
        assert state == ScopeState()
        state.pending["c1"] = {"note": "ü"}
    other_worker = RedisStore(redis.Redis(port=redis_port))
    with other_worker.scope(Scope("t1", "r1")) as state:
        assert state.pending == {"c1": {"note": "ü"}}
    with store.scope(Scope("t1", "r2")) as state:
        assert state.pending == {}
    assert len(store) == 2


def test_loop_detection_carries_across_workers(client: Redis, redis_port: int) -> None:
    detector = LoopDetector(load_policy("builtin:default"))
    workers = [RedisStore(client), RedisStore(redis.Redis(port=redis_port))]
    scope = Scope("t", "r")
    actions = []
    for turn in range(3):
        call = ToolCall(id=f"c{turn}", name="bash", args={"command": "submit flag{x}"})
        with workers[turn % 2].scope(scope) as state:
            actions.append(detector.on_turn(state, [call]).action)
    assert actions == ["allow", "allow", "warn"]


def test_an_exception_inside_the_block_saves_nothing_and_releases_the_lock(client: Redis) -> None:
    store = RedisStore(client, wait_seconds=0.5)
    scope = Scope("t", "r")
    with pytest.raises(KeyError), store.scope(scope) as state:
        state.pending["lost"] = {}
        raise KeyError("boom")
    with store.scope(scope) as state:  # would time out if the lock were still held
        assert state.pending == {}


def test_drop_thread_forgets_every_run_of_that_thread_only(client: Redis) -> None:
    store = RedisStore(client)
    for thread, run in [("t1", "r1"), ("t1", "r2"), ("t2", "r1")]:
        with store.scope(Scope(thread, run)) as state:
            state.pending["c"] = {}
    store.drop_thread("t1")
    assert len(store) == 1
    with store.scope(Scope("t1", "r1")) as state:
        assert state.pending == {}
    with store.scope(Scope("t2", "r1")) as state:
        assert state.pending == {"c": {}}


def test_drop_all_forgets_every_thread_under_its_prefix_only(client: Redis) -> None:
    store, other = RedisStore(client, prefix="p*[x]"), RedisStore(client, prefix="p")
    for thread, run in [("t1", "r1"), ("t2", "r1")]:
        for each in (store, other):
            with each.scope(Scope(thread, run)) as state:
                state.pending["c"] = {}
    store.drop_all()
    assert len(store) == 0
    assert len(other) == 2
    with store.scope(Scope("t1", "r1")) as state:
        assert state.pending == {}
    with other.scope(Scope("t1", "r1")) as state:
        assert state.pending == {"c": {}}


def test_ids_with_separators_do_not_collide(client: Redis) -> None:
    store = RedisStore(client)
    with store.scope(Scope("a:b", "c")) as state:
        state.pending["x"] = {}
    with store.scope(Scope("a", "b:c")) as state:
        assert state.pending == {}


def test_at_most_max_scopes_are_kept_least_recently_used_first(client: Redis) -> None:
    store = RedisStore(client, max_scopes=3)
    for run in ("a", "b", "c", "a", "d"):
        with store.scope(Scope("t", run)) as state:
            state.pending[run] = {}
        time.sleep(0.002)
    assert len(store) == 3
    assert client.exists(store.state_key(Scope("t", "b"))) == 0
    assert client.exists(store.state_key(Scope("t", "a"))) == 1


def test_states_expire_after_ttl_seconds(client: Redis) -> None:
    store = RedisStore(client, ttl_seconds=120)
    with store.scope(Scope("t", "r")):
        pass
    assert 0 < client.ttl(store.state_key(Scope("t", "r"))) <= 120


def test_a_scope_locked_too_long_by_another_worker_is_a_clear_error(client: Redis) -> None:
    store = RedisStore(client, wait_seconds=0.2)
    scope = Scope("t", "r")
    client.set(store.state_key(scope) + ":lock", "someone-else", px=60_000)
    with pytest.raises(StoreBusyError, match="stayed locked"), store.scope(scope):
        pass  # raised after wait_seconds: the lock's 60 s lease had not run out


def test_a_lost_lock_is_never_released_or_overwritten_by_its_former_owner(client: Redis) -> None:
    store = RedisStore(client)
    scope = Scope("t", "r")
    lock = store.state_key(scope) + ":lock"
    with pytest.raises(LockLostError), store.scope(scope) as state:
        state.pending["late"] = {}
        client.set(lock, "next-owner")  # our lock expired and another worker took it
    assert client.get(lock) == b"next-owner"
    assert client.get(store.state_key(scope)) is None


def test_an_unreadable_state_starts_afresh(client: Redis, caplog: pytest.LogCaptureFixture) -> None:
    store = RedisStore(client)
    scope = Scope("t", "r")
    client.set(store.state_key(scope), b"\xff not json")
    with caplog.at_level(logging.WARNING, logger="policy.stores"), store.scope(scope) as state:
        assert state == ScopeState()
    assert "discarding unreadable state" in caplog.text


HAMMER = """
import sys
import redis
from policy.model.events import Scope
from policy.stores.redis import RedisStore

store = RedisStore(redis.Redis(port=int(sys.argv[1])))
for _ in range(int(sys.argv[2])):
    with store.scope(Scope("shared", "run")) as state:
        counter = state.pending.setdefault("counter", {"n": 0})
        counter["n"] += 1
"""


def test_processes_and_threads_hammering_one_scope_lose_no_update(
    client: Redis, redis_port: int
) -> None:
    processes, threads, rounds = 2, 4, 150
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen([sys.executable, "-c", HAMMER, str(redis_port), str(rounds)], env=env)
        for _ in range(processes)
    ]
    store = RedisStore(client)

    def hammer() -> None:
        local = RedisStore(redis.Redis(port=redis_port))
        for _ in range(rounds):
            with local.scope(Scope("shared", "run")) as state:
                counter = state.pending.setdefault("counter", {"n": 0})
                counter["n"] += 1

    pool = [threading.Thread(target=hammer) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert [worker.wait(120) for worker in workers] == [0] * processes
    with store.scope(Scope("shared", "run")) as state:
        assert state.pending["counter"]["n"] == (processes + threads) * rounds


# --- faults (issue 16): a dead or restarted server costs loop counting, never a block -------------

BROKEN_WRITE = ToolCall(id="w1", name="write_file", args={"path": "app.py", "content": "def f(:\n"})


def test_a_dead_server_keeps_the_block_and_costs_one_attempt_per_interval(
        caplog: pytest.LogCaptureFixture) -> None:
    from policy.runtime.guard import Guard

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = RedisStore.from_url(f"redis://127.0.0.1:{port}/0", retry_seconds=60)
    attempts = 0
    real_acquire = store._acquire

    def counting_acquire(lock: str) -> str:
        nonlocal attempts
        attempts += 1
        return real_acquire(lock)

    store._acquire = counting_acquire  # type: ignore[method-assign]
    guard = Guard(load_policy("builtin:default"), store=store, read_file=lambda path: None)
    with caplog.at_level(logging.WARNING):
        decisions = [guard.on_call(BROKEN_WRITE, Scope("t", "r")) for _ in range(5)]
    assert [d.action for d in decisions] == ["block"] * 5
    assert all(d.metadata["loop_state"] == "unavailable" for d in decisions)
    assert attempts == 1  # the breaker answered the other four at once
    assert len([r for r in caplog.records if "loop state store failed" in r.getMessage()]) == 1


def test_resets_go_through_the_breaker_too() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = RedisStore.from_url(f"redis://127.0.0.1:{port}/0", retry_seconds=60)
    with pytest.raises(RedisConnectionError):
        store.drop_thread("t")  # the one attempt of this interval
    for drop in (lambda: store.drop_thread("t"), store.drop_all, lambda: len(store)):
        with pytest.raises(StoreUnavailableError):
            drop()


def test_a_lone_surrogate_is_saved_and_read_back_unchanged(client: Redis, redis_port: int) -> None:
    store = RedisStore(client)
    with store.scope(Scope("t\udcff", "r")) as state:
        state.pending["c1"] = {"hint": "bad byte \udcff here"}
    decoding = RedisStore(redis.Redis(port=redis_port, decode_responses=True))
    with decoding.scope(Scope("t\udcff", "r")) as state:
        assert state.pending == {"c1": {"hint": "bad byte \udcff here"}}


def test_a_worker_killed_holding_a_scope_costs_at_most_its_lease(client: Redis) -> None:
    store = RedisStore(client)
    scope = Scope("t", "r")
    client.set(f"{store.state_key(scope)}:lock", "a-dead-worker", px=int(store.lock_seconds * 1000))
    assert store.lock_seconds <= 2 < store.wait_seconds
    with store.scope(scope) as state:  # got within wait_seconds: the dead worker's lease ran out first
        state.pending["c1"] = {}


def test_a_server_that_lost_its_data_is_told_from_a_new_one(client: Redis,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    store = RedisStore(client)
    with caplog.at_level(logging.WARNING), store.scope(Scope("t", "r")) as state:
        state.pending["c1"] = {}
    assert not [r for r in caplog.records if "lost the loop state" in r.getMessage()]
    client.flushall()  # what a restart without persistence leaves
    with caplog.at_level(logging.WARNING), store.scope(Scope("t", "r")) as state:
        assert state.pending == {}
    assert len([r for r in caplog.records if "lost the loop state" in r.getMessage()]) == 1


# --- a lost scope is told from a new one, per scope (issue 16) -----------------------------------

REPEATED = ToolCall(id="c", name="bash", args={"command": "make test"})


def _losses(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "no longer has the loop state" in r.getMessage()]


def _answering(client: Redis) -> None:
    """Wait until the client's pool reconnected to the restarted server."""
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_a_restart_without_persistence_is_logged_once_for_each_scope_that_lost_its_state(
        restartable_redis: RestartableRedis, caplog: pytest.LogCaptureFixture) -> None:
    from policy.runtime.guard import Guard

    store = RedisStore(redis.Redis(port=restartable_redis.port))
    guard = Guard(load_policy("builtin:default"), store=store)
    first, second, untouched = Scope("t1", "r"), Scope("t2", "r"), Scope("t3", "r")
    for scope in (first, second):
        assert [guard.on_turn([REPEATED], scope).action for _ in range(2)] == ["allow", "allow"]
    restartable_redis.restart()
    _answering(store.client)
    with caplog.at_level(logging.WARNING, logger="policy.stores"):
        assert guard.on_turn([REPEATED], first).action == "allow"  # the third repeat: counted afresh
        assert guard.on_turn([REPEATED], first).action == "allow"
        assert guard.on_turn([REPEATED], untouched).action == "allow"
        assert len(_losses(caplog)) == 1 and store.state_key(first) in _losses(caplog)[0]
        assert guard.on_turn([REPEATED], second).action == "allow"
    losses = _losses(caplog)
    assert len(losses) == 2 and store.state_key(second) in losses[1]
    assert len([r for r in caplog.records if "lost the loop state under" in r.getMessage()]) == 1


def test_a_scope_started_afresh_by_another_worker_after_a_loss_is_noticed_too(
        client: Redis, redis_port: int, caplog: pytest.LogCaptureFixture) -> None:
    one, other = RedisStore(client), RedisStore(redis.Redis(port=redis_port))
    scope = Scope("t", "r")
    for store in (one, other):
        with store.scope(scope) as state:
            state.pending["c"] = {}
    client.delete(one.state_key(scope))  # evicted, say: the prefix's epoch stays
    with caplog.at_level(logging.WARNING, logger="policy.stores"):
        with other.scope(scope) as state:
            assert state.pending == {}
            state.pending["d"] = {}
        with one.scope(scope) as state:  # the state is back, but it is not the one this worker saved
            assert state.pending == {"d": {}}
    assert len(_losses(caplog)) == 2


def test_a_dropped_or_expired_scope_is_not_a_loss(client: Redis, redis_port: int,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    one, other = RedisStore(client, ttl_seconds=1), RedisStore(redis.Redis(port=redis_port), ttl_seconds=1)
    dropped, expired = Scope("dropped", "r"), Scope("expired", "r")
    for scope in (dropped, expired):
        with one.scope(scope) as state:
            state.pending["c"] = {}
    other.drop_thread("dropped")
    time.sleep(1.1)
    with caplog.at_level(logging.WARNING, logger="policy.stores"):
        for scope in (dropped, expired):
            with one.scope(scope) as state:
                assert state.pending == {}
    assert _losses(caplog) == []


def test_a_state_started_afresh_is_said_on_the_decision(client: Redis) -> None:
    from policy.model.events import ToolResult
    from policy.runtime.guard import Guard

    guard = Guard("builtin:default", store=RedisStore(client))
    scope = Scope("t", "r")
    call = ToolCall(id="c1", name="bash", args={"command": "ls"})
    assert "loop_state" not in guard.on_turn([call], scope).metadata
    client.set(RedisStore(client).state_key(scope), b'{"v": 2, "queued": 5}')
    decision = guard.on_result(call, ToolResult(content="ok"), scope)
    assert decision.metadata["loop_state"] == "reset"
    assert "unreadable" in decision.metadata["loop_state_reason"]
    assert "loop_state" not in guard.on_turn([call], scope).metadata  # said once


def test_workers_share_the_workspace_snapshot_through_redis(client: Redis, redis_port: int,
                                                            tmp_path: Path) -> None:
    from policy.model.events import ToolResult
    from policy.runtime.guard import Guard

    (tmp_path / "app.py").write_text("def f(x):\n    return x\n")
    first = Guard("builtin:default", store=RedisStore(client), workspace=tmp_path)
    second = Guard("builtin:default", store=RedisStore(redis.Redis(port=redis_port)), workspace=tmp_path)
    scope = Scope("t", "r")
    call = ToolCall(id="c1", name="bash", args={"command": "sed -i 's/):$/)/' app.py"})
    first.on_turn([call], scope)
    first.on_call(call, scope)  # the "before" snapshot, in Redis
    subprocess.run(["sed", "-i", "s/):$/)/", "app.py"], cwd=tmp_path, check=True)
    decision = second.on_result(call, ToolResult(content=""), scope)  # another worker sweeps
    assert decision.action == "hint" and decision.rule is not None and decision.rule.kind == "sweep"
    assert [key for key in client.scan_iter("policyctl:snapshot:*")]

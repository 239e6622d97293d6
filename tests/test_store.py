"""The in-memory store: one state per (thread, run) scope, an LRU bound, exclusive access."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest

from policy.language.loader import load_policy
from policy.model.events import Scope, ToolCall
from policy.runtime.loops.detector import LoopDetector
from policy.runtime.loops.state import ScopeState
from policy.stores.memory import MemoryStore, Store


def test_a_scope_starts_empty_and_keeps_its_changes() -> None:
    store: Store = MemoryStore()
    scope = Scope("t1", "r1")
    with store.scope(scope) as state:
        assert state.pending == {} and state.repeat.turns == 0
        state.pending["c1"] = {"note": 1}
    with store.scope(Scope("t1", "r1")) as state:
        assert state.pending == {"c1": {"note": 1}}
    with store.scope(Scope("t1", "r2")) as state:
        assert state.pending == {}  # a sibling run has its own state
    assert len(store) == 2


def test_drop_thread_forgets_every_run_of_that_thread_only() -> None:
    store = MemoryStore()
    for thread, run in [("t1", "r1"), ("t1", "r2"), ("t2", "r1")]:
        with store.scope(Scope(thread, run)) as state:
            state.pending["c"] = {}
    store.drop_thread("t1")
    assert len(store) == 1
    with store.scope(Scope("t2", "r1")) as state:
        assert state.pending == {"c": {}}
    with store.scope(Scope("t1", "r1")) as state:
        assert state.pending == {}


def test_drop_all_forgets_every_thread() -> None:
    store = MemoryStore()
    for thread, run in [("t1", "r1"), ("t2", "r1")]:
        with store.scope(Scope(thread, run)) as state:
            state.pending["c"] = {}
    store.drop_all()
    assert len(store) == 0
    with store.scope(Scope("t2", "r1")) as state:
        assert state.pending == {}


def test_a_missing_run_id_is_a_scope_of_its_own() -> None:
    store = MemoryStore()
    first, second = Scope("t1"), Scope("t1")
    with store.scope(first) as state:
        state.pending["c"] = {}
    with store.scope(second) as state:
        assert state.pending == {}
    with store.scope(first) as state:
        assert state.pending == {"c": {}}


def test_a_scope_says_whether_its_caller_named_the_run() -> None:
    named, unnamed = Scope("t1", "run-1"), Scope("t1")
    assert named.run_id_given and not unnamed.run_id_given
    assert Scope("t1", "run-1", run_id_given=False) == named  # the same scope, however it was named


def test_the_least_recently_used_scope_goes_first() -> None:
    store = MemoryStore(max_scopes=3)
    for run in ("a", "b", "c", "a", "d"):
        with store.scope(Scope("t", run)) as state:
            state.pending[run] = {}
    assert len(store) == 3
    with store.scope(Scope("t", "b")) as state:
        assert state.pending == {}  # b was evicted; a, used again, stayed
    with store.scope(Scope("t", "a")) as state:
        assert "a" in state.pending


def test_max_scopes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        MemoryStore(max_scopes=0)


def test_100000_scopes_through_an_lru_of_1000_stay_bounded() -> None:
    """Memory per scope is measured in bench/bench_memory.py; here: nothing outlives the LRU."""
    detector = LoopDetector(load_policy("builtin:default"))
    store = MemoryStore(max_scopes=1000)
    call = ToolCall(id="c1", name="bash", args={"command": "pytest -x"})
    for n in range(100_000):
        with store.scope(Scope(f"thread-{n}", "run")) as state:
            detector.on_turn(state, [call])
    gc.collect()
    assert len(store) == 1000
    assert sum(isinstance(item, ScopeState) for item in gc.get_objects()) == 1000
    with store.scope(Scope("thread-99999", "run")) as state:
        assert state.repeat.turns == 1  # the newest scopes are the ones kept
    with store.scope(Scope("thread-0", "run")) as state:
        assert state.repeat.turns == 0


@contextmanager
def _checked_out(store: MemoryStore, scope: Scope) -> Iterator[ScopeState]:
    """``store.scope(scope)`` as the guard's model turn takes it: ``checkout``, then its lock."""
    lock, state = store.checkout(scope)
    with lock:
        yield state


@pytest.mark.parametrize("exclusive", [MemoryStore.scope, _checked_out], ids=["scope", "checkout"])
def test_threads_never_interleave_updates_of_one_scope(
        exclusive: Callable[[MemoryStore, Scope], AbstractContextManager[ScopeState]]) -> None:
    store = MemoryStore()
    scope = Scope("shared", "run")
    workers, rounds = 8, 300

    def work() -> None:
        for _ in range(rounds):
            with exclusive(store, scope) as state:
                counter = state.pending.setdefault("counter", {"n": 0})
                seen = counter["n"]
                time.sleep(0)  # invite a switch between the read and the write
                counter["n"] = seen + 1

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with store.scope(scope) as state:
        assert state.pending["counter"]["n"] == workers * rounds


def test_checkout_gives_every_caller_of_a_scope_its_one_state_and_lock() -> None:
    """The guard's model turn: the state and the lock to hold, without a context manager."""
    store = MemoryStore()
    scope = Scope("shared", "run")
    lock, state = store.checkout(scope)
    again_lock, again = store.checkout(Scope("shared", "run"))
    _, other = store.checkout(Scope("shared", "other run"))
    assert again is state and again_lock is lock and other is not state
    with lock:
        state.pending["seen"] = {"by": "checkout"}
    with store.scope(scope) as seen:
        assert seen.pending["seen"] == {"by": "checkout"}


def test_a_scope_in_use_does_not_hold_up_other_scopes() -> None:
    store = MemoryStore()
    busy = Scope("t", "busy")
    stripe = hash(busy.key) % MemoryStore.LOCK_STRIPES
    other = next(
        s for s in (Scope("t", f"r{n}") for n in range(1000))
        if hash(s.key) % MemoryStore.LOCK_STRIPES != stripe
    )
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.scope(busy):
            entered.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert entered.wait(5)
        done = threading.Event()

        def touch() -> None:
            with store.scope(other):
                done.set()

        threading.Thread(target=touch).start()
        assert done.wait(2), "another scope waited for the busy one"
    finally:
        release.set()
        holder.join()

"""The contract every store keeps (``policy.stores.memory.Store``): memory, file and Redis alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from policy.language.loader import load_policy
from policy.model.compiled import RepeatRule
from policy.model.decision import Decision
from policy.model.events import Scope, ToolCall
from policy.runtime.loops.detector import LoopDetector
from policy.stores.file import FileStore
from policy.stores.memory import MemoryStore, Store

STORES = ("memory", "file", "redis")


@pytest.fixture(params=STORES)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """A factory of stores of one kind over the same backing data (a second process's view)."""
    if request.param == "memory":
        shared = MemoryStore(100)
        yield lambda: shared
    elif request.param == "file":
        yield lambda: FileStore(tmp_path / "sessions")
    else:
        redis = pytest.importorskip("redis")
        from policy.stores.redis import RedisStore

        port = request.getfixturevalue("redis_port")
        client = redis.Redis(port=port)
        client.flushdb()
        yield lambda: RedisStore(client, prefix="contract")


def test_a_new_scope_starts_empty(make_store: Callable[[], Store]) -> None:
    with make_store().scope(Scope("t1", "r1")) as state:
        assert state.pending == {} and state.open_calls == {} and state.repeat.turns == 0


def test_changes_made_in_a_scope_are_there_next_time(make_store: Callable[[], Store]) -> None:
    scope = Scope("t1", "r1")
    detector = LoopDetector(load_policy("builtin:default"))
    with make_store().scope(scope) as state:
        detector.on_turn(state, [ToolCall(id="c1", name="bash", args={"command": "ls"})])
    with make_store().scope(scope) as state:
        assert state.repeat.turns == 1 and "c1" in state.open_calls


def test_scopes_do_not_share_state(make_store: Callable[[], Store]) -> None:
    store = make_store()
    with store.scope(Scope("t1", "r1")) as state:
        state.streak.count = 3
    for other in (Scope("t1", "r2"), Scope("t2", "r1")):
        with store.scope(other) as state:
            assert state.streak.count == 0


def test_a_pending_decision_comes_back_whole(make_store: Callable[[], Store]) -> None:
    policy = load_policy("builtin:default")
    repeat = policy.loop(RepeatRule)
    assert repeat is not None and repeat.ref.span is not None
    warning = Decision(action="warn", rule=repeat.ref, hint="ü → ✓", call_id="c1",
                       metadata={"count": 3, "layer": "repeat"})
    scope = Scope("t1", "r1")
    with make_store().scope(scope) as state:
        state.pending["c1"] = {"warning": warning.to_state(), "changes_file": True}
    with make_store().scope(scope) as state:
        entry = state.pending["c1"]
    assert Decision.from_state(entry["warning"]) == warning  # the rule keeps its span
    assert entry["changes_file"] is True


def test_existing_gives_a_scope_with_state_and_creates_none(make_store: Callable[[], Store]) -> None:
    store = make_store()
    with store.existing(Scope("t1", "r1")) as state:
        assert state is None
    assert len(store) == 0
    with store.scope(Scope("t1", "r1")) as state:
        state.queued.append({"action": "warn"})
    with make_store().existing(Scope("t1", "r1")) as state:
        assert state is not None and state.queued == [{"action": "warn"}]
        state.queued.clear()
    with make_store().existing(Scope("t1", "r1")) as state:  # changes are saved as scope() saves them
        assert state is not None and state.queued == []
    with store.existing(Scope("t1", "r2")) as state:  # another run of a thread that has state
        assert state is None
    assert len(store) == 1


def test_dropping_a_thread_forgets_its_runs_and_only_them(make_store: Callable[[], Store]) -> None:
    store = make_store()
    for scope in (Scope("t1", "r1"), Scope("t1", "r2"), Scope("t2", "r1")):
        with store.scope(scope) as state:
            state.streak.count = 2
    store.drop_thread("t1")
    with make_store().scope(Scope("t1", "r1")) as state:
        assert state.streak.count == 0
    with make_store().scope(Scope("t1", "r2")) as state:
        assert state.streak.count == 0
    with make_store().scope(Scope("t2", "r1")) as state:
        assert state.streak.count == 2


def test_the_store_counts_the_scopes_it_tracks(make_store: Callable[[], Store]) -> None:
    store = make_store()
    for run in ("r1", "r2", "r3"):
        with store.scope(Scope("t1", run)):
            pass
    assert len(store) == 3


def test_dropping_all_forgets_every_thread(make_store: Callable[[], Store]) -> None:
    store = make_store()
    for scope in (Scope("t1", "r1"), Scope("t2", "r1")):
        with store.scope(scope) as state:
            state.streak.count = 2
    store.drop_all()
    assert len(store) == 0
    for scope in (Scope("t1", "r1"), Scope("t2", "r1")):
        with make_store().scope(scope) as state:
            assert state.streak.count == 0


def test_a_block_that_raises_leaves_the_scope_usable(make_store: Callable[[], Store]) -> None:
    store = make_store()
    with pytest.raises(RuntimeError), store.scope(Scope("t", "r")) as state:
        state.streak.count = 1
        raise RuntimeError("boom")
    with store.scope(Scope("t", "r")) as state:  # not left locked; kept or lost changes: Store.scope says
        assert state.streak.count in (0, 1)
        state.streak.count = 5
    with make_store().scope(Scope("t", "r")) as state:
        assert state.streak.count == 5

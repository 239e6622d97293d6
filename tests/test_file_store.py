"""The file-backed store: state survives processes, concurrent writers lose nothing, size stays bounded."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from policy.model.events import Scope
from policy.runtime.loops.state import ScopeState
from policy.stores.file import FileStore

ROOT = Path(__file__).resolve().parent.parent


def _bump(store: FileStore, scope: Scope, by: int = 1) -> None:
    with store.scope(scope) as state:
        state.streak.count += by


def _count(store: FileStore, scope: Scope) -> int:
    with store.scope(scope) as state:
        return state.streak.count


def _age(path: Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_state_outlives_the_store_object(tmp_path: Path) -> None:
    scope = Scope("session-1", "run-1")
    with FileStore(tmp_path).scope(scope) as state:
        state.streak.count = 4
        state.pending["call-1"] = {"warning": {"action": "warn"}}
    with FileStore(tmp_path).scope(scope) as state:
        assert state.streak.count == 4
        assert state.pending == {"call-1": {"warning": {"action": "warn"}}}


def test_one_file_per_thread_holds_each_of_its_runs(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    _bump(store, Scope("t1", "r1"), 1)
    _bump(store, Scope("t1", "r2"), 2)
    _bump(store, Scope("t2", "r1"), 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s-t1.json", "s-t2.json"]
    counts = [_count(store, scope) for scope in (Scope("t1", "r1"), Scope("t1", "r2"), Scope("t2", "r1"))]
    assert counts == [1, 2, 3]
    assert len(store) == 3


def test_drop_thread_forgets_every_run_of_that_thread_only(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    _bump(store, Scope("t1", "r1"))
    _bump(store, Scope("t1", "r2"))
    _bump(store, Scope("t2", "r1"))
    store.drop_thread("t1")
    store.drop_thread("never-seen")
    assert _count(store, Scope("t1", "r1")) == 0
    assert _count(store, Scope("t1", "r2")) == 0
    assert _count(store, Scope("t2", "r1")) == 1


def test_drop_all_forgets_every_thread_and_nothing_else(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    _bump(store, Scope("t1", "r1"))
    _bump(store, Scope("a thread/with:odd name", "r1"))
    (tmp_path / "notes.txt").write_text("not a session file")
    store.drop_all()
    assert _count(store, Scope("t1", "r1")) == 0
    assert _count(store, Scope("a thread/with:odd name", "r1")) == 0
    assert (tmp_path / "notes.txt").exists()


def test_a_failed_block_saves_nothing(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    scope = Scope("t", "r")
    _bump(store, scope)
    with pytest.raises(RuntimeError), store.scope(scope) as state:
        state.streak.count = 99
        raise RuntimeError("evaluation failed")
    assert _count(store, scope) == 1


def test_unsafe_thread_ids_stay_inside_the_directory(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "state")
    for thread in ("../../escape", "a/b", ".hidden", "ünïcode", "x" * 300, ""):
        _bump(store, Scope(thread, "r"))
        path = store.path_for(thread)
        assert path.parent == tmp_path / "state"
        assert path.name.startswith("h-")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]
    assert _count(store, Scope("../../escape", "r")) == 1


def test_files_are_private(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "state")
    _bump(store, Scope("t", "r"))
    assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700
    assert store.path_for("t").stat().st_mode & 0o777 == 0o600


def test_threads_of_one_process_lose_no_update(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    scope = Scope("shared", "r")

    def bump_25_times() -> None:
        for _ in range(25):
            _bump(store, scope)

    workers = [threading.Thread(target=bump_25_times) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert _count(store, scope) == 200


_BUMPER = textwrap.dedent("""
    import sys
    from policy.model.events import Scope
    from policy.stores.file import FileStore
    store = FileStore(sys.argv[1])
    for _ in range(int(sys.argv[2])):
        with store.scope(Scope("shared", "r")) as state:
            state.streak.count += 1
            state.pending[f"{sys.argv[3]}-{state.streak.count}"] = {}
""")


def test_processes_lose_no_update(tmp_path: Path) -> None:
    processes = [
        subprocess.Popen([sys.executable, "-c", _BUMPER, str(tmp_path), "30", f"p{i}"], cwd=ROOT)
        for i in range(6)
    ]
    assert [p.wait(timeout=120) for p in processes] == [0] * 6
    store = FileStore(tmp_path)
    with store.scope(Scope("shared", "r")) as state:
        assert state.streak.count == 180
        # each increment left one warning named after its count; max_pending keeps the newest 100
        assert sorted(int(key.rpartition("-")[2]) for key in state.pending) == list(range(81, 181))


def test_a_writer_waiting_for_a_replaced_file_reads_the_new_one(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    scope = Scope("t", "r")
    _bump(store, scope)
    waiting = threading.Event()

    def second_writer() -> None:
        waiting.set()
        _bump(store, scope, 10)

    second = threading.Thread(target=second_writer)
    with store.scope(scope) as state:
        second.start()
        waiting.wait()
        time.sleep(0.2)  # the second writer is now blocked on the lock of the file about to be replaced
        state.streak.count += 100
    second.join(timeout=10)
    assert _count(store, scope) == 111


def test_a_writer_waiting_for_a_dropped_thread_starts_a_new_file(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    scope = Scope("t", "r")
    _bump(store, scope, 5)
    path = store.path_for("t")
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    writer = threading.Thread(target=lambda: _bump(store, scope, 1))
    writer.start()
    time.sleep(0.2)
    path.unlink()  # what drop_thread does while holding the lock
    os.close(fd)
    writer.join(timeout=10)
    assert _count(store, scope) == 1


def test_an_expired_session_reads_as_new_and_is_swept(tmp_path: Path) -> None:
    store = FileStore(tmp_path, ttl=3600)
    _bump(store, Scope("old", "r"), 7)
    _bump(store, Scope("kept", "r"), 1)
    _age(store.path_for("old"), 7200)
    assert len(store) == 1
    _bump(store, Scope("newcomer", "r"))  # a new session file triggers the sweep
    assert not store.path_for("old").exists()
    assert store.path_for("kept").exists()
    assert _count(store, Scope("old", "r")) == 0


def test_an_expired_session_is_fresh_even_before_a_sweep(tmp_path: Path) -> None:
    store = FileStore(tmp_path, ttl=3600)
    _bump(store, Scope("old", "r"), 7)
    _age(store.path_for("old"), 7200)
    assert _count(store, Scope("old", "r")) == 0


def test_the_number_of_session_files_is_capped_least_recent_first(tmp_path: Path) -> None:
    store = FileStore(tmp_path, max_sessions=3)
    for name, age in (("a", 300), ("b", 200), ("c", 100)):
        _bump(store, Scope(name, "r"))
        _age(store.path_for(name), age)

    def sessions() -> list[str]:
        return sorted(p.name for p in tmp_path.glob("*.json"))

    _bump(store, Scope("d", "r"))
    assert sessions() == ["s-b.json", "s-c.json", "s-d.json"]
    _bump(store, Scope("b", "r"))  # b is used again: c is now the least recent
    _bump(store, Scope("e", "r"))
    assert sessions() == ["s-b.json", "s-d.json", "s-e.json"]


def test_a_session_file_in_use_is_never_swept(tmp_path: Path) -> None:
    store = FileStore(tmp_path, ttl=60)
    _bump(store, Scope("busy", "r"))
    path = store.path_for("busy")
    _age(path, 3600)
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        store.sweep()
        assert path.exists()
    finally:
        os.close(fd)
    store.sweep()
    assert not path.exists()


def test_each_file_stays_under_its_size_limit(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = FileStore(tmp_path, max_file_bytes=4096)
    for run in range(40):
        with store.scope(Scope("t", f"run-{run}")) as state:
            state.oscillation.calls = [f"call {run} " + "x" * 40] * 4
    path = store.path_for("t")
    assert path.stat().st_size <= 4096
    runs = json.loads(path.read_text())["runs"]
    assert "run-39" in runs and "run-0" not in runs
    assert list(runs)[-1] == "run-39"
    assert "dropping run run-0" in caplog.text


def test_a_single_oversized_run_loses_its_pending_warnings_first(tmp_path: Path) -> None:
    store = FileStore(tmp_path, max_file_bytes=2048)
    scope = Scope("t", "r")
    with store.scope(scope) as state:
        state.streak.count = 3
        state.pending = {f"call-{i}": {"warning": {"hint": "x" * 100}} for i in range(30)}
    with store.scope(scope) as state:
        assert state.streak.count == 3
        assert state.pending == {}
    assert store.path_for("t").stat().st_size <= 2048


def test_undelivered_warnings_are_capped_newest_kept(tmp_path: Path) -> None:
    store = FileStore(tmp_path, max_pending=3)
    scope = Scope("t", "r")
    with store.scope(scope) as state:
        for i in range(5):
            state.pending[f"call-{i}"] = {}
    with store.scope(scope) as state:
        assert list(state.pending) == ["call-2", "call-3", "call-4"]


@pytest.mark.parametrize("content", [b"", b"{not json", b"[1, 2]", b'{"v": 99, "runs": {}}',
                                     b'{"v": 1, "runs": {"r": "{\\"v\\": 1}"}}', b"\xff\xfe"])
def test_a_corrupt_file_starts_afresh_and_is_repaired(tmp_path: Path, content: bytes,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    store = FileStore(tmp_path)
    path = store.path_for("t")
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="policy.stores"):
        _bump(store, Scope("t", "r"), 2)
    assert _count(store, Scope("t", "r")) == 2
    assert ScopeState.from_json(json.loads(path.read_text())["runs"]["r"]).streak.count == 2
    if content:
        assert caplog.records


def test_bad_limits_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="positive"):
        FileStore(tmp_path, max_sessions=0)
    with pytest.raises(ValueError, match="positive"):
        FileStore(tmp_path, ttl=0)


def test_the_default_directory_is_the_user_state_folder(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    store = FileStore()
    assert store.directory == tmp_path / "policyctl" / "sessions"
    _bump(store, Scope("t", "r"))
    assert (tmp_path / "policyctl" / "sessions" / "s-t.json").exists()


# --- hostile input (issue 16) -------------------------------------------------------------------

def test_a_lone_surrogate_is_saved_and_read_back_unchanged(tmp_path: Path) -> None:
    scope = Scope("t", "run-\udcff")
    with FileStore(tmp_path).scope(scope) as state:
        state.pending["c1"] = {"hint": "bad byte \udcff here"}
    with FileStore(tmp_path).scope(scope) as state:
        assert state.pending == {"c1": {"hint": "bad byte \udcff here"}}


def test_a_symlink_planted_in_the_folder_is_never_followed(tmp_path: Path) -> None:
    folder, target = tmp_path / "sessions", tmp_path / "elsewhere.txt"
    store = FileStore(folder)
    store.path_for("victim").symlink_to(target)
    with pytest.raises(OSError), store.scope(Scope("victim", "r")):
        pass
    assert not target.exists()


def test_a_folder_others_can_write_is_not_used(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)
    with pytest.raises(OSError, match="writable by others"), FileStore(folder).scope(Scope("t", "r")):
        pass
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_folder_of_another_user_is_not_used(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)  # nobody's
    with pytest.raises(OSError, match="belongs to user 65534"), FileStore(folder).scope(Scope("t", "r")):
        pass
    assert list(folder.iterdir()) == []


_HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(600)
"""


def test_a_lock_held_by_a_stuck_process_is_a_store_fault_not_a_hang(tmp_path: Path) -> None:
    from policy.model.events import ToolCall, ToolResult
    from policy.runtime.guard import Guard

    store = FileStore(tmp_path)
    scope = Scope("t", "r")
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(store.path_for("t"))],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        guard = Guard("builtin:default", store=store)
        write = ToolCall(id="w1", name="write_file",
                         args={"path": str(tmp_path / "a.py"), "content": "x = (\n)\n]"})
        bash = ToolCall(id="b1", name="bash", args={"command": "python -c 'import yaml'"})
        decisions = []

        def events() -> None:
            decisions.append(guard.on_call(write, scope))
            decisions.append(guard.on_result(bash, ToolResult(
                content="ModuleNotFoundError: No module named 'yaml'", status="error"), scope))

        worker = threading.Thread(target=events, daemon=True)
        worker.start()
        worker.join(timeout=60)
        assert not worker.is_alive(), "the guard waited for the lock without end"
    finally:
        holder.kill()
        holder.wait()
    blocked, hinted = decisions
    assert blocked.action == "block" and hinted.action == "hint"  # both decided without the store
    for decision in decisions:
        assert decision.metadata["loop_state"] == "unavailable"
        assert "stayed locked" in decision.metadata["loop_state_reason"]


def test_an_oversized_run_loses_its_workspace_memory_before_its_loop_counts(tmp_path: Path) -> None:
    store = FileStore(tmp_path, max_file_bytes=4096)
    scope = Scope("t", "r")
    with store.scope(scope) as state:
        state.streak.count = 3
        state.files.digests = {f"src/module_{i:04d}.py": "00" * 8 for i in range(200)}
    assert state.restarted is not None and "workspace" in state.restarted
    with store.scope(scope) as state:
        assert state.streak.count == 3 and state.files.digests == {}
        assert state.restarted is None
    assert store.path_for("t").stat().st_size <= 4096

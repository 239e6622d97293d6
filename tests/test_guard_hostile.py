"""Hostile calls and faults (issue 16): bounded reads, nesting, surrogates, and no fault that turns a
block into an allow.  Everything runs against real files, FIFOs, devices and subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import policyctl
from policy.language.loader import check_policy, load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.decision import Decision
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.faults import MAX_ARG_DEPTH
from policy.runtime.guard import Guard
from policy.stores.file import FileStore

ROOT = Path(__file__).resolve().parent.parent
SCOPE = Scope("t", "r")


@pytest.fixture(scope="module")
def default() -> CompiledPolicy:
    return load_policy("builtin:default")


def _nested(depth: int) -> dict[str, object]:
    top: dict[str, object] = {}
    current = top
    for _ in range(depth):
        inner: dict[str, object] = {}
        current["a"] = inner
        current = inner
    return top


def _write(path: str, content: str, **extra: object) -> ToolCall:
    return ToolCall(id="w1", name="write_file", args={"path": path, "content": content, **extra})


def _within(seconds: float, work: object) -> Decision:
    """Run ``work`` in a thread; fail (instead of hanging the suite) when it takes longer."""
    box: list[Decision] = []
    worker = threading.Thread(target=lambda: box.append(work()), daemon=True)  # type: ignore[operator]
    worker.start()
    worker.join(seconds)
    assert box, f"the guard did not answer within {seconds}s"
    return box[0]


# --- finding 2: no fault turns a block into an allow ----------------------------------------------

@pytest.mark.parametrize("depth", [980, 3000])
def test_deeply_nested_arguments_still_get_the_gate_and_say_what_was_not_checked(
        default: CompiledPolicy, depth: int) -> None:
    guard = Guard(default, read_file=lambda path: None)
    call = _write("app.py", "def f(:\n", extra=_nested(depth))
    turn = guard.on_turn([call], SCOPE)
    assert turn.action == "allow" and turn.metadata["loops"] == "unchecked"
    decision = guard.on_call(call, SCOPE)
    assert decision.action == "block"
    assert decision.metadata["loops"] == "unchecked"
    assert str(MAX_ARG_DEPTH) in decision.metadata["loops_reason"]


def test_a_lone_surrogate_with_a_file_store_keeps_the_block_and_the_loop_count(
        default: CompiledPolicy, tmp_path: Path) -> None:
    guard = Guard(default, read_file=lambda path: None, store=FileStore(tmp_path / "state"))
    call = _write("app\udcff.py", "def f(:\n  '\udcff'\n")
    decisions = [guard.on_call(call, SCOPE) for _ in range(3)]
    assert [d.action for d in decisions] == ["block"] * 3
    assert all("loop_state" not in d.metadata for d in decisions)
    assert str(decisions[-1].parts[1].rule) == "loop error_streak"


def test_a_planted_symlink_in_the_state_folder_costs_loop_counting_not_the_block(
        default: CompiledPolicy, tmp_path: Path) -> None:
    store = FileStore(tmp_path / "state")
    target = tmp_path / "target"
    store.path_for(SCOPE.thread_id).symlink_to(target)
    guard = Guard(default, read_file=lambda path: None, store=store)
    decision = guard.on_call(_write("a.py", "def f(:\n"), SCOPE)
    assert decision.action == "block" and decision.metadata["loop_state"] == "unavailable"
    assert not target.exists()


def test_the_hook_answers_a_deeply_nested_event_without_a_traceback(tmp_path: Path) -> None:
    deep = '{"a":' * 5000 + "{}" + "}" * 5000
    event = ('{"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Write", "tool_input": '
             f'{{"file_path": "a.py", "content": "x", "extra": {deep}}}}}')
    done = subprocess.run([sys.executable, "-m", "cli", "hook", "claude-code"], input=event,
                          capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "XDG_STATE_HOME": str(tmp_path), "POLICYCTL_HOOK_RESIDENT": "0"},
                          timeout=120)  # answered in this process: no resident left in the user's folders
    assert done.returncode == 0
    assert "Traceback" not in done.stderr and "too deeply" in done.stderr


def test_replay_names_a_deeply_nested_trace_line_and_goes_on(tmp_path: Path) -> None:
    trace = tmp_path / "deep.jsonl"
    turn = {"type": "turn", "calls": [{"id": "c1", "name": "bash", "args": {"command": "ls"}}]}
    trace.write_text("[" * 100_000 + "\n" + json.dumps(turn) + "\n")
    result = CliRunner().invoke(policyctl, ["replay", str(trace)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "nested too deeply" in result.output + (result.stderr if result.stderr_bytes else "")


# --- finding 3: reads and edits are bounded -------------------------------------------------------

def _recording(files: dict[str, str]) -> tuple[list[str], object]:
    reads: list[str] = []

    def read(path: str) -> str | None:
        reads.append(path)
        return files.get(path)

    return reads, read


def test_a_write_no_gate_checks_is_not_read(default: CompiledPolicy, tmp_path: Path) -> None:
    reads, read = _recording({"notes.md": "old\n", "app.py": "x = 1\n"})
    guard = Guard(default, read_file=read)  # type: ignore[arg-type]
    unchecked = [_write("notes.md", "new\n"), _write("notes.md", "more\n", append=True),
                 ToolCall(id="e1", name="str_replace", args={"path": "notes.md", "old_str": "new",
                                                               "new_str": "newer"}),
                 _write("/dev/zero", "x"), _write(str(tmp_path / "pipe"), "x")]
    os.mkfifo(tmp_path / "pipe")
    for call in unchecked:
        guard.on_turn([call], SCOPE)
        assert _within(10, lambda call=call: guard.on_call(call, SCOPE)).action == "allow"
    assert reads == []
    assert guard.on_call(_write("app.py", "x = 2\n"), SCOPE).action == "allow"
    assert reads == ["app.py"]  # a gate's glob matched: read (within max_check_bytes)


def _failing_runs_between(guard: Guard, writes: list[ToolCall], scope: Scope) -> list[str]:
    """The same failing command after each write: the result decisions (a warning once the
    writes stop counting as progress)."""
    actions = []
    for index, write in enumerate(writes):
        command = ToolCall(id=f"b{index}", name="bash", args={"command": "make check"})
        guard.on_turn([command], scope)
        actions.append(guard.on_result(command, ToolResult(content="FAILED", status="error"), scope).action)
        guard.on_turn([write], scope)
        guard.on_call(write, scope)
        guard.on_result(write, ToolResult(content="OK"), scope)
    return actions


def test_rewriting_an_unchecked_file_with_what_it_holds_is_not_progress(default: CompiledPolicy) -> None:
    reads, read = _recording({})
    same = [ToolCall(id=f"w{i}", name="write_file", args={"path": "notes.md", "content": "same\n"})
            for i in range(5)]
    actions = _failing_runs_between(Guard(default, read_file=read), same, SCOPE)  # type: ignore[arg-type]
    assert "warn" in actions and reads == []
    new = [ToolCall(id=f"w{i}", name="write_file", args={"path": "notes.md", "content": f"v{i}\n"})
           for i in range(5)]
    actions = _failing_runs_between(Guard(default, read_file=read), new, SCOPE)  # type: ignore[arg-type]
    assert "warn" not in actions and reads == []


def test_a_command_that_changed_files_makes_the_same_unchecked_write_progress_again(
        default: CompiledPolicy) -> None:
    guard, scope = Guard(default, read_file=lambda path: None), Scope("t", "mutating")
    same = {"path": "notes.md", "content": "same\n"}
    sed = ToolCall(id="s", name="bash", args={"command": "sed -i s/same/other/ notes.md"})
    writes = [ToolCall(id=f"w{index}", name="write_file", args=same) for index in range(4)]
    # progress: the write, the sed, the write after it (notes.md held other text); then none
    actions = _failing_runs_between(guard, [writes[0], sed, *writes[1:]], scope)
    assert actions == ["allow"] * 5


def test_a_fifo_is_not_read(default: CompiledPolicy, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    guard = Guard(default)
    decision = _within(10, lambda: guard.on_call(ToolCall(id="e1", name="str_replace", args={
        "path": str(fifo), "old_str": "a", "new_str": "b"}), SCOPE))
    assert decision.action == "allow"


def test_a_device_behind_a_gated_name_is_not_read(default: CompiledPolicy, tmp_path: Path) -> None:
    zero = tmp_path / "zero.py"
    zero.symlink_to("/dev/zero")
    decision = _within(10, lambda: Guard(default).on_call(_write(str(zero), "x = 1\n", append=True), SCOPE))
    assert decision.action == "allow"


def test_a_file_larger_than_the_bound_is_neither_read_nor_checked(tmp_path: Path) -> None:
    policy_file = tmp_path / "team.policy"
    policy_file.write_text('extends "builtin:default"\npolicy "team" { max_check_bytes 1KB }\n')
    policy = load_policy(policy_file)
    assert policy.max_check_bytes == 1024
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 1000)
    reads: list[str] = []
    guard = Guard(policy)
    edit = ToolCall(id="e1", name="str_replace",
                    args={"path": str(big), "old_str": "x = 1", "new_str": "x = ("})
    decision = guard.on_call(edit, SCOPE)
    assert decision.action == "allow"
    assert decision.metadata["checker"] == "unavailable" and "max_check_bytes" in decision.metadata["reason"]
    assert Guard(policy, read_file=lambda p: reads.append(p) or None).on_call(
        _write(str(big), "y" * 2000), SCOPE).metadata["checker"] == "unavailable"
    assert reads == []  # content over the bound: the file is not even asked for


def test_an_edit_that_doubles_the_text_stops_at_the_bound(default: CompiledPolicy, tmp_path: Path) -> None:
    target = tmp_path / "grow.py"
    target.write_text("x" * 1000 + "\n")
    edits = [{"old_string": "x", "new_string": "xx", "replace_all": True}] * 40
    call = ToolCall(id="m1", name="MultiEdit", args={"file_path": str(target), "edits": edits})
    start = time.perf_counter()
    decision = Guard(load_policy("builtin:claude-code")).on_call(call, SCOPE)
    assert time.perf_counter() - start < 10
    assert decision.metadata["checker"] == "unavailable"
    assert "larger than max_check_bytes" in decision.metadata["reason"]


def test_max_check_bytes_must_be_positive(tmp_path: Path) -> None:
    policy_file = tmp_path / "p.policy"
    policy_file.write_text('policy "p" { max_check_bytes 0 }\n')
    assert [d.code for d in check_policy(policy_file).diagnostics] == ["E402"]

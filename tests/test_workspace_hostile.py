"""The workspace against hostile files: FIFOs, files past the size bound, faults inside the watch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from test_hooks_claude_code import ROOT, Hook
from workspace_cases import run_command

from policy.language.loader import load_policy
from policy.model.decision import Decision
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.guard import Guard
from policy.runtime.workspace.coverage import Coverage
from policy.runtime.workspace.local import LocalWorkspace

SCOPE = Scope(thread_id="t", run_id="r")
MISSING_YAML = ToolResult(content="ModuleNotFoundError: No module named 'yaml'", status="error")
HANG_GUARD_SECONDS = 60.0
"""How long a call may take before the test calls it hung (generous: the machine is shared)."""


def finished(work: Callable[[], Any]) -> Any:
    """``work()`` in a thread; the test fails, rather than hangs, when it does not return."""
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(work()), daemon=True)
    worker.start()
    worker.join(HANG_GUARD_SECONDS)
    assert done, f"still running after {HANG_GUARD_SECONDS:g} s: it hangs"
    return done[0]


def _small_policy(tmp_path: Path, size: str) -> Path:
    path = tmp_path / "bounded.policy"
    path.write_text(f'extends "builtin:default"\n\npolicy "bounded" {{\n  max_check_bytes {size}\n}}\n')
    return path


# --- FIFOs and other files that are not regular --------------------------------------------------


def test_a_fifo_named_like_a_gated_file_never_blocks_the_result(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    guard = Guard("builtin:default", workspace=tmp_path)
    call = ToolCall(id="c1", name="bash", args={"command": "mkfifo a.py"})
    guard.on_turn([call], SCOPE)
    guard.on_call(call, SCOPE)
    os.mkfifo(tmp_path / "a.py")

    decision = finished(lambda: guard.on_result(call, ToolResult(content=""), SCOPE))

    assert decision.action == "allow" and "internal_error" not in decision.metadata


def test_a_fifo_gitignore_or_exclude_file_never_blocks_a_snapshot(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "b.py").write_text("y = 2\n")
    os.mkfifo(tmp_path / "pkg" / ".gitignore")
    (tmp_path / ".git" / "info").mkdir(parents=True)
    os.mkfifo(tmp_path / ".git" / "info" / "exclude")

    snapshot = finished(lambda: LocalWorkspace(tmp_path).snapshot(Coverage(["*.py"])))

    assert snapshot.paths == ("a.py", "pkg/b.py")


def test_a_snapshot_lists_regular_files_and_links_to_them_only(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "link.py").symlink_to(tmp_path / "a.py")
    (tmp_path / "pipe_link.py").symlink_to(tmp_path / "pipe.py")
    assert LocalWorkspace(tmp_path).snapshot(Coverage(["*.py"])).paths == ("a.py", "link.py")


# --- files past max_check_bytes ---------------------------------------------------------------


def test_an_oversized_incomplete_file_does_not_break_later_results(tmp_path: Path) -> None:
    guard = Guard("builtin:default", workspace=tmp_path)
    target = tmp_path / "app.py"
    write = ToolCall(id="w1", name="write_file", args={"path": str(target), "content": "def f():\n"})
    guard.on_turn([write], SCOPE)
    assert guard.on_call(write, SCOPE).metadata.get("incomplete") is True
    target.write_text("def f():\n")
    guard.on_result(write, ToolResult(content="ok"), SCOPE)
    with target.open("a") as handle:
        handle.write("#" * 3_000_000 + "\n")  # grown past the 2 MB bound before the follow-up reads it

    decisions = []
    for number in range(3):
        bash = ToolCall(id=f"b{number}", name="bash", args={"command": "python -c 'import yaml'"})
        guard.on_turn([bash], SCOPE)
        guard.on_call(bash, SCOPE)
        decisions.append(guard.on_result(bash, MISSING_YAML, SCOPE))

    assert [d.signature for d in decisions] == ["MODULE_NOT_FOUND"] * 3
    assert all("internal_error" not in d.metadata for d in decisions)
    assert decisions[2].action == "warn"  # loop counting went on


def test_a_shell_write_past_the_bound_is_let_through_unchecked_and_says_so(tmp_path: Path) -> None:
    guard = Guard(load_policy(_small_policy(tmp_path, "1KB")), workspace=tmp_path)
    broken = "def f(:\n" + "#" * 2000 + "\n"
    call = ToolCall(id="c1", name="bash", args={"command": f"cat > big.py <<'EOF'\n{broken}EOF"})

    decision = guard.on_call(call, SCOPE)

    assert decision.action == "allow"
    assert decision.metadata["checker"] == "unavailable"
    assert "max_check_bytes (1024 bytes)" in decision.metadata["reason"]


def test_the_sweep_reads_within_the_policys_bound(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text("x = 1\n")
    guard = Guard(load_policy(_small_policy(tmp_path, "1KB")), workspace=tmp_path)
    command = "python3 -c \"open('big.py', 'w').write('def f(:\\n' + '#' * 2000)\""

    blocked, decision = run_command(guard, tmp_path, command)

    assert not blocked and decision.action == "allow"  # not read, so not blamed; but not silently either
    assert decision.metadata["checker"] == "unavailable" and decision.metadata["path"] == "big.py"
    assert decision.metadata["too_large"] == ["big.py"]


def test_the_sweep_checks_files_up_to_a_raised_bound(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text("x = 1\n")
    guard = Guard(load_policy(_small_policy(tmp_path, "8MB")), workspace=tmp_path)
    command = "python3 -c \"open('big.py', 'w').write('x = 1\\n' * 800000 + 'def f(:\\n')\""

    blocked, decision = run_command(guard, tmp_path, command)

    assert (tmp_path / "big.py").stat().st_size > 4 << 20
    assert not blocked
    assert decision.action == "hint" and decision.rule is not None and decision.rule.kind == "sweep"
    assert "big.py" in (decision.hint or "")


def test_the_claude_code_hook_gates_files_up_to_the_policys_bound(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    policy = tmp_path / "big.policy"
    policy.write_text('extends "builtin:claude-code"\n\npolicy "big" {\n  max_check_bytes 8MB\n}\n')
    target = hook.project / "app.py"
    target.write_text("x = 1\n" * 500_000 + "def f(x):\n    return x\n")  # 3 MB: over the 2 MB default
    edit = {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(hook.project),
            "tool_name": "Edit", "tool_use_id": "t1",
            "tool_input": {"file_path": str(target), "old_string": "def f(x):", "new_string": "def f(x)"}}

    reply = hook.answer(edit, "--policy", str(policy), process=True)

    assert reply is not None and reply["hookSpecificOutput"]["permissionDecision"] == "deny"


# --- faults inside the watch -------------------------------------------------------------------


class _FailingWorkspace(LocalWorkspace):
    """A workspace whose reads fail, as a harness's reader of a remote sandbox might."""

    def read(self, path: str) -> str | None:
        raise RuntimeError("the sandbox went away")


def test_a_fault_in_the_sweep_keeps_the_signature_hint_and_the_loop_count(tmp_path: Path) -> None:
    guard = Guard("builtin:default", workspace=_FailingWorkspace(tmp_path))
    decisions: list[Decision] = []
    for number in range(3):
        bash = ToolCall(id=f"b{number}", name="bash", args={"command": "python -c 'import yaml'"})
        guard.on_turn([bash], SCOPE)
        guard.on_call(bash, SCOPE)
        (tmp_path / "app.py").write_text(f"x = {number}\n")  # a change the sweep must read
        decisions.append(guard.on_result(bash, MISSING_YAML, SCOPE))

    assert [d.signature for d in decisions] == ["MODULE_NOT_FOUND"] * 3
    assert all("the sandbox went away" in d.metadata["internal_error"] for d in decisions)
    assert decisions[2].action == "warn"


# --- events without a cwd --------------------------------------------------------------------


def test_an_event_without_cwd_has_no_workspace(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    (hook.project / "app.py").write_text("def f(x):\n    return x\n")

    def answer(event: dict[str, Any]) -> str:
        done = subprocess.run([sys.executable, "-m", "cli", "hook", "claude-code"], input=json.dumps(event),
                              capture_output=True, text=True, cwd=hook.project, env={
                                  **hook.env, "PYTHONPATH": str(ROOT)}, timeout=120)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        return done.stdout

    command = {"command": "sed -i 's/):$/)/' app.py"}
    event = {"session_id": "s1", "tool_name": "Bash", "tool_input": command, "tool_use_id": "t1"}
    assert answer({**event, "hook_event_name": "PreToolUse"}) == ""
    subprocess.run(["sed", "-i", "s/):$/)/", "app.py"], cwd=hook.project, check=True)
    post = {**event, "hook_event_name": "PostToolUse", "tool_response": {"stdout": "", "stderr": ""}}
    assert answer(post) == ""  # the process's own folder is not taken for the project



# --- .gitignore patterns the agent wrote -------------------------------------------------------


def test_a_pathological_gitignore_line_matches_in_linear_time(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*a" * 24 + "*b\n!keep.py\n")
    (tmp_path / ("a" * 60 + ".py")).write_text("x = 1\n")
    (tmp_path / ("a" * 30 + "b")).write_text("")
    (tmp_path / "keep.py").write_text("x = 1\n")
    walk = ("import sys\nfrom policy.runtime.workspace.coverage import Coverage\n"
            "from policy.runtime.workspace.local import LocalWorkspace\n"
            "print(LocalWorkspace(sys.argv[1]).snapshot(Coverage(['*.py', '*b'])).paths)")

    # a backtracking match holds the interpreter's lock, so the walk runs in a process of its own
    done = subprocess.run([sys.executable, "-c", walk, str(tmp_path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=HANG_GUARD_SECONDS, check=True)

    assert done.stdout.strip() == repr(("a" * 60 + ".py", "keep.py"))  # `a…b` is ignored, as git does

"""Progress measured on the workspace: a restore-and-reapply cycle is a loop; redirections are not changes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from workspace_cases import Case, prepare

from policy.language.loader import load_policy
from policy.model.compiled import ToolSpec
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.guard import Guard
from policy.runtime.workspace.progress import advance, command_mutates, content_digest, record
from policy.runtime.workspace.state import WorkspaceState

CYCLE = [
    "sed -i 's/return x/return x + 1/' app.py",
    "python3 -c 'import app; assert app.f(1) == 3, app.f(1)'",
    "cp backup.py app.py",
]


def _session(guard: Guard, root: Path) -> list[tuple[str, str]]:
    """Back up app.py, then edit / test / restore three times; the (action, rule) of every warning."""
    scope = Scope(thread_id="t", run_id="r")
    warnings: list[tuple[str, str]] = []
    commands = ["cp app.py backup.py", *CYCLE * 3]
    for index, command in enumerate(commands):
        call = ToolCall(id=f"c{index}", name="bash", args={"command": command})
        decisions = [guard.on_turn([call], scope), guard.on_call(call, scope)]
        done = subprocess.run(["bash", "-c", command], cwd=root, capture_output=True, text=True)
        status = "success" if done.returncode == 0 else "error"
        decisions.append(guard.on_result(call, ToolResult(done.stdout + done.stderr, status), scope))
        for decision in decisions:
            warnings += [(p.action, str(p.rule)) for p in decision.parts if p.action in ("warn", "stop")]
    return warnings


def test_a_restore_and_reapply_cycle_whose_results_repeat_is_a_loop(tmp_path: Path) -> None:
    prepare(Case("base", ""), tmp_path)
    warnings = _session(Guard("builtin:default", workspace=tmp_path), tmp_path)
    assert warnings == [("warn", "loop oscillation")]


def test_without_a_workspace_every_cp_counts_as_progress(tmp_path: Path) -> None:
    prepare(Case("base", ""), tmp_path)
    policy = load_policy("builtin:default")
    warnings = _session(Guard(policy, read_file=lambda path: (tmp_path / path).read_text()), tmp_path)
    assert warnings == []


def test_returning_to_a_fingerprint_already_seen_is_not_progress() -> None:
    state = WorkspaceState()
    start = state.fingerprint
    record(state, "app.py", content_digest("v2"))
    assert advance(state, start)
    before = state.fingerprint
    record(state, "app.py", content_digest("v3"))
    assert advance(state, before)
    before = state.fingerprint
    record(state, "app.py", content_digest("v2"))
    assert not advance(state, before)  # back to the state after the first edit
    before = state.fingerprint
    record(state, "app.py", content_digest("v2"))
    assert not advance(state, before)  # nothing changed


@pytest.mark.parametrize(("command", "mutates"), [
    ("python app.py 2>&1", False),
    ("python app.py 2>&1 | tail -5", False),
    ("echo done >&2", False),
    ("make >/dev/null 2>&1", False),
    ("pytest -q 2> /dev/null", False),
    ("ls &>/dev/null", False),
    ("echo x > out.txt", True),
    ("python gen.py >> log.txt 2>&1", True),
    ("pip install requests 2>&1", True),
    ("sed -i 's/a/b/' app.py", True),
])
def test_mutates_when_does_not_match_redirections_that_change_no_file(command: str, mutates: bool) -> None:
    spec = load_policy("builtin:default").tool("bash")
    assert command_mutates(spec, command) is mutates


def test_a_tool_without_mutates_when_never_mutates() -> None:
    assert not command_mutates(ToolSpec(name="bash", role="run"), "echo x > out.txt")

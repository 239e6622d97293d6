"""The sweep and the shell-write gate on real commands in real git work trees (``workspace_cases``)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import workspace_cases
from workspace_cases import APP, BASE, BROKEN, CASES, CORRECT, SCOPE, Case, prepare, run_case, run_command

from policy.language.loader import load_policy
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.guard import Guard
from policy.runtime.workspace.sweep import CLOCK_SLACK_NS
from policy.stores.file import FileStore

SWEEP_ONLY = """
extends "builtin:default"
workspace { shell_writes off }
"""


@pytest.mark.parametrize("case", BROKEN, ids=[case.name for case in BROKEN])
def test_a_command_that_breaks_a_file_is_caught(case: Case, tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    outcome = run_case(case, root)
    if case.blocked:
        assert outcome.blocked, outcome.hint
        assert "[BLOCKED]" in outcome.hint
        for path, text in BASE.items():
            assert (root / path).read_text() == text, "a blocked command does not run"
    else:
        assert not outcome.blocked
        assert outcome.named == frozenset(case.broken), outcome.hint
        for path in case.broken:
            if path in BASE or path in case.files:
                assert f"This command changed {path} and left it broken; it passed before" in outcome.hint
            else:  # a new file did not pass before: it was not there
                assert f"This command created {path} broken." in outcome.hint


@pytest.mark.parametrize("case", CORRECT, ids=[case.name for case in CORRECT])
def test_a_command_that_changes_files_correctly_gets_no_hint(case: Case, tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    outcome = run_case(case, root)
    assert not outcome.blocked, outcome.hint
    assert outcome.named == frozenset(), outcome.hint
    assert "left it broken" not in outcome.hint


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_workspace_that_already_watches_its_folders_sees_the_same(case: Case, tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    outcome = run_case(case, root, warm=True)
    assert outcome.blocked == case.blocked, outcome.hint
    assert outcome.named == frozenset(() if case.blocked else case.broken), outcome.hint


def test_the_hint_names_the_place_with_a_caret(tmp_path: Path) -> None:
    outcome = run_case(BROKEN[0], tmp_path)
    assert "Python error at line 1, column 9: expected ':'" in outcome.hint
    assert "1 | def f(x)\n  |         ^" in outcome.hint


def test_without_the_shell_write_gate_the_sweep_catches_a_quoted_heredoc(tmp_path: Path) -> None:
    policy_file = tmp_path / "sweep.policy"
    policy_file.write_text(SWEEP_ONLY)
    root = tmp_path / "work"
    root.mkdir()
    case = next(case for case in BROKEN if case.name.startswith("cat >> of a quoted heredoc"))
    outcome = run_case(case, root, load_policy(policy_file))
    assert not outcome.blocked
    assert outcome.named == {"app.py"}


def test_a_file_broken_outside_the_command_is_not_blamed_on_it(tmp_path: Path) -> None:
    prepare(Case("base", ""), tmp_path)
    guard = Guard("builtin:default", workspace=tmp_path)
    run_command(guard, tmp_path, "ls", "c1")
    (tmp_path / "app.py").write_text("def f(x)\n    return x\n")  # an editor, between two commands
    time.sleep(0.05)
    _, decision = run_command(guard, tmp_path, "echo hello", "c2")
    assert decision.action == "allow"
    # and a later command that touches the already broken file is not blamed either
    _, decision = run_command(guard, tmp_path, "sed -i 's/return x/return x + 1/' app.py", "c3")
    assert decision.action == "allow"


def test_a_file_the_command_fixes_and_breaks_again_is_blamed_the_second_time(tmp_path: Path) -> None:
    prepare(Case("base", ""), tmp_path)
    guard = Guard("builtin:default", workspace=tmp_path)
    _, first = run_command(guard, tmp_path, "sed -i 's/):$/)/' app.py", "c1")
    assert "app.py" in first.hint  # type: ignore[operator]
    _, second = run_command(guard, tmp_path, "sed -i 's/(x)$/(x):/' app.py", "c2")
    assert second.action == "allow"
    assert (tmp_path / "app.py").read_text() == APP
    _, third = run_command(guard, tmp_path, "sed -i 's/):$/)/' app.py", "c3")
    assert third.action == "hint"


def test_an_incomplete_heredoc_chunk_completed_by_an_append_gets_no_hint(tmp_path: Path) -> None:
    prepare(Case("base", ""), tmp_path)
    guard = Guard("builtin:default", workspace=tmp_path)
    chunk = "cat > big.py <<'EOF'\ndef total(x):\n    return (x +\nEOF"
    blocked, first = run_command(guard, tmp_path, chunk, "c1")
    assert not blocked and first.action == "allow", first.hint
    blocked, second = run_command(guard, tmp_path, "cat >> big.py <<'EOF'\n            1)\nEOF", "c2")
    assert not blocked and second.action == "allow", second.hint
    assert (tmp_path / "big.py").read_text() == "def total(x):\n    return (x +\n            1)\n"


def test_an_incomplete_heredoc_chunk_left_alone_is_followed_up(tmp_path: Path) -> None:
    prepare(Case("base", ""), tmp_path)
    guard = Guard("builtin:default", workspace=tmp_path)
    run_command(guard, tmp_path, "cat > big.py <<'EOF'\ndef total(x):\n    return (x +\nEOF", "c1")
    _, decision = run_command(guard, tmp_path, "python3 big.py", "c2")
    rules = [str(part.rule) for part in decision.metadata["decisions"]]
    assert rules == ["signature SYNTAX_ERROR", "incomplete python"]
    assert "big.py is still incomplete on disk: the `(` opened here is not closed" in (decision.hint or "")
    assert "(line 2, column 12)" in (decision.hint or "")


def test_an_expanding_heredoc_is_not_gated_before_it_runs(tmp_path: Path) -> None:
    prepare(Case("base", ""), tmp_path)
    guard = Guard("builtin:default", workspace=tmp_path)
    call = ToolCall(id="c1", name="bash", args={"command": "cat > app.py <<EOF\ndef f($ARG:\nEOF"})
    assert guard.on_call(call, SCOPE).action == "allow"


def test_the_snapshot_is_bounded_and_says_so(tmp_path: Path) -> None:
    for index in range(30):
        (tmp_path / f"m{index:02}.py").write_text("x = 1\n")
    policy_file = tmp_path / "small.policy"
    policy_file.write_text('extends "builtin:default"\nworkspace { max_files 10 }\n')
    guard = Guard(load_policy(policy_file), workspace=tmp_path)
    assert guard.workspace is not None
    snapshot = guard.workspace.snapshot(guard._files.coverage)
    assert len(snapshot) == 10 and snapshot.truncated


def test_many_scopes_share_one_workspace_without_mixing_their_findings(tmp_path: Path) -> None:
    prepare(Case("base", ""), tmp_path)
    guard = Guard("builtin:default", workspace=tmp_path)
    other = Scope(thread_id="other", run_id="run")
    call = ToolCall(id="o1", name="bash", args={"command": "ls"})
    guard.on_call(call, other)
    guard.on_result(call, ToolResult(content=""), other)
    _, decision = run_command(guard, tmp_path, "sed -i 's/):$/)/' app.py", "c1")
    assert decision.action == "hint"
    # File times lag the clock by up to CLOCK_SLACK_NS, so a change made just before a command
    # starts counts as that command's: the other scope's command starts after that window.
    time.sleep(2 * CLOCK_SLACK_NS / 1e9)
    later = ToolCall(id="o2", name="bash", args={"command": "ls"})
    guard.on_call(later, other)
    assert guard.on_result(later, ToolResult(content=""), other).action == "allow"


def test_every_case_has_a_distinct_name() -> None:
    assert len({case.name for case in CASES}) == len(CASES)


def test_a_command_that_changes_many_gated_files_is_checked_up_to_the_bound(tmp_path: Path) -> None:
    files = {f"pkg/m{index:02}.py": "def f(x):\n    return x\n" for index in range(40)}
    prepare(Case("base", "", files=files), tmp_path)
    guard = Guard("builtin:default", workspace=tmp_path)
    _, decision = run_command(guard, tmp_path, "sed -i 's/):$/)/' pkg/*.py", "c1")
    assert len(decision.metadata["files"]) == 32
    assert len(decision.metadata["unchecked"]) == 8
    assert "This command also left these files broken" in (decision.hint or "")


def test_a_command_is_still_checked_when_its_before_snapshot_was_evicted(tmp_path: Path) -> None:
    """The hook's two processes: the "before" snapshot one took is gone from the shared folder
    (other sessions filled it) when the other answers the result; file times stand in for it."""
    root, state = tmp_path / "work", tmp_path / "state"
    root.mkdir()
    prepare(Case("base", ""), root)
    call = ToolCall(id="c1", name="bash", args={"command": "sed -i 's/):$/)/' app.py"})
    before = Guard("builtin:default", workspace=root, store=FileStore(state))
    before.on_turn([call], SCOPE)
    assert before.on_call(call, SCOPE).action == "allow"
    time.sleep(CLOCK_SLACK_NS / 1e9 * 2)
    subprocess.run(["bash", "-c", call.args["command"]], cwd=root, check=True)
    evicted = list((state / "snapshots").glob("*.snap"))
    assert evicted
    for path in evicted:
        path.unlink()
    after = Guard("builtin:default", workspace=root, store=FileStore(state))
    decision = after.on_result(call, ToolResult(content="", status="success"), SCOPE)
    assert decision.action == "hint"
    assert workspace_cases.swept_paths(decision) == {"app.py"}
    assert "created" not in (decision.hint or "")  # it edited the file: no "created … broken"


def test_a_file_already_broken_is_not_blamed_when_the_before_snapshot_was_evicted(tmp_path: Path) -> None:
    root, state = tmp_path / "work", tmp_path / "state"
    root.mkdir()
    prepare(Case("base", ""), root)
    (root / "app.py").write_text("def f(x)\n    return x\n")  # broken before, and committed so
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "b"],
                   cwd=root, check=True)
    call = ToolCall(id="c1", name="bash", args={"command": "sed -i 's/return x/return x + 1/' app.py"})
    before = Guard("builtin:default", workspace=root, store=FileStore(state))
    before.on_turn([call], SCOPE)
    before.on_call(call, SCOPE)
    time.sleep(CLOCK_SLACK_NS / 1e9 * 2)
    subprocess.run(["bash", "-c", call.args["command"]], cwd=root, check=True)
    for path in (state / "snapshots").glob("*.snap"):
        path.unlink()
    after = Guard("builtin:default", workspace=root, store=FileStore(state))
    assert after.on_result(call, ToolResult(content="", status="success"), SCOPE).action == "allow"

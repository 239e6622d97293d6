"""The workspace through every harness: the real Claude Code hook, a real LangGraph agent, replay."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from test_hooks_claude_code import ROOT, Hook
from test_hooks_langchain import Workspace, answer, call, model, tool_messages, turn
from workspace_cases import Case, prepare

from policy.hooks.langchain.middleware import HarnessGuardMiddleware
from policy.runtime.workspace.listed import find_lister

BREAK_COLON = "sed -i 's/):$/)/' app.py"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _tool_event(hook: Hook, name: str, tool: str, tool_input: dict[str, Any], call_id: str,
                **extra: Any) -> dict[str, Any]:
    return {"hook_event_name": name, "session_id": "s1", "cwd": str(hook.project), "tool_name": tool,
            "tool_input": tool_input, "tool_use_id": call_id, **extra}


def _bash(hook: Hook, command: str, call_id: str, *, process: bool = False) -> dict[str, Any] | None:
    """PreToolUse, the command run for real in the project, PostToolUse: the hook's answer to the latter."""
    pre = hook.answer(_tool_event(hook, "PreToolUse", "Bash", {"command": command}, call_id), process=process)
    if pre is not None:
        return pre
    done = subprocess.run(["bash", "-c", command], cwd=hook.project, capture_output=True, text=True)
    response = {"stdout": done.stdout, "stderr": done.stderr, "interrupted": False}
    post = _tool_event(hook, "PostToolUse", "Bash", {"command": command}, call_id, tool_response=response)
    return hook.answer(post, process=process)


def test_the_claude_code_hook_sweeps_the_events_cwd(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    prepare(Case("base", ""), hook.project)
    assert _bash(hook, "ls", "t1", process=True) is None
    reply = _bash(hook, BREAK_COLON, "t2", process=True)
    assert reply is not None
    context = reply["hookSpecificOutput"]["additionalContext"]
    assert "This command changed app.py and left it broken" in context
    assert "1 | def f(x)" in context


def test_the_claude_code_hook_denies_a_heredoc_that_would_break_a_file(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    prepare(Case("base", ""), hook.project)
    reply = _bash(hook, "cat > app.py <<'EOF'\ndef f(x)\n    return x\nEOF", "t1")
    assert reply is not None
    assert reply["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert (hook.project / "app.py").read_text() == "def f(x):\n    return x\n"


def test_the_claude_code_hook_follows_up_an_incomplete_write(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    target = hook.project / "app.py"
    write = {"file_path": str(target), "content": "def f(x):\n    return [\n"}
    assert hook.answer(_tool_event(hook, "PreToolUse", "Write", write, "t1")) is None
    target.write_text(write["content"])
    assert hook.answer(_tool_event(hook, "PostToolUse", "Write", write, "t1", tool_response={})) is None
    reply = _bash(hook, "python3 app.py", "t2")
    assert reply is not None
    assert "app.py is still incomplete on disk: the `[` opened here is not closed" in \
        reply["hookSpecificOutput"]["additionalContext"]


def test_the_middleware_sweeps_its_workspace(tmp_path: Path) -> None:
    prepare(Case("base", ""), tmp_path)
    tools = Workspace(tmp_path)
    guard = HarnessGuardMiddleware("builtin:default", workspace=tmp_path)
    agent = create_agent(model(turn(call("bash", command=BREAK_COLON)), answer()), tools=tools.tools(),
                         middleware=[guard])
    result = agent.invoke({"messages": [("user", "tidy app.py")]}, context={"thread_id": "t", "run_id": "r"})
    (message,) = tool_messages(result)
    assert "This command changed app.py and left it broken" in str(message.content)
    assert message.additional_kwargs["policy"]["rule"] == "sweep python"


@pytest.mark.parametrize("runtime_reader", [True, False], ids=["with a runtime-aware reader", "alone"])
def test_the_middleware_sweeps_a_sandbox_through_a_runtime_aware_lister(tmp_path: Path,
                                                                      runtime_reader: bool) -> None:
    prepare(Case("base", ""), tmp_path)
    tools = Workspace(tmp_path)
    runtimes: list[Any] = []

    def run_in_sandbox(command: str) -> str:
        return subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True).stdout

    def list_files(runtime: Any) -> Any:
        runtimes.append(runtime)
        return find_lister(run_in_sandbox, str(tmp_path))()

    def read_file(runtime: Any, path: str) -> str | None:
        file = Path(path)
        return file.read_text() if file.is_file() else None

    guard = HarnessGuardMiddleware("builtin:default", read_file=read_file if runtime_reader else None,
                                   workspace=str(tmp_path), list_files=list_files)
    agent = create_agent(model(turn(call("bash", command="ls")), turn(call("bash", command=BREAK_COLON)),
                               answer()), tools=tools.tools(), middleware=[guard])
    result = agent.invoke({"messages": [("user", "tidy app.py")]}, context={"thread_id": "t", "run_id": "r"})
    messages = tool_messages(result)
    assert "left it broken" not in str(messages[0].content)
    assert "This command changed app.py and left it broken" in str(messages[1].content)
    assert runtimes and all(runtime is not None for runtime in runtimes)


def test_replay_shows_sweep_findings_from_a_traces_files_snapshots() -> None:
    done = subprocess.run([sys.executable, "-m", "cli", "replay", str(FIXTURES / "shell_edits.jsonl"),
                           "--format", "json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    by_id = {record.get("id"): record for record in records if "id" in record}
    assert by_id["c1"]["rule"] == "sweep python"
    assert "This command changed app.py and left it broken" in by_id["c1"]["hint"]
    assert by_id["c2"]["action"] == "block" and by_id["c2"]["rule"] == "gate json"
    assert "app.py is still incomplete on disk" in by_id["c4"]["hint"]


def test_the_middleware_follows_up_a_chunk_left_incomplete(tmp_path: Path) -> None:
    tools = Workspace(tmp_path)
    target = tmp_path / "app.py"
    guard = HarnessGuardMiddleware("builtin:default", workspace=tmp_path)
    script = [turn(call("write_file", path=str(target), content="CONFIG = {\n    'debug': True,\n")),
              turn(call("bash", command="python3 app.py")), answer()]
    agent = create_agent(model(*script), tools=tools.tools(), middleware=[guard])
    result = agent.invoke({"messages": [("user", "write app.py")]}, context={"thread_id": "t", "run_id": "r"})
    first, second = tool_messages(result)
    assert "policy" not in first.additional_kwargs  # the chunk itself is allowed, and not remarked on
    assert "app.py is still incomplete on disk: the `{` opened here is not closed" in str(second.content)


def _many_files(root: Path, count: int) -> None:
    for index in range(count):
        folder = root / "src" / f"pkg{index // 200:03d}"
        if index % 200 == 0:
            folder.mkdir(parents=True)
        (folder / f"module_{index % 200:03d}.py").write_text("x = 1\n")


def test_loops_are_counted_in_a_project_of_20000_files(tmp_path: Path) -> None:
    """The workspace snapshot stays out of the session's size-bounded state file."""
    hook = Hook(tmp_path)
    _many_files(hook.project, 20_000)
    command = "python -c 'import yaml'"
    error = "Exit code 1\nModuleNotFoundError: No module named 'yaml'"
    replies: list[dict[str, Any] | None] = []
    for number in range(1, 7):
        common = {"tool_use_id": f"toolu_{number:04d}", "tool_input": {"command": command}}
        pre = hook.answer(hook.event("pre_bash", **common), process=True)
        if pre is not None:
            replies.append(pre)
            break
        replies.append(hook.answer(hook.event("post_bash_failure_module_not_found", error=error, **common),
                                   process=True))
    assert all(reply is None or "systemMessage" not in reply for reply in replies), replies
    assert any(reply is not None and "[LOOP DETECTED]" in json.dumps(reply) for reply in replies[:4]), replies
    assert replies[-1] is not None and replies[-1].get("continue") is False, replies
    sessions = tmp_path / "state" / "policyctl" / "sessions"
    assert all(path.stat().st_size < 64 * 1024 for path in sessions.glob("*.json"))


def test_a_session_state_started_afresh_is_told_to_the_user(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    hook.answer(hook.event("pre_bash"))
    sessions = tmp_path / "state" / "policyctl" / "sessions"
    (session,) = sessions.glob("*.json")
    session.write_text('{"v": 1, "runs": {"session": "{\\"v\\": 2, \\"queued\\": 5}"}}')

    reply = hook.answer(hook.event("post_bash_ok"), process=True)

    assert reply is not None
    assert "policyctl lost its loop state" in reply["systemMessage"]
    assert "starts afresh" in reply["systemMessage"]
    assert hook.answer(bash_event(hook, "PreToolUse", 2)) is None  # reported once, then working again


def bash_event(hook: Hook, name: str, number: int) -> dict[str, Any]:
    return _tool_event(hook, name, "Bash", {"command": "ls"}, f"toolu_{number:04d}")


def test_the_resident_responder_does_not_list_unchanged_folders_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The resident process builds a guard per event; the project's folder listings outlive it."""
    import os

    import policy.runtime.workspace.local as local
    from policy.hooks.respond import Responder
    from policy.stores.file import FileStore

    project = tmp_path / "project"
    for folder in range(5):
        (project / f"pkg{folder}").mkdir(parents=True)
        for module in range(10):
            (project / f"pkg{folder}" / f"m{module}.py").write_text("x = 1\n")
        os.utime(project / f"pkg{folder}", ns=(1, 1))
    os.utime(project, ns=(1, 1))
    responder = Responder(store=FileStore(tmp_path / "sessions"))

    def bash(number: int) -> None:
        for name in ("PreToolUse", "PostToolUse"):
            event = {"hook_event_name": name, "session_id": "s1", "cwd": str(project), "tool_name": "Bash",
                     "tool_input": {"command": f"echo {number}"}, "tool_use_id": f"t{number}",
                     "tool_response": {"stdout": f"{number}\n", "stderr": ""}}
            reply = responder.respond("builtin:claude-code", json.dumps(event).encode())
            assert "Traceback" not in reply.stderr and "systemMessage" not in reply.stdout

    bash(1)
    listed: list[str] = []
    real = os.scandir

    def counting(path: str) -> Any:
        listed.append(path)
        return real(path)

    monkeypatch.setattr(local.os, "scandir", counting)
    bash(2)
    bash(3)
    assert listed == []

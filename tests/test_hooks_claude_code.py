"""``policyctl hook claude-code``, driven as Claude Code drives it: one process per recorded event."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import policyctl
from policy.hooks.claude_code import HookEventError, parse_event
from policy.language.loader import load_policy
from policy.model.decision import COMBINED

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude_code"
RECORDED_CWD = "/home/user/project"


class Hook:
    """Runs the real command with private state, cache and runtime folders, for events recorded in
    one project; ``resident`` says whether the resident process may serve them."""

    def __init__(self, tmp_path: Path, resident: bool = False) -> None:
        self.project = tmp_path / "project"
        self.project.mkdir()
        runtime = tmp_path / "run"
        runtime.mkdir(mode=0o700)
        self.runtime = runtime / "policyctl"
        self.env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"),
                    "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_RUNTIME_DIR": str(runtime),
                    "POLICYCTL_HOOK_RESIDENT": "1" if resident else "0", "POLICYCTL_HOOK_IDLE": "60"}

    def event(self, fixture: str, **changes: Any) -> dict[str, Any]:
        """A recorded event, moved into this project (its cwd and absolute paths)."""
        text = (FIXTURES / f"{fixture}.json").read_text().replace(RECORDED_CWD, str(self.project))
        return {**json.loads(text), **changes}

    def run(self, event: dict[str, Any] | str, *args: str) -> subprocess.CompletedProcess[str]:
        """The real command in its own process, as Claude Code runs it."""
        stdin = event if isinstance(event, str) else json.dumps(event)
        return subprocess.run([sys.executable, "-m", "cli", "hook", "claude-code", *args], input=stdin,
                              capture_output=True, text=True, cwd=ROOT, env=self.env, timeout=120)

    def invoke(self, event: dict[str, Any] | str, *args: str) -> subprocess.CompletedProcess[str]:
        """The same command in this process (faster); state still passes only through the files."""
        stdin = event if isinstance(event, str) else json.dumps(event)
        result = CliRunner().invoke(policyctl, ["hook", "claude-code", *args], input=stdin,
                                    env={**self.env, "POLICYCTL_HOOK_RESIDENT": "0"})
        return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)

    def answer(self, event: dict[str, Any] | str, *args: str, process: bool = False) -> dict[str, Any] | None:
        """The hook's JSON answer (None when it printed nothing); it must exit 0 without a traceback."""
        done = (self.run if process else self.invoke)(event, *args)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else None

    def resident_pids(self) -> list[int]:
        """The pids of the resident processes serving this test's sockets."""
        pids = []
        for lock in self.runtime.glob("*.sock.lock") if self.runtime.is_dir() else []:
            text = lock.read_text().strip()
            if text.isdigit() and _alive(int(text)):
                pids.append(int(text))
        return pids

    def stop_residents(self) -> None:
        for pid in self.resident_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def hook(tmp_path: Path) -> Iterator[Hook]:
    hook = Hook(tmp_path)
    yield hook
    hook.stop_residents()


@pytest.fixture(params=["fallback", "resident"])
def any_hook(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Hook]:
    """The hook answered in its own process, or by the resident process (started on first use)."""
    hook = Hook(tmp_path, resident=request.param == "resident")
    yield hook
    hook.stop_residents()


Event = dict[str, Any]


def bash_pair(hook: Hook, number: int, command: str = "cat flag.txt") -> tuple[Event, Event]:
    """PreToolUse and PostToolUse events of one Bash call that prints the same thing every time."""
    changes = {"tool_use_id": f"toolu_{number:04d}", "tool_input": {"command": command,
                                                                    "description": "Show the flag"}}
    return hook.event("pre_bash", **changes), hook.event("post_bash_ok", **changes)


def repeat_bash(hook: Hook, times: int) -> None:
    """Answer ``times`` identical Bash calls, the PreToolUse and then the PostToolUse event of each."""
    for number in range(1, times + 1):
        pre, post = bash_pair(hook, number)
        hook.answer(pre)
        hook.answer(post)


# --- write gates ------------------------------------------------------------------------


def test_a_broken_python_write_is_denied_with_the_syntax_error(hook: Hook) -> None:
    reply = hook.answer(hook.event("pre_write_broken_python"), process=True)

    assert reply is not None
    decision = reply["hookSpecificOutput"]
    assert decision["hookEventName"] == "PreToolUse"
    assert decision["permissionDecision"] == "deny"
    reason = decision["permissionDecisionReason"]
    assert reason.startswith("[BLOCKED]")
    assert f"{hook.project}/app.py" in reason
    assert "line 2" in reason
    assert "continue" not in reply


def test_a_valid_write_gets_no_decision_so_permissions_still_apply(hook: Hook) -> None:
    assert hook.answer(hook.event("pre_write_valid_python")) is None
    assert hook.answer(hook.event("post_write_ok")) is None


def test_an_edit_is_checked_against_the_real_file_under_cwd(hook: Hook) -> None:
    (hook.project / "package.json").write_text('{"name": "demo", "version": "1.0.0"}\n')

    reply = hook.answer(hook.event("pre_edit_breaks_json"))

    assert reply is not None
    assert reply["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "package.json" in reply["hookSpecificOutput"]["permissionDecisionReason"]
    (hook.project / "package.json").write_text('{"name": "demo", "version": "2.0.0"}\n')
    assert hook.answer(hook.event("pre_edit_breaks_json")) is None  # old_string is gone: nothing to check


# --- error hints --------------------------------------------------------------------------


def test_a_failed_command_gets_its_hint_as_additional_context(hook: Hook) -> None:
    assert hook.answer(hook.event("pre_bash")) is None

    reply = hook.answer(hook.event("post_bash_failure_module_not_found"))

    assert reply is not None
    context = reply["hookSpecificOutput"]["additionalContext"]
    assert reply == {"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
                                            "additionalContext": context}}
    assert "nosuchmod" in context


# --- loops across processes ---------------------------------------------------------------


def test_loop_state_survives_between_hook_processes(hook: Hook) -> None:
    replies = []
    for number in range(1, 5):
        pre, post = bash_pair(hook, number)
        assert hook.answer(pre, process=True) is None
        replies.append(hook.answer(post, process=True))
    assert replies[:2] == [None, None]
    assert replies[2] is not None
    assert "[LOOP DETECTED]" in replies[2]["hookSpecificOutput"]["additionalContext"]
    assert replies[3] is None  # warned once

    pre, _ = bash_pair(hook, 5)
    reply = hook.answer(pre, process=True)
    assert reply is not None
    assert reply["continue"] is False
    assert reply["stopReason"].startswith("policyctl stopped the agent by loop repeat. ")
    assert reply["stopReason"].endswith(".") and ":\n" not in reply["stopReason"]
    assert reply["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "[LOOP STOPPED]" in reply["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_new_user_prompt_starts_a_fresh_budget(hook: Hook) -> None:
    repeat_bash(hook, 4)
    assert hook.answer(hook.event("user_prompt_submit")) is None

    pre, _ = bash_pair(hook, 5)
    assert hook.answer(pre) is None


def test_sessions_do_not_share_state(hook: Hook) -> None:
    repeat_bash(hook, 4)
    pre, _ = bash_pair(hook, 5)
    assert hook.answer({**pre, "session_id": "another-session"}) is None


CONCURRENCY_POLICY = '''
policy "bash-budget" {
  description "At most 12 Bash calls; the 12th stops."
}
tool Bash { runs command=command }
loop frequency { window 12; warn 11; stop 12; hint budget }
hint budget "Bash called {{ count }} times."
'''


def test_concurrent_hook_processes_on_one_session_lose_no_update(hook: Hook, tmp_path: Path) -> None:
    policy = tmp_path / "budget.policy"
    policy.write_text(CONCURRENCY_POLICY)
    events = [hook.event("pre_bash", tool_use_id=f"toolu_{n:04d}", tool_input={"command": f"echo {n}"})
              for n in range(12)]

    with ThreadPoolExecutor(max_workers=12) as pool:
        replies = list(pool.map(lambda event: hook.answer(event, "--policy", str(policy), process=True),
                                    events))

    stops = [r for r in replies if r is not None]
    assert len(stops) == 1, replies  # the 12th call counted, whichever process that was
    assert stops[0]["continue"] is False
    assert stops[0]["hookSpecificOutput"]["permissionDecisionReason"] == "Bash called 12 times."


# --- bad input never breaks the agent -----------------------------------------------------


@pytest.mark.parametrize(("stdin", "complaint"), [
    ("", "not JSON"),
    ("{not json", "not JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}', "session_id"),
    ("[" * 100_000, "nested too deeply"),
    ('{"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash", "tool_input": "ls"}',
     "tool_input must be a JSON object"),
    ('{"hook_event_name": "PostToolUse", "session_id": "s", "tool_input": {}}', "tool_name"),
])
def test_a_malformed_event_is_reported_on_stderr_with_no_decision(hook: Hook, stdin: str,
                                                                   complaint: str) -> None:
    done = hook.invoke(stdin)

    assert done.returncode == 0
    assert done.stdout == ""
    assert "policyctl hook claude-code: malformed event, no decision" in done.stderr
    assert complaint in done.stderr


def test_the_real_process_exits_0_on_garbage(hook: Hook) -> None:
    done = hook.run("\x00 garbage")

    assert (done.returncode, done.stdout) == (0, "")
    assert "malformed event, no decision: the event is not JSON" in done.stderr


def test_a_broken_policy_is_reported_and_the_call_goes_unguarded(hook: Hook, tmp_path: Path) -> None:
    broken = tmp_path / "broken.policy"
    broken.write_text("loop repeat { warn 5; stop 3 }\n")

    done = hook.invoke(hook.event("pre_write_broken_python"), "--policy", str(broken))

    assert done.returncode == 0
    assert "cannot be used, the call is not guarded" in done.stderr
    reply = json.loads(done.stdout)
    assert set(reply) == {"systemMessage"}
    assert "broken.policy" in reply["systemMessage"]


@pytest.mark.parametrize("option", [["--policy", ""], ["--policy="]])
def test_an_empty_policy_option_is_reported_and_never_silent(hook: Hook, option: list[str]) -> None:
    for event in (hook.event("pre_write_broken_python"), {"hook_event_name": "SessionStart",
                                                           "session_id": "s-1", "cwd": str(hook.project)}):
        done = hook.run(event, *option)

        assert done.returncode == 0 and "Traceback" not in done.stderr
        message = json.loads(done.stdout)["systemMessage"]
        assert "--policy is empty" in message and "not guarded" in message
        assert message in done.stderr  # also in Claude Code's debug log


def test_a_missing_policy_file_is_reported(hook: Hook, tmp_path: Path) -> None:
    done = hook.invoke(hook.event("pre_bash"), "--policy", str(tmp_path / "nope.policy"))

    assert done.returncode == 0
    assert "nope.policy" in done.stderr


# --- the protocol, in process ---------------------------------------------------------------


def test_a_recorded_event_reads_as_a_call_in_its_session() -> None:
    event = parse_event((FIXTURES / "pre_edit_breaks_json.json").read_text())

    assert event.name == "PreToolUse"
    assert event.scope.thread_id == "9f1c2a7e-5b3d-4e8f-a1c6-2d7e9b0f4a13"
    assert event.cwd == Path(RECORDED_CWD)
    assert event.call is not None and event.call.id == "toolu_01C6zSg9mV5oR4uX0yNeP6dT"
    assert event.call.args["file_path"] == "package.json"
    assert event.result is None


@pytest.mark.parametrize(("response", "content", "status"), [
    ({"stdout": "out\n", "stderr": "err\n", "interrupted": False}, "out\n\nerr\n", "success"),
    ([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "a\nb", "success"),
    ({"type": "create", "filePath": "/p/x.py"}, '{"filePath": "/p/x.py", "type": "create"}', "success"),
    ("plain", "plain", "success"),
    (None, "", "success"),
])
def test_a_tool_response_reads_as_the_text_the_policy_matches(response: Any, content: str,
                                                              status: str) -> None:
    event = parse_event(json.dumps({"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "T",
                                    "tool_input": {}, "tool_use_id": "t1", "tool_response": response}))

    assert event.result is not None
    assert (event.result.content, event.result.status) == (content, status)


def test_without_a_tool_use_id_pre_and_post_agree_on_the_call() -> None:
    common = {"session_id": "s", "tool_name": "Bash", "tool_input": {"command": "ls"}}
    pre = parse_event(json.dumps({"hook_event_name": "PreToolUse", **common}))
    post = parse_event(json.dumps({"hook_event_name": "PostToolUseFailure", "error": "boom", **common}))

    assert pre.call is not None and post.call is not None
    assert pre.call.id == post.call.id
    assert post.result is not None and (post.result.content, post.result.status) == ("boom", "error")


def test_a_malformed_event_names_its_problem() -> None:
    with pytest.raises(HookEventError, match="session_id is missing"):
        parse_event('{"hook_event_name": "UserPromptSubmit"}')


# --- the README's settings ----------------------------------------------------------------


def readme_blocks(section: str, language: str) -> list[str]:
    """The ``language`` code blocks of the README section titled ``section``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [block.split("\n```", 1)[0] for block in body.split(f"```{language}\n")[1:]]


def test_the_readme_settings_install_the_real_command_for_every_event(hook: Hook) -> None:
    (snippet,) = readme_blocks("Use with Claude Code", "json")
    hooks = json.loads(snippet)["hooks"]
    assert set(hooks) == {"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "SessionEnd"}
    entries = [entry for event in hooks.values() for entry in event]
    commands = {h["command"] for entry in entries for h in entry["hooks"] if h["type"] == "command"}
    assert len(commands) == 1
    script, *arguments = shlex.split(commands.pop())

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts[script] == "cli.main:main"
    done = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", *arguments],
                          input=json.dumps(hook.event("pre_write_broken_python")), capture_output=True,
                          text=True, cwd=ROOT, env=hook.env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"

    claude_tools = {"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "Read"}
    assert claude_tools <= set(load_policy("builtin:claude-code").tools)
    for matcher in {entry["matcher"] for entry in entries if "matcher" in entry}:
        assert {tool for tool in claude_tools if re.fullmatch(matcher, tool)} == claude_tools


def test_the_readme_install_commands_write_the_readme_settings(tmp_path: Path) -> None:
    commands, fast_form = readme_blocks("Use with Claude Code", "sh")
    (snippet,) = readme_blocks("Use with Claude Code", "json")
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "opus", "hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "./audit.sh"}]}]}}))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": ""}

    def install(line: str) -> dict[str, Any]:
        words = shlex.split(line.split("#")[0])
        assert words[:3] == ["policyctl", "install", "claude-code"]
        done = subprocess.run([sys.executable, "-m", "cli", *words[1:]], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        target = tmp_path / "home" / ".claude" / "settings.json" if "--user" in words else settings
        loaded: dict[str, Any] = json.loads(target.read_text())
        return loaded

    first, user, team, removed = (install(line) for line in commands.strip().splitlines())
    expected = json.loads(snippet)["hooks"]
    ours = {event: [g for g in groups if "policyctl" in json.dumps(g)]
            for event, groups in first["hooks"].items()}
    assert {event: [{**g, "hooks": [{**h, "command": "policyctl hook claude-code"} for h in g["hooks"]]}
                    for g in groups] for event, groups in ours.items()} == expected
    assert first["model"] == "opus" and first["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "./audit.sh"
    assert set(user["hooks"]) == set(expected)
    user_command = shlex.split(user["hooks"]["PreToolUse"][0]["hooks"][0]["command"])
    readme_command = shlex.split(fast_form)
    assert [user_command[1:3], Path(user_command[3]).parts[-2:], user_command[4:]] == [
        readme_command[1:3], Path(readme_command[3]).parts[-2:], readme_command[4:]]
    assert all('--policy "$CLAUDE_PROJECT_DIR/.claude/team.policy"' in g["hooks"][0]["command"]
               for groups in team["hooks"].values() for g in groups if "policyctl" in json.dumps(g))
    assert removed == {"model": "opus", "hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "./audit.sh"}]}]}}
    assert (settings.parent / "settings.json.bak").exists()


def test_the_user_install_writes_the_fast_command_and_it_answers(hook: Hook, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": ""}

    def install(*args: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "cli", "install", "claude-code", "--user", *args],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        loaded: dict[str, Any] = json.loads((home / ".claude" / "settings.json").read_text())
        return loaded

    settings = install()
    commands = {h["command"] for groups in settings["hooks"].values() for g in groups for h in g["hooks"]}
    (command,) = commands
    words = shlex.split(command)
    assert words[:3] == [sys.executable, "-S", "-P"] and words[4:] == ["hook", "claude-code"]
    assert Path(words[3]) == ROOT / "cli" / "hook_client.py"

    for resident in ("0", "1", "1"):  # answered by itself (site added on demand), then it starts
        done = subprocess.run(words, input=json.dumps(hook.event("pre_write_broken_python")),  # the resident
                              capture_output=True, text=True, cwd=tmp_path, timeout=120,
                              env={**hook.env, "POLICYCTL_HOOK_RESIDENT": resident})
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        if resident == "1":
            wait_for_resident(hook)
    probe = "import runpy, sys; print(runpy.run_path(sys.argv[1])['socket_path']())"
    sockets = {subprocess.run([sys.executable, *flags, "-c", probe, words[3]], capture_output=True, text=True,
                              env=hook.env, check=True, timeout=120).stdout for flags in ([], ["-S", "-P"])}
    assert len(sockets) == 1  # policyctl and the fast command find the same resident process
    assert install("--uninstall") == {}


def test_install_is_idempotent_and_refuses_broken_settings(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli", "install", "claude-code", *args],
                              capture_output=True, text=True, cwd=tmp_path, timeout=120)

    assert run().returncode == 0
    once = settings.read_text()
    done = run()
    assert done.returncode == 0 and "unchanged" in done.stdout
    assert settings.read_text() == once

    settings.write_text("{not json")
    done = run()
    assert done.returncode == 1 and "not valid JSON" in done.stderr and "nothing was changed" in done.stderr
    assert settings.read_text() == "{not json"


# --- the current protocol (issue cases 1-10), through the real command --------------------------


def failure(hook: Hook, number: int, command: str, error: str, **changes: Any) -> tuple[Event, Event]:
    """PreToolUse and PostToolUseFailure events of one failed Bash call."""
    common = {"tool_use_id": f"toolu_{number:04d}", "tool_input": {"command": command}, **changes}
    post = hook.event("post_bash_failure_module_not_found", error=error, **common)
    return hook.event("pre_bash", **common), post


def test_an_interrupted_call_is_not_a_failure(any_hook: Hook) -> None:
    for number in range(6):
        pre, post = failure(any_hook, number, f"sleep {100 + number}", "Interrupted by user",
                            is_interrupt=True)
        assert any_hook.answer(pre, process=True) is None
        assert any_hook.answer(post, process=True) is None
    pre, post = failure(any_hook, 7, "rg TODO", "Exit code 127\nbash: rg: command not found")
    assert any_hook.answer(pre, process=True) is None
    reply = any_hook.answer(post, process=True)
    assert reply is not None and "continue" not in reply  # the six interrupts did not count
    assert "`rg`" in reply["hookSpecificOutput"]["additionalContext"]


def test_an_interrupted_bash_result_is_not_counted(hook: Hook) -> None:
    for number in range(1, 7):
        pre, post = bash_pair(hook, number, command=f"sleep {100 + number}")
        post["tool_response"] = {"stdout": "", "stderr": "Interrupted", "interrupted": True}
        assert hook.answer(pre) is None
        assert hook.answer(post) is None
    pre, post = failure(hook, 7, "rg TODO", "Exit code 127\nbash: rg: command not found")
    hook.answer(pre)
    reply = hook.answer(post)
    assert reply is not None and "continue" not in reply


def test_each_prompt_id_is_a_new_loop_budget(hook: Hook) -> None:
    for number in range(1, 5):
        pre, post = bash_pair(hook, number)
        hook.answer({**pre, "prompt_id": "prompt-1"})
        hook.answer({**post, "prompt_id": "prompt-1"})
    pre, _ = bash_pair(hook, 5)
    stopped = hook.answer({**pre, "prompt_id": "prompt-1"})
    assert stopped is not None and stopped["continue"] is False

    pre, _ = bash_pair(hook, 6)
    assert hook.answer({**pre, "prompt_id": "prompt-2"}) is None  # no UserPromptSubmit hook needed


def test_a_subagent_has_its_own_loop_budget(hook: Hook) -> None:
    repeat_bash(hook, 4)
    pre, _ = bash_pair(hook, 5)
    subagent = {**pre, "agent_id": "a4d2c8f1e0b3a297", "agent_type": "Explore"}
    assert hook.answer(subagent) is None
    stopped = hook.answer(pre)
    assert stopped is not None and stopped["continue"] is False


def test_deeply_nested_input_never_crashes_the_hook(any_hook: Hook) -> None:
    done = any_hook.run("[" * 200_000 + "]" * 200_000)
    assert (done.returncode, done.stdout) == (0, "")
    assert "nested too deeply" in done.stderr and "Traceback" not in done.stderr

    nested: Any = "x"
    for _ in range(900):
        nested = [nested]
    event = {**any_hook.event("pre_bash"), "tool_input": {"command": "ls", "deep": nested}}
    done = any_hook.run(json.dumps(event))
    assert done.returncode == 0 and "Traceback" not in done.stderr
    if done.stdout.strip():  # whatever part of the guard could not cope says so, to the user too
        assert "systemMessage" in json.loads(done.stdout)


def test_a_lone_surrogate_does_not_switch_the_gate_off(any_hook: Hook) -> None:
    event = any_hook.event("pre_write_broken_python")
    event["tool_input"]["content"] = "# \ud800\n" + event["tool_input"]["content"]
    text = json.dumps(event)  # ASCII JSON: the surrogate travels as the escape \\ud800
    assert "\\ud800" in text

    reply = any_hook.answer(text, process=True)

    assert reply is not None
    assert reply["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_lone_surrogate_in_the_denied_path_is_written_back_as_its_escape(any_hook: Hook) -> None:
    event = any_hook.event("pre_write_broken_python")
    event["tool_input"]["file_path"] = str(any_hook.project / "app\ud800.py")  # the denial names it

    done = any_hook.run(json.dumps(event))

    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert "app\ud800.py" in output["permissionDecisionReason"]


def test_a_guard_fault_is_reported_to_the_user(hook: Hook, tmp_path: Path) -> None:
    state = tmp_path / "state" / "policyctl"
    state.mkdir(parents=True)
    (state / "sessions").write_text("not a folder")  # the file store cannot work

    done = hook.run(hook.event("pre_write_valid_python"))

    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert "not guarded" in json.loads(done.stdout)["systemMessage"]
    assert "policyctl hook claude-code" in done.stderr


@pytest.mark.parametrize("event_name", ["Stop", "SubagentStop", "SessionStart", "PreCompact", "Notification",
                                        "PermissionRequest", "PostToolBatch", "SomeEventFromTheFuture"])
def test_every_other_event_is_accepted_and_answered_with_nothing(hook: Hook, event_name: str) -> None:
    event = {"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": str(hook.project),
             "hook_event_name": event_name, "tool_name": "Bash", "tool_input": {"command": "ls"}}

    done = hook.run(event)

    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_session_end_forgets_the_session(hook: Hook) -> None:
    repeat_bash(hook, 4)
    hook.answer({**hook.event("user_prompt_submit"), "hook_event_name": "SessionEnd", "reason": "exit"})
    pre, _ = bash_pair(hook, 5)
    assert hook.answer(pre) is None


@pytest.mark.parametrize("message", [
    "Exit code 127\nbash: rg: command not found",
    "Exit code 127\n/bin/bash: line 1: rg: command not found",
    "Exit code 127\nzsh: command not found: rg",
    "Exit code 127\n(eval):1: command not found: rg",
    "Exit code 127\nsh: 1: rg: not found",
    "Exit code 127\n/bin/sh: 1: rg: not found",
])
def test_every_shell_says_command_not_found_its_own_way(hook: Hook, message: str) -> None:
    pre, post = failure(hook, 1, "rg TODO", message)
    hook.answer(pre)

    reply = hook.answer(post)

    assert reply is not None
    assert "`rg`" in reply["hookSpecificOutput"]["additionalContext"]


IMPERATIVE = re.compile(
    r"(?m)(?:^|[.;:] |\] )(?:Add|Ask|Build|Call|Check|Create|Do|Edit|Find|Fix|Free|Include|Install|List|Look|"
    r"Make|Never|Open|Read|Remove|Run|Send|Set|Start|Stop|Tell|Try|Use|View|Wait)\b"
    r"|(?:^|[.;:] )(?:do not|don't)\b|\b[Yy]ou (?:must|should|need to|have to)\b")
"""An order: a sentence (or clause) that starts with a verb a hint would command, or a "you must"."""


def test_context_text_states_facts(hook: Hook) -> None:
    pre, post = failure(hook, 1, "rg TODO", "Exit code 127\nzsh: command not found: rg")
    hook.answer(pre)
    hint = hook.answer(post)
    denied = hook.answer(hook.event("pre_write_broken_python"))
    replies = []
    for number in range(1, 6):
        pre, post = bash_pair(hook, number)
        replies += [hook.answer(pre), hook.answer(post)]

    texts = [hint["hookSpecificOutput"]["additionalContext"] if hint else "",
             denied["hookSpecificOutput"]["permissionDecisionReason"] if denied else ""]
    texts += [r["hookSpecificOutput"].get("additionalContext") or r["hookSpecificOutput"].get(
        "permissionDecisionReason", "") for r in replies if r is not None]
    assert len(texts) >= 4
    for text in texts:
        assert not IMPERATIVE.search(text), text
    stop = next(r for r in replies if r is not None and r.get("continue") is False)
    assert re.fullmatch(r"policyctl stopped the agent by loop repeat\. [^\n]+[.]", stop["stopReason"])


def test_every_hint_the_claude_code_policy_delivers_states_facts() -> None:
    """Every recorded case of the default policy and of the Claude Code policy, answered under the
    Claude Code policy: each hint it renders, of every hint file it ships, reads as facts."""
    from policy.testing.runner import run_test

    claude_code, default = load_policy("builtin:claude-code"), load_policy("builtin:default")
    rendered: dict[str, list[str]] = {}
    fallbacks = []
    for case in [*default.tests, *claude_code.tests]:
        for record in run_test(claude_code, case).calls:
            decision = record.decision
            for part in [d.to_dict() for d in decision.metadata.get(COMBINED) or (decision,)]:
                if part.get("hint") and part.get("rule"):
                    rendered.setdefault(str(part["rule"]), []).append(part["hint"])
                if "hint_fallback" in (part.get("metadata") or {}):
                    fallbacks.append((part["rule"], part["metadata"]["hint_fallback"]))

    assert fallbacks == []  # every template rendered (none fell back to the plain line)
    orders = {rule: match.group(0) for rule, hints in rendered.items() for hint in hints
              if (match := IMPERATIVE.search(hint))}
    assert orders == {}
    sources = {template.source for template in claude_code.hints.values()}
    shipped = {path.read_text(encoding="utf-8") for path in (ROOT / "hints" / "claude_code").glob("*.j2")}
    assert sources == shipped  # every hint of the policy is one of its own fact-stating files
    used = {_hint_source(claude_code, rule) for rule in rendered}
    assert shipped <= used, sorted(path.name for path in (ROOT / "hints" / "claude_code").glob("*.j2")
                                   if path.read_text(encoding="utf-8") not in used)


def test_the_hint_guide_shows_hints_that_state_facts() -> None:
    guide = (ROOT / "docs" / "hints.md").read_text(encoding="utf-8")
    example = guide.split("```", 2)[1]  # the first example: a policy's hint declarations
    texts = re.findall(r'^hint \w+ "([^"]+)"', example, re.MULTILINE)
    texts += re.findall(r"^\[[A-Z ]+\].*", example, re.MULTILINE)  # the lines of a multi-line hint
    assert len(texts) == 2, example
    for text in texts:
        assert not IMPERATIVE.search(text), text
    assert "State what usually fixes it" in guide and "Say what not to do" not in guide


def _hint_source(policy: Any, rule: str) -> str | None:
    """The template source behind a decision's rule (``signature NAME``, ``gate NAME``, ``loop repeat`` …)."""
    kind, _, name = rule.partition(" ")
    if kind in ("sweep", "incomplete"):
        hint = policy.workspace.hint if kind == "sweep" else policy.workspace.incomplete_hint
        return hint.source if hint else None
    rules = {"loop": policy.loops, "signature": policy.signatures}.get(kind, policy.gates)
    found = next((r for r in rules if r.ref.name == name), None)
    return found.hint.source if found is not None and found.hint is not None else None


# --- the resident process ---------------------------------------------------------------------------


def replies_of(hook: Hook, events: list[Event], *args: str) -> list[str]:
    outputs = []
    for event in events:
        done = hook.run(event, *args)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    return outputs


def session_events(hook: Hook) -> list[Event]:
    events = [hook.event("pre_write_broken_python"), hook.event("pre_write_valid_python"),
              *failure(hook, 90, "rg TODO", "Exit code 127\nbash: rg: command not found")]
    for number in range(1, 6):
        events += bash_pair(hook, number)
    return events


def test_the_resident_process_and_the_fallback_give_the_same_answers(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "f").mkdir()
    resident, fallback = Hook(tmp_path / "r", resident=True), Hook(tmp_path / "f")
    try:
        answers = replies_of(resident, session_events(resident))
        assert resident.resident_pids(), "the first event starts the resident process"
        expected = replies_of(fallback, session_events(fallback))
        assert [a.replace(str(resident.project), "P") for a in answers] == [
            e.replace(str(fallback.project), "P") for e in expected]
        assert any(answers) and not fallback.resident_pids()
    finally:
        resident.stop_residents()


def wait_for_resident(hook: Hook) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pids = hook.resident_pids()
        if pids and any(hook.runtime.glob("*.sock")):
            return pids[0]
        time.sleep(0.05)
    raise AssertionError("no resident process started")


def test_a_killed_resident_process_loses_no_event(tmp_path: Path) -> None:
    hook = Hook(tmp_path, resident=True)
    try:
        assert hook.answer(hook.event("pre_bash"), process=True) is None
        pid = wait_for_resident(hook)
        os.kill(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.01)

        reply = hook.answer(hook.event("pre_write_broken_python"), process=True)

        assert reply is not None and reply["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert wait_for_resident(hook) != pid  # the stale socket was replaced by a new process
        again = hook.answer(hook.event("pre_write_broken_python"), process=True)
        assert again == reply
    finally:
        hook.stop_residents()


@pytest.mark.parametrize("resident", [False, True], ids=["fallback", "resident"])
def test_a_policy_edited_between_two_events_is_used_at_once(tmp_path: Path, resident: bool) -> None:
    hook = Hook(tmp_path, resident=resident)
    policy = tmp_path / "team.policy"
    policy.write_text('extends "builtin:claude-code"\n')
    try:
        assert hook.answer(hook.event("pre_write_broken_python"), "--policy", str(policy),
                           process=True) is not None
        if resident:
            wait_for_resident(hook)
            assert hook.answer(hook.event("pre_write_broken_python"), "--policy", str(policy),
                               process=True) is not None
        policy.write_text('extends "builtin:claude-code"\ndisable gate python\n')

        assert hook.answer(hook.event("pre_write_broken_python"), "--policy", str(policy),
                           process=True) is None
    finally:
        hook.stop_residents()


def test_concurrent_events_through_the_resident_process_lose_no_count(tmp_path: Path) -> None:
    hook = Hook(tmp_path, resident=True)
    policy = tmp_path / "budget.policy"
    policy.write_text(CONCURRENCY_POLICY)
    try:
        hook.answer(hook.event("user_prompt_submit"), "--policy", str(policy), process=True)
        wait_for_resident(hook)
        events = [hook.event("pre_bash", tool_use_id=f"toolu_{n:04d}", tool_input={"command": f"echo {n}"})
                  for n in range(12)]
        with ThreadPoolExecutor(max_workers=12) as pool:
            replies = list(pool.map(lambda event: hook.answer(event, "--policy", str(policy), process=True),
                                    events))
        stops = [r for r in replies if r is not None]
        assert len(stops) == 1, replies
        assert stops[0]["hookSpecificOutput"]["permissionDecisionReason"] == "Bash called 12 times."
    finally:
        hook.stop_residents()


def test_the_compiled_policy_cache_is_private_and_verified(hook: Hook, tmp_path: Path) -> None:
    assert hook.answer(hook.event("pre_write_broken_python"), process=True) is not None
    folder = tmp_path / "cache" / "policyctl" / "compiled"
    (entry,) = folder.glob("*.pickle")
    assert folder.stat().st_mode & 0o777 == 0o700 and entry.stat().st_mode & 0o777 == 0o600

    entry.write_bytes(entry.read_bytes()[:-1] + b"!")  # tampered: the HMAC no longer matches
    assert hook.answer(hook.event("pre_write_broken_python"), process=True) is not None

    folder.chmod(0o777)  # a folder others can write is not read from
    reply = hook.answer(hook.event("pre_write_broken_python"), process=True)
    assert reply is not None and reply["hookSpecificOutput"]["permissionDecision"] == "deny"


NOTEBOOK = {"cells": [{"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Analysis\n"]},
                      {"cell_type": "code", "id": "load", "metadata": {}, "execution_count": None,
                       "outputs": [], "source": ["import json\n", "data = json.loads('{}')\n"]}],
            "metadata": {"kernelspec": {"name": "python3", "language": "python"},
                         "language_info": {"name": "python", "file_extension": ".py"}},
            "nbformat": 4, "nbformat_minor": 5}


def notebook_edit(hook: Hook, **tool_input: Any) -> Event:
    return {**hook.event("pre_write_valid_python"), "tool_name": "NotebookEdit",
            "tool_input": {"notebook_path": str(hook.project / "analysis.ipynb"), **tool_input}}


def test_a_notebook_edit_that_breaks_a_python_cell_is_denied(hook: Hook) -> None:
    (hook.project / "analysis.ipynb").write_text(json.dumps(NOTEBOOK))

    reply = hook.answer(notebook_edit(hook, cell_id="load", new_source="data = json.loads('{}'\n"),
                        process=True)

    assert reply is not None
    reason = reply["hookSpecificOutput"]["permissionDecisionReason"]
    assert reply["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "analysis.ipynb (cell load)" in reason and "Python" in reason
    assert json.loads((hook.project / "analysis.ipynb").read_text()) == NOTEBOOK  # untouched, still JSON


@pytest.mark.parametrize("tool_input", [
    {"cell_id": "load", "new_source": "%matplotlib inline\n!pip install pandas\nimport pandas\n"},
    {"cell_id": "intro", "new_source": "# Analysis (\n", "cell_type": "markdown"},
    {"cell_id": "load", "new_source": "", "edit_mode": "delete"},
    {"cell_id": "load", "new_source": "%%bash\necho (\n", "edit_mode": "insert", "cell_type": "code"},
])
def test_notebook_edits_that_keep_the_code_valid_are_allowed(hook: Hook, tool_input: dict[str, Any]) -> None:
    (hook.project / "analysis.ipynb").write_text(json.dumps(NOTEBOOK))

    assert hook.answer(notebook_edit(hook, **tool_input)) is None


def test_a_notebook_of_another_language_is_not_checked_as_python(hook: Hook) -> None:
    notebook = {**NOTEBOOK, "metadata": {"language_info": {"name": "R", "file_extension": ".r"}}}
    (hook.project / "analysis.ipynb").write_text(json.dumps(notebook))

    assert hook.answer(notebook_edit(hook, cell_id="load", new_source="x <- c(1, 2\n")) is None


def test_a_multiedit_that_breaks_the_file_is_denied(hook: Hook) -> None:
    (hook.project / "app.py").write_text("x = 1\ny = 2\n")
    event = {**hook.event("pre_write_valid_python"), "tool_name": "MultiEdit",
             "tool_input": {"file_path": str(hook.project / "app.py"),
                            "edits": [{"old_string": "x = 1", "new_string": "x = 10"},
                                      {"old_string": "y = 2", "new_string": "y = (2"}]}}

    reply = hook.answer(event)

    assert reply is not None and reply["hookSpecificOutput"]["permissionDecision"] == "deny"


# --- big inputs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("resident", [False, True], ids=["fallback", "resident"])
def test_a_write_over_max_check_bytes_is_allowed_and_the_user_is_told(tmp_path: Path, resident: bool) -> None:
    hook = Hook(tmp_path, resident=resident)
    policy = tmp_path / "small.policy"
    policy.write_text('extends "builtin:claude-code"\npolicy "small" { max_check_bytes 1KB }\n')
    broken = "def f(:\n    pass\n"
    try:
        small = hook.event("pre_write_broken_python", tool_input={"file_path": "app.py", "content": broken})
        assert hook.answer(small, "--policy", str(policy), process=True) is not None  # checked: denied
        big = hook.event("pre_write_broken_python",
                         tool_input={"file_path": "app.py", "content": broken + "x = 1\n" * 400})

        done = hook.run(big, "--policy", str(policy))

        assert done.returncode == 0 and "Traceback" not in done.stderr
        reply = json.loads(done.stdout)
        assert "hookSpecificOutput" not in reply  # allowed: Claude Code's own permission rules apply
        assert re.fullmatch(r"PreToolUse Write: policyctl's python gate did not check this call: .*"
                            r"max_check_bytes.*\.", reply["systemMessage"])
        assert reply["systemMessage"] in done.stderr  # also in Claude Code's debug log
    finally:
        hook.stop_residents()


# --- the compiled-policy cache ------------------------------------------------------------------


def test_cached_hint_templates_render_from_their_compiled_code(tmp_path: Path) -> None:
    from policy.hooks.policy_cache import PolicyCache

    cache = PolicyCache(tmp_path / "compiled")
    compiled, _ = cache.load("builtin:claude-code")
    cached, _ = cache.load("builtin:claude-code")  # the entry the first load wrote
    assert cached is not compiled and cached == compiled
    template = cached.hints["syntax_error"]
    assert template.code is not None and compiled.hints["syntax_error"].code is None
    variables = {"path": "app.py", "line": 1, "column": 7, "message": "invalid syntax",
                 "snippet": "1 | def f(:", "validator": "python", "output": "", "tool": "Write"}
    expected = compiled.hints["syntax_error"].render_checked(variables)
    assert expected.fallback is None and "app.py" in expected.text

    assert template.render_checked(variables) == expected
    other_jinja2 = dataclasses.replace(template, code=("0.0-other", template.code[1]))
    assert other_jinja2.render_checked(variables) == expected  # compiled again from its source


def test_an_upgraded_library_invalidates_the_cached_policies(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from policy.hooks import policy_cache

    library = tmp_path / "fakelib"
    library.mkdir()
    (library / "__init__.py").write_text("VERSION = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(policy_cache, "_COMPILED_WITH", ("fakelib", "no_such_library"))
    policy_cache.code_identity.cache_clear()
    try:
        before = policy_cache.code_identity()
        (library / "__init__.py").write_text("VERSION = 22\n")
        policy_cache.code_identity.cache_clear()
        assert policy_cache.code_identity() != before
    finally:
        policy_cache.code_identity.cache_clear()


def test_writing_an_entry_prunes_old_and_surplus_entries(tmp_path: Path) -> None:
    from policy.hooks.policy_cache import MAX_AGE_DAYS, MAX_ENTRIES, PolicyCache

    folder = tmp_path / "compiled"
    cache = PolicyCache(folder)
    cache.load("builtin:claude-code")
    (current,) = folder.glob("*.pickle")
    key = folder / "key"
    now = time.time()
    surplus = [folder / f"{number:040x}.pickle" for number in range(MAX_ENTRIES + 5)]
    for age, path in enumerate(surplus):  # written a minute apart, the newest first
        path.write_bytes(b"entry")
        os.utime(path, (now - 60 * (age + 1),) * 2)
    old = folder / f"{'a' * 40}.pickle"
    old.write_bytes(b"entry")
    os.utime(old, (now - (MAX_AGE_DAYS + 1) * 86400,) * 2)
    half_written = folder / f".{current.name}.{'0' * 32}.tmp"
    half_written.write_bytes(b"half")
    os.utime(half_written, (now - 2 * 3600,) * 2)
    os.utime(current, (now - 90,) * 2)  # between the two newest others

    cache.load("builtin:default")  # a miss: its entry is written, and the folder pruned

    (written,) = set(folder.glob("*.pickle")) - {current, old, *surplus}
    left = set(folder.glob("*.pickle"))
    assert len(left) == MAX_ENTRIES and written in left and key.exists()
    assert not old.exists() and not half_written.exists()
    assert left == {written, current, *surplus[:MAX_ENTRIES - 2]}  # the newest stay


def test_a_resident_process_that_never_answers_is_not_waited_for(tmp_path: Path) -> None:
    import socket
    import threading

    hook = Hook(tmp_path, resident=True)
    show = "from cli.hook_client import socket_path; print(socket_path())"
    where = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True, cwd=ROOT,
                           env=hook.env, check=True)
    path = where.stdout.strip()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True).start()
    try:
        # Claude Code kills a hook after 60 s: the answer must come from this process before that
        done = subprocess.run([sys.executable, "-m", "cli", "hook", "claude-code"],
                              input=json.dumps(hook.event("pre_write_broken_python")), capture_output=True,
                              text=True, cwd=ROOT, env=hook.env, timeout=55)
    finally:
        listener.close()
        for connection in held:
            connection.close()
        hook.stop_residents()
    assert held, "the hook did not ask the resident process first"
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_the_client_s_copies_of_the_hook_s_constants_are_the_same() -> None:
    """The client imports nothing of policy (it starts with ``-S``), so it keeps its own copies."""
    from cli import hook_client
    from policy.hooks import claude_code, resident, respond

    assert (hook_client.MAGIC, hook_client.PREFIX, hook_client.DEFAULT_POLICY) == (
        resident.MAGIC, respond.PREFIX, claude_code.DEFAULT_POLICY)

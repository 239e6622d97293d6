"""``policyctl hook claude-code``, driven as Claude Code drives it: one process per recorded event."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import policyctl
from policy.hooks.claude_code import HookEventError, parse_event
from policy.language.loader import load_policy

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude_code"
RECORDED_CWD = "/home/user/project"


class Hook:
    """Runs the real command with a private state folder, for events recorded in one project."""

    def __init__(self, tmp_path: Path) -> None:
        self.project = tmp_path / "project"
        self.project.mkdir()
        self.env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}

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
        result = CliRunner().invoke(policyctl, ["hook", "claude-code", *args], input=stdin, env=self.env)
        return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)

    def answer(self, event: dict[str, Any] | str, *args: str, process: bool = False) -> dict[str, Any] | None:
        """The hook's JSON answer (None when it printed nothing); it must exit 0."""
        done = (self.run if process else self.invoke)(event, *args)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else None


@pytest.fixture
def hook(tmp_path: Path) -> Hook:
    return Hook(tmp_path)


Event = dict[str, Any]


def bash_pair(hook: Hook, number: int, command: str = "cat flag.txt") -> tuple[Event, Event]:
    """PreToolUse and PostToolUse events of one Bash call that prints the same thing every time."""
    changes = {"tool_use_id": f"toolu_{number:04d}", "tool_input": {"command": command,
                                                                    "description": "Show the flag"}}
    return hook.event("pre_bash", **changes), hook.event("post_bash_ok", **changes)


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
    assert reply["stopReason"].startswith("policyctl stopped the agent (loop repeat)")
    assert reply["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "[LOOP STOPPED]" in reply["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_new_user_prompt_starts_a_fresh_budget(hook: Hook) -> None:
    for number in range(1, 5):
        pre, post = bash_pair(hook, number)
        hook.answer(pre)
        hook.answer(post)
    assert hook.answer(hook.event("user_prompt_submit")) is None

    pre, _ = bash_pair(hook, 5)
    assert hook.answer(pre) is None


def test_sessions_do_not_share_state(hook: Hook) -> None:
    for number in range(1, 5):
        pre, post = bash_pair(hook, number)
        hook.answer(pre)
        hook.answer(post)
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
    ('{"hook_event_name": "Notification", "session_id": "s"}', "unsupported hook_event_name 'Notification'"),
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
    ({"stdout": "", "stderr": "", "interrupted": True}, "", "error"),
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
    assert set(hooks) == {"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit"}
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

    claude_tools = {"Write", "Edit", "MultiEdit", "Bash", "Read"}
    assert claude_tools <= set(load_policy("builtin:claude-code").tools)
    for matcher in {entry["matcher"] for entry in entries if "matcher" in entry}:
        assert {tool for tool in claude_tools if re.fullmatch(matcher, tool)} == claude_tools

"""``policyctl hook``: run policyctl as an agent harness's hook."""

from __future__ import annotations

import json
import sys

import click

from policy.hooks.claude_code import DEFAULT_POLICY, HookEventError, answer, file_reader, parse_event
from policy.language.loader import load_policy
from policy.model.diagnostics import PolicyError
from policy.runtime.guard import Guard
from policy.stores.file import FileStore

_PREFIX = "policyctl hook claude-code"


@click.group()
def hook() -> None:
    """Run policyctl as an agent harness's hook."""


@hook.command("claude-code")
@click.option("--policy", "policy_source", default=DEFAULT_POLICY, show_default=True,
              help="A .policy file or builtin:NAME.")
def claude_code(policy_source: str) -> None:
    """Answer one Claude Code hook event (PreToolUse, PostToolUse, PostToolUseFailure,
    UserPromptSubmit) read as JSON from stdin.

    Loop state is kept per session under the user's state folder.  The exit
    status is always 0: a malformed event or a broken policy is reported on
    stderr and the agent goes on unguarded.
    """
    text = sys.stdin.buffer.read().decode("utf-8", "replace")
    try:
        event = parse_event(text)
    except HookEventError as err:
        click.echo(f"{_PREFIX}: malformed event, no decision: {err}", err=True)
        return
    try:
        policy = load_policy(policy_source)
    except (PolicyError, OSError) as err:
        message = f"{_PREFIX}: policy {policy_source} cannot be used, the call is not guarded:\n{err}"
        click.echo(message, err=True)
        click.echo(json.dumps({"systemMessage": message}))
        return
    try:
        guard = Guard(policy, read_file=file_reader(event.cwd), store=FileStore(), workspace=event.cwd)
        reply = answer(guard, event)
    except Exception as err:  # the agent is never broken by the guard
        click.echo(f"{_PREFIX}: internal error, no decision: {type(err).__name__}: {err}", err=True)
        return
    if reply is not None:
        click.echo(json.dumps(reply, ensure_ascii=False))

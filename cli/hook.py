"""``policyctl hook``: run policyctl as an agent harness's hook."""

from __future__ import annotations

import sys

import click

from cli.hook_client import DEFAULT_POLICY, run


@click.group()
def hook() -> None:
    """Run policyctl as an agent harness's hook."""


@hook.command("claude-code")
@click.option("--policy", "policy_source", default=DEFAULT_POLICY, show_default=True,
              help="A .policy file or builtin:NAME.")
@click.option("--no-resident", is_flag=True,
              help="Answer in this process, without the resident process (also: POLICYCTL_HOOK_RESIDENT=0).")
def claude_code(policy_source: str, no_resident: bool) -> None:
    """Answer one Claude Code hook event read as JSON from stdin (any event: PreToolUse,
    PostToolUse, PostToolUseFailure, UserPromptSubmit, SessionEnd and the rest).

    The event is forwarded to the user's resident process, started on first use
    and stopped when idle; without one it is answered here, with the compiled
    policy from the user's cache.  Loop state is kept per session under the
    user's state folder.  The exit status is always 0: a malformed event or a
    broken policy is reported on stderr and the agent goes on unguarded.
    """
    status = run(["--policy", policy_source, *(["--no-resident"] if no_resident else [])])
    sys.exit(status or 0)

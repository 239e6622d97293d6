"""``policyctl install claude-code``: put the hook into Claude Code's ``settings.json``.

The hook entries are merged into the file: every other setting and every
other hook is kept as it is, running it twice changes nothing the second
time, the previous file is kept as ``settings.json.bak`` whenever it
changes, and ``--uninstall`` removes policyctl's entries only.  An entry is
policyctl's when its command runs ``hook claude-code`` of a ``policyctl``
command or of policyctl's ``cli/hook_client.py``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import click

TOOL_MATCHER = "Write|Edit|MultiEdit|NotebookEdit|Bash|Read"
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
SESSION_EVENTS = ("UserPromptSubmit", "SessionEnd")
"""Events without a matcher: a new prompt starts a new loop budget; an ended session is forgotten."""


@click.group()
def install() -> None:
    """Install policyctl into an agent harness."""


@install.command("claude-code")
@click.option("--user", "scope", flag_value="user", help="~/.claude/settings.json (every project).")
@click.option("--project", "scope", flag_value="project", default=True,
              help=".claude/settings.json of the current folder (the default).")
@click.option("--policy", "policy_source", default=None, help="A .policy file or builtin:NAME for the hook.")
@click.option("--command", "command", default=None,
              help="How Claude Code runs policyctl (default: this interpreter with `-S -P` and the "
                   "hook client's file; `policyctl` for --project when it is on PATH).")
@click.option("--uninstall", is_flag=True, help="Remove policyctl's hook entries (and nothing else).")
def claude_code(scope: str, policy_source: str | None, command: str | None, uninstall: bool) -> None:
    """Merge the `policyctl hook claude-code` entries into Claude Code's settings.json."""
    path = settings_path(scope)
    try:
        settings = read_settings(path)
    except ValueError as err:
        raise click.ClickException(f"{path}: {err}; nothing was changed") from None
    remove_hooks(settings)
    if not uninstall:
        add_hooks(settings, hook_command(command, policy_source, scope))
    written = write_settings(path, settings)
    action = "removed from" if uninstall else "installed in"
    if written:
        click.echo(f"policyctl hook {action} {path}" + (f" (previous file: {backup_path(path)})"
                                                          if backup_path(path).exists() else ""))
    else:
        click.echo(f"{path} already {'has no policyctl hook' if uninstall else 'has this hook'}; unchanged")


def settings_path(scope: str) -> Path:
    """``~/.claude/settings.json`` (or ``$CLAUDE_CONFIG_DIR/settings.json``) for ``user``,
    ``.claude/settings.json`` under the current folder for ``project``."""
    if scope == "user":
        base = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(base) if base else Path.home() / ".claude") / "settings.json"
    return Path.cwd() / ".claude" / "settings.json"


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + ".bak")


def hook_command(command: str | None, policy_source: str | None, scope: str) -> str:
    """The command line of the hook entries: ``policyctl`` in ``project`` settings (a team may
    commit them) when it is on PATH, else :func:`fast_command`."""
    if command is None:
        command = "policyctl" if scope == "project" and shutil.which("policyctl") else fast_command()
    line = f"{command} hook claude-code"
    if policy_source:
        line += f" --policy {_quoted(_policy_reference(policy_source, scope))}"
    return line


def fast_command() -> str:
    """This interpreter running the hook client's file with ``-S -P``: no site initialisation and
    no console-script wrapper before an event reaches the resident process (the client adds the
    site directories itself when it answers by itself), and no script folder on ``sys.path``."""
    from cli import hook_client

    return shlex.join([sys.executable, "-S", "-P", str(Path(hook_client.__file__).resolve())])


def _policy_reference(source: str, scope: str) -> str:
    """``builtin:NAME`` as it is; a file absolute for ``user``, and for ``project`` relative to
    ``$CLAUDE_PROJECT_DIR`` when it is inside the project (so the committed file works anywhere)."""
    if source.startswith(("builtin:", "$")):
        return source
    path = Path(source).resolve()
    if scope == "project":
        try:
            return f"$CLAUDE_PROJECT_DIR/{path.relative_to(Path.cwd().resolve()).as_posix()}"
        except ValueError:
            pass
    return str(path)


def read_settings(path: Path) -> dict[str, Any]:
    """The settings as a JSON object ({} for a missing or empty file); ValueError when it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        settings = json.loads(text)
    except ValueError as err:
        raise ValueError(f"not valid JSON ({err})") from None
    if not isinstance(settings, dict):
        raise ValueError("not a JSON object")
    hooks = settings.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise ValueError("`hooks` is not a JSON object")
    return settings


def is_policyctl_command(command: Any) -> bool:
    """Whether a hook command is one this command installed."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for index, word in enumerate(words[:-2]):
        ours = Path(word).name == "policyctl" or Path(word).parts[-2:] == ("cli", "hook_client.py")
        if ours and words[index + 1 : index + 3] == ["hook", "claude-code"]:
            return True
    return False


def remove_hooks(settings: dict[str, Any]) -> bool:
    """Remove policyctl's hook entries; groups and events left empty by that go too."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return False
    changed = False
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept_groups.append(group)
                continue
            kept = [h for h in handlers
                    if not (isinstance(h, dict) and is_policyctl_command(h.get("command")))]
            if len(kept) != len(handlers):
                changed = True
                if not kept:
                    continue
                group = {**group, "hooks": kept}
            kept_groups.append(group)
        if kept_groups != groups:
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if changed and not hooks:
        del settings["hooks"]
    return changed


def add_hooks(settings: dict[str, Any], command: str) -> None:
    """Append policyctl's entries: the tool events for Claude Code's file and shell tools, and
    the session events."""
    hooks = settings.setdefault("hooks", {})
    handler = {"type": "command", "command": command}
    for event in TOOL_EVENTS:
        hooks.setdefault(event, []).append({"matcher": TOOL_MATCHER, "hooks": [dict(handler)]})
    for event in SESSION_EVENTS:
        hooks.setdefault(event, []).append({"hooks": [dict(handler)]})


def write_settings(path: Path, settings: dict[str, Any]) -> bool:
    """Write the settings (atomically, the old file kept as ``.bak``); False when nothing changes."""
    text = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = None
    if old is None and not settings:
        return False
    if old is not None and old.strip() and json.loads(old) == settings:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    if old is not None:
        shutil.copy2(path, backup_path(path))
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        if old is not None:
            shutil.copymode(path, temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return True


def _quoted(value: str) -> str:
    """Shell-quoted, except a leading ``$CLAUDE_PROJECT_DIR``-style variable, which the shell expands."""
    if value.startswith("$"):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return shlex.quote(value)

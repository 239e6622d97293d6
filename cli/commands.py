"""The ``policyctl`` command group (click).

Each subcommand lives in its own module, ``cli/<name>.py``, and is registered
in :data:`COMMANDS`; a module is imported only when its command runs (or for
``--help``), so ``policyctl lint`` does not pay for the rest.
"""

from __future__ import annotations

import importlib

import click

COMMANDS: dict[str, str] = {
    "fmt": "cli.fmt:fmt",
    "hook": "cli.hook:hook",
    "install": "cli.install:install",
    "lint": "cli.lint:lint",
    "replay": "cli.replay:replay",
    "test": "cli.test:policy_tests",
}
"""Subcommand name → ``module:attribute`` of its click command."""


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attribute = target.split(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command), target
        return command


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib import metadata  # slow to import (~0.1 s): only when asked

    try:
        version = metadata.version("policyctl")
    except metadata.PackageNotFoundError:
        version = "(not installed: running from a checkout)"
    click.echo(f"policyctl {version}")
    ctx.exit()


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
@click.pass_context
def policyctl(ctx: click.Context) -> None:
    """Policy-as-code guard for the tool calls of LLM coding agents."""
    if ctx.invoked_subcommand != "hook":
        from cli.log import show_library_warnings

        show_library_warnings()

"""Compile the policies a command runs, or print their diagnostics and exit 2."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from cli.terminal import color_enabled
from policy.language.loader import check_policy
from policy.model.compiled import CompiledPolicy
from policy.model.diagnostics import Diagnostic, Severity
from policy.reporters.text import render_diagnostics

EXIT_USAGE = 2

allow_path_option = click.option(
    "--allow-path", "allow_paths", multiple=True, metavar="DIR",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Let `extends` and `hint … file` name files inside DIR too (repeatable); "
         "by default only files in the folder tree of the policy that names them.")
"""``--allow-path DIR`` on every command that reads policies."""


def compile_or_exit(sources: list[str], command: str, skipped: str,
                    allow_paths: Sequence[Path] = ()) -> list[CompiledPolicy]:
    """Every source compiled; if any has errors, print them with carets, say what was
    ``skipped`` ("no test was run") and exit 2."""
    policies: list[CompiledPolicy] = []
    errors: list[Diagnostic] = []
    texts: dict[str, str] = {}
    for source in sources:
        result = check_policy(source, allow_paths=allow_paths)
        errors.extend(d for d in result.diagnostics if d.severity is Severity.ERROR)
        texts.update(result.texts)
        if result.policy is not None:
            policies.append(result.policy)
    if errors:
        color = color_enabled(err=True)
        for text in render_diagnostics(dict.fromkeys(errors), texts.get, color=color):
            click.echo(text + "\n", err=True, color=color)
        click.echo(f"policyctl {command}: {len(errors)} error(s) in the policies; {skipped}", err=True)
        click.get_current_context().exit(EXIT_USAGE)
    return policies

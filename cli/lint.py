"""``policyctl lint``: check policy files and report every problem, in the format a reader needs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import click

from cli.paths import policy_sources
from cli.policies import allow_path_option
from cli.terminal import color_enabled
from policy.language.loader import check_policy
from policy.model.diagnostics import Diagnostic
from policy.reporters import LintReport
from policy.reporters.formats import formats_for, formats_help, render_lint


@click.command()
@click.argument("paths", nargs=-1, metavar="[PATHS]...")
@click.option("--format", "output_format", type=click.Choice(formats_for("lint")), default="text",
              show_default=True, help=formats_help("lint"))
@click.option("--strict", is_flag=True, help="Fail (exit 1) on warnings too.")
@allow_path_option
def lint(paths: tuple[str, ...], output_format: str, strict: bool, allow_paths: tuple[Path, ...]) -> None:
    """Check policy files: syntax, settings, patterns, hint templates, extends.

    PATHS are .policy files, folders (searched recursively for *.policy;
    hidden folders such as .git and .venv are skipped) and builtin:NAME for
    a shipped policy; `builtin:` alone checks every shipped policy.  Without
    PATHS, the current folder is checked.

    Exit status: 0 when there are no errors (warnings are allowed unless
    --strict), 1 when there are errors (or warnings with --strict), 2 on a
    usage error such as a missing path or an unknown built-in policy.
    """
    sources = policy_sources(paths or (".",))
    report = lint_sources(sources, allow_paths)
    color = output_format == "text" and color_enabled()
    click.echo(render_lint(output_format, report, color=color), nl=False, color=color)
    failed = report.errors > 0 or (strict and report.warnings > 0)
    click.get_current_context().exit(1 if failed else 0)


def lint_sources(sources: Iterable[str], allow_paths: Sequence[Path] = ()) -> LintReport:
    """Check each source (a path or ``builtin:NAME``) and collect everything found."""
    checked = list(sources)
    diagnostics: list[Diagnostic] = []
    texts: dict[str, str] = {}
    for source in checked:
        result = check_policy(source, allow_paths=allow_paths)
        diagnostics.extend(result.diagnostics)
        texts.update(result.texts)
    return LintReport.build(diagnostics, len(checked), texts)


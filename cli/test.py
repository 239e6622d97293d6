"""``policyctl test``: run the ``test`` blocks of policies and report like a test runner."""

from __future__ import annotations

from pathlib import Path

import click

from cli.paths import policy_sources
from cli.policies import allow_path_option, compile_or_exit
from cli.terminal import color_enabled
from policy.reporters.formats import formats_for, formats_help, render_tests
from policy.testing.runner import PolicyTestResult, run_tests

EXIT_FAILED = 1


@click.command("test")
@click.argument("paths", nargs=-1, metavar="[PATHS]...")
@click.option("--format", "output_format", type=click.Choice(formats_for("test")),
              default="text", show_default=True, help=formats_help("test"))
@click.option("-k", "pattern", metavar="PATTERN",
              help="Run only the tests whose name contains PATTERN (case-insensitive).")
@allow_path_option
def policy_tests(paths: tuple[str, ...], output_format: str, pattern: str | None,
                 allow_paths: tuple[Path, ...]) -> None:
    """Run the `test` blocks of the policies in PATHS.

    PATHS are .policy files, folders (searched recursively for *.policy;
    hidden folders are skipped) and builtin:NAME (`builtin:` alone: every
    shipped policy).  Without PATHS, the current folder.

    One line per test; a failure shows the step, expected versus actual and
    the rendered hint.  The last line is `N passed, N failed`.  Exit 1 when a
    test fails, 2 on a usage error or a policy with errors (its diagnostics
    are printed).
    """
    policies = compile_or_exit(policy_sources(paths or (".",)), "test", "no test was run", allow_paths)
    results: list[PolicyTestResult] = []
    for policy in policies:
        selected = [t for t in policy.tests if pattern is None or pattern.lower() in t.name.lower()]
        results.extend(run_tests(policy, selected))
    if pattern is not None and not results:
        raise click.UsageError(f"no test name contains {pattern!r}")
    color = output_format == "text" and color_enabled()
    click.echo(render_tests(output_format, results, color=color), nl=False, color=color)
    click.get_current_context().exit(EXIT_FAILED if any(not r.passed for r in results) else 0)

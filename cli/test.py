"""``policyctl test``: run the ``test`` blocks of policies and report like a test runner."""

from __future__ import annotations

import logging

import click

from cli.paths import policy_sources
from cli.terminal import color_enabled
from policy.compiled import CompiledPolicy
from policy.diagnostics import Diagnostic, Severity
from policy.loader import check_policy, source_text
from policy.reporters.text import render_diagnostic
from policy.testing.report import render_github, render_json, render_junit, render_text
from policy.testing.runner import PolicyTestResult, run_tests

EXIT_FAILED = 1
EXIT_USAGE = 2

_RENDERERS = {"json": render_json, "junit": render_junit, "github": render_github}


@click.command("test")
@click.argument("paths", nargs=-1, metavar="[PATHS]...")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "junit", "github"]),
              default="text", show_default=True,
              help="text for people, json, junit (XML for CI test reports), github (annotations).")
@click.option("-k", "pattern", metavar="PATTERN",
              help="Run only the tests whose name contains PATTERN (case-insensitive).")
def policy_tests(paths: tuple[str, ...], output_format: str, pattern: str | None) -> None:
    """Run the `test` blocks of the policies in PATHS.

    PATHS are .policy files, folders (searched recursively for *.policy;
    hidden folders are skipped) and builtin:NAME (`builtin:` alone: every
    shipped policy).  Without PATHS, the current folder.

    One line per test; a failure shows the step, expected versus actual and
    the rendered hint.  The last line is `N passed, N failed`.  Exit 1 when a
    test fails, 2 on a usage error or a policy with errors (its diagnostics
    are printed).
    """
    _quiet_engine_logs()
    policies = _load_all(policy_sources(paths or (".",)))
    results: list[PolicyTestResult] = []
    for policy in policies:
        selected = [t for t in policy.tests if pattern is None or pattern.lower() in t.name.lower()]
        results.extend(run_tests(policy, selected))
    if pattern is not None and not results:
        raise click.UsageError(f"no test name contains {pattern!r}")
    if output_format == "text":
        color = color_enabled()
        click.echo(render_text(results, color=color), nl=False, color=color)
    else:
        click.echo(_RENDERERS[output_format](results), nl=False)
    click.get_current_context().exit(EXIT_FAILED if any(not r.passed for r in results) else 0)


def _load_all(sources: list[str]) -> list[CompiledPolicy]:
    """Compile every policy; if any has errors, print their diagnostics and exit 2."""
    policies: list[CompiledPolicy] = []
    errors: list[Diagnostic] = []
    for source in sources:
        policy, diagnostics = check_policy(source)
        errors.extend(d for d in diagnostics if d.severity is Severity.ERROR)
        if policy is not None:
            policies.append(policy)
    if errors:
        color = color_enabled(err=True)
        for diagnostic in dict.fromkeys(errors):
            text = render_diagnostic(diagnostic, source_text(diagnostic.span.file), color=color)
            click.echo(text + "\n", err=True, color=color)
        click.echo(f"policyctl test: {len(errors)} error(s) in the policies; no test was run", err=True)
        click.get_current_context().exit(EXIT_USAGE)
    return policies


def _quiet_engine_logs() -> None:
    """The guard logs each loop warning; in a test run those are expected results, not news.

    (A hint that fails to render is reported as a failed test instead.)
    """
    logger = logging.getLogger("policy")
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())

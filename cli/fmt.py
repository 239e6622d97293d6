"""``policyctl fmt``: rewrite policy files in the canonical layout (see ``policy.language.formatter``)."""

from __future__ import annotations

import difflib
import os
import sys
import tempfile
from dataclasses import dataclass
from enum import Enum

import click

from cli.paths import policy_sources
from cli.terminal import color_enabled
from policy.language.formatter import FormatError, format_policy
from policy.language.parser import parse_bytes
from policy.reporters.text import render_diagnostic

STDIN = "-"
BOM = b"\xef\xbb\xbf"


class Outcome(Enum):
    UNCHANGED = "unchanged"
    CHANGED = "changed"
    FAILED = "failed"


@dataclass(frozen=True)
class _Formatted:
    outcome: Outcome
    original: str = ""
    formatted: str = ""
    data: bytes = b""


@click.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATHS...")
@click.option("--check", is_flag=True,
              help="Change nothing; list the files that would change (exit 1 if any).")
@click.option("--diff", "show_diff", is_flag=True,
              help="Change nothing; print a unified diff of the changes.")
def fmt(paths: tuple[str, ...], check: bool, show_diff: bool) -> None:
    """Rewrite policy files in the canonical layout.

    \b
    - one statement per line, two-space indents;
    - a block of one short statement written on one line stays on one line;
    - a blank line between declarations, except between one-line
      declarations of the same kind (normalize, hint, tool), which keep the
      grouping they were written with;
    - comments stay where they were; strings, patterns and triple-quoted
      text are kept exactly; JSON literals are normalised.

    PATHS are .policy files and folders (searched recursively for *.policy;
    hidden folders are skipped); `-` formats standard input to standard
    output.  A file with syntax errors, or with a comment inside a JSON
    literal, is not changed: the reason is shown.

    Exit status: 0 when done, 1 when a file could not be formatted or (with
    --check) would change, 2 on a usage error.
    """
    if STDIN in paths:
        if len(paths) > 1:
            raise click.BadParameter("`-` (standard input) cannot be combined with files", param_hint="PATHS")
        failed_or_changed = _format_stdin(check, show_diff)
        click.get_current_context().exit(1 if failed_or_changed else 0)
    counts = dict.fromkeys(Outcome, 0)
    for path in policy_sources(paths, allow_builtin=False):
        result = _format_file(path)
        counts[result.outcome] += 1
        if result.outcome is not Outcome.CHANGED:
            continue
        if show_diff:
            click.echo(_diff(path, result.original, result.formatted), nl=False)
        if check:
            click.echo(f"would reformat {path}", err=True)
        elif not show_diff and not _write(path, result.data):
            counts[Outcome.CHANGED] -= 1
            counts[Outcome.FAILED] += 1
    click.echo(_summary(counts, dry_run=check or show_diff), err=True)
    failed = counts[Outcome.FAILED] > 0 or (check and counts[Outcome.CHANGED] > 0)
    click.get_current_context().exit(1 if failed else 0)


def _format_file(path: str) -> _Formatted:
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as err:
        click.echo(f"{path}: cannot be read: {err.strerror or err}", err=True)
        return _Formatted(Outcome.FAILED)
    return _format_bytes(data, path)


def _format_bytes(data: bytes, path: str) -> _Formatted:
    tree, diagnostics = parse_bytes(data, path)
    if tree is None:
        color = color_enabled(err=True)
        text = data.decode("utf-8", "replace")
        for diagnostic in diagnostics:
            click.echo(render_diagnostic(diagnostic, text, color=color) + "\n", err=True, color=color)
        click.echo(f"{path}: not formatted: it has syntax errors", err=True)
        return _Formatted(Outcome.FAILED)
    try:
        formatted = format_policy(tree)
    except FormatError as err:
        click.echo(str(err), err=True)
        return _Formatted(Outcome.FAILED)
    new_data = (BOM if data.startswith(BOM) else b"") + formatted.encode("utf-8")
    outcome = Outcome.UNCHANGED if new_data == data else Outcome.CHANGED
    return _Formatted(outcome, tree.source, formatted, new_data)


def _format_stdin(check: bool, show_diff: bool) -> bool:
    """Format standard input; True when it could not be formatted or (with --check) would change."""
    name = "<stdin>"
    result = _format_bytes(sys.stdin.buffer.read(), name)
    if result.outcome is Outcome.FAILED:
        return True
    if show_diff:
        click.echo(_diff(name, result.original, result.formatted), nl=False)
    elif not check:
        sys.stdout.buffer.write(result.data)
    return check and result.outcome is Outcome.CHANGED


def _diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=path, tofile=path)
    no_newline = "\n\\ No newline at end of file\n"
    return "".join(line if line.endswith("\n") else line + no_newline for line in lines)


def _write(path: str, data: bytes) -> bool:
    """Replace the file atomically, keeping its permissions; False (and a message) when that fails."""
    temporary = None
    try:
        mode = os.stat(path).st_mode & 0o7777
        folder = os.path.dirname(os.path.abspath(path))
        with tempfile.NamedTemporaryFile("wb", dir=folder, prefix=".policyctl-fmt-", delete=False) as file:
            temporary = file.name
            file.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as err:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        click.echo(f"{path}: cannot be written: {err.strerror or err}", err=True)
        return False
    click.echo(f"reformatted {path}", err=True)
    return True


def _summary(counts: dict[Outcome, int], *, dry_run: bool) -> str:
    def files(n: int) -> str:
        return f"{n} file{'' if n == 1 else 's'}"

    changed = counts[Outcome.CHANGED]
    parts = []
    if changed:
        parts.append(f"{files(changed)} {'would be reformatted' if dry_run else 'reformatted'}")
    if counts[Outcome.UNCHANGED] or not parts:
        parts.append(f"{files(counts[Outcome.UNCHANGED])} left unchanged")
    if counts[Outcome.FAILED]:
        parts.append(f"{files(counts[Outcome.FAILED])} could not be formatted")
    return ", ".join(parts)


"""``policyctl replay``: run recorded sessions through a policy and show each decision."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cli.paths import policy_sources
from cli.policies import allow_path_option, compile_or_exit
from policy.model.compiled import CompiledPolicy
from policy.replay.replayer import ReplayResult, replay_file
from policy.reporters.formats import formats_for, formats_help, render_sessions, render_trace


def _trace_files(paths: tuple[Path, ...]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(path.rglob("*.jsonl")) if path.is_dir() else [path])
    return found


def _replay_one(policy: CompiledPolicy, path: Path, output_format: str) -> None:
    report = replay_file(policy, path)
    for error in report.errors:
        click.echo(f"{path}:{error.line}: trace error: {error.message}", err=True)
    color = output_format == "text" and sys.stdout.isatty()
    for line in render_trace(output_format, policy, path, report, color=color):
        click.echo(line)


def _replay_many(policy: CompiledPolicy, files: list[Path], output_format: str) -> None:
    reports: list[ReplayResult] = []
    show_bar = sys.stderr.isatty() and output_format == "text"
    with click.progressbar(files, label="replaying", file=sys.stderr if show_bar else None,
                           hidden=not show_bar) as bar:
        for path in bar:
            reports.append(replay_file(policy, path))
    color = output_format == "text" and sys.stdout.isatty()
    for line in render_sessions(output_format, reports, color=color):
        click.echo(line)


@click.command()
@click.argument("traces", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--policy", "policy_source", default="builtin:default", show_default=True,
              help="A .policy file or builtin:NAME.")
@click.option("--format", "output_format", type=click.Choice(formats_for("replay")), default="text",
              show_default=True, help=formats_help("replay"))
@allow_path_option
def replay(traces: tuple[Path, ...], policy_source: str, output_format: str,
           allow_paths: tuple[Path, ...]) -> None:
    """Replay TRACES (.jsonl files, or folders of them) through a policy.

    One trace: every decision that is not `allow`, then a summary.  A folder:
    one summary row per session.  Exit 0 unless a trace could not be read at all.
    """
    sources = policy_sources([policy_source])
    if len(sources) != 1:
        raise click.UsageError(f"--policy names one policy; {policy_source} holds {len(sources)}")
    (policy,) = compile_or_exit(sources, "replay", "no trace was replayed", allow_paths)
    files = _trace_files(traces)
    if not files:
        raise click.UsageError("no .jsonl traces found")
    if len(files) == 1 and not traces[0].is_dir():
        _replay_one(policy, files[0], output_format)
    else:
        _replay_many(policy, files, output_format)

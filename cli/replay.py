"""``policyctl replay``: run recorded sessions through a policy and show each decision."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import click

from cli.paths import policy_sources
from cli.policies import allow_path_option, compile_or_exit
from policy.model.compiled import CompiledPolicy
from policy.model.decision import ACTIONS
from policy.replay.replayer import ReplayResult, replay_file

_COLOURS = {"hint": "cyan", "warn": "yellow", "block": "red", "stop": "magenta"}


def _trace_files(paths: tuple[Path, ...]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(path.rglob("*.jsonl")) if path.is_dir() else [path])
    return found


def _replay_one(policy: CompiledPolicy, path: Path, output_format: str) -> None:
    report = replay_file(policy, path)
    for error in report.errors:
        click.echo(f"{path}:{error.line}: trace error: {error.message}", err=True)
    for line in FORMATS[output_format].trace(policy, path, report):
        click.echo(line)


def _trace_json(_policy: CompiledPolicy, _path: Path, report: ReplayResult) -> Iterator[str]:
    for record in report.records:
        yield json.dumps(record.to_json(), ensure_ascii=False)
    yield json.dumps({"summary": report.summary()})


def _trace_text(policy: CompiledPolicy, path: Path, report: ReplayResult) -> Iterator[str]:
    colour = sys.stdout.isatty()
    yield f"{path} · policy {policy.name}"
    for record in report.records:
        decision = record.decision
        action = click.style(f"{decision.action.upper():5}", fg=_COLOURS.get(decision.action), bold=True) \
            if colour else f"{decision.action.upper():5}"
        first_line = (decision.hint or "").strip().splitlines()[0] if decision.hint else ""
        rule = str(decision.rule) if decision.rule else ""
        yield (f"  line {record.event:<5} {record.call.id:<8} {record.call.name:<12} {action} "
               f"{rule:<28} {first_line}")
    yield _summary_line(report)


def _summary_line(report: ReplayResult) -> str:
    counts = " · ".join(f"{action} {report.decisions[action]}" for action in ACTIONS)
    plural = "s" if report.skipped != 1 else ""
    skipped = f" · {report.skipped} event{plural} after the stop not evaluated" if report.skipped else ""
    return f"{report.events} events · {counts}{skipped}"


def _replay_many(policy: CompiledPolicy, files: list[Path], output_format: str) -> None:
    reports: list[ReplayResult] = []
    show_bar = sys.stderr.isatty() and output_format == "text"
    with click.progressbar(files, label="replaying", file=sys.stderr if show_bar else None,
                           hidden=not show_bar) as bar:
        for path in bar:
            reports.append(replay_file(policy, path))
    for line in FORMATS[output_format].sessions(reports):
        click.echo(line)


def _sessions_json(reports: list[ReplayResult]) -> Iterator[str]:
    for report in reports:
        yield json.dumps({"session": report.name, "summary": report.summary(), "errors": len(report.errors)})


def _sessions_text(reports: list[ReplayResult]) -> Iterator[str]:
    width = max(len(r.name) for r in reports)
    yield f"{'session':<{width}}  events  hint  warn  block  stop"
    for r in reports:
        yield (f"{r.name:<{width}}  {r.events:>6}  {r.decisions['hint']:>4}  {r.decisions['warn']:>4}"
               f"  {r.decisions['block']:>5}  {r.decisions['stop']:>4}")
    total = len(reports)
    yield (f"{total} sessions · warned {sum(r.warned for r in reports)} · "
           f"blocked {sum(r.blocked for r in reports)} · stopped {sum(r.stopped for r in reports)}")


class _Format(NamedTuple):
    trace: Callable[[CompiledPolicy, Path, ReplayResult], Iterator[str]]
    """One trace: a line per decision that is not ``allow``, then the summary."""
    sessions: Callable[[list[ReplayResult]], Iterator[str]]
    """Several traces: a line per session."""


FORMATS: dict[str, _Format] = {
    "text": _Format(_trace_text, _sessions_text),
    "json": _Format(_trace_json, _sessions_json),
}
"""Every output format of ``policyctl replay``."""


@click.command()
@click.argument("traces", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--policy", "policy_source", default="builtin:default", show_default=True,
              help="A .policy file or builtin:NAME.")
@click.option("--format", "output_format", type=click.Choice(tuple(FORMATS)), default="text",
              show_default=True)
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

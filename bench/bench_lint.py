"""How fast ``policyctl lint`` is, against baselines measured in the same run.

Whole processes (median of several fresh runs):

* ``python -c pass`` and ``python -c "import lark"``: the floor;
* ``policyctl lint builtin:default`` with the parser cache warm, and once
  with an empty cache folder (the very first run on a machine).

In process (median of several runs) on a generated 2,000-line policy:

* Lark alone parsing the text with the policy grammar;
* parse + check + compile (``policy.language.loader.check_policy`` on the file),
  and its stages: parse to the located AST, read + compose (``extends``),
  compose + check + compile.

Target: parse + check + compile within 3x the Lark parse.  When it is
missed, a cProfile summary shows where the time goes.

    .venv/bin/python bench/bench_lint.py [--runs N] [--lines N] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from policy.language.collector import DiagnosticCollector  # noqa: E402
from policy.language.compiler import compile_policy  # noqa: E402
from policy.language.compose import compose  # noqa: E402
from policy.language.loader import check_policy  # noqa: E402
from policy.language.parser import build_parser_uncached, parse  # noqa: E402

TARGET_RATIO = 3.0


def generate_policy(lines: int) -> str:
    """A valid policy of about ``lines`` lines, mixed like the shipped default policy.

    Per group: a signature with its own multi-line hint, a normalize rule and
    two tests; every third group also a gate.  About one hint per 25 lines
    and one test per 15, as in ``policies/default.policy``.
    """
    parts = [
        'policy "bench" {\n  description "Generated for the lint benchmark."\n  scan_limit 64KB\n}',
        "tool write_file { writes path=path content=content append=append }",
        "tool str_replace { edits path=path old=old_str new=new_str all=replace_all }",
        "tool bash {\n  runs command=command\n  mutates_when /\\b(pip|npm) install\\b/\n}",
        "loop repeat {\n  window 20\n  warn 3\n  stop 5\n  until_progress\n  hint loop_repeat\n}",
        'hint loop_repeat file "loop_repeat.j2"',
        'hint syntax_error file "syntax_error.j2"',
    ]
    i = 0
    while sum(part.count("\n") + 2 for part in parts) < lines:
        parts += [
            f"signature ERROR_{i} {{\n  on error\n"
            f"  match /error E{i}: (?P<thing>[\\w.]+) failed(?: at (?P<where>[^\\n]+))?/\n"
            f"  key thing\n  hint error_{i}\n}}",
            f'hint error_{i} """\n`{{{{ thing }}}}` failed{{% if where %}} at {{{{ where }}}}{{% endif %}}'
            f" ({{{{ signature }}}}).\nRead the error above before retrying ({i}).\n\"\"\"",
            f'normalize /\\bid-{i}-[0-9a-f]+\\b/ "<id{i}>"',
            f'test "signature {i} is diagnosed" {{\n  call bash {{ "command": "run {i}" }}\n'
            f'  result error "error E{i}: pkg.mod failed at step 3"\n'
            f'  expect hint signature ERROR_{i}\n  expect hint contains "pkg.mod"\n}}',
            f'test "listing {i} is allowed" {{\n  call bash {{ "command": "ls {i}" }}\n'
            f'  result ok "fine"\n  expect allow\n}}',
        ]
        if i % 3 == 0:
            parts.append(f'gate g{i} {{\n  files "*.ext{i}"\n  check json\n  partial allow\n'
                         "  hint syntax_error\n}")
        i += 1
    return "\n\n".join(parts) + "\n"


def median_seconds(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired_medians(first: Callable[[], object], second: Callable[[], object],
                   runs: int) -> tuple[float, float]:
    """Medians of two actions timed alternately, so a change in machine load affects both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for action, spent in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            action()
            spent.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def process(*args: str, env: dict[str, str] | None = None) -> Callable[[], None]:
    def run() -> None:
        subprocess.run([sys.executable, *args], check=True, cwd=REPO, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per figure (the median is shown)")
    parser.add_argument("--lines", type=int, default=2000, help="size of the generated policy")
    parser.add_argument("--profile", action="store_true", help="profile parse+check+compile even on target")
    options = parser.parse_args()
    runs = options.runs

    python = sys.version.split()[0]
    print(f"policyctl lint benchmark: median of {runs} runs, Python {python}, {os.cpu_count()} CPUs")
    print("\nwhole process")
    baseline = median_seconds(process("-c", "pass"), runs)
    lark_import = median_seconds(process("-c", "import lark"), runs)
    lint = median_seconds(process("-m", "cli.main", "lint", "builtin:default"), runs)
    with tempfile.TemporaryDirectory() as empty_cache:
        first = median_seconds(process("-m", "cli.main", "lint", "builtin:default",
                                       env={**os.environ, "XDG_CACHE_HOME": empty_cache}), 1)
    print(f"  python -c pass                              {baseline * 1000:8.1f} ms")
    print(f"  python -c 'import lark'                     {lark_import * 1000:8.1f} ms")
    print(f"  policyctl lint builtin:default (cold)       {lint * 1000:8.1f} ms"
          f"   {lint / baseline:5.1f}x python, +{(lint - baseline) * 1000:.0f} ms")
    print(f"  ... first run, empty parser cache (1 run)   {first * 1000:8.1f} ms")

    text = generate_policy(options.lines)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.policy"
        path.write_text(text, encoding="utf-8")
        result = check_policy(path)  # warm: grammar, shipped templates
        problems = result.diagnostics
        if result.policy is None or problems:
            sys.exit(f"the generated policy should be clean; got: {problems[:3]}")
        lark = build_parser_uncached()
        lark.parse(text)
        parse_only, pipeline = paired_medians(lambda: lark.parse(text), lambda: check_policy(path), runs)
        ratio = pipeline / parse_only
        print(f"\nin process, generated policy: {text.count(chr(10))} lines, {len(text) / 1024:.0f} KiB")
        print(f"  Lark parse alone                            {parse_only * 1000:8.1f} ms")
        print(f"  parse + check + compile (check_policy)      {pipeline * 1000:8.1f} ms")
        verdict = "on target" if ratio <= TARGET_RATIO else "MISSES the target"
        print(f"  ratio                                       {ratio:8.2f}x"
              f"   (target <= {TARGET_RATIO:.0f}x: {verdict})")
        stages = {
            "parse to the located AST": lambda: parse(text, str(path)),
            "read + compose (extends)": lambda: compose(str(path), DiagnosticCollector()),
            "compose + check + compile": lambda: compile_policy(compose(str(path), DiagnosticCollector()),
                                                                DiagnosticCollector()),
        }
        for label, stage in stages.items():
            spent = median_seconds(stage, runs)
            print(f"    {label:<40}  {spent * 1000:8.1f} ms   {spent / parse_only:5.2f}x")
        if ratio > TARGET_RATIO or options.profile:
            print("\nwhere parse + check + compile spends its time (cProfile, cumulative):")
            profile = cProfile.Profile()
            profile.runcall(check_policy, path)
            out = io.StringIO()
            pstats.Stats(profile, stream=out).strip_dirs().sort_stats("cumulative").print_stats(25)
            print(out.getvalue())


if __name__ == "__main__":
    main()

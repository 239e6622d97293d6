"""Checking a 5 MB policy: time and peak memory, against Lark's parse of the same text.

The policy is generated: signatures, hints and gates with distinct names, as
a large team file would hold, until the text reaches SIZE bytes.  Each run
checks it in a fresh process (``check_policy`` first, as ``policyctl lint``
would, then the compiled policy is dropped), REPEATS times; the baseline is
Lark's parse alone of the same text, after the check in the same process, so
the ratio says how much the checker adds to parsing.  Peak memory is the
process's maximum resident size (the check's, measured before Lark's parse).
Each run also times the whole ``policyctl lint`` command on the file (CPU time
of the process: start-up, check, report).

    .venv/bin/python bench/bench_lint_large.py
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
from pathlib import Path

SIZE = 5 * 2**20
REPEATS = 3

_CHILD = """
import resource, sys, time
from policy.language.loader import check_policy
start = time.process_time(); result = check_policy(sys.argv[1]); check = time.process_time() - start
assert result.ok, result.diagnostics[:3]
del result
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
from policy.language.parser import build_parser_uncached
text = open(sys.argv[1], encoding="utf-8").read()
lark = build_parser_uncached()
start = time.process_time(); lark.parse(text); parse = time.process_time() - start
print(parse, check, peak)
"""


def lint_cpu_seconds(path: Path) -> float:
    """CPU time (user + system) of one ``policyctl lint`` process on ``path``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "cli", "lint", str(path)], capture_output=True, check=True,
                   cwd=Path(__file__).resolve().parent.parent)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def large_policy(size: int) -> str:
    parts = ["tool bash { runs command=command }\n",
             "tool write_file { writes path=path content=content append=append }\n"]
    total, index = sum(map(len, parts)), 0
    while total < size:
        block = (f"signature S{index} {{\n  match /error number {index}: (?P<what>\\w+)/\n"
                 f"  hint h{index}\n}}\n"
                 f'hint h{index} "Error {index}: {{{{ what }}}} failed; try again."\n'
                 f'gate g{index} {{ files "*.x{index}"; check json; partial allow }}\n')
        parts.append(block)
        total += len(block)
        index += 1
    return "".join(parts)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "large.policy"
        path.write_text(large_policy(SIZE), encoding="utf-8")
        rows = []
        lint = []
        for _ in range(REPEATS):
            done = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True,
                                  check=True)
            parse_s, check_s, peak_kb = done.stdout.split()
            rows.append((float(parse_s), float(check_s), int(peak_kb)))
            lint.append(lint_cpu_seconds(path))
    parse = [r[0] for r in rows]
    check = [r[1] for r in rows]
    peak = [r[2] / 1024 for r in rows]
    ratios = [c / p for p, c in zip(parse, check, strict=True)]
    print(f"{SIZE / 2**20:.0f} MB policy, {REPEATS} runs (CPU time)")
    print(f"check_policy {min(check):6.1f}-{max(check):6.1f} s   "
          f"Lark parse alone {min(parse):6.1f}-{max(parse):6.1f} s   "
          f"ratio {min(ratios):.2f}-{max(ratios):.2f}x   peak memory {min(peak):.0f}-{max(peak):.0f} MB")
    print(f"policyctl lint (whole process) {min(lint):6.1f}-{max(lint):6.1f} s")


if __name__ == "__main__":
    main()

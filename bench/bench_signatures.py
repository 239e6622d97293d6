"""Error signatures on a huge output against the same on an output of ``scan_limit`` size.

``diagnose`` reads only the tail of an output (64 KB with the default policy),
so a 10 MB failed output should cost about what a 64 KB one costs.  Both
outputs are realistic logs ending in the same traceback; each is diagnosed
many times, and the median per call is compared in the same run (target:
ratio <= 1.5).  An output no signature matches (every pattern scanned, then
the error text kept for streak detection) is measured the same way.

    .venv/bin/python bench/bench_signatures.py
"""

from __future__ import annotations

import statistics
import time

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.events import ToolCall, ToolResult
from policy.runtime.signatures import diagnose, hint_decision

TARGET = 1.5
REPEATS = 15
LOG_LINE = "2024-05-01 12:00:00,123 INFO worker-3 processed batch 4711 of input/records.csv in 0.42s\n"
MATCHING_END = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/app/main.py", line 3, in <module>\n'
    "    import yaml\n"
    "ModuleNotFoundError: No module named 'yaml'\n"
)
UNMATCHED_END = "worker-3 gave up: the checksum of input/records.csv differs from the manifest\n"


def _output(size: int, end: str) -> str:
    lines = max(size - len(end), 0) // len(LOG_LINE)
    return LOG_LINE * lines + end


def _median_call(policy: CompiledPolicy, call: ToolCall, result: ToolResult, budget: float = 0.4) -> float:
    """Median seconds per ``diagnose`` call over REPEATS batches of about ``budget`` seconds."""
    start = time.perf_counter()
    diagnose(policy, call, result)  # warm the policy's RE2 set and its DFA
    once = max(time.perf_counter() - start, 1e-6)
    number = max(1, int(budget / REPEATS / once))
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(number):
            diagnose(policy, call, result)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def main() -> int:
    policy = load_policy("builtin:default")
    call = ToolCall(id="c1", name="bash", args={"command": "python app/main.py --input input/records.csv"})
    small_size, huge_size = policy.scan_limit, 10 * 1024 * 1024
    print(f"diagnose, builtin:default ({len(policy.signatures)} signatures, scan_limit {small_size} bytes)")
    print(f"{'output':<34}{'64 KB':>12}{'10 MB':>12}{'ratio':>8}")
    worst = 0.0
    cases = (("failed, MODULE_NOT_FOUND at the end", MATCHING_END), ("failed, no signature", UNMATCHED_END))
    for label, end in cases:
        small = ToolResult(content=_output(small_size, end), status="error")
        huge = ToolResult(content=_output(huge_size, end), status="error")
        small_diagnosis, huge_diagnosis = diagnose(policy, call, small), diagnose(policy, call, huge)
        assert small_diagnosis.matches == huge_diagnosis.matches, huge_diagnosis.matches
        assert hint_decision(policy, call, huge, huge_diagnosis).action in ("hint", "allow")
        small_time, huge_time = _median_call(policy, call, small), _median_call(policy, call, huge)
        ratio = huge_time / small_time
        worst = max(worst, ratio)
        print(f"{label:<34}{small_time * 1e6:>10.0f}us{huge_time * 1e6:>10.0f}us{ratio:>8.2f}")
    verdict = "ok" if worst <= TARGET else "OVER TARGET"
    print(f"worst ratio 10 MB / 64 KB: {worst:.2f} (target <= {TARGET}): {verdict}")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())

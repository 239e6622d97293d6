"""Per-event cost of the guard with the built-in policy.

One event = on_turn + on_call + on_result for a bash call with ~100-byte
arguments and a 4 KB failed output (a missing module, a different one each
time, so no loop layer fires: this is the path almost every call takes).
Runs of 20 events, each run its own scope.  Reports p50/p99 in
microseconds, and the ratio to a baseline measured in the same run: the
irreducible work of any guard (serialise the arguments, hash them, scan the
output's tail with one compiled pattern).

    .venv/bin/python bench/bench_guard.py
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import time

from policy.events import Scope, ToolCall, ToolResult
from policy.guard import Guard
from policy.loader import load_policy

ROUNDS = 5000
RUN_LENGTH = 20


def _output(i: int) -> str:
    text = ("x" * 78 + "\n") * 50 + "Traceback (most recent call last):\n  File \"run.py\", line 1\n" \
        f"ModuleNotFoundError: No module named 'module_{i}'\n"
    return text[-4096:]


def _call(i: int) -> ToolCall:
    command = f"cd /workspace/project && python scripts/report_{i}.py --input data/{i}.csv --verbose"
    return ToolCall(id=f"c{i}", name="bash", args={"command": command, "description": "run the report"})


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2] * 1e6, ordered[int(len(ordered) * 0.99)] * 1e6


def bench_guard() -> list[float]:
    guard = Guard(load_policy("builtin:default"), read_file=lambda path: None)
    samples = []
    for i in range(ROUNDS):
        call = _call(i)
        scope = Scope("bench", f"run-{i // RUN_LENGTH}")
        result = ToolResult(content=_output(i), status="error")
        start = time.perf_counter()
        guard.on_turn([call], scope)
        guard.on_call(call, scope)
        guard.on_result(call, result, scope)
        samples.append(time.perf_counter() - start)
    return samples


def bench_baseline() -> list[float]:
    pattern = re.compile(r"No module named '?([\w.]+)'?")
    history: list[str] = []
    samples = []
    for i in range(ROUNDS):
        call = _call(i)
        output = _output(i)
        start = time.perf_counter()
        key = hashlib.sha1(json.dumps(call.args, sort_keys=True).encode()).hexdigest()
        history.append(key)
        del history[:-20]
        history.count(key)
        pattern.search(output)
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    bench_guard()  # warm up
    guard_p50, guard_p99 = _percentiles(bench_guard())
    base_p50, base_p99 = _percentiles(bench_baseline())
    print(f"guard    p50 {guard_p50:7.1f} µs   p99 {guard_p99:7.1f} µs   (target p50 ≤ 30 µs)")
    print(f"baseline p50 {base_p50:7.1f} µs   p99 {base_p99:7.1f} µs")
    print(f"ratio    p50 {guard_p50 / base_p50:5.1f}x   p99 {guard_p99 / base_p99:5.1f}x")
    print(f"median of all guard events: {statistics.median(bench_guard()) * 1e6:.1f} µs")


if __name__ == "__main__":
    main()

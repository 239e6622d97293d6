"""Per-event cost of the guard with the built-in policy.

One event = on_turn + on_call + on_result for a bash call with ~100-byte
arguments and a 4 KB failed output, and the harness reading the decision's
hint.  Two outputs, measured separately:

  hint    a missing module, a different one each time: the signature fires
          and its hint is rendered on every event
  failed  a failure no signature names (the error-text path)

No loop layer fires (every call differs).  Runs of 20 events, each run its
own scope.  Two references run interleaved with the guard in chunks, so all
three meet the same machine load:

  baseline  the bare work of a naive guard: serialise the arguments, hash
            them, count the key in a window, one Python ``re`` search
  floor     the library calls the guard cannot do without, and nothing else:
            the arguments' compact JSON and fingerprint, the RE2 set pass over
            the output's tail (linear-time matching of every signature), the
            winner's RE2 search, the SHA-256 fingerprint of the tail, and
            rendering the signature's Jinja2 hint (hint output)

guard/floor is what the guard's own Python adds; the floor's p50 shows what
an absolute target can be on this machine.

    .venv/bin/python bench/bench_guard.py [--events 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import re
import statistics
import time
from collections.abc import Callable
from functools import partial

from policy.language.loader import load_policy
from policy.model.events import Scope, ToolCall, ToolResult
from policy.model.jsontext import compact
from policy.runtime.guard import Guard
from policy.runtime.output import output_reader
from policy.runtime.signatures import diagnose, hint_variables

RUN_LENGTH = 20
CHUNK = 250
TARGET_US = 30.0
QUANTILES = (0.5, 0.99)

_FILLER = ("x" * 78 + "\n") * 52


def missing_module(i: int) -> str:
    return (_FILLER + 'Traceback (most recent call last):\n  File "run.py", line 1\n'
            f"ModuleNotFoundError: No module named 'module_{i}'\n")[-4096:]


def unnamed_failure(i: int) -> str:
    return (_FILLER + f"report_{i}: the input has 17 columns, the schema 16\n")[-4096:]


def make_call(i: int) -> ToolCall:
    command = f"cd /workspace/project && python scripts/report_{i}.py --input data/{i}.csv --verbose"
    return ToolCall(id=f"c{i}", name="bash", args={"command": command, "description": "run the report"})


Event = tuple[ToolCall, ToolResult, Scope]


def events(count: int, output: Callable[[int], str], tag: str) -> list[Event]:
    scopes = [Scope("bench", f"{tag}-{run}") for run in range(count // RUN_LENGTH + 1)]
    return [(make_call(i), ToolResult(content=output(i), status="error"), scopes[i // RUN_LENGTH])
            for i in range(count)]


def guarded(guard: Guard) -> Callable[[Event], None]:
    def event(item: Event) -> None:
        call, result, scope = item
        guard.on_turn([call], scope)
        guard.on_call(call, scope)
        str(guard.on_result(call, result, scope).hint)

    return event


def baseline() -> Callable[[Event], None]:
    pattern = re.compile(r"No module named '?([\w.]+)'?")
    history: list[str] = []

    def event(item: Event) -> None:
        call, result, _ = item
        key = hashlib.sha1(json.dumps(call.args, sort_keys=True).encode()).hexdigest()
        history.append(key)
        del history[:-20]
        history.count(key)
        pattern.search(result.content)

    return event


def floor(guard: Guard, output: Callable[[int], str]) -> Callable[[Event], None]:
    """The guard's unavoidable library calls for one event (see the module docstring)."""
    policy = guard.policy
    call, result, _ = events(1, output, "floor")[0]
    diagnosis = diagnose(policy, call, result, output_reader(policy).read(result.content))
    rule = diagnosis.signature
    pattern_set = output_reader(policy).pattern_set
    assert pattern_set is not None
    search = None if rule is None else rule.pattern.spans
    hint = None
    if rule is not None and rule.hint is not None:  # variables made once (lazy ones on the first render)
        hint = partial(rule.hint.render, hint_variables(policy, call, result, diagnosis, rule))
    limit = policy.scan_limit

    def event(item: Event) -> None:
        call, result, _ = item
        hashlib.blake2b(compact(call.args).encode(), digest_size=8).digest()
        tail = result.content[-limit:].encode()
        pattern_set.Match(tail)
        hashlib.sha256(tail).digest()
        if search is not None:
            search(tail)
        if hint is not None:
            hint()

    return event


def measure(jobs: dict[str, tuple[Callable[[Event], None], list[Event]]]) -> dict[str, list[float]]:
    """Seconds per event, each implementation in turn for CHUNK events, GC paused while timed."""
    samples: dict[str, list[float]] = {name: [] for name in jobs}
    count = min(len(items) for _, items in jobs.values())
    clock = time.perf_counter
    for start in range(0, count, CHUNK):
        for name, (run, items) in jobs.items():
            gc.collect()
            gc.disable()
            try:
                for item in items[start : start + CHUNK]:
                    began = clock()
                    run(item)
                    samples[name].append(clock() - began)
            finally:
                gc.enable()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    guard = Guard(load_policy("builtin:default"), read_file=lambda path: None)
    print(f"per event, µs (median over {options.rounds} rounds of {options.events} events; "
          f"target p50 ≤ {TARGET_US:g})")
    print(f"{'output':<8} {'guard p50':>10} {'p99':>7} {'floor p50':>10} {'p99':>6} {'baseline p50':>13} "
          f"{'p99':>6} {'guard/floor':>12} {'guard/baseline':>15}")
    outputs = (("hint", missing_module), ("failed", unnamed_failure))
    for label, output in outputs:  # warm up: RE2 builds its DFA lazily, the CPU ramps up
        measure({"guard": (guarded(guard), events(options.events, output, f"warm-{label}"))})
    for label, output in outputs:
        rows = []
        for round_ in range(options.rounds):
            items = events(options.events, output, f"{label}-{round_}")
            samples = measure({"guard": (guarded(guard), items), "floor": (floor(guard, output), items),
                               "baseline": (baseline(), items)})
            rows.append([_percentile(samples[impl], q) for impl in samples for q in QUANTILES])
        guard_p50, guard_p99, floor_p50, floor_p99, base_p50, base_p99 = (
            statistics.median(col) for col in zip(*rows, strict=True)
        )
        print(f"{label:<8} {guard_p50:>10.1f} {guard_p99:>7.1f} {floor_p50:>10.1f} {floor_p99:>6.1f} "
              f"{base_p50:>13.1f} {base_p99:>6.1f} {guard_p50 / floor_p50:>11.1f}x "
              f"{guard_p50 / base_p50:>14.1f}x")


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)] * 1e6


if __name__ == "__main__":
    main()

"""Memory of loop state: bytes per tracked scope at the default windows, and the LRU bound.

    .venv/bin/python bench/bench_memory.py [--scopes 200] [--lru-scopes 100000]

1. ``--scopes`` scopes of a ``MemoryStore`` are each driven through enough
   turns and results (distinct calls, several tools, some failures) to fill
   every window of ``builtin:default``; tracemalloc measures what they hold,
   per scope.  Target: at most 4 KB.
2. ``--lru-scopes`` scopes go through a store of ``max_scopes=1000``; the
   traced memory after the first 1,000 and after all of them must stay level.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc

from policy.language.loader import load_policy
from policy.model.compiled import FrequencyRule, RepeatRule
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.loops.detector import LoopDetector
from policy.runtime.loops.layer import ErrorKey
from policy.stores.memory import MemoryStore

TARGET_BYTES_PER_SCOPE = 4096
TOOLS = ("bash", "read_file", "grep", "ls", "str_replace", "glob")


def fill(detector: LoopDetector, store: MemoryStore, scope: Scope, turns: int) -> None:
    """Distinct calls over several tools, each with a result, some failed: every window fills."""
    with store.scope(scope) as state:
        for turn in range(turns):
            call = ToolCall(id=f"c{turn}", name=TOOLS[turn % len(TOOLS)],
                            args={"command": f"step {turn}", "path": f"src/module_{turn % 7}.py"})
            detector.on_turn(state, [call])
            failed = turn % 5 == 0
            output = f"Traceback ...\nValueError: bad value {turn}" if failed else f"ok: {turn} lines"
            result = ToolResult(output, "error" if failed else "success")
            error_key = ErrorKey("PYTHON_EXCEPTION", (("type", "ValueError"),)) if failed else None
            detector.on_result(state, call, result, failed=failed, error_key=error_key, state_changed=False)


def bytes_per_scope(detector: LoopDetector, scopes: int, turns: int) -> float:
    store = MemoryStore(max_scopes=scopes)
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for n in range(scopes):
            fill(detector, store, Scope(f"thread-{n}", "run"), turns)
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(store) == scopes
    return (after - before) / scopes


def lru_growth(detector: LoopDetector, total: int) -> tuple[int, int, int]:
    """Traced bytes once the LRU is full, after ``total`` scopes, and scopes kept."""
    store = MemoryStore(max_scopes=1000)
    call = ToolCall(id="c1", name="bash", args={"command": "pytest -x"})
    result = ToolResult("1 failed, 12 passed in 0.51s", "error")
    tracemalloc.start()
    try:
        full = 0
        for n in range(total):
            with store.scope(Scope(f"thread-{n}", "run")) as state:
                detector.on_turn(state, [call])
                detector.on_result(state, call, result, failed=True, error_key=ErrorKey("PYTEST_FAILED"),
                                   state_changed=False)
            if n == 999:
                gc.collect()
                full, _ = tracemalloc.get_traced_memory()
        gc.collect()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return full, end, len(store)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scopes", type=int, default=200)
    parser.add_argument("--lru-scopes", type=int, default=100_000)
    options = parser.parse_args()

    policy = load_policy("builtin:default")
    detector = LoopDetector(policy)
    frequency, repeat = policy.loop(FrequencyRule), policy.loop(RepeatRule)
    assert frequency and repeat
    turns = max(frequency.window, repeat.window) + 20
    per_scope = bytes_per_scope(detector, options.scopes, turns)
    print(f"bytes per tracked scope (default windows, {turns} turns each, {options.scopes} scopes): "
          f"{per_scope:,.0f}  (target <= {TARGET_BYTES_PER_SCOPE:,})  "
          f"{'OK' if per_scope <= TARGET_BYTES_PER_SCOPE else 'OVER'}")

    full, end, kept = lru_growth(detector, options.lru_scopes)
    growth = end / full if full else float("inf")
    verdict = "OK" if growth < 1.1 else "GROWING"
    print(f"{options.lru_scopes:,} scopes through an LRU of 1,000: {kept:,} kept; traced memory "
          f"{full:,} B when full, {end:,} B at the end (x{growth:.2f})  {verdict}")
    return 0 if per_scope <= TARGET_BYTES_PER_SCOPE and growth < 1.1 else 1


if __name__ == "__main__":
    sys.exit(main())

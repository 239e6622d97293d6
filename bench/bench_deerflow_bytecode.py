"""bench_deerflow.py's turns, traced: the Python functions and bytecode lines one after_model runs.

    .venv/bin/python bench/bench_deerflow_bytecode.py [--scopes 6] [--functions]

Under ``bench_deerflow.py``'s eviction a call's time is mostly the memory it
reads, and for CPython that includes the code it runs: each function called
brings its function and code objects, and each instruction executed is read
from the code object's bytecode (with its inline caches).  This counts, per
path and per side, the distinct functions one ``after_model`` call runs and
the distinct 64-byte lines of bytecode its instructions start on (traced
opcode by opcode: the code object's address, plus where its bytecode starts in
it, plus the instruction's offset), as a
fast and deterministic stand-in for ``bench_deerflow_cache.py``'s simulated
misses: seconds, not minutes.  It does not see data (dictionaries, state,
messages) nor the interpreter's own code.  The workload is ``bench_deerflow``'s:
the same turns, the guard's ``wrap_tool_call`` and both ``wrap_model_call``s
between them (not traced), logging off.  Reported: the median over the scopes
after the first two (the code's first use); ``--functions`` lists each
function's lines.  A diagnostic, with no target.  CPython only.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import types
from pathlib import Path
from typing import Any

LINE = 64
"""Bytes per cache line."""
WARM_SCOPES = 2
PATHS = ("allow", "warn", "stop")
_BYTECODE_OFFSET = types.CodeType.__basicsize__
"""Where a code object's bytecode starts within it (``co_code_adaptive``, its last field)."""

Lines = dict[types.CodeType, set[int]]


class Traced:
    """A middleware whose ``after_model`` calls are traced: each call's bytecode lines, per code
    object, in call order (the rest of the middleware as it is)."""

    def __init__(self, middleware: Any) -> None:
        self.middleware = middleware
        self.calls: list[Lines] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.middleware, name)

    def after_model(self, state: dict[str, Any], runtime: Any) -> Any:
        lines: Lines = {}

        def trace(frame: types.FrameType, event: str, arg: object) -> Any:
            frame.f_trace_opcodes = True
            if event == "opcode":
                code = frame.f_code
                lines.setdefault(code, set()).add((id(code) + _BYTECODE_OFFSET + frame.f_lasti) // LINE)
            return trace

        sys.settrace(trace)
        try:
            return self.middleware.after_model(state, runtime)
        finally:
            sys.settrace(None)
            self.calls.append(lines)


def run_side(side: str, scopes: int) -> dict[str, list[Lines]]:
    """``bench_deerflow.run_scope``'s turns, traced; each path's calls after the warm-up (and
    not a scope's first turn, which makes the scope's state)."""
    import bench_deerflow as workload  # beside this script

    from policy.hooks.langchain import HarnessGuardMiddleware

    workload.EVICT_BYTES = 0
    middleware = Traced(HarnessGuardMiddleware("builtin:deerflow") if side == "policyctl"
                        else workload.DeerFlowLoopDetection())
    traced: dict[str, list[Lines]] = {path: [] for path in PATHS}
    for scope in range(scopes):
        states = workload.scope_states(scope)
        middleware.calls.clear()
        workload.run_scope(side, middleware, scope, states, [[] for _ in states])
        if scope >= WARM_SCOPES:
            for turn, ((_, path), lines) in enumerate(zip(states, middleware.calls, strict=True)):
                if turn > 0:
                    traced[path].append(lines)
    return traced


def _name(code: types.CodeType) -> str:
    return f"{Path(code.co_filename).name}:{code.co_name}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scopes", type=int, default=6, help="run scopes of 25 turns (the first 2 warm up)")
    parser.add_argument("--functions", action="store_true", help="each function's lines, per path and side")
    options = parser.parse_args()
    if options.scopes <= WARM_SCOPES:
        parser.error(f"--scopes must be more than {WARM_SCOPES}")
    logging.disable(logging.CRITICAL)
    sides = {side: run_side(side, options.scopes) for side in ("policyctl", "deerflow")}

    print(f"one after_model, traced: functions run and 64-byte bytecode lines executed (median of "
          f"{options.scopes - WARM_SCOPES} scopes)")
    print(f"{'path':<6} {'functions':>18} {'ratio':>6} {'bytecode lines':>18} {'ratio':>6}")
    for path in PATHS:
        counts = {side: (statistics.median(len(lines) for lines in traced[path]),
                         statistics.median(sum(map(len, lines.values())) for lines in traced[path]))
                  for side, traced in sides.items()}
        (ours_functions, ours_lines), (their_functions, their_lines) = counts["policyctl"], counts["deerflow"]
        print(f"{path:<6} {ours_functions:>8.0f} {their_functions:>9.0f} "
              f"{ours_functions / their_functions:>6.2f} "
              f"{ours_lines:>8.0f} {their_lines:>9.0f} {ours_lines / their_lines:>6.2f}")
        if options.functions:
            for side, traced in sides.items():
                last = traced[path][-1]
                listed = ", ".join(f"{_name(code)} {len(lines)}"
                                   for code, lines in sorted(last.items(), key=lambda item: -len(item[1])))
                print(f"    {side}: {listed}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())

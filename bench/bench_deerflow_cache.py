"""bench_deerflow.py's workload under a simulated cache: instructions and cache misses per call.

    .venv/bin/python bench/bench_deerflow_cache.py [--scopes 8]     (needs valgrind)

``bench_deerflow.py`` times ``HarnessGuardMiddleware.after_model`` against its
restatement of DeerFlow's ``LoopDetectionMiddleware.after_model``, with the
core's caches evicted between turns as the tool's process and the model's
round trip evict them.  Under that eviction a call's time is mostly its
memory traffic, and on a shared machine the timings swing with the other
jobs.  Here the same turns (``scope_states``, ``rest_of_the_turn`` writing 2
MB, DeerFlow's gateway logging) run under valgrind's callgrind with a
simulated 1 MB last-level cache (this machine's two L2s together, 512 KB a core):
for each path and each side, one process counts, for the calls of that path
alone, the instructions executed and the reads and writes that miss the
last level (code and data), the same in every run.  The calls measured are
made through ``functools.reduce``, a C function the workload calls nowhere
else, so callgrind's ``--toggle-collect`` counts exactly those calls (with
the two-line function ``reduce`` applies, the same on both sides).  The
two sides of a path run at once; each process takes minutes (the imports
run under valgrind too).  Automatic garbage collection is off in the measured
process: over a few measured calls, whether one of them pays for a collection
(some 400,000 instructions) depends only on where the allocation count stands.

Reported per path: per call, instructions and last-level misses for each
side, and the ratios ours / DeerFlow's.  The first two scopes are not
measured (the code's first use).  Target, as the timed bench's: every ratio
at most 1.0; the exit status says whether the misses meet it.
"""

from __future__ import annotations

import argparse
import gc
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import partial, reduce
from pathlib import Path
from typing import Any

PATHS = ("allow", "warn", "stop")
SIDES = ("policyctl", "deerflow")
LAST_LEVEL = "1048576,16,64"
"""The simulated last-level cache: 1 MB, 16-way, 64-byte lines (both cores' L2 here)."""
EVICT_BYTES = 2 << 20
"""What ``rest_of_the_turn`` writes between turns: twice the simulated last level."""
WARM_SCOPES = 2
"""Scopes run before any call is measured."""
COLLECTED = re.compile(r"Collected : ([\d ]+)")
EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
"""callgrind's event order with ``--cache-sim=yes``."""


def run_side(side: str, path: str, scopes: int) -> int:
    """In the measured process: the workload, the calls of ``path`` through ``functools.reduce``."""
    import bench_deerflow as workload  # beside this script; imported here, in the child only
    from langgraph.runtime import Runtime

    from policy.hooks.langchain import HarnessGuardMiddleware

    workload.production_logging()
    workload.EVICT_BYTES = EVICT_BYTES
    gc.disable()  # a collection would land on one measured call or another by the allocations' phase
    middleware: Any = (workload.DeerFlowLoopDetection() if side == "deerflow"
                       else HarnessGuardMiddleware("builtin:deerflow"))
    measured = 0
    for scope in range(scopes):
        runtime: Runtime[Any] = Runtime(context={"thread_id": "thread", "run_id": f"{side}-{scope}"})
        conversation: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing tests."}]
        middleware.before_agent({"messages": []}, runtime)
        for state, state_path in workload.scope_states(scope):
            if state_path == path and scope >= WARM_SCOPES:
                measured += 1
                reduce(partial(_call, middleware, state, runtime), (0, 0))
            else:
                middleware.after_model(state, runtime)
            workload.rest_of_the_turn(conversation, state["messages"][-1].tool_calls[0])
        middleware.after_agent({"messages": []}, runtime)
    print(measured)
    return 0


def _call(middleware: Any, state: dict[str, Any], runtime: Any, _first: int, _second: int) -> Any:
    """One ``after_model``, as the function ``functools.reduce`` applies to its two items."""
    return middleware.after_model(state, runtime)


def measure(side: str, path: str, scopes: int) -> dict[str, float]:
    """Per measured call: each callgrind event, counted in a process of its own."""
    command = ["valgrind", "--tool=callgrind", "--cache-sim=yes", f"--LL={LAST_LEVEL}",
               "--toggle-collect=functools_reduce", "--callgrind-out-file=/dev/null",
               sys.executable, __file__, "--side", side, "--path", path, "--scopes", str(scopes)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found = COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"no callgrind totals for {side} {path}:\n{done.stderr[-2000:]}")
    calls = int(done.stdout.split()[-1])
    counts = dict(zip(EVENTS, (int(value) for value in found.group(1).split()), strict=True))
    return {event: count / calls for event, count in counts.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scopes", type=int, default=8, help="run scopes of 25 turns (the first 2 warm up)")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--path", choices=PATHS, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.side:
        return run_side(options.side, options.path, options.scopes)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2

    print(f"after_model under callgrind, last level {LAST_LEVEL} (bytes,ways,line), {options.scopes} scopes "
          f"of 25 turns, {EVICT_BYTES >> 20} MB written between turns; per call")
    print(f"{'path':<6} {'instructions':>21} {'ratio':>6} {'last-level misses':>19} {'ratio':>6}  "
          "(code + data)")
    worst = 0.0
    for path in PATHS:
        with ThreadPoolExecutor(len(SIDES)) as pool:  # the counts do not depend on the machine's load
            ours, theirs = pool.map(partial(measure, path=path, scopes=options.scopes), SIDES)
        misses = [side["ILmr"] + side["DLmr"] + side["DLmw"] for side in (ours, theirs)]
        ratio = misses[0] / misses[1]
        worst = max(worst, ratio)
        print(f"{path:<6} {ours['Ir']:>10,.0f} {theirs['Ir']:>10,.0f} {ours['Ir'] / theirs['Ir']:>6.2f} "
              f"{misses[0]:>9,.0f} {misses[1]:>9,.0f} {ratio:>6.2f}  "
              f"({ours['ILmr']:,.0f} + {ours['DLmr'] + ours['DLmw']:,.0f} vs "
              f"{theirs['ILmr']:,.0f} + {theirs['DLmr'] + theirs['DLmw']:,.0f})")
    print(f"target: every ratio <= 1.0; worst last-level ratio {worst:.2f}")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())

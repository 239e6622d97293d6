"""Wall time of one ``policyctl hook claude-code`` event, whole process, against ``python -c pass``.

Three events, as Claude Code sends them: a PreToolUse ``Write`` that is
allowed, one that is denied (a syntax error), and a PostToolUseFailure
``Bash`` that gets a hint (a missing command).  Each is timed, with the command
``policyctl install claude-code --user`` writes (this interpreter, ``-S -P``,
``cli/hook_client.py``), on three paths:

- ``warm``: the resident process is running (targets: median <= 25 ms and
  <= 3.5x ``python -c pass``);
- ``first``: no resident process yet, so this event starts one and is
  answered by its own process (target <= 200 ms);
- ``cached``: no resident process (``POLICYCTL_HOOK_RESIDENT=0``), the
  compiled policy comes from the user's cache (target <= 90 ms);

and, for comparison, warm through the ``policyctl`` console script.

``python -c pass`` runs interleaved with the events in the same run, so the
ratios hold on a shared, noisy machine.  Each round prints medians; the
summary gives the range over rounds, and the resident process's memory.

policyctl's bytecode is compiled first and kept current (``PYTHONDONTWRITEBYTECODE``
is dropped for the hook), as in an installed package: otherwise every module
edited since its last ``.pyc`` would be compiled again by every hook process.

    python bench/bench_hook.py [--runs 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).with_name("policyctl")
INSTALLED = [sys.executable, "-S", "-P", str(ROOT / "cli" / "hook_client.py"), "hook", "claude-code"]
"""The command ``policyctl install claude-code --user`` writes (``cli.install.fast_command``)."""
_POLICYCTL = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "cli"]
CONSOLE_SCRIPT = [*_POLICYCTL, "hook", "claude-code"]
"""``policyctl hook claude-code`` through the console script pip writes."""

EVENTS = {
    "Write allowed": ("PreToolUse", "Write", {"file_path": "app.py", "content": "def f(x):\n    return x\n"}),
    "Write denied": ("PreToolUse", "Write", {"file_path": "app.py", "content": "def f(:\n    pass\n"}),
    "Bash hint": ("PostToolUseFailure", "Bash", {"command": "rg TODO"}),
}
TARGETS = {"warm": 25.0, "first": 200.0, "cached": 90.0}
PATHS = {**{path: (path, INSTALLED) for path in TARGETS}, "warm, console script": ("warm", CONSOLE_SCRIPT)}
"""What each row measures: the path and the command."""


def event(name: str, project: Path, number: int) -> bytes:
    hook_event, tool, tool_input = EVENTS[name]
    data: dict[str, object] = {
        "session_id": f"bench-{number}", "transcript_path": str(project / "t.jsonl"), "cwd": str(project),
        "permission_mode": "default", "hook_event_name": hook_event, "tool_name": tool,
        "tool_input": tool_input, "tool_use_id": f"toolu_{number:06d}", "prompt_id": f"p-{number}"}
    if hook_event == "PostToolUseFailure":
        data.update(error="Exit code 127\nbash: rg: command not found", is_interrupt=False)
    return json.dumps(data).encode()


def timed(command: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, env=env, check=True)
    return (time.perf_counter() - start) * 1000, done.stdout


class Bench:
    def __init__(self, base: Path) -> None:
        self.project = base / "project"
        self.project.mkdir()
        runtime = base / "run"
        runtime.mkdir(mode=0o700)
        self.runtime = runtime / "policyctl"
        inherited = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
        self.env = {**inherited, "XDG_STATE_HOME": str(base / "state"),
                    "XDG_CACHE_HOME": str(base / "cache"),
                    "XDG_RUNTIME_DIR": str(runtime), "POLICYCTL_HOOK_RESIDENT": "1"}
        self.number = 0

    def next_event(self, name: str) -> bytes:
        self.number += 1
        return event(name, self.project, self.number)

    def hook(self, name: str, command: list[str] = INSTALLED, **env: str) -> float:
        elapsed, stdout = timed(command, self.next_event(name), {**self.env, **env})
        if name != "Write allowed" and not stdout.strip():
            raise SystemExit(f"{name}: the hook gave no answer")
        return elapsed

    def resident_pid(self) -> int | None:
        for lock in self.runtime.glob("*.sock.lock") if self.runtime.is_dir() else []:
            text = lock.read_text().strip()
            if text.isdigit() and _alive(int(text)) and any(self.runtime.glob("*.sock")):
                return int(text)
        return None

    def wait_for_resident(self) -> int:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pid = self.resident_pid()
            if pid is not None:
                return pid
            time.sleep(0.02)
        raise SystemExit("the resident process did not start")

    def stop_resident(self) -> None:
        pid = self.resident_pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        while _alive(pid):
            time.sleep(0.01)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/status").read_text().find("State:\tZ") < 0
    except OSError:
        return True


def memory_kib(pid: int) -> tuple[int, int]:
    """(resident set size, its peak) of a process, in KiB (Linux)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def one_round(runs: int) -> dict[str, float]:
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as base:
        bench = Bench(Path(base))
        bench.hook("Write denied", POLICYCTL_HOOK_RESIDENT="0")  # compiles the policy into the cache
        baseline: list[float] = []
        samples: dict[str, list[float]] = {f"{row} {name}": [] for row in PATHS for name in EVENTS}

        bench.hook("Write allowed")
        pid = bench.wait_for_resident()
        for _ in range(3):
            bench.hook("Write denied")
        for _ in range(runs):
            baseline.append(timed([sys.executable, "-c", "pass"], b"", bench.env)[0])
            for name in EVENTS:
                samples[f"warm {name}"].append(bench.hook(name))
                samples[f"warm, console script {name}"].append(bench.hook(name, CONSOLE_SCRIPT))
        results["memory rss"], results["memory peak"] = memory_kib(pid)

        for _ in range(runs):
            for name in EVENTS:
                samples[f"cached {name}"].append(bench.hook(name, POLICYCTL_HOOK_RESIDENT="0"))
            baseline.append(timed([sys.executable, "-c", "pass"], b"", bench.env)[0])

        for _ in range(max(3, runs // 3)):
            for name in EVENTS:
                bench.stop_resident()
                samples[f"first {name}"].append(bench.hook(name))
                bench.wait_for_resident()
        bench.stop_resident()
    results["python -c pass"] = statistics.median(baseline)
    for key, values in samples.items():
        results[key] = statistics.median(values)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="events per path and kind in a round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (the summary gives their range)")
    options = parser.parse_args()
    for package in ("policy", "cli"):
        compileall.compile_dir(ROOT / package, quiet=1)
    rounds = []
    for number in range(1, options.rounds + 1):
        result = one_round(options.runs)
        rounds.append(result)
        baseline = result["python -c pass"]
        print(f"round {number}: python -c pass {baseline:.1f} ms")
        for row in PATHS:
            for name in EVENTS:
                value = result[f"{row} {name}"]
                print(f"  {row:20} {name:13} {value:6.1f} ms  {value / baseline:5.2f}x")
        rss, peak = result["memory rss"] / 1024, result["memory peak"] / 1024
        print(f"  resident memory: {rss:.1f} MiB (peak {peak:.1f})")
    print(f"\nsummary over {len(rounds)} rounds of {options.runs} runs (median wall time per event, range):")
    print(f"  {'python -c pass':34} {_range([r['python -c pass'] for r in rounds])} ms")
    for row, (path, _) in PATHS.items():
        for name in EVENTS:
            key = f"{row} {name}"
            ratios = [r[key] / r["python -c pass"] for r in rounds]
            times = _range([r[key] for r in rounds])
            target = f"target <= {TARGETS[path]:.0f} ms{' and <= 3.5x' if path == 'warm' else ''}"
            ratio = f"{min(ratios):5.2f}-{max(ratios):5.2f}x"
            print(f"  {row:20} {name:13} {times} ms  ratio {ratio}  ({target})")
    memory = [r["memory rss"] / 1024 for r in rounds]
    print(f"  {'resident memory (RSS)':34} {min(memory):6.1f}-{max(memory):6.1f} MiB")


def _range(values: list[float]) -> str:
    return f"{min(values):6.1f}-{max(values):6.1f}"


if __name__ == "__main__":
    main()

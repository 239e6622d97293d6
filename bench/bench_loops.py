"""Loop layers (repeat + frequency on a turn) against a straightforward hand-written baseline.

    .venv/bin/python bench/bench_loops.py [--policy builtin:deerflow] [--rounds 7] [--turns 5000]

The baseline, ``HandWritten`` below, is what one would write for the same
algorithm with the same settings (read from the same compiled policy):
stable JSON of the key arguments, an MD5 of the sorted batch, a deque of
recent batch hashes with ``count``, a deque of tool names with a ``Counter``,
suppression sets, a log line and an f-string message.  A second
baseline, ``HandWrittenWithHint``, words its message with the policy's own
hint template instead, as policyctl does: the difference between the two
is the price of policy-defined hint text.  All run in the same process,
interleaved; CPU time, best round of each.

Paths, measured separately:
  allow      - distinct calls over five tools, nothing fires
  warn       - the batch that reaches the repeat ``warn`` count
  frequency  - the call that reaches a tool's frequency ``warn`` count
  stop       - the batch that reaches the repeat ``stop`` count
Target: every ratio <= 1.2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import statistics
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy, FrequencyRule, RepeatRule
from policy.model.events import ToolCall
from policy.runtime.loops.detector import LoopDetector
from policy.runtime.loops.state import ScopeState

TARGET = 1.2
CHUNK = 50
"""Calls per implementation before switching to the next one."""
TOOLS = ("bash", "read_file", "grep", "ls", "glob")


# --- the baseline ---------------------------------------------------------------------


@dataclass
class HandWrittenState:
    history: deque[str]
    calls: deque[str]
    warned: set[str] = field(default_factory=set)
    counts: Counter[str] = field(default_factory=Counter)
    tool_warned: set[str] = field(default_factory=set)
    inflight: dict[str, int] = field(default_factory=dict)
    turns: int = 0
    results: dict[str, list[str]] = field(default_factory=dict)
    """Batch digest -> digests of its recent results (until_progress; filled as results arrive)."""
    excerpts: dict[str, str] = field(default_factory=dict)
    """Batch digest -> its last result, shortened, for the message."""


class HandWritten:
    """Repeat and frequency as one would write them by hand."""

    def __init__(self, policy: CompiledPolicy) -> None:
        repeat, frequency = policy.loop(RepeatRule), policy.loop(FrequencyRule)
        assert repeat is not None and frequency is not None
        self.window, self.warn, self.stop = repeat.window, repeat.warn, repeat.stop
        self.track_results = repeat.until_progress
        overrides = frequency.overrides
        self.tool_window = max(frequency.window, frequency.stop, *(o.stop for o in overrides.values()))
        self.default_limits = (frequency.warn, frequency.stop)
        self.limits = {tool: (o.warn, o.stop) for tool, o in overrides.items()}
        self.key_args = {name: spec.key_args for name, spec in policy.tools.items()}
        self.ignored = {name: spec.ignore_args for name, spec in policy.tools.items()}
        self.default_key_args = policy.default_key_args
        self.default_ignored = policy.default_ignore_args
        self.log = logging.getLogger("bench.handwritten")

    def new_state(self) -> HandWrittenState:
        return HandWrittenState(history=deque(maxlen=self.window), calls=deque(maxlen=self.tool_window))

    def key(self, call: ToolCall) -> str:
        only = self.key_args.get(call.name, self.default_key_args)
        ignored = self.ignored.get(call.name, self.default_ignored)
        if only and any(name in call.args for name in only):
            args = {name: call.args[name] for name in only if name in call.args}
        else:
            args = {name: value for name, value in call.args.items() if name not in ignored}
        return call.name + json.dumps(args, sort_keys=True)

    def on_turn(self, state: HandWrittenState, calls: Sequence[ToolCall]) -> tuple[str, str, str] | None:
        digest = hashlib.md5("\n".join(sorted(self.key(call) for call in calls)).encode()).hexdigest()
        history = state.history
        if len(history) == history.maxlen and history[0] in state.warned and history.count(history[0]) == 1:
            state.warned.discard(history[0])
        history.append(digest)
        state.turns += 1
        if self.track_results:
            for call in calls:
                state.inflight[call.id] = state.turns
            while len(state.inflight) > self.window:
                del state.inflight[next(iter(state.inflight))]
        count = history.count(digest)
        if count >= self.stop:
            return self._decide(state, digest, "stop", "repeat", calls[0], count, self.stop)
        repeat_warning = count >= self.warn and digest not in state.warned

        candidate: tuple[ToolCall, int] | None = None
        for call in calls:
            tool_calls, counts = state.calls, state.counts
            if len(tool_calls) == tool_calls.maxlen:
                old = tool_calls[0]
                counts[old] -= 1
                if counts[old] < self.limits.get(old, self.default_limits)[0]:
                    state.tool_warned.discard(old)
            tool_calls.append(call.name)
            counts[call.name] += 1
            warn, stop = self.limits.get(call.name, self.default_limits)
            if counts[call.name] >= stop:
                return self._decide(state, digest, "stop", "frequency", call, counts[call.name], stop)
            if candidate is None and counts[call.name] >= warn and call.name not in state.tool_warned:
                candidate = (call, counts[call.name])
        if repeat_warning:
            state.warned.add(digest)
            return self._decide(state, digest, "warn", "repeat", calls[0], count, self.stop)
        if candidate is not None:
            call, count = candidate
            warn, stop = self.limits.get(call.name, self.default_limits)
            if state.counts[call.name] >= warn:
                state.tool_warned.add(call.name)
            return self._decide(state, digest, "warn", "frequency", call, count, stop)
        return None

    def _decide(self, state: HandWrittenState, digest: str, action: str, layer: str, call: ToolCall,
                count: int, stop: int) -> tuple[str, str, str]:
        self.log.info("loop %s %s on call %s (count %d)", layer, action, call.id, count)
        same_result, excerpt = False, ""
        if layer == "repeat" and self.track_results:  # what until_progress knows of the batch's results
            results = state.results.get(digest, [])
            same_result = len(results) >= 2 and len(set(results)) == 1
            excerpt = state.excerpts.get(digest, "")
        return action, call.id, self.message(action, layer, call, count, stop, same_result, excerpt)

    def message(self, action: str, layer: str, call: ToolCall, count: int, stop: int, same_result: bool,
                excerpt: str) -> str:
        return (f"[LOOP {'STOPPED' if action == 'stop' else 'DETECTED'}] {call.name} "
                f"{json.dumps(call.args, sort_keys=True)}: {count} times (limit {stop}).")


class HandWrittenWithHint(HandWritten):
    """The same, with the message rendered from the policy's hint template."""

    def __init__(self, policy: CompiledPolicy) -> None:
        super().__init__(policy)
        repeat, frequency = policy.loop(RepeatRule), policy.loop(FrequencyRule)
        assert repeat is not None and frequency is not None
        self.policy = policy
        self.rules: dict[str, RepeatRule | FrequencyRule] = {"repeat": repeat, "frequency": frequency}

    def message(self, action: str, layer: str, call: ToolCall, count: int, stop: int, same_result: bool,
                excerpt: str) -> str:
        rule = self.rules[layer]
        summary = f"{call.name} {json.dumps(call.args, sort_keys=True)}"
        variables = {
            "rule": f"loop {layer}", "rule_kind": "loop", "rule_name": layer, "action": action,
            "tool": call.name, "args": dict(call.args), "call": summary, "call_id": call.id,
            "policy": self.policy.name, "count": count, "warn": rule.warn, "stop": stop,
            "window": rule.window, "same_result": same_result, "result_excerpt": excerpt,
        }
        if rule.hint is None:
            return super().message(action, layer, call, count, stop, same_result, excerpt)
        return rule.hint.render(variables)


# --- the scenarios ----------------------------------------------------------------------


def make_call(n: int, tool: str = "bash", command: str | None = None) -> ToolCall:
    """A call with ~100 bytes of arguments."""
    return ToolCall(id=f"call_{n}", name=tool, args={
        "command": command or f"python -m pytest tests/test_module.py -k case_{n} -q",
        "path": "tests/test_module.py",
        "description": "Run the failing test again",
    })


@dataclass
class Scenario:
    name: str
    setup: list[list[ToolCall]]
    """Turns that bring a fresh state to the edge."""
    measured: list[ToolCall]
    """The turn that is timed."""
    expected: str


def scenarios(policy: CompiledPolicy) -> list[Scenario]:
    repeat, frequency = policy.loop(RepeatRule), policy.loop(FrequencyRule)
    assert repeat is not None and frequency is not None
    same = [make_call(0, command="submit flag{x}")]
    warn, stop = frequency.limit_for("grep").warn, frequency.limit_for("grep").stop
    assert warn < stop
    return [
        Scenario("warn", [same] * (repeat.warn - 1), same, "warn"),
        Scenario("frequency", [[make_call(n, "grep")] for n in range(warn - 1)], [make_call(-1, "grep")],
                 "warn"),
        Scenario("stop", [same] * (repeat.stop - 1), same, "stop"),
    ]


Run = Callable[[Any, list[ToolCall]], Any]


def interleaved(jobs: dict[str, list[Callable[[], Any]]]) -> dict[str, float]:
    """CPU seconds per call of each implementation's jobs, run in alternating chunks so that
    every implementation meets the same machine load."""
    spent = dict.fromkeys(jobs, 0.0)
    count = min(len(calls) for calls in jobs.values())
    for start in range(0, count, CHUNK):
        for impl, calls in jobs.items():
            began = time.process_time()
            for job in calls[start : start + CHUNK]:
                job()
            spent[impl] += time.process_time() - began
    return {impl: seconds / count for impl, seconds in spent.items()}


def allow_jobs(run: Run, state: Any, turns: list[list[ToolCall]]) -> list[Callable[[], Any]]:
    return [partial(run, state, batch) for batch in turns]


def edge_jobs(impl: str, run: Run, new_state: Callable[[], Any], scenario: Scenario,
              states: int) -> list[Callable[[], Any]]:
    """One job per fresh state brought to the edge: the timed turn alone."""
    prepared = [new_state() for _ in range(states + 1)]
    for state in prepared:
        for batch in scenario.setup:
            run(state, batch)
    outcome = action_of(run(prepared.pop(), scenario.measured))
    if outcome != scenario.expected:
        raise SystemExit(f"{impl} {scenario.name}: expected {scenario.expected}, got {outcome}")
    return [partial(run, state, scenario.measured) for state in prepared]


def action_of(result: Any) -> str:
    if result is None:
        return "allow"
    return str(result.action if hasattr(result, "action") else result[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="builtin:deerflow")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--states", type=int, default=1000)
    options = parser.parse_args()

    for name in ("policy.loops", "bench.handwritten"):  # both log at INFO, off by default; neither prints
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False

    policy = load_policy(options.policy)
    ours, baseline, with_hint = LoopDetector(policy), HandWritten(policy), HandWrittenWithHint(policy)
    implementations: dict[str, tuple[Run, Callable[[], Any]]] = {
        "policyctl": (ours.on_turn, ScopeState),
        "hand-written": (baseline.on_turn, baseline.new_state),
        "+ hint": (with_hint.on_turn, with_hint.new_state),
    }
    allow_turns = [[make_call(n, TOOLS[n % len(TOOLS)])] for n in range(options.turns)]
    edges = scenarios(policy)
    paths = ["allow", *(scenario.name for scenario in edges)]

    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(options.rounds):
        measured = {"allow": interleaved({
            impl: allow_jobs(run, new_state(), allow_turns)
            for impl, (run, new_state) in implementations.items()
        })}
        for scenario in edges:
            measured[scenario.name] = interleaved({
                impl: edge_jobs(impl, run, new_state, scenario, options.states)
                for impl, (run, new_state) in implementations.items()
            })
        for path, per_impl in measured.items():
            for impl, seconds in per_impl.items():
                samples.setdefault((path, impl), []).append(seconds * 1e6)

    print(f"policy {options.policy}: median of {options.rounds} rounds, CPU microseconds per turn")
    print(f"{'path':<10} {'policyctl':>10} {'hand-written':>13} {'ratio':>6} {'+ hint':>8} {'ratio':>6}")
    worst = 0.0
    for path in paths:
        ours_us, plain_us, hint_us = (statistics.median(samples[(path, impl)]) for impl in implementations)
        ratio = ours_us / plain_us if path == "allow" else ours_us / hint_us
        worst = max(worst, ratio)
        print(f"{path:<10} {ours_us:>10.2f} {plain_us:>13.2f} {ours_us / plain_us:>6.2f} {hint_us:>8.2f} "
              f"{ours_us / hint_us:>6.2f}{'' if ratio <= TARGET else '  over'}")
    print(f"target: <= {TARGET} against the hand-written loop (allow) and against it with the same hint "
          f"text (warn, frequency, stop); worst {worst:.2f}")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())

"""What each remaining shortcut through a library's internals saves, against the public API, on its path.

Each shortcut is kept only while it saves at least 10% on the path it is
for; this measures every one in the same process, the two variants taking
turns (CPU time, best of ``--rounds``), so both meet the same machine load:

  jsontext   ``policy.model.jsontext.compact`` through CPython's C encoder
             against ``json.JSONEncoder(...).encode``, on the loop layers'
             turn (``LoopDetector.on_turn``, distinct calls, nothing fires)
  re2_spans  ``Pattern.spans`` through google-re2's compiled matcher against
             its public ``search``, on ``Guard.on_result`` of 4 KB failed
             outputs (half name a missing module, half no signature)
  render     not taken: a hint rendered through Jinja2's ``root_render_func``
             and ``new_context`` against the public ``Template.generate``
             (what ``BoundedEnvironment.render_bounded`` uses), both inside the
             sandbox's bounds, on the loop layers' warning turn
             (``LoopDetector.on_turn``, the batch that reaches ``repeat``'s warn)

    .venv/bin/python bench/bench_shortcuts.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from functools import partial
from typing import Any
from unittest import mock

from jinja2 import Template

import policy.runtime.loops.keys as keys
from policy.language.loader import load_policy
from policy.model import re2_spans
from policy.model.compiled import CompiledPolicy, RepeatRule
from policy.model.events import Scope, ToolCall, ToolResult
from policy.model.hint_sandbox import BoundedEnvironment, bounded_concat
from policy.model.jsontext import compact
from policy.runtime.guard import Guard
from policy.runtime.loops.detector import LoopDetector
from policy.runtime.loops.state import ScopeState

TARGET = 0.10
LOG = "".join(f"2024-05-01 12:00:{n % 60:02d},123 INFO worker-3 processed batch {n} in 0.{n % 9}s\n"
              for n in range(60))


def interleaved(shortcut: Callable[[], None], public: Callable[[], None], rounds: int,
                prepare: Callable[[], None] = lambda: None) -> tuple[float, float]:
    """Best CPU time of each, the two taking turns (``prepare``, untimed, before each run); a first
    run of each warms caches up."""
    shortcut()
    public()
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for index, run in enumerate((shortcut, public)):
            prepare()
            began = time.process_time()
            run()
            best[index] = min(best[index], time.process_time() - began)
    return best[0], best[1]


def results(count: int, signature_every: int) -> list[tuple[ToolCall, ToolResult]]:
    events = []
    for n in range(count):
        call = ToolCall(id=f"c{n}", name="bash", args={"command": f"python app{n}.py"})
        named = n % signature_every == 0
        end = f"ModuleNotFoundError: No module named 'mod{n}'\n" if named else f"gave up after {n} tries\n"
        events.append((call, ToolResult(content=LOG + end, status="error")))
    return events


def on_results(guard: Guard, events: list[tuple[ToolCall, ToolResult]], before: Callable[[], None]
               ) -> Callable[[], None]:
    def run() -> None:
        before()
        for index, (call, result) in enumerate(events):
            guard.on_result(call, result, Scope("t", f"r{index}"))
    return run


def jsontext(policy: CompiledPolicy, rounds: int) -> tuple[float, float, int]:
    detector = LoopDetector(policy)
    tools = ("bash", "read_file", "grep", "ls", "glob")
    turns = [[ToolCall(id=f"c{n}", name=tools[n % 5],
                       args={"command": f"echo {n} && ls -la src/", "path": f"src/f{n}.py"})]
             for n in range(3000)]
    public = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":")).encode

    def run(encode: Callable[[Any], str]) -> Callable[[], None]:
        def turn_all() -> None:
            with mock.patch.object(keys, "compact", encode):  # the encoder the key recipes call
                state = ScopeState()
                for calls in turns:
                    detector.on_turn(state, calls)
        return turn_all

    return (*interleaved(run(compact), run(public), rounds), len(turns))


def spans(policy: CompiledPolicy, rounds: int) -> tuple[float, float, int]:
    guard = Guard(policy)
    patterns = [rule.pattern for rule in policy.signatures] + [rule.pattern for rule in policy.normalizers]
    shortcut = {id(p): p._find for p in patterns}
    public = {id(p): partial(re2_spans._public_spans, p.regex) for p in patterns}

    def use(table: dict[int, Any]) -> Callable[[], None]:
        def swap() -> None:
            for pattern in patterns:
                object.__setattr__(pattern, "_find", table[id(pattern)])
        return swap

    events = results(300, 2)
    try:
        return (*interleaved(on_results(guard, events, use(shortcut)), on_results(guard, events, use(public)),
                             rounds), len(events))
    finally:
        use(shortcut)()


def render(policy: CompiledPolicy, rounds: int) -> tuple[float, float, int]:
    detector = LoopDetector(policy)
    repeat = policy.loop(RepeatRule)
    assert repeat is not None
    same = [ToolCall(id="c0", name="bash", args={"command": "submit flag{x}", "description": "again"})]
    public = BoundedEnvironment.render_bounded

    def shortcut(self: BoundedEnvironment, template: Template, context: dict[str, Any]) -> str:
        return bounded_concat(template.root_render_func(template.new_context(context)))

    states: list[ScopeState] = []

    def prepare() -> None:  # 500 scopes one batch short of the warning
        states[:] = [ScopeState() for _ in range(500)]
        for state in states:
            for _ in range(repeat.warn - 1):
                detector.on_turn(state, same)

    def run(method: Any) -> Callable[[], None]:
        def warn_all() -> None:
            BoundedEnvironment.render_bounded = method  # type: ignore[method-assign]
            for state in states:
                detector.on_turn(state, same)
        return warn_all

    try:
        prepare()
        if detector.on_turn(states[0], same).action != "warn":
            raise SystemExit("render: the measured turn does not warn")
        return (*interleaved(run(shortcut), run(public), rounds, prepare), len(states))
    finally:
        BoundedEnvironment.render_bounded = public  # type: ignore[method-assign]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    options = parser.parse_args()
    default, deerflow = load_policy("builtin:default"), load_policy("builtin:deerflow")
    cases = {
        "jsontext": partial(jsontext, deerflow),
        "re2_spans": partial(spans, default),
        "render": partial(render, deerflow),
    }
    print(f"{'shortcut':<10} {'µs/event':>9} {'public':>9} {'saving':>7}  (target >= {TARGET:.0%})")
    for name, measure in cases.items():
        shortcut, public, events = measure(options.rounds)
        saving = 1 - shortcut / public
        verdict = "the shortcut earns its place" if saving >= TARGET else "below target: the public API"
        per_event = f"{shortcut / events * 1e6:9.2f} {public / events * 1e6:9.2f}"
        print(f"{name:<10} {per_event} {saving:7.1%}  {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

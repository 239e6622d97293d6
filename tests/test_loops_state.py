"""ScopeState: bounded by the windows, and carried between workers as JSON."""

from __future__ import annotations

import json
import random

import pytest

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.events import ToolCall, ToolResult
from policy.runtime.loops.detector import LoopDetector
from policy.runtime.loops.layer import DIGEST, ErrorKey
from policy.runtime.loops.state import ScopeState


@pytest.fixture(scope="module")
def default() -> CompiledPolicy:
    return load_policy("builtin:default")


Events = list[tuple[list[ToolCall], list[tuple[str, bool]]]]
"""Per turn: its calls, and each call's (output, failed)."""


def session_events(seed: int, length: int) -> Events:
    """A random session over few distinct calls, so every layer fires now and then."""
    rng = random.Random(seed)
    commands = ["pytest", "ls", "cat a.py", "python app.py", "pip install x", "git status"]
    events = []
    for turn in range(length):
        calls = [
            ToolCall(id=f"t{turn}c{n}", name=rng.choice(["bash", "bash", "read_file", "grep"]),
                     args={"command": rng.choice(commands), "path": "a.py"})
            for n in range(rng.choice([1, 1, 1, 2, 3]))
        ]
        outputs = ["ok", "1 failed", "No module named 'yaml'"]
        outcomes = [(rng.choice(outputs), rng.random() < 0.4) for _ in calls]
        events.append((calls, outcomes))
    return events


def replay(detector: LoopDetector, state: ScopeState | None, events: Events, through_json: bool) -> list[str]:
    """Decisions of a session; with ``through_json`` the state is reloaded from JSON before every event."""
    current = state or ScopeState()
    seen = []
    for calls, outcomes in events:
        if through_json:
            current = ScopeState.from_json(current.to_json())
        seen.append(json.dumps(detector.on_turn(current, calls).to_dict(), sort_keys=True))
        for call, (text, failed) in zip(calls, outcomes, strict=True):
            if through_json:
                current = ScopeState.from_json(current.to_json())
            key = ErrorKey("X", (("output", text),)) if failed else None
            decision = detector.on_result(current, call, ToolResult(text, "error" if failed else "success"),
                                          failed=failed, error_key=key,
                                          state_changed=call.args["command"].startswith("pip") and not failed)
            seen.append(json.dumps(decision.to_dict(), sort_keys=True))
    return seen


def test_a_state_carried_through_json_decides_like_one_kept_in_memory(default: CompiledPolicy) -> None:
    detector = LoopDetector(default)
    events = session_events(seed=7, length=300)
    in_memory = replay(detector, None, events, through_json=False)
    assert in_memory == replay(detector, None, events, through_json=True)
    assert {json.loads(d)["action"] for d in in_memory} >= {"allow", "warn"}


def test_json_round_trip_keeps_everything_including_pending(default: CompiledPolicy) -> None:
    detector, state = LoopDetector(default), ScopeState()
    replay(detector, state, session_events(seed=3, length=60), through_json=False)
    state.pending["c9"] = {"warning": {"action": "warn", "hint": "ü → ✓", "metadata": {"count": 3}}}
    restored = ScopeState.from_json(state.to_json())
    assert restored == state


def test_state_stays_within_the_windows_however_long_the_session(default: CompiledPolicy) -> None:
    detector, state = LoopDetector(default), ScopeState()
    replay(detector, state, session_events(seed=11, length=3000), through_json=False)
    assert default.repeat and default.oscillation
    assert len(state.repeat.keys) == len(state.repeat.results) == default.repeat.window * DIGEST
    assert len(state.frequency.window) <= 300
    assert len(state.frequency.tools) <= len(set(state.frequency.window)) + 1
    oscillation = default.oscillation
    assert len(state.oscillation.items) <= oscillation.max_period * oscillation.repeats * DIGEST
    assert len(state.oscillation.calls) <= default.oscillation.max_period
    assert len(state.repeat.inflight) <= 3 and not state.repeat.partial
    assert len(state.to_json()) < 8192


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not JSON"),
        ("[]", "the state must be an object"),
        ('{"v": 99}', "format 99"),
        ('{"v": 2, "repeat": {}}', "frequency must be an object"),
        (
            '{"v": 2, "repeat": {}, "frequency": {}, "streak": {}, "oscillation": {}}',
            "repeat.keys must be str",
        ),
    ],
)
def test_unreadable_state_is_a_clear_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ScopeState.from_json(text)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("repeat", "keys"), "zz", "repeat.keys must be hex"),
        (("repeat", "keys"), "abcd", "whole 8-byte fingerprints"),
        (("repeat", "turns"), True, "repeat.turns must be int"),
        (("repeat", "warned"), ["00" * 16], "single fingerprints"),
        (("repeat", "partial"), [[1]], r"\[turn, value\] pairs"),
        (("frequency", "tools"), [3], "frequency.tools must hold str"),
        (("frequency", "window"), "\u0005", "names a tool slot that does not exist"),
        (("oscillation", "keys"), "00" * 8, "parallel histories"),
    ],
)
def test_each_bad_field_is_named(path: tuple[str, str], value: object, message: str) -> None:
    data = json.loads(ScopeState().to_json())
    data[path[0]][path[1]] = value
    with pytest.raises(ValueError, match=message):
        ScopeState.from_json(json.dumps(data))

"""ScopeState: bounded by the windows, and carried between workers as JSON."""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy, OscillationRule, RepeatRule
from policy.model.decision import Decision
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.guard import Guard
from policy.runtime.loops.detector import LoopDetector
from policy.runtime.loops.layer import DIGEST, ErrorKey
from policy.runtime.loops.state import ScopeState
from policy.stores.file import FileStore

MISSING = "ModuleNotFoundError: No module named 'yaml'"


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
    repeat, oscillation = default.loop(RepeatRule), default.loop(OscillationRule)
    assert repeat and oscillation
    assert len(state.repeat.keys) == len(state.repeat.results) == repeat.window * DIGEST
    assert len(state.frequency.window) <= 300
    assert len(state.frequency.tools) <= len(set(state.frequency.window)) + 1
    assert len(state.oscillation.items) <= oscillation.max_period * oscillation.repeats * DIGEST
    assert len(state.oscillation.calls) <= oscillation.max_period
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


BAD_VALUES = [5, "x", None, [], {"a": 1}, -1, True, 2**70]


def _field_paths(value: object, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    found = [path] if path else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _field_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _field_paths(item, (*path, index))
    return found


def _corrupted(document: dict[str, object], path: tuple[str | int, ...], bad: object) -> str:
    copy = json.loads(json.dumps(document))
    target: Any = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = bad
    return json.dumps(copy)


def test_a_corrupt_field_costs_one_event_and_is_said_never_a_permanent_break(tmp_path: Path) -> None:
    """Every field of a real stored state, set to each kind of wrong value: the state reads as a
    ``ValueError`` or as a state the guard can use; through the file store, the event that meets it
    says its loop state was reset, and the events after it work as usual."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("x = 1\n")
    policy = load_policy("builtin:default")
    scope = Scope("t", "r")

    def events(guard: Guard, tag: str, commands: int = 1) -> list[Decision]:
        decisions = []
        for number in range(commands):
            call = ToolCall(id=f"{tag}{number}", name="bash", args={"command": "python x.py"})
            decisions += [guard.on_turn([call], scope), guard.on_call(call, scope),
                          guard.on_result(call, ToolResult(content=MISSING, status="error"), scope)]
        write = ToolCall(id=f"{tag}w", name="write_file",
                         args={"path": str(workspace / "a.py"), "content": "x ="})
        decisions += [guard.on_turn([write], scope), guard.on_call(write, scope)]
        return decisions

    store = FileStore(tmp_path / "state")
    events(Guard(policy, store=store, workspace=workspace), "a", commands=3)
    session = store.path_for("t")
    stored = json.loads(json.loads(session.read_text())["runs"]["r"])
    troubles = []
    for path in _field_paths(stored):
        for bad in BAD_VALUES:
            text = _corrupted(stored, path, bad)
            with contextlib.suppress(ValueError):  # unreadable is fine: anything else is not
                ScopeState.from_json(text).to_json()
            session.write_text(json.dumps({"v": 1, "runs": {"r": text}}))
            guard = Guard(policy, store=FileStore(tmp_path / "state"), workspace=workspace)
            first, after = events(guard, "b"), events(guard, "c")
            faults = [d.metadata for d in first + after if "internal_error" in d.metadata]
            faults += [d.metadata for d in after if "loop_state" in d.metadata]
            if faults:
                troubles.append((path, bad, faults[0]))
    assert not troubles, troubles[:5]

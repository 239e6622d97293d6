"""The loop detector alone against 33 real agent sessions (../shared/traces), with ``builtin:default``.

Each session's turns and results go straight through ``LoopDetector``, with
the error keys from ``policy.runtime.signatures.diagnose`` and state changes decided
as the guard does (a successful write or edit; a command matching the tool's
``mutates_when``).  No session may be stopped, the real loops the traces'
README names must warn, and every warning must be one a person has read and
agreed with (listed below with the reason).  The guard's own end-to-end
replay is ``tests/test_traces.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.decision import Decision
from policy.model.events import ToolCall, ToolResult
from policy.runtime.loops.detector import LoopDetector
from policy.runtime.loops.state import ScopeState
from policy.runtime.signatures import diagnose

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
SESSIONS = sorted(TRACES.rglob("*.jsonl"))

pytestmark = pytest.mark.skipif(not SESSIONS, reason=f"no traces at {TRACES}")

Warning = tuple[str, str, str]
"""(session, call id, rule)."""

NAMED_LOOPS: dict[Warning, str] = {
    ("swe-agent/ctf__crypto__eps.jsonl", "c12", "loop repeat"):
        "the third identical `submit` after two 'Wrong flag!' answers",
    ("openhands/resolver-mock__Add_a_toggle_for_dark_mode.jsonl", "c7", "loop error_streak"):
        "the third edit in a row rejected for the syntax error at App.tsx:22",
    ("openhands/multi_swe_bench__ponylang__ponyc-4593.jsonl", "c23", "loop repeat"):
        "the identical failing str_replace (empty old_str) sent a third time",
    ("swe-agent/testdata__pydicom__pydicom-1458.jsonl", "c8", "loop error_streak"):
        "the third edit of numpy_handler.py rejected in a row, the last one re-sent identically",
}
"""The loops the traces' README names, where the detector warns on them."""

OTHER_REVIEWED: dict[Warning, str] = {
    ("openhands/multi_swe_bench__ponylang__ponyc-4593.jsonl", "c33", "loop repeat"):
        "a third identical str_replace whose old_str is not in the file, same error each time",
    ("openhands/multi_swe_bench__ponylang__ponyc-4595.jsonl", "c9", "loop repeat"):
        "a third full view of parser.c, clipped the same way; the tool said to grep and view a range",
    ("openhands/multi_swe_bench__ponylang__ponyc-4588.jsonl", "c33", "loop error_streak"):
        "`make` failed three times in a row on the same missing build directory (make clean, rm -rf build)",
}


def replay(policy: CompiledPolicy, detector: LoopDetector, path: Path) -> list[Decision]:
    state = ScopeState()
    calls: dict[str, ToolCall] = {}
    decisions = []
    for line in path.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["type"] == "turn":
            batch = [ToolCall(id=c["id"], name=c["tool"], args=c["args"]) for c in event["calls"]]
            calls.update((call.id, call) for call in batch)
            decisions.append(detector.on_turn(state, batch))
        elif event["type"] == "result":
            call = calls[event["id"]]
            result = ToolResult(event["content"], event["status"])
            diagnosis = diagnose(policy, call, result)
            decisions.append(detector.on_result(
                state, call, result, failed=diagnosis.failed,
                error_key=diagnosis.key if diagnosis.failed else None,
                state_changed=not diagnosis.failed and changes_state(policy, call),
            ))
    return [decision for decision in decisions if decision.action != "allow"]


def changes_state(policy: CompiledPolicy, call: ToolCall) -> bool:
    spec = policy.tool(call.name)
    if spec.role in ("write", "edit", "multiedit"):
        return True
    command = spec.arg("command", call.args)
    return spec.mutates_when is not None and isinstance(command, str) and spec.mutates_when.search(command)


@pytest.fixture(scope="module")
def decisions() -> dict[str, list[Decision]]:
    policy = load_policy("builtin:default")
    detector = LoopDetector(policy)
    return {str(path.relative_to(TRACES)): replay(policy, detector, path) for path in SESSIONS}


def warnings(decisions: dict[str, list[Decision]]) -> dict[Warning, Decision]:
    return {
        (session, decision.call_id or "", str(decision.rule)): decision
        for session, found in decisions.items()
        for decision in found
        if decision.action == "warn"
    }


def test_all_33_sessions_replay(decisions: dict[str, list[Decision]]) -> None:
    assert len(decisions) == 33


def test_no_session_is_stopped(decisions: dict[str, list[Decision]]) -> None:
    stopped = {session: [d.hint for d in found if d.action == "stop"] for session, found in decisions.items()}
    assert {session: hints for session, hints in stopped.items() if hints} == {}


@pytest.mark.parametrize("loop", sorted(NAMED_LOOPS), ids=lambda loop: f"{loop[0]}:{loop[1]}")
def test_each_named_loop_warns(decisions: dict[str, list[Decision]], loop: Warning) -> None:
    assert loop in warnings(decisions), NAMED_LOOPS[loop]


def test_every_warning_is_one_a_person_reviewed(decisions: dict[str, list[Decision]]) -> None:
    found = warnings(decisions)
    unreviewed = {key: found[key].hint for key in found.keys() - NAMED_LOOPS.keys() - OTHER_REVIEWED.keys()}
    assert unreviewed == {}, "read them; if a person watching would agree, add them to OTHER_REVIEWED"
    assert found.keys() == NAMED_LOOPS.keys() | OTHER_REVIEWED.keys()


def test_each_warning_says_what_repeated_and_how_often(decisions: dict[str, list[Decision]]) -> None:
    for (session, call_id, _), decision in warnings(decisions).items():
        metadata = decision.metadata
        assert metadata["count"] >= metadata["warn"], (session, call_id)
        assert metadata["call"] and decision.hint, (session, call_id)
        if metadata["layer"] == "repeat":
            assert metadata["same_result"] is True and metadata["result_excerpt"], (session, call_id)
        if metadata["layer"] == "error_streak":
            assert metadata["signature"] and metadata["excerpt"], (session, call_id)

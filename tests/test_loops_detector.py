"""Turn-level loop layers (repeat, frequency) and the decision-ordering rules of docs/design.md."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

import pytest

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy, FrequencyRule
from policy.model.decision import RuleRef
from policy.model.events import ToolCall
from policy.model.variables import call_summary
from policy.runtime.loops.detector import LoopDetector
from policy.runtime.loops.finding import Finding
from policy.runtime.loops.frequency import FrequencyLayer, FrequencyState
from policy.runtime.loops.state import ScopeState

_ids = itertools.count(1)

ORDERING = """
loop repeat { window 10; warn 2; stop 4 }
loop frequency { window 6; warn 3; stop 5; tool ls { warn 2; stop 3 } }
"""


def load(tmp_path: Path, text: str) -> CompiledPolicy:
    path = tmp_path / "loops.policy"
    path.write_text(text, encoding="utf-8")
    return load_policy(path)


def call(tool: str = "bash", arg: str | None = None) -> ToolCall:
    """A call; without ``arg`` every call is distinct (so ``repeat`` ignores it)."""
    number = next(_ids)
    return ToolCall(id=f"c{number}", name=tool, args={"arg": arg if arg is not None else f"unique-{number}"})


@pytest.fixture
def ordering(tmp_path: Path) -> tuple[LoopDetector, ScopeState]:
    return LoopDetector(load(tmp_path, ORDERING)), ScopeState()


@pytest.fixture
def repeat_only(tmp_path: Path) -> tuple[LoopDetector, ScopeState]:
    return LoopDetector(load(tmp_path, "loop repeat { window 10; warn 2; stop 4 }")), ScopeState()


def frequency_count(detector: LoopDetector, state: ScopeState, tool: str) -> int:
    tools = state.frequency.tools
    return state.frequency.window.count(chr(tools.index(tool))) if tool in tools else 0


# --- repeat -------------------------------------------------------------------------


def test_repeat_warns_once_at_warn_and_stops_at_stop(repeat_only: tuple[LoopDetector, ScopeState]) -> None:
    detector, state = repeat_only
    actions = [detector.on_turn(state, [call("bash", "make")]).action for _ in range(5)]
    assert actions == ["allow", "warn", "allow", "stop", "stop"]


def test_repeat_counts_only_within_the_window(repeat_only: tuple[LoopDetector, ScopeState]) -> None:
    detector, state = repeat_only
    detector.on_turn(state, [call("bash", "make")])
    for _ in range(9):  # the first `make` slides out of the 10-turn window
        detector.on_turn(state, [call()])
    assert detector.on_turn(state, [call("bash", "make")]).action == "allow"
    assert detector.on_turn(state, [call("bash", "make")]).action == "warn"


def test_repeat_warns_again_once_the_key_has_left_the_window(
    repeat_only: tuple[LoopDetector, ScopeState],
) -> None:
    detector, state = repeat_only
    assert [detector.on_turn(state, [call("bash", "make")]).action for _ in range(2)] == ["allow", "warn"]
    for _ in range(10):
        detector.on_turn(state, [call()])
    assert state.repeat.warned == []
    assert [detector.on_turn(state, [call("bash", "make")]).action for _ in range(2)] == ["allow", "warn"]


def test_a_repeat_mark_outlives_one_of_its_entries_leaving_the_window(
    repeat_only: tuple[LoopDetector, ScopeState],
) -> None:
    detector, state = repeat_only
    assert [detector.on_turn(state, [call("bash", "make")]).action for _ in range(2)] == ["allow", "warn"]
    for _ in range(9):  # the first `make` leaves the 10-turn window, the second is still in it
        detector.on_turn(state, [call()])
    assert len(state.repeat.warned) == 1
    assert detector.on_turn(state, [call("bash", "make")]).action == "allow"  # still marked: no warning again
    for _ in range(10):  # now every `make` has left
        detector.on_turn(state, [call()])
    assert state.repeat.warned == []


def test_a_batch_is_the_same_in_any_order_but_not_with_other_calls(
    repeat_only: tuple[LoopDetector, ScopeState],
) -> None:
    detector, state = repeat_only
    detector.on_turn(state, [call("bash", "a"), call("bash", "b")])
    three = [call("bash", "b"), call("bash", "a"), call("bash", "a")]
    assert detector.on_turn(state, three).action == "allow"
    assert detector.on_turn(state, [call("bash", "b"), call("bash", "a")]).action == "warn"


def test_a_repeat_decision_names_the_first_call_and_what_repeated(
    repeat_only: tuple[LoopDetector, ScopeState],
) -> None:
    detector, state = repeat_only
    detector.on_turn(state, [call("bash", "make"), call("bash", "test")])
    first, second = call("bash", "test"), call("bash", "make")
    decision = detector.on_turn(state, [first, second])
    assert decision.action == "warn"
    assert decision.call_id == first.id
    assert decision.rule is not None and str(decision.rule) == "loop repeat"
    assert decision.metadata["layer"] == "repeat"
    assert decision.metadata["call"] == 'bash {"arg": "test"}'
    assert {k: decision.metadata[k] for k in ("count", "warn", "stop", "window")} == {
        "count": 2, "warn": 2, "stop": 4, "window": 10}
    assert decision.metadata["batch_size"] == 2
    assert decision.metadata["same_result"] is False  # no results seen yet
    assert decision.hint == (
        '[policy] loop repeat warn: bash {"arg": "test"} was made 2 times within the last 10 turns '
        "(warn at 2, stop at 4)."
    )


def test_the_hint_template_sees_the_common_and_the_repeat_variables(tmp_path: Path) -> None:
    policy = load(tmp_path, '''
policy "tpl" { }
loop repeat { window 5; warn 2; stop 3; hint r }
hint r """{{ rule }}|{{ rule_kind }}|{{ rule_name }}|{{ action }}|{{ tool }}|{{ args.command }}\
|{{ call }}|{{ call_id }}|{{ policy }}|{{ count }}/{{ warn }}/{{ stop }}/{{ window }}\
|{{ same_result }}|{{ result_excerpt }}"""
''')
    detector, state = LoopDetector(policy), ScopeState()
    detector.on_turn(state, [ToolCall(id="a", name="bash", args={"command": "ls"})])
    decision = detector.on_turn(state, [ToolCall(id="b", name="bash", args={"command": "ls"})])
    assert decision.hint == 'loop repeat|loop|repeat|warn|bash|ls|bash {"command": "ls"}|b|tpl|2/2/3/5|False|'


def test_a_loop_hint_renders_through_its_compiled_program_with_the_same_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every variable but ``rule`` and ``args`` reaches the compiled program as a plain dict (no
    ``HintVariables``, no ``render_checked``), with the values ``HintVariables`` gives."""
    policy = load(tmp_path, '''
policy "tpl" { }
loop repeat { window 5; warn 2; stop 3; hint r }
hint r """{{ rule_kind }}|{{ rule_name }}|{{ action }}|{{ tool }}|{{ call }}|{{ call_id }}|{{ policy }}\
|{{ count }}/{{ warn }}/{{ stop }}/{{ window }}|{{ same_result }}|{{ result_excerpt }}"""
''')
    detector, state = LoopDetector(policy), ScopeState()
    calls = [ToolCall(id=f"c{n}", name="bash", args={"command": "ls"}) for n in range(3)]
    decisions = []
    for number, made in enumerate(calls):
        decisions.append(detector.on_turn(state, [made]))
        if number == 0:  # from here on, any render_checked is a failure
            monkeypatch.setattr("policy.model.hint_template.HintTemplate.render_checked",
                                lambda *args: pytest.fail("rendered through render_checked"))
    warn, stop = decisions[1:]
    assert warn.hint == 'loop|repeat|warn|bash|bash {"command": "ls"}|c1|tpl|2/2/3/5|False|'
    assert stop.hint == 'loop|repeat|stop|bash|bash {"command": "ls"}|c2|tpl|3/2/3/5|False|'
    assert "hint_fallback" not in stop.metadata
    later = ScopeState()  # a warning decided without its text, rendered when it is delivered
    detector.on_turn(later, [calls[0]])
    unrendered = detector.on_turn(later, [calls[1]], render=False)
    assert unrendered.hint is None
    assert detector.render(unrendered, calls[1]).hint == warn.hint


# --- frequency ----------------------------------------------------------------------


def test_frequency_counts_each_tool_with_its_own_limits(ordering: tuple[LoopDetector, ScopeState]) -> None:
    detector, state = ordering
    assert [detector.on_turn(state, [call("bash")]).action for _ in range(3)] == ["allow", "allow", "warn"]
    assert [detector.on_turn(state, [call("ls")]).action for _ in range(2)] == ["allow", "warn"]
    decision = detector.on_turn(state, [call("ls")])
    assert decision.action == "stop"
    assert decision.metadata["layer"] == "frequency" and decision.metadata["tool"] == "ls"
    assert (decision.metadata["count"], decision.metadata["warn"], decision.metadata["stop"]) == (3, 2, 3)


def test_frequency_window_slides_and_a_decayed_burst_can_warn_again(
    ordering: tuple[LoopDetector, ScopeState],
) -> None:
    detector, state = ordering
    assert [detector.on_turn(state, [call("bash")]).action for _ in range(3)] == ["allow", "allow", "warn"]
    for tool in ("grep", "grep", "cat", "cat", "sed", "sed"):  # 6 calls later the bash burst is gone
        detector.on_turn(state, [call(tool)])
    assert state.frequency.warned == ""
    assert frequency_count(detector, state, "bash") == 0
    assert "bash" not in state.frequency.tools  # its slot was freed
    assert [detector.on_turn(state, [call("bash")]).action for _ in range(3)] == ["allow", "allow", "warn"]


def test_frequency_window_is_never_shorter_than_the_largest_stop() -> None:
    rule = FrequencyRule(ref=RuleRef("loop", "frequency"), window=3, warn=2, stop=5)
    layer, state = FrequencyLayer(rule), FrequencyState()
    findings = [layer.on_turn(state, [call("bash")], ["bash {}"]) for _ in range(5)]
    assert layer.window == 5
    assert [f.action if f else "allow" for f in findings] == ["allow", "warn", "warn", "warn", "stop"]


# --- decision ordering (docs/design.md) -----------------------------------------------------------


def test_severity_first_a_frequency_stop_outranks_a_repeat_warning(
    ordering: tuple[LoopDetector, ScopeState],
) -> None:
    detector, state = ordering
    detector.on_turn(state, [call("ls", "x")])
    assert detector.on_turn(state, [call("ls", "y")]).action == "warn"  # ls: 2 (frequency)
    decision = detector.on_turn(state, [call("ls", "x")])  # repeat: 2 (warn), ls: 3 (stop)
    assert decision.action == "stop" and str(decision.rule) == "loop frequency"
    assert state.repeat.warned == []  # the repeat warning was not selected, so not marked


def test_a_warning_candidate_never_short_circuits_frequency_accounting(
    ordering: tuple[LoopDetector, ScopeState],
) -> None:
    detector, state = ordering
    batch = [call("bash", "a"), call("grep", "b"), call("cat", "c")]
    detector.on_turn(state, batch)
    decision = detector.on_turn(state, [call("bash", "a"), call("grep", "b"), call("cat", "c")])
    assert decision.action == "warn" and str(decision.rule) == "loop repeat"
    assert len(state.frequency.window) == 6  # every call of the warned batch was counted
    assert [frequency_count(detector, state, tool) for tool in ("bash", "grep", "cat")] == [2, 2, 2]


def test_a_hard_limit_stops_scanning_at_once(ordering: tuple[LoopDetector, ScopeState]) -> None:
    detector, state = ordering
    detector.on_turn(state, [call("ls"), call("ls")])
    decision = detector.on_turn(state, [call("ls"), call("bash"), call("bash")])
    assert decision.action == "stop" and decision.metadata["tool"] == "ls"
    assert frequency_count(detector, state, "bash") == 0  # the rejected batch's later calls were not counted


def test_a_repeat_stop_rejects_the_batch_before_frequency_counts_it(
    ordering: tuple[LoopDetector, ScopeState],
) -> None:
    detector, state = ordering
    for _ in range(3):
        detector.on_turn(state, [call("bash", "make")])
    assert detector.on_turn(state, [call("bash", "make")]).action == "stop"
    assert frequency_count(detector, state, "bash") == 3


def test_only_the_selected_warning_is_marked_and_logged(
    ordering: tuple[LoopDetector, ScopeState], caplog: pytest.LogCaptureFixture
) -> None:
    detector, state = ordering
    detector.on_turn(state, [call("ls", "x")])
    with caplog.at_level(logging.INFO, logger="policy.loops"):
        decision = detector.on_turn(state, [call("ls", "x")])  # repeat: 2 (warn), ls: 2 (warn)
    assert str(decision.rule) == "loop repeat"  # repeat precedes frequency when nothing stops
    logged = [record.getMessage().split(":")[0] for record in caplog.records]
    assert logged == [f"loop repeat warn on call {decision.call_id}"]
    assert state.frequency.warned == ""  # the frequency candidate was not marked


def test_repeat_warnings_precede_frequency_warnings(ordering: tuple[LoopDetector, ScopeState]) -> None:
    detector, state = ordering
    detector.on_turn(state, [call("bash", "a"), call("bash", "b")])
    decision = detector.on_turn(state, [call("bash", "a"), call("bash", "b")])  # repeat 2; bash 3, 4 (>= 3)
    assert str(decision.rule) == "loop repeat"
    assert state.frequency.warned == ""
    follow_up = detector.on_turn(state, [call("bash")])  # bash 5: its stop
    assert follow_up.action == "stop" and str(follow_up.rule) == "loop frequency"


def test_the_first_frequency_crossing_in_call_order_wins_and_the_others_warn_later(
    ordering: tuple[LoopDetector, ScopeState],
) -> None:
    detector, state = ordering
    detector.on_turn(state, [call("bash"), call("bash"), call("ls")])
    decision = detector.on_turn(state, [call("ls"), call("bash")])  # ls crosses 2, then bash crosses 3
    assert decision.metadata["tool"] == "ls" and decision.call_id is not None
    assert frequency_count(detector, state, "bash") == 3  # bash was still counted
    later = detector.on_turn(state, [call("bash")])
    assert later.action == "warn" and later.metadata["tool"] == "bash" and later.metadata["count"] == 4


def test_a_burst_that_decays_within_the_batch_leaves_no_stale_mark(tmp_path: Path) -> None:
    detector = LoopDetector(load(tmp_path, "loop frequency { window 4; warn 2; stop 4 }"))
    state = ScopeState()
    detector.on_turn(state, [call("grep"), call("t")])
    decision = detector.on_turn(state, [call("t"), call("u"), call("u"), call("u")])
    assert decision.action == "warn" and decision.metadata["tool"] == "t"
    assert frequency_count(detector, state, "t") == 1  # the burst slid out within the batch
    assert state.frequency.warned == ""
    again = detector.on_turn(state, [call("t"), call("t")])
    assert again.action == "warn" and again.metadata["tool"] == "t"


# --- edges --------------------------------------------------------------------------


def test_an_empty_batch_changes_nothing(ordering: tuple[LoopDetector, ScopeState]) -> None:
    detector, state = ordering
    assert detector.on_turn(state, []).action == "allow"
    assert state == ScopeState()


def test_a_policy_without_loop_rules_allows_everything(tmp_path: Path) -> None:
    detector, state = LoopDetector(load(tmp_path, 'policy "none" { }')), ScopeState()
    assert {detector.on_turn(state, [call("bash", "same")]).action for _ in range(50)} == {"allow"}


@pytest.mark.parametrize("length", [0, 10, 78, 79, 80, 81, 159, 160, 161, 400])
@pytest.mark.parametrize("limit", [1, 2, 80, 160, 200])
def test_a_findings_call_text_is_the_call_summary_it_would_be_made_as(length: int, limit: int) -> None:
    """One summary per finding serves its log line, hint and metadata; a shorter one is cut from it."""
    tool_call = ToolCall(id="c1", name="bash", args={"command": "x" * length})
    finding = Finding("repeat", "warn", RuleRef("loop", "repeat"), None, tool_call, {}, lambda f: "")
    assert finding.call_text(limit) == call_summary(tool_call, limit)
    assert finding.call_text() == call_summary(tool_call)


def test_the_log_line_names_the_call_but_keeps_its_arguments_out(
    ordering: tuple[LoopDetector, ScopeState], caplog: pytest.LogCaptureFixture
) -> None:
    detector, state = ordering
    secret = call("bash", "curl -H 'Authorization: Bearer s3cr3t' https://api")
    with caplog.at_level(logging.INFO, logger="policy.loops"):
        decision = detector.on_turn(state, [secret])
        decision = detector.on_turn(state, [ToolCall("c-again", "bash", secret.args)])
    assert decision.action == "warn"
    assert [r.getMessage() for r in caplog.records] == ["loop repeat warn on call c-again: bash, count 2"]

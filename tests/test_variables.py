"""Hint variables: the common ones, computed only when a template reads them."""

from __future__ import annotations

from policy.model.decision import RuleRef
from policy.model.events import ToolCall
from policy.model.hint_template import compile_hint
from policy.model.variables import COMMON_VARIABLES, HintVariables, call_summary

CALL = ToolCall(id="c1", name="bash", args={"command": "make", "description": "build"})
RULE = RuleRef("signature", "MAKE_FAILED")


def variables(**values: object) -> HintVariables:
    return HintVariables("team", RULE, "hint", CALL, values)


def test_every_common_variable_is_provided() -> None:
    provided = variables()
    assert all(name in provided for name in COMMON_VARIABLES)
    assert {name: provided[name] for name in COMMON_VARIABLES} == {
        "rule": "signature MAKE_FAILED",
        "rule_kind": "signature",
        "rule_name": "MAKE_FAILED",
        "action": "hint",
        "tool": "bash",
        "args": {"command": "make", "description": "build"},
        "call": call_summary(CALL),
        "call_id": "c1",
        "policy": "team",
    }


def test_a_variable_is_computed_when_first_read_and_kept() -> None:
    calls: list[str] = []

    def output() -> str:
        calls.append("output")
        return "the output"

    provided = HintVariables("team", RULE, "hint", CALL, {"count": 3}, {"output": output})
    assert {"output", "call", "args", "rule"}.isdisjoint(dict(provided))  # nothing computed yet
    assert provided["count"] == 3 and provided["tool"] == "bash"
    assert provided["output"] == provided["output"] == "the output"
    assert calls == ["output"]
    assert "call" in provided and "call" not in dict(provided)
    assert provided.get("nothing", "default") == "default" and "nothing" not in provided


def test_a_rules_own_values_win_over_the_common_ones() -> None:
    assert variables(tool="overridden")["tool"] == "overridden"


def test_a_template_reads_only_what_it_shows() -> None:
    provided = variables(count=3)
    hint = compile_hint("h", "{{ count }} times: {{ call }}")
    assert hint.render(provided) == f"3 times: {call_summary(CALL)}"
    assert "call" in dict(provided) and "args" not in dict(provided)


def test_a_template_reading_a_global_still_sees_it() -> None:
    hint = compile_hint("h", "{% for n in range(count) %}{{ n }}{% endfor %}")
    assert hint.render(variables(count=3)) == "012"

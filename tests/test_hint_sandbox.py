"""Hint templates are bounded and cannot change what they are given (issue 16, finding 6)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from policy.language.loader import load_policy
from policy.model.events import Scope, ToolCall, ToolResult
from policy.model.hint_sandbox import MAX_HINT_CHARS
from policy.runtime.guard import Guard

ROOT = Path(__file__).resolve().parent.parent

HOSTILE = {
    "nested huge ranges":
        "{% for i in range(99999) %}{% for j in range(99999) %}{{ i }}{% endfor %}{% endfor %}",
    "a doubling macro":
        "{% macro m(n) %}{% if n %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(60) }}",
    "a billion characters": "{{ 'a' * 10**9 }}",
    "a huge power": "{{ 2 ** (10 ** 6) }}",
    "a huge padding": "{{ 'x' | center(10**9) }}",
    "mutating the call's arguments": "{{ args.nested.list.append('planted') }}",
}


def _policy(tmp_path: Path, template: str) -> Path:
    path = tmp_path / "team.policy"
    path.write_text('tool bash { runs command=command }\n'
                    'signature BOOM { match /boom/; hint h }\n'
                    f'hint h """\n{template}\n"""\n', encoding="utf-8")
    return path


@pytest.mark.parametrize("template", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_template_past_a_bound_gives_the_plain_hint_and_says_so(tmp_path: Path, template: str) -> None:
    guard = Guard(load_policy(_policy(tmp_path, template)))
    args = {"command": "make", "nested": {"list": ["kept"]}}
    call = ToolCall(id="c1", name="bash", args=args)
    decision = guard.on_result(call, ToolResult(content="boom", status="error"), Scope("t", "r"))
    assert decision.signature == "BOOM"
    assert decision.hint is not None and decision.hint.startswith("[HINT] Policy rule `signature BOOM`")
    assert len(decision.hint) <= MAX_HINT_CHARS
    assert "hint_fallback" in decision.metadata
    assert args["nested"] == {"list": ["kept"]}


def test_constant_folding_cannot_hang_lint(tmp_path: Path) -> None:
    path = _policy(tmp_path, "{{ (9**9)**(9**9) }}")
    done = subprocess.run([sys.executable, "-m", "cli", "lint", str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ordinary_templates_are_untouched(tmp_path: Path) -> None:
    template = "{% for i in range(3) %}{{ i * 2 }} {% endfor %}{{ 2 ** 10 }}"
    guard = Guard(load_policy(_policy(tmp_path, template)))
    decision = guard.on_result(ToolCall(id="c1", name="bash", args={"command": "make"}),
                               ToolResult(content="boom", status="error"), Scope("t", "r"))
    assert decision.hint == "0 2 4 1024" and "hint_fallback" not in decision.metadata


def test_loops_over_a_long_output_spend_the_budget(tmp_path: Path) -> None:
    template = "{% for a in output %}{% for b in output %}{% endfor %}{% endfor %}done"
    guard = Guard(load_policy(_policy(tmp_path, template)))
    call = ToolCall(id="c1", name="bash", args={"command": "make"})
    decision = guard.on_result(call, ToolResult(content="boom " * 2000, status="error"), Scope("t", "r"))
    assert decision.signature == "BOOM"
    assert "steps" in decision.metadata["hint_fallback"]


def test_a_recursive_loop_is_refused_when_the_policy_is_checked(tmp_path: Path) -> None:
    path = _policy(tmp_path, "{% for x in args recursive %}{{ loop(x) }}{% endfor %}")
    done = subprocess.run([sys.executable, "-m", "cli", "lint", str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode != 0
    assert "recursive loops are not allowed" in done.stdout + done.stderr

"""Hint programs (``policy.model.hint_program``) render exactly what Jinja2 renders, or defer to it."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from policy.language.loader import load_policy
from policy.model.decision import RuleRef
from policy.model.events import ToolCall
from policy.model.hint_program import Unsupported, program_of, run
from policy.model.hint_template import (
    FILTERS,
    HintTemplate,
    compile_hint,
    environment,
    parse_bounded,
    template_variables,
)
from policy.model.variables import HintVariables
from policy.resources import builtin_policy_names, data_dir
from policy.testing.runner import run_test

ROOT = Path(__file__).resolve().parent.parent
HINT_CASES = Path(__file__).parent / "hint_cases"
SHIPPED = sorted(data_dir("hints").rglob("*.j2"))


def jinja2_text(source: str, context: dict[str, Any]) -> str | None:
    """What the sandbox renders (None: it fails, and the hint falls back)."""
    try:
        return environment().render_bounded(environment().from_string(parse_bounded(source)), context)
    except Exception:
        return None


def program_text(source: str, context: dict[str, Any]) -> str | None:
    """What the program renders (None: it defers to Jinja2)."""
    program = program_of(parse_bounded(source), frozenset(FILTERS))
    assert program is not None
    try:
        return run(program, context, frozenset(context) | template_variables(source), FILTERS)
    except Unsupported:
        return None


def test_most_shipped_templates_are_programs() -> None:
    programs = [path for path in SHIPPED if program_of(parse_bounded(path.read_text()), frozenset(FILTERS))]
    assert len(programs) >= 0.9 * len(SHIPPED)
    names = {str(path.relative_to(data_dir("hints"))) for path in programs}
    assert {"claude_code/syntax_error.j2", "claude_code/command_not_found.j2"} <= names


def recorded_renders(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every template and its variables as the shipped policies' and the hint cases' tests render them."""
    renders: list[tuple[str, dict[str, Any]]] = []
    original = HintTemplate.render_checked

    def recording(self: HintTemplate, variables: Any) -> Any:
        context = {name: variables[name] for name in self.variables if name in variables}
        renders.append((self.source, context))
        return original(self, variables)

    monkeypatch.setattr(HintTemplate, "render_checked", recording)
    policies = [load_policy(f"builtin:{name}") for name in builtin_policy_names()]
    policies += [load_policy(path) for path in sorted(HINT_CASES.glob("*.policy"))]
    claude_code = load_policy("builtin:claude-code")
    for policy in policies:
        for test in policy.tests:
            run_test(policy, test)
            run_test(claude_code, test)  # the default policy's cases under Claude Code's hints too
    return renders


def test_every_recorded_render_is_the_same_as_jinja2s(monkeypatch: pytest.MonkeyPatch) -> None:
    renders = recorded_renders(monkeypatch)
    answered = 0
    for source, context in renders:
        if program_of(parse_bounded(source), frozenset(FILTERS)) is None:
            continue
        expected, text = jinja2_text(source, context), program_text(source, context)
        if text is not None:
            assert text == expected, (source, context)
            answered += 1
    assert len(renders) > 100 and answered > 0.8 * len(renders)


VALUES: list[Any] = [None, "", "x", "python", "json", "Write", "Bash", "app.py", "src/app.py", "a b", 0, 1, 7,
                     True, False, [], ["a", "b"], {}, {"path": "app.py"}, "yaml", "No module named 'yaml'"]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: str(path.relative_to(data_dir("hints"))))
def test_random_variables_render_the_same_or_defer(path: Path) -> None:
    source = path.read_text()
    if program_of(parse_bounded(source), frozenset(FILTERS)) is None:
        pytest.skip("not a program")
    names = sorted(template_variables(source))
    chance = random.Random(path.name)
    for _ in range(60):
        context = {name: chance.choice(VALUES) for name in names if chance.random() < 0.9}
        text = program_text(source, context)
        if text is not None:
            assert text == jinja2_text(source, context), context


def test_a_cached_template_reads_only_the_variables_its_render_reaches() -> None:
    computed: list[str] = []
    variables = HintVariables("p", RuleRef("loop", "repeat"), "warn", ToolCall("c1", "bash", {}),
                              lazy={"costly": lambda: computed.append("costly") or "x"})
    source = "{% if action == 'stop' %}{{ costly | truncate_middle(20) }}{% else %}{{ tool }}{% endif %}"
    cached = compile_hint("plain", source).with_code()
    assert cached.program is not None
    assert cached.render(variables) == "bash" and computed == []
    stopping = HintVariables("p", RuleRef("loop", "repeat"), "stop", ToolCall("c1", "bash", {}),
                             lazy={"costly": lambda: "y" * 30})
    assert cached.render(stopping) == compile_hint("plain", source).render(stopping) == "yyyyyyyy … yyyyyyyyy"


def test_deeply_nested_arguments_are_left_to_jinja2() -> None:
    nested: Any = "end"
    for _ in range(5000):
        nested = {"a": nested}
    source = "{% if args %}[HINT] {{ tool }} was called with arguments.{% endif %}"
    assert program_text(source, {"args": nested, "tool": "Write"}) is None
    shallow = {"args": {"a": {"b": 1}}, "tool": "Write"}
    expected = "[HINT] Write was called with arguments."
    assert program_text(source, shallow) == jinja2_text(source, shallow) == expected


def test_a_hook_process_renders_a_cached_hint_without_jinja2(tmp_path: Path) -> None:
    """The fallback path, as Claude Code runs it twice: the second event's hint comes from the cache's
    program, and the same text as the first's (rendered after compiling, through Jinja2)."""
    event = {"session_id": "s-1", "cwd": str(tmp_path), "hook_event_name": "PreToolUse", "tool_name": "Write",
             "tool_input": {"file_path": "app.py", "content": "def f(:\n    pass\n"}, "tool_use_id": "t-1"}
    show = ("import json, sys\nfrom policy.hooks.respond import Responder\n"
            "reply = Responder().respond('builtin:claude-code', sys.stdin.buffer.read())\n"
            "print(json.dumps([reply.stdout, 'jinja2' in sys.modules]))")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "PATH": "/usr/bin:/bin"}
    answers = []
    for number in (1, 2):
        stdin = json.dumps({**event, "session_id": f"s-{number}"})
        done = subprocess.run([sys.executable, "-c", show], input=stdin, capture_output=True, text=True,
                              cwd=ROOT, env=env, check=True)
        answers.append(json.loads(done.stdout))
    (first, compiled_with_jinja2), (second, imported_jinja2) = answers
    assert compiled_with_jinja2 and not imported_jinja2
    assert first == second and json.loads(second)["hookSpecificOutput"]["permissionDecision"] == "deny"

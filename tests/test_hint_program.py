"""A hint program's two executors render exactly what Jinja2 renders, or leave the render to it.

One program per template (``policy.model.hint_program.program_of``), run two
ways: interpreted on plain data (``run``, no Jinja2) and compiled into a Python
function (``policy.model.hint_compiler.compiled``).  Every shipped template is
rendered by each executor and by Jinja2 over many variable assignments (the
values a rule provides, and odd ones: missing names, empty texts, other
types), and every render the shipped policies' tests make is replayed; the
texts must be byte-identical, and wherever Jinja2 fails an executor must step
aside.  ``tests/test_hint_snapshots.py`` covers the realistic cases end to end.
"""

from __future__ import annotations

import io
import json
import pickle
import random
import re
import subprocess
import sys
import tokenize
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from jinja2 import Template
from jinja2.sandbox import SandboxedEnvironment

from policy.language.loader import load_policy
from policy.model import hint_compiler, hint_program, hint_sandbox
from policy.model.decision import RuleRef
from policy.model.events import ToolCall
from policy.model.hint_compiler import Render, compiled
from policy.model.hint_program import Program, Unsupported, program_of, run
from policy.model.hint_sandbox import MAX_HINT_CHARS
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
MISSING = object()
POOL: list[Any] = [MISSING, None, "", "stop", "warn", "hint", "x", "python", "json", "Write", "Bash",
                   "app.py", "src/app.py", "a b", "a {b} }{", "line\nnext", "yaml", "No module named 'yaml'",
                   0, 1, 3, 7, 2.5, True, False, [], ["a", "b"], ("t",), {}, {"k": "v"}, {"path": "app.py"}]
"""Values each variable takes (``MISSING``: not given at all)."""


def program(source: str) -> Program | None:
    return program_of(parse_bounded(source), frozenset(FILTERS))


def function(source: str) -> Render | None:
    """The compiled function of a template's program (None: it has no program, or it is declined)."""
    built = program(source)
    return None if built is None else compiled(built, environment(), MAX_HINT_CHARS)


def jinja2_text(source: str, context: dict[str, Any], template: Template | None = None) -> str | None:
    """What the sandbox renders (None: it fails, and the hint falls back)."""
    try:
        template = template or environment().from_string(parse_bounded(source))
        return environment().render_bounded(template, context)
    except Exception:
        return None


def interpreted(source: str, context: dict[str, Any], built: Program | None = None) -> str | None:
    """What the interpreter renders (None: it leaves the render to Jinja2)."""
    built = built or program(source)
    assert built is not None, "the template has no program"
    try:
        return run(built, context, frozenset(context) | template_variables(source), FILTERS)
    except Unsupported:
        return None


def relative(path: Path) -> str:
    return path.relative_to(data_dir("hints")).as_posix()


def test_most_shipped_templates_are_programs_and_most_of_those_compile() -> None:
    programs = {relative(path) for path in SHIPPED if program(path.read_text())}
    assert len(programs) >= 0.9 * len(SHIPPED)
    assert {"claude_code/syntax_error.j2", "claude_code/command_not_found.j2"} <= programs
    functions = {relative(path) for path in SHIPPED if function(path.read_text())}
    assert {"loop_repeat.j2", "loop_frequency.j2", "claude_code/loop_repeat.j2"} <= functions
    assert len(functions) >= 0.75 * len(SHIPPED)


def _assignments(names: list[str], seed: str, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        values = {name: rng.choice(POOL) for name in names}
        cases.append({name: value for name, value in values.items() if value is not MISSING})
    return cases


@pytest.mark.parametrize("path", [path for path in SHIPPED if program(path.read_text())], ids=relative)
def test_a_shipped_template_renders_byte_identical_to_jinja2_or_defers(path: Path) -> None:
    source = path.read_text()
    built = program(source)
    fast = function(source)
    template = environment().from_string(parse_bounded(source))
    answered = {"interpreted": 0, "compiled": 0}
    for context in _assignments(sorted(template_variables(source)), path.name, 400):
        expected = jinja2_text(source, context, template)
        text = interpreted(source, context, built)
        if text is not None:
            answered["interpreted"] += 1
            assert text == expected, ("interpreted", context)
        text = fast(context) if fast is not None else None
        if text is not None:
            answered["compiled"] += 1
            assert text == expected, ("compiled", context)
        # Where an executor steps aside, Jinja2 renders or fails on its own; where Jinja2 fails,
        # both always step aside (the asserts above).
    assert answered["interpreted"] > 0 and (fast is None or answered["compiled"] > 0)


def recorded_renders(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every template and its variables as the shipped policies' and the hint cases' tests render them."""
    renders: list[tuple[str, dict[str, Any]]] = []
    original = HintTemplate.render_checked

    def recording(self: HintTemplate, variables: Any) -> Any:
        context = {name: variables[name] for name in self.variables if name in variables}
        renders.append((self.source, context))
        return original(self, variables)

    monkeypatch.setattr(HintTemplate, "render_checked", recording)
    compiled_program = HintTemplate.compiled_program

    def recording_program(self: HintTemplate) -> Any:  # the loop layers' render (plain variables)
        program = compiled_program(self)
        if program is None:
            return None

        def render(variables: Any) -> Any:
            context = {name: variables[name] for name in self.variables if name in variables}
            renders.append((self.source, context))
            return program(variables)

        return render

    monkeypatch.setattr(HintTemplate, "compiled_program", recording_program)
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
    answered = {"interpreted": 0, "compiled": 0}
    for source, context in renders:
        if program(source) is None:
            continue
        expected = jinja2_text(source, context)
        text = interpreted(source, context)
        if text is not None:
            assert text == expected, ("interpreted", source, context)
            answered["interpreted"] += 1
        fast = function(source)
        text = fast(context) if fast is not None else None
        if text is not None:
            assert text == expected, ("compiled", source, context)
            answered["compiled"] += 1
    assert len(renders) > 100
    assert answered["interpreted"] > 0.8 * len(renders) and answered["compiled"] > 0.5 * len(renders)


@pytest.mark.parametrize("source,context", [
    ("{% if a %}A{% elif b %}B{% else %}C{% endif %}", {"a": 0, "b": "y"}),
    ("{{ 1 < n <= 3 }} {{ n in (1, 2) }} {{ n not in (1, 2) }} {{ n != 2 }}", {"n": 2}),
    ("{{ a and b }}|{{ a or b }}|{{ not a }}", {"a": "", "b": [1]}),
    ("{{ 'yes' if a else 'no' }}{{ a ~ b ~ 3 }}", {"a": "x", "b": None}),
    ("{% set x = a ~ '!' %}{{ x }}{% if b %}{% set x = 'b' %}{% endif %}{{ x }}", {"a": "p", "b": True}),
    ("{% if a %}{% else %}{% set y = 1 %}{% endif %}{{ y is defined }}", {"a": 1}),
    ("{{ d.key }} {{ d['key'] }} {{ o.attr }} {{ seq[1] }}",
     {"d": {"key": "v"}, "o": SimpleNamespace(attr=4), "seq": ["a", "b"]}),
    ("{{ 1.0 }} {{ none }} {{ true }} {{ '{}' }} {{ '{0}' }}", {}),
    ("  {%- if a %}\n  x\n{% endif %}\n", {"a": 1}),
    ('{ "json": {} } {{ a }} }}{', {"a": "{}"}),
    ("{{ path | basename }} {{ text | truncate_middle(9) }} {{ d | json }} {{ m | pip_name }}",
     {"path": "a/b.py", "text": "abcdefghijklmnop", "d": {"b": [1], "a": "é"}, "m": "yaml.x"}),
    ("{{ x is none }} {{ y is defined }} {{ y is undefined }} {{ 'a' if x is none }}", {"x": None}),
    ("{{ {'a': n, 'b': [n, 2]} }} {{ [n] }} {{ (n,) }}", {"n": 1}),
    ("{{ s.startswith('ab') }} {{ s.split('-') }} {{ d.get('k', 'none') }} {{ s.upper() }}",
     {"s": "ab-cd", "d": {}}),
])
def test_each_expression_kind_renders_as_jinja2_does(source: str, context: dict[str, Any]) -> None:
    expected = jinja2_text(source, context)
    assert expected is not None
    text = interpreted(source, context)
    assert text == expected or (text is None and "o.attr" in source)  # the interpreter reads plain data only
    fast = function(source)
    assert fast is None or fast(context) == expected


@pytest.mark.parametrize("source", [
    "{% if a %}A{% endif %}{{ b.c }}", "{{ a ~ b }}", "{% set x = (a, b) %}{{ x[0] }}", "{{ 1 if a else 2 }}",
])
def test_the_compiler_compiles_text_branches_and_operators(source: str) -> None:
    assert function(source) is not None


@pytest.mark.parametrize("source", [
    "{{ a | basename }}", "{{ a is defined }}", "{{ s.upper() }}", "{{ [1, 2] }}", "{{ {'a': 1} }}",
    "{{ 'a' if b }}",
])
def test_the_compiler_declines_the_rest_of_the_subset(source: str) -> None:
    assert program(source) is not None and function(source) is None


def test_the_compiler_declines_an_operator_the_environment_intercepts() -> None:
    class Intercepting(SandboxedEnvironment):
        intercepted_unops = frozenset({"not "})  # Jinja2's name for `not`

        def call_unop(self, context: Any, operator: str, arg: Any) -> Any:
            return "INTERCEPTED"

    built = program("{{ not a }}")
    assert built is not None
    assert Intercepting().from_string("{{ not a }}").render(a=True) == "INTERCEPTED"
    assert compiled(built, Intercepting(), MAX_HINT_CHARS) is None
    assert compiled(built, SandboxedEnvironment(), MAX_HINT_CHARS) is not None


@pytest.mark.parametrize("source,context", [
    ("{{ missing }}", {}),  # a name nothing provides
    ("{{ range }}", {}),  # a global: left to Jinja2
    ("{{ d.nope }}", {"d": {}}),  # undefined attribute
    ("{{ o.__class__ }}", {"o": SimpleNamespace()}),  # the sandbox refuses it
    ("{{ n in 3 }}", {"n": 1}),  # a TypeError
    ("{{ text }}", {"text": "x" * (MAX_HINT_CHARS + 1)}),  # longer than the sandbox allows
])
def test_anything_unsure_is_left_to_jinja2(source: str, context: dict[str, Any]) -> None:
    fast = function(source)
    assert fast is not None and fast(context) is None
    assert interpreted(source, context) is None


@pytest.mark.parametrize("source", [
    "{{ x | upper }}", "{{ f() }}", "{% for i in items %}{{ i }}{% endfor %}", "{{ self }}",
    "{% set a, b = 1, 2 %}", "{{ x[1:] }}", "{{ a + b }}", "{{ x is string }}",
])
def test_templates_beyond_the_subset_have_no_program(source: str) -> None:
    assert program(source) is None


_GENERATED_NAMES = frozenset({"def", "make", "render", "try", "except", "Exception", "return", "None", "if",
                              "elif", "else", "and", "or", "not", "in", "pass", "str", "join", "append",
                              "limit", "v", "o", "t", "_len", "_attr", "_item", "_Locals"})
"""Every name the compiler writes; the rest of its code are the bound values' ``_N``."""


def test_no_template_text_is_compiled_as_python(monkeypatch: pytest.MonkeyPatch) -> None:
    sources: list[str] = []

    def recording(source: str, filename: str, mode: str) -> Any:
        sources.append(source)
        return compile(source, filename, mode)

    monkeypatch.setattr(hint_compiler, "compile", recording, raising=False)
    template = ("'); import os #{{ d[\"']) or (\" ~ x] }}{% set q = '\"\"\"' %}{{ q }}"
                "{% if a == 'exit()' %}{{ not a }}{% elif o.__name__ %}z{% endif %}")
    fast = function(template)
    assert fast is not None and len(sources) == 1
    for token in tokenize.generate_tokens(io.StringIO(sources[0]).readline):
        if token.type == tokenize.NAME:
            assert token.string in _GENERATED_NAMES or re.fullmatch(r"_[0-9]+", token.string), token
        literal = token.type in (tokenize.STRING, tokenize.NUMBER, tokenize.COMMENT)
        assert not literal or token.string == "''", token
    context = {"d": {"']) or (1": "k"}, "x": 1, "a": "exit()"}
    assert fast(context) == jinja2_text(template, context) == "'); import os #k\"\"\"" + "False"


def test_a_template_without_a_program_still_renders_through_jinja2() -> None:
    hint = compile_hint("upper", "{{ tool | upper }}!")
    assert hint.render({"tool": "bash"}) == "BASH!"


def test_with_jinja2_loaded_a_render_is_compiled_unless_declined(monkeypatch: pytest.MonkeyPatch) -> None:
    interpretations: list[str] = []

    def counting(built: Program, *args: Any) -> str:
        interpretations.append(built[0])
        return run(built, *args)

    monkeypatch.setattr("policy.model.hint_template.run", counting)
    compiles = compile_hint("loop", "{% if count > 2 %}again: {{ tool }}{% endif %}")
    declined = compile_hint("filtered", "{{ tool | basename }}")
    for number in range(3):
        assert compiles.render({"count": 3 + number, "tool": "bash"}) == "again: bash"
        assert declined.render({"tool": "a/b"}) == "b"
    assert len(interpretations) == 3  # the declined one's, each time


def test_a_cached_template_keeps_its_program_and_renders_without_parsing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    source = (data_dir("hints") / "loop_repeat.j2").read_text()
    cached = pickle.loads(pickle.dumps(compile_hint("loop_repeat", source).with_code()))
    assert cached.program is not None and cached.program == program(source)
    names = compile_hint("loop_repeat", source).variables

    def no_parse(source: str) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr("policy.model.hint_template.parse_bounded", no_parse)
    variables = HintVariables("deerflow", RuleRef("loop", "repeat"), "stop",
                              ToolCall("c1", "bash", {"command": "pytest -q"}),
                              {"count": 5, "warn": 3, "stop": 5, "window": 20, "same_result": True,
                               "result_excerpt": "1 failed"})
    expected = jinja2_text(source, {name: variables[name] for name in names}, cached.template)
    assert expected is not None
    assert cached.render(variables) == expected.strip("\n")
    monkeypatch.setattr("policy.model.hint_template.jinja2_loaded", lambda: False)  # as in a hook process
    assert cached.render(variables) == expected.strip("\n")


@pytest.mark.parametrize("cached", [False, True], ids=["parsed", "cached"])
def test_a_render_reads_only_the_variables_it_reaches(cached: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[str] = []

    def costly() -> str:
        computed.append("costly")
        return "x"

    source = "{% if action == 'stop' %}{{ costly | truncate_middle(20) }}{% else %}{{ tool }}{% endif %}"
    plain = "{% if action == 'stop' %}{{ costly }}{% else %}{{ tool }}{% endif %}"
    for template in (source, plain):
        hint = compile_hint("plain", template)
        hint = hint.with_code() if cached else hint
        for loaded in (True, False):  # compiled, then interpreted
            monkeypatch.setattr("policy.model.hint_template.jinja2_loaded", lambda loaded=loaded: loaded)
            variables = HintVariables("p", RuleRef("loop", "repeat"), "warn", ToolCall("c1", "bash", {}),
                                      lazy={"costly": costly})
            assert hint.render(variables) == "bash"
    assert computed == []
    hint = compile_hint("plain", source).with_code()
    stopping = HintVariables("p", RuleRef("loop", "repeat"), "stop", ToolCall("c1", "bash", {}),
                             lazy={"costly": lambda: "y" * 30})
    assert hint.render(stopping) == compile_hint("plain", source).render(stopping) == "yyyyyyyy … yyyyyyyyy"


def test_a_program_is_plain_data() -> None:
    built = program("{% if a == 1 %}{{ b.c | basename }}{% endif %}")
    assert built is not None
    assert pickle.loads(pickle.dumps(built)) == built


def test_deeply_nested_arguments_are_left_to_jinja2() -> None:
    nested: Any = "end"
    for _ in range(5000):
        nested = {"a": nested}
    source = "{% if args %}[HINT] {{ tool }} was called with arguments.{% endif %}"
    assert interpreted(source, {"args": nested, "tool": "Write"}) is None
    shallow = {"args": {"a": {"b": 1}}, "tool": "Write"}
    expected = "[HINT] Write was called with arguments."
    assert interpreted(source, shallow) == jinja2_text(source, shallow) == expected


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


def test_the_interpreter_spends_the_sandboxs_budget() -> None:
    assert (hint_program.MAX_HINT_CHARS, hint_program.MAX_STEPS) == (hint_sandbox.MAX_HINT_CHARS,
                                                                     hint_sandbox.MAX_STEPS)
    within = program("{{ s.strip() }}" * hint_program.MAX_STEPS + "done")
    past = program("{{ s.strip() }}" * (hint_program.MAX_STEPS + 1) + "done")
    assert within is not None and past is not None
    assert run(within, {"s": ""}, frozenset({"s"}), FILTERS) == "done"
    with pytest.raises(Unsupported):
        run(past, {"s": ""}, frozenset({"s"}), FILTERS)

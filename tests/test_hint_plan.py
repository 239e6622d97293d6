"""The plan fast path renders exactly what Jinja2 renders, or leaves the render to Jinja2.

Every shipped template with a plan is rendered both ways over many variable
assignments (the values a rule provides, and odd ones: missing names, empty
texts, other types); the texts must be byte-identical, and wherever Jinja2
fails the plan must step aside.  ``tests/test_hint_snapshots.py`` covers the
realistic cases end to end.
"""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from jinja2 import Template

from policy.model.decision import RuleRef
from policy.model.events import ToolCall
from policy.model.hint_plan import Plan, plan_of, renderer
from policy.model.hint_sandbox import MAX_HINT_CHARS
from policy.model.hint_template import compile_hint, environment, parse_bounded
from policy.model.variables import HintVariables
from policy.resources import data_dir

SHIPPED = sorted(data_dir("hints").rglob("*.j2"))
MISSING = object()
POOL: list[Any] = [MISSING, "", "stop", "warn", "hint", "x", "a {b} }{", "line\nnext", 0, 1, 3, 2.5, True,
                   False, None, [], ["a", "b"], {"k": "v"}, ("t",)]
"""Values each variable takes (``MISSING``: not given at all)."""


def _jinja(source: str, context: dict[str, Any], template: Template | None = None) -> str | None:
    """Jinja2's own render (None when it fails)."""
    try:
        compiled = template or environment().from_string(parse_bounded(source))
        return environment().render_bounded(compiled, context)
    except Exception:
        return None


def _fast(source: str) -> Any:
    plan = plan_of(parse_bounded(source), environment())
    assert plan is not None, "the template has no plan"
    return renderer(plan, environment(), MAX_HINT_CHARS)


def _assignments(names: list[str], seed: str, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        values = {name: rng.choice(POOL) for name in names}
        cases.append({name: value for name, value in values.items() if value is not MISSING})
    return cases


def _planned(path: Path) -> bool:
    return plan_of(parse_bounded(path.read_text()), environment()) is not None


def test_most_shipped_templates_have_a_plan_and_the_loop_hints_do() -> None:
    planned = {path.relative_to(data_dir("hints")).as_posix() for path in SHIPPED if _planned(path)}
    assert {"loop_repeat.j2", "loop_frequency.j2", "claude_code/loop_repeat.j2"} <= planned
    assert len(planned) >= 0.75 * len(SHIPPED)


@pytest.mark.parametrize("path", [p for p in SHIPPED if _planned(p)],
                         ids=lambda p: p.relative_to(data_dir("hints")).as_posix())
def test_a_shipped_template_renders_byte_identical_to_jinja(path: Path) -> None:
    source = path.read_text()
    hint = compile_hint(path.stem, source)
    names = sorted(hint.variables)
    fast = _fast(source)
    template = environment().from_string(parse_bounded(source))
    rendered = 0
    for context in _assignments(names, path.name, 400):
        text = fast(context)
        expected = _jinja(source, context, template)
        if text is not None:
            rendered += 1
            assert text == expected, context
        # Where the plan steps aside, Jinja2 renders or fails on its own; where Jinja2 fails,
        # the plan always steps aside (the assert above).
    assert rendered > 0


@pytest.mark.parametrize("source,context", [
    ("{% if a %}A{% elif b %}B{% else %}C{% endif %}", {"a": 0, "b": "y"}),
    ("{{ 1 < n <= 3 }} {{ n in (1, 2) }} {{ n not in (1, 2) }} {{ n != 2 }}", {"n": 2}),
    ("{{ a and b }}|{{ a or b }}|{{ not a }}", {"a": "", "b": [1]}),
    ("{{ 'yes' if a else 'no' }}{{ a ~ b ~ 3 }}", {"a": "x", "b": None}),
    ("{% set x = a ~ '!' %}{{ x }}{% if b %}{% set x = 'b' %}{% endif %}{{ x }}", {"a": "p", "b": True}),
    ("{{ d.key }} {{ d['key'] }} {{ o.attr }} {{ seq[1] }}",
     {"d": {"key": "v"}, "o": SimpleNamespace(attr=4), "seq": ["a", "b"]}),
    ("{{ 1.0 }} {{ none }} {{ true }} {{ '{}' }} {{ '{0}' }}", {}),
    ("  {%- if a %}\n  x\n{% endif %}\n", {"a": 1}),
    ('{ "json": {} } {{ a }} }}{', {"a": "{}"}),
])
def test_each_expression_kind_renders_as_jinja_does(source: str, context: dict[str, Any]) -> None:
    assert _fast(source)(context) == _jinja(source, context)


@pytest.mark.parametrize("source,context", [
    ("{{ missing }}", {}),  # a name nothing provides
    ("{{ range }}", {}),  # a global: left to Jinja2
    ("{{ d.nope }}", {"d": {}}),  # undefined attribute
    ("{{ o.__class__ }}", {"o": SimpleNamespace()}),  # the sandbox refuses it
    ("{{ n in 3 }}", {"n": 1}),  # a TypeError
    ("{{ text }}", {"text": "x" * (MAX_HINT_CHARS + 1)}),  # longer than the sandbox allows
])
def test_anything_unsure_is_left_to_jinja(source: str, context: dict[str, Any]) -> None:
    assert _fast(source)(context) is None


@pytest.mark.parametrize("source", [
    "{{ x | upper }}", "{{ f() }}", "{% for i in items %}{{ i }}{% endfor %}", "{{ [1, 2] }}",
    "{{ self }}", "{% set a, b = 1, 2 %}", "{{ x[1:] }}", "{{ a + b }}",
])
def test_templates_beyond_the_plan_have_none(source: str) -> None:
    assert plan_of(parse_bounded(source), environment()) is None


def test_a_template_without_a_plan_still_renders_through_jinja() -> None:
    hint = compile_hint("upper", "{{ tool | upper }}!")
    assert hint.render({"tool": "bash"}) == "BASH!"


def test_a_cached_template_keeps_its_plan_and_renders_without_parsing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    source = (data_dir("hints") / "loop_repeat.j2").read_text()
    cached = pickle.loads(pickle.dumps(compile_hint("loop_repeat", source).with_code()))
    assert cached.plan is not None and cached.plan == plan_of(parse_bounded(source), environment())
    names = compile_hint("loop_repeat", source).variables

    def no_parse(source: str) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr("policy.model.hint_template.parse_bounded", no_parse)
    variables = HintVariables("deerflow", RuleRef("loop", "repeat"), "stop",
                              ToolCall("c1", "bash", {"command": "pytest -q"}),
                              {"count": 5, "warn": 3, "stop": 5, "window": 20, "same_result": True,
                               "result_excerpt": "1 failed"})
    expected = _jinja(source, {name: variables[name] for name in names}, cached.template)
    assert expected is not None
    assert cached.render(variables) == expected.strip("\n")


def test_render_reads_only_the_variables_the_template_shows() -> None:
    computed: list[str] = []
    variables = HintVariables("p", RuleRef("loop", "repeat"), "warn", ToolCall("c1", "bash", {}),
                              lazy={"costly": lambda: computed.append("costly")})
    assert compile_hint("plain", "{% if action == 'stop' %}{{ costly }}{% else %}{{ tool }}{% endif %}"
                        ).render(variables) == "bash"
    assert computed == []


def test_a_plan_is_plain_data() -> None:
    plan: Plan | None = plan_of(parse_bounded("{% if a == 1 %}{{ b.c }}{% endif %}"), environment())
    assert plan is not None
    assert pickle.loads(pickle.dumps(plan)) == plan

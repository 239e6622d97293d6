"""Templates of text and ``{{ name | filter }}`` placeholders are read without Jinja2, to the same result.

A policy may hold thousands of hints; finding the variables of a plain one
with a regular expression instead of Jinja2's parser and code generator is
what makes checking a large policy fast.  Whenever the shortcut answers, it
gives Jinja2's answer; anything else (a block, a comment, an unknown filter,
a keyword) it leaves to Jinja2.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2 import TemplateError, meta

from policy.model.hint_template import _placeholder_variables, compile_hint, environment, template_variables


def jinja_variables(source: str) -> frozenset[str] | None:
    try:
        return frozenset(meta.find_undeclared_variables(environment().parse(source)))
    except TemplateError:
        return None


_PIECES = st.sampled_from([
    "text ", "\n", "{{", "}}", "{", "}", " ", "x", "what", "module", "if", "none", "True", "for", "loop", ".",
    ".attr", "|", "| pip_name", "|basename", "| nope", "{%", "%}", "{#", "#}", "-", "(", ")", "'a'", "1",
])


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_the_shortcut_agrees_with_jinja(source: str) -> None:
    shortcut = _placeholder_variables(source)
    if shortcut is not None:
        assert shortcut == jinja_variables(source), source


@pytest.mark.parametrize(("source", "names"), [
    ("Error {{ what }} failed; try again.", {"what"}),
    ("{{module|pip_name}} {{ call.name | truncate_middle }} }} {", {"module", "call"}),
    ("no placeholders at all", set()),
])
def test_plain_templates_take_the_shortcut(source: str, names: set[str]) -> None:
    assert _placeholder_variables(source) == names == template_variables(source)


@pytest.mark.parametrize("source", [
    "{% if x %}{{ y }}{% endif %}", "{# c #}{{ x }}", "{{ x | nope }}", "{{ true }}", "{{{ x }}}",
    "{{- x }}", "{{ x(1) }}", "{{ x\n}}",
])
def test_anything_else_is_left_to_jinja(source: str) -> None:
    assert _placeholder_variables(source) is None


def test_an_unknown_filter_is_still_a_template_error() -> None:
    with pytest.raises(TemplateError):
        compile_hint("h", "{{ x | nope }}")

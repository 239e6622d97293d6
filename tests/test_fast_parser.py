"""The parser's fast path reads exactly what Lark's parser reads, into the same tree.

Whenever the fast path accepts a text, its tree (spans included) equals the
tree built from Lark's parse; whatever it does not accept is left to Lark,
so the diagnostics are Lark's.  Checked on the shipped policies, on texts
generated from the grammar, and on those texts with tokens dropped,
repeated and swapped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy.language import ast
from policy.language.fast_parser import TERMINAL_ORDER, fast_parse, token_pattern
from policy.language.parser import _lark, _token_pattern, parse, parse_with_lark

ROOT = Path(__file__).resolve().parent.parent
POLICIES = sorted([*ROOT.glob("policies/*.policy"), *ROOT.glob("examples/**/*.policy"),
                   *ROOT.glob("tests/**/*.policy")])


def fast(text: str) -> list[ast.Statement] | None:
    return fast_parse(text, "t.policy", _token_pattern())


def assert_same_as_lark(text: str) -> bool:
    """Compare the paths on ``text``; whether the fast path accepted it."""
    statements = fast(text)
    reference, diagnostics = parse_with_lark(text, "t.policy")
    if statements is None:
        assert parse(text, "t.policy") == (reference, diagnostics)
        return False
    assert reference is not None, (text, diagnostics)
    assert statements == reference.statements, text
    return True


def test_the_terminals_are_tried_in_the_order_lark_tries_them() -> None:
    terminals = sorted(_lark().terminals,
                       key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
    assert tuple(t.name for t in terminals) == TERMINAL_ORDER


def _lark_regexp(name: str) -> str:
    return str(_lark().get_terminal(name).pattern.to_regexp())


def _token_stream(pattern: re.Pattern[str], text: str) -> list[tuple[str | None, tuple[int, int]]]:
    return [(match.lastgroup, match.span()) for match in pattern.finditer(text)]


_IN_LARKS_ORDER = token_pattern(_lark_regexp, TERMINAL_ORDER)


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet='aZ_09-.*"\\/#;:,={}[] \t\r\nKBiM', max_size=40))
def test_trying_frequent_terminals_first_takes_the_same_tokens(text: str) -> None:
    assert _token_stream(_token_pattern(), text) == _token_stream(_IN_LARKS_ORDER, text)


@pytest.mark.parametrize("path", POLICIES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_policy_in_the_project_takes_the_fast_path(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", "replace")
    if parse_with_lark(text, "t.policy")[0] is None:
        pytest.skip("a deliberately broken policy")
    assert assert_same_as_lark(text)
    assert assert_same_as_lark(text.replace("\n", "\r\n"))
    assert _token_stream(_token_pattern(), text) == _token_stream(_IN_LARKS_ORDER, text)


@pytest.mark.parametrize("text", [
    "", "\n\n", "# only a comment", "a", "a;b", "a;;b", "a {}",
    "a { b; c }\n", "a {\n}\n", "a b=c d=\"e\" f=1",
    'a {"k": [1, {"x": null}, {}, [], """t"""],\n "j": true,\n}', 'a [1,\n 2,\n]', "a * /x[/]y/i",
    'a """\r\n  two\r\n  lines\r\n"""', "a 64KB 1MiB 2..4 -3 1.5e3", "a { b { c { d } } }",
])
def test_examples_read_the_same(text: str) -> None:
    assert assert_same_as_lark(text)


@pytest.mark.parametrize("text", [
    "a b c=", "a {\"k\" 1}", "a {\"k\": 1 \"j\": 2}", "a [1 2]", "a [,]", "a } b", "a { } b", "=",
    'a "\\q"', "a 99999999999999999999", "a 1e999", "a 0x1", "a @", 'a b="""x"""', "a\rb",
    "a {} {}", "a {" * 40 + "}" * 40, 'a {"k": ' * 40 + "1" + "}" * 40, "a {\"k\": {\"j\"}}",
])
def test_what_the_fast_path_does_not_read_goes_to_lark(text: str) -> None:
    assert fast(text) is None
    assert_same_as_lark(text)


_LEAVES = st.sampled_from([
    "a", "gate", "x-1", "_b", "*", '"s"', '"\\n\\u00e9"', '"\\q"', '""', '"""\n  t\n  u\n"""', '"""a"b"""',
    "/x/", "/[/]y/i", "/a\\/b/", "1", "-2.5", "1e3", "1e400", "12345678901234567", "64KB", "2GiB", "2..4",
    "true", "null",
])
_SEPARATORS = st.sampled_from(["\n", ";", "  # c\n", "\r\n", "\n\n  ", " ; "])
_BLANK = st.sampled_from(["", " ", "\t"])


def _json() -> st.SearchStrategy[str]:
    scalar = st.sampled_from(['"s"', "1", "-2.5e1", "true", "null", "name", '"""x"""'])
    return st.recursive(scalar, lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(st.tuples(st.sampled_from(['"a"', '"b"', '"\\t"']), inner), max_size=3).map(
            lambda members: "{" + ", ".join(f"{k}: {v}" for k, v in members) + "}"),
    ), max_leaves=6)


def _statements() -> st.SearchStrategy[str]:
    value = st.one_of(_LEAVES, _json(), st.tuples(st.sampled_from(["k", "path"]), st.sampled_from(
        ["v", '"s"', "3"])).map(lambda pair: f"{pair[0]}={pair[1]}"))
    statement = st.recursive(
        st.tuples(st.sampled_from(["a", "gate", "hint", "x_y"]), st.lists(value, max_size=4)).map(
            lambda parts: " ".join([parts[0], *parts[1]])),
        lambda inner: st.tuples(st.sampled_from(["tool", "b"]), st.lists(value, max_size=2),
                                st.lists(inner, max_size=3), _SEPARATORS).map(
            lambda parts: " ".join([parts[0], *parts[1]]) + " {" + parts[3] + parts[3].join(parts[2]) + "}"),
        max_leaves=8)
    return st.tuples(st.lists(statement, max_size=5), _SEPARATORS, _BLANK).map(
        lambda parts: parts[2] + parts[1].join(parts[0]) + parts[1])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_statements())
def test_generated_policies_read_the_same(text: str) -> None:
    assert_same_as_lark(text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_statements(), st.data())
def test_damaged_policies_read_the_same(text: str, data: st.DataObject) -> None:
    """Cut the text at token-ish boundaries and put pieces back wrong: the fast path still never
    accepts what Lark reads differently."""
    words = [match.group() for match in _token_pattern().finditer(text)] or [""]
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(0, len(words) - 1))
        action = data.draw(st.sampled_from(["drop", "repeat", "swap", "junk"]))
        if action == "drop":
            del words[index]
        elif action == "repeat":
            words.insert(index, words[index])
        elif action == "swap" and index + 1 < len(words):
            words[index], words[index + 1] = words[index + 1], words[index]
        elif action == "junk":
            junk = st.sampled_from(["{", "}", "[", "]", "=", ",", ":", "\n", "@", '"'])
            words.insert(index, data.draw(junk))
        if not words:
            words = [""]
    assert_same_as_lark("".join(words))

"""Incomplete Python prefixes: where the open ending starts, and a check linear in the text."""

from __future__ import annotations

import ast
import builtins
import random
import sysconfig
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy.runtime.gates.prefix import continued, last_word_start, open_ending, trailing_open_string
from policy.runtime.gates.python_syntax import check_python


def test_the_open_ending_is_a_string_still_open_at_the_end() -> None:
    text = "x = f'''abc\nmore"
    assert open_ending(text, 5, "unterminated triple-quoted string literal (detected at line 2)") == 4
    assert open_ending("y = rb'abc", 6, "unterminated string literal (detected at line 1)") == 4
    # a one-line string that a newline ends is a genuine error, not an open ending
    assert open_ending("x = 'abc\ny = 1\n", 4, "unterminated string literal (detected at line 1)") is None


def test_the_open_ending_is_the_word_the_unfinished_last_line_ends_in() -> None:
    assert last_word_start("value = compute_") == 8
    assert last_word_start("x = 0x") == 4
    assert last_word_start("x = a <=  ") == 6
    assert last_word_start("f(a)\n") == 5                     # a finished line: nothing is being typed
    assert open_ending("x = 0x", 5, "invalid hexadecimal literal") == 4
    assert open_ending("def f(:\n    pass\nx = 0x", 6, "invalid syntax") is None


def test_the_text_before_the_ending_is_continued_so_the_parser_asks_whether_it_can_go_on() -> None:
    assert continued("x = 'abc", 4) == "x = \\\n"
    assert continued("if x:\n    pass\nelse", 15) == "if x:\n    pass\n"


# --- linear time: at most three parses, whatever the input ------------------------------------

@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The length of every text the gate hands to ``compile``."""
    seen: list[int] = []
    real = builtins.compile

    def counting(source: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(len(source))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", counting)
    yield seen


ADVERSARIAL = {
    "deep brackets": "x = " + "(" * 4000,
    "brackets under the nesting limit, then a long tail": "y = " + "(" * 150 + "1 + " * 20000,
    "a 200 KB file ending in 150 open brackets": "def f(x):\n    return x\n" * 8000 + "z = " + "(" * 150,
    "many closed strings, one open": "x = [" + "'a', " * 20000 + "'",
    "a long line of a list": "x = [" + "1, " * 70000,
    "unfinished keyword arguments in nested calls": "f(" * 150 + "a=",
    "an error behind an open string": "def f(:\n    pass\n" + "x = (" * 100 + "'abc",
}


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_the_partial_check_parses_at_most_three_times(text: str, parses: list[int]) -> None:
    check_python(text, True)
    assert len(parses) <= 3
    assert sum(parses) <= 3 * len(text) + 400


def test_an_error_behind_an_open_string_is_still_found() -> None:
    verdict = check_python(ADVERSARIAL["an error behind an open string"], True)
    assert verdict.status == "invalid" and verdict.problem is not None and verdict.problem.line == 1


def test_more_open_brackets_than_python_allows_is_a_genuine_error() -> None:
    verdict = check_python("x = " + "(" * 100_000, True)
    assert verdict.status == "invalid" and verdict.problem is not None
    assert "too many nested parentheses" in verdict.problem.message


# --- properties against ast.parse ---------------------------------------------------------------

def _stdlib_texts() -> list[str]:
    texts = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))[:120]:
        try:
            text = path.read_text(encoding="utf-8")
            ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        texts.append(text)
    return texts


STDLIB = _stdlib_texts()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(STDLIB))), st.floats(0, 1))
def test_no_prefix_of_a_valid_file_is_blocked(index: int, where: float) -> None:
    """Cut anywhere, mid-token included: a valid file's prefix is never a genuine error."""
    text = STDLIB[index]
    cut = int(len(text) * where)
    assert check_python(text[:cut], True).status in ("valid", "incomplete")


PY_SOUP = st.text(alphabet="()[]{}'\"\\#:=,.+ \nabcif01", max_size=400)


@settings(max_examples=200, deadline=None)
@given(PY_SOUP)
def test_on_complete_text_the_gate_agrees_with_ast_parse(text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(text)
            parses = True
        except (SyntaxError, ValueError):
            parses = False
    assert (check_python(text, False).status == "valid") == parses
    if parses:
        assert check_python(text, True).status == "valid"


SOUP_PIECES = ["(", "[", "{", ")", "]", "}", "'", '"', '"""', "'''", "\\", "\n", "    ", "x", "=", ":", ",",
               "if ", "for ", "lambda ", "def f", "#", "f'{", "1e", "0x", "a" * 40]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(SOUP_PIECES), min_size=1, max_size=40), st.integers(1, 4000))
def test_bracket_and_string_soups_are_checked_in_bounded_time(pieces: list[str], repeat: int) -> None:
    """A generous bound (1 s per 100 KB, at least 1 s) that machine noise cannot break; figures: bench/."""
    text = "".join(random.Random(repeat).choice(pieces) for _ in range(repeat * 10))
    start = time.perf_counter()
    check_python(text, True)
    assert time.perf_counter() - start < max(1.0, len(text) / 100_000)


# --- a text cut off in a one-line string: one parse ---------------------------------------------

def test_the_last_line_tells_where_a_one_line_string_left_open_starts() -> None:
    assert trailing_open_string("x = ['a', 'b', rb'c") == 15
    assert trailing_open_string("y = 1\nx = 'it\\'s") == 10
    for closed_or_unknown in ["x = 'a'", "x = 'a' # 'b", 'x = """a\n\'b', "x = 'a\\\ny = 'b", "x = f'{a"]:
        assert trailing_open_string(closed_or_unknown) is None


def test_many_closed_strings_then_an_open_one_take_one_parse(parses: list[int]) -> None:
    assert check_python(ADVERSARIAL["many closed strings, one open"], True).status == "incomplete"
    assert len(parses) == 1


OPEN_STRING_SOUP = st.tuples(
    st.lists(st.sampled_from(["x = ", "(", "[", ")", "]", ", ", "'a'", '"b"', "#c", "\n", "    ", "if x:",
                              "1", "=", "def f(:", "$", "\\\n", "'''", "lambda", "0x", "1.", "b", "é", "!",
                              "-"]), max_size=30),
    st.sampled_from(["'", '"', "'ab", "b'x", "r\"\\", "'it\\'s", "f'{"]),
).map(lambda parts: "".join(parts[0]) + parts[1])


@settings(max_examples=300, deadline=None)
@given(OPEN_STRING_SOUP)
def test_the_one_parse_shortcut_gives_the_two_parse_verdict(text: str) -> None:
    import policy.runtime.gates.python_syntax as python_syntax

    shortcut = check_python(text, True)
    real = python_syntax.trailing_open_string
    python_syntax.trailing_open_string = lambda source: None  # type: ignore[assignment]
    try:
        two_parses = check_python(text, True)
    finally:
        python_syntax.trailing_open_string = real
    assert shortcut == two_parses, text

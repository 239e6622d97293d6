"""Built-in validators: genuine errors located, incomplete prefixes told apart from them."""

from __future__ import annotations

import random
import time
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy.runtime.gates.data_syntax import check_json, check_toml, check_yaml
from policy.runtime.gates.problems import snippet
from policy.runtime.gates.python_syntax import check_python

# --- python: incomplete prefixes a later append can complete -----------------------------------

INCOMPLETE_PYTHON = {
    "unclosed call": "print(a,\n",
    "unclosed call mid-line": "print(a, b",
    "unclosed nested brackets": "x = {'a': [1, (2,\n",
    "open string mid-line": "x = 'abc",
    "open triple-quoted string": 'def f():\n    """Doc\n    more\n',
    "open raw triple string in a call": 'f(r"""a\\"\n',
    "string continued by a backslash": "x = 'abc\\\n",
    "function header": "def f(x):\n",
    "class header with comment": "class A:  # the base\n",
    "header written mid-line": "if x:",
    "nested header": "class A:\n    def f(self):\n",
    "header after blank and comment lines": "for i in x:\n\n    # later\n",
    "header over two lines": "def f(a,\n      b):\n",
    "parameters after a bare star": "def open(filename, mode='rb', *,\n",
    "keyword argument with no value yet": "f(a=\n",
    "parameter after a default, its default to come": "def f(a=1, b",
    "annotation still open after a default": "def f(\n    a: int = 1,\n    b: list[\n        int,\n",
    "dict value missing": "d = {'a':\n",
    "comprehension missing its iterable": "[x for x in\n",
    "comprehension cut after for": "[x for\n",
    "conditional expression without else": "y = (a if b\n",
    "lambda without body": "sorted(x, key=lambda v:\n",
    "binary operator at the end": "x = (a +\n",
    "backslash continuation": "x = 1 + \\\n",
    "continued header": "if a and \\\n",
    "lone decorator": "@property\n",
    "decorator inside a class": "class A:\n    @staticmethod\n",
    "decorator call still open": "@app.route('/',\n",
    "try without handler yet": "try:\n    x = 1\n",
    "nested try without handlers": "try:\n    try:\n        x = 1\n",
    "try header alone": "try:\n",
    "match header": "match command:\n",
    "case header": "match command:\n    case 1:\n",
    "if body done, else header": "if x:\n    pass\nelse:\n",
    "comment without newline": "x = 1  # a comm",
    "identifier being typed": "value = compute_",
    "hexadecimal literal being typed": "x = 0x",
    "empty text": "",
    "tabs for indentation": "if x:\n\tif y:\n",
    "crlf line endings": "def f(x):\r\n    return (x,\r\n",
    "f-string field still open": 'x = f"""{a\n',
    "f-string cut mid-expression": 'x = f"{a +',
    "prefixed bytes string open": "x = rb'abc",
}


@pytest.mark.parametrize("text", INCOMPLETE_PYTHON.values(), ids=INCOMPLETE_PYTHON.keys())
def test_an_incomplete_python_prefix_is_allowed_when_partial(text: str) -> None:
    assert check_python(text, True).status in ("incomplete", "valid")


@pytest.mark.parametrize("text", [t for t in INCOMPLETE_PYTHON.values() if t], ids=[
    k for k, t in INCOMPLETE_PYTHON.items() if t])
def test_an_incomplete_python_prefix_is_invalid_without_partial(text: str) -> None:
    verdict = check_python(text, False)
    assert verdict.status == "invalid" or check_python(text, True).status == "valid"


# --- python: genuine errors no append can fix, with where they are ----------------------------

GENUINE_PYTHON = {
    "missing colon before a body": ("def f(x)\n    return x\n", 1, 9),
    "missing colon on the last line": ("def f(x)\n", 1, 9),
    "extra closing parenthesis": ("print(a))\nx = 1\n", 1, 9),
    "mismatched bracket": ("x = [1, 2)\n", 1, 10),
    "unexpected indent": ("x = 1\n  y = 2\n", 2, 3),
    "unindent matching no level": ("if x:\n        a\n    b\n", 3, 5),
    "unindent on a line opening a string": ('if x:\n        a = 1\n      b = """\n  text\n', 3, 7),
    "tabs and spaces mixed": ("if x:\n        a\n\tb\n", 3, 2),
    "missing comma inside an open call": ("f(a b,\n", 1, 3),
    "operator at the end of a finished line": ("x = 1 +\n", 1, 8),
    "unterminated single-quoted string": ("x = 'abc\ny = 1\n", 1, 5),
    "lambda with an indented body": ("f = lambda:\n    pass\n", 1, 12),
    "else without if": ("x = 1\nelse:\n    pass\n", 2, 1),
    "error before an open bracket": ("def f(:\n    pass\nx = (1,\n", 1, 7),
    "error before a continuation": ("def f(:\n    pass\nx = 1 + \\\n", 1, 7),
    "error inside a still-open call": ("foo(1 2,\n    3,\n", 1, 5),
    "stray closer after an open string is closed": ("x = 'a')\n", 1, 8),
    "continuation followed by a character": ("x = 1 + \\)\ny = 2\n", 1, 10),
    "f-string error before an open bracket": ('x = f"{}"\ny = (1,\n', 1, 10),
}


@pytest.mark.parametrize(("text", "line", "column"), GENUINE_PYTHON.values(), ids=GENUINE_PYTHON.keys())
def test_a_genuine_python_error_blocks_even_when_partial(text: str, line: int, column: int) -> None:
    verdict = check_python(text, True)
    assert verdict.status == "invalid"
    assert verdict.problem is not None
    assert (verdict.problem.line, verdict.problem.column) == (line, column)


def test_a_real_error_is_found_behind_an_unterminated_triple_quoted_string() -> None:
    # Python itself reports only the string left open at the end, not the error on line 1.
    text = 'def f(:\n    pass\nx = """docs\nstill docs\n'
    with pytest.raises(SyntaxError, match="unterminated triple-quoted"):
        compile(text, "t.py", "exec")
    verdict = check_python(text, True)
    assert verdict.status == "invalid"
    assert verdict.problem is not None and verdict.problem.line == 1


def test_a_real_error_is_found_behind_an_unterminated_single_quoted_string_mid_line() -> None:
    verdict = check_python("print(1 2)\ns = 'abc", True)
    assert verdict.status == "invalid" and verdict.problem is not None and verdict.problem.line == 1


def test_valid_python_is_valid_and_says_nothing_else() -> None:
    verdict = check_python("def f(x):\n    return x\n", False)
    assert verdict.status == "valid" and verdict.problem is None


def test_python_problem_carries_the_message_and_output() -> None:
    verdict = check_python("def f(x)\n    return x\n", False)
    assert verdict.problem is not None
    assert verdict.problem.message == "expected ':'"
    assert verdict.problem.output == "SyntaxError: expected ':'"


def test_a_nul_byte_is_a_located_error() -> None:
    verdict = check_python("x = 1\ny = '\0'\n", True)
    assert verdict.status == "invalid"
    assert verdict.problem is not None and (verdict.problem.line, verdict.problem.column) == (2, 6)


def test_an_invalid_escape_sequence_is_not_an_error_even_when_warnings_are_errors() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_python('pattern = "\\d+"\n', False).status == "valid"
        assert warnings.filters[0][0] == "error"  # the caller's filters are left as they were


def test_nesting_too_deep_for_the_parser_is_unavailable_not_invalid() -> None:
    verdict = check_python("x = " + "-" * 200_000 + "1\n", False)
    assert verdict.status == "unavailable" and "nested too deeply" in verdict.reason


# --- json, toml, yaml ------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    '{\n  "a": 1,\n', '[1, 2', '{"a": tr', '{"a": "abc', '{"a": "ab\\', '{"a": "x\\u12', '[1.', '[-', '{"a"',
    "", '{"a": [\n', "[0", "[-0", "[10", "[0.", "[1.5e", "[1e+", "[-0.25E-",
])
def test_a_cut_off_json_document_is_incomplete(text: str) -> None:
    assert check_json(text, True).status == "incomplete"
    assert check_json(text, False).status == "invalid"


@pytest.mark.parametrize(("text", "line", "column"), [
    ('{"a": 1,,\n "b": 2}\n', 1, 9),
    ('[1, 2,]\n', 1, 7),
    ('{"a": 1 "b": 2}', 1, 9),
    ('{"a": 1}\n{"b": 2}\n', 2, 1),
    ('{"a": "line\nbreak"}', 1, 12),
    ('{"a": tru e}', 1, 7),
    ('[1\n, 2 3', 2, 5),
])
def test_a_genuine_json_error_blocks_with_its_location(text: str, line: int, column: int) -> None:
    verdict = check_json(text, True)
    assert verdict.status == "invalid"
    assert verdict.problem is not None and (verdict.problem.line, verdict.problem.column) == (line, column)


@pytest.mark.parametrize(("text", "message"), [
    ('{"a": "x\n', "Invalid control character at"),     # a raw newline in a string, at the end
    ('["tab\t', "Invalid control character at"),
    ("[01", "Expecting ',' delimiter"),                 # a leading zero: no digit after it helps
    ("[-01", "Expecting ',' delimiter"),
    ("[1.e", "Expecting ',' delimiter"),                # a fraction needs a digit before the exponent
])
def test_a_json_error_no_append_can_fix_blocks_even_at_the_end(text: str, message: str) -> None:
    verdict = check_json(text, True)
    assert verdict.status == "invalid" and verdict.problem is not None
    assert verdict.problem.message == message


def test_json_with_a_huge_integer_is_still_valid_json() -> None:
    assert check_json("[" + "9" * 5000 + "]", False).status == "valid"


def test_json_and_toml_nested_too_deeply_are_unavailable_not_a_crash() -> None:
    assert check_json("[" * 100_000 + "]" * 100_000, False).status == "unavailable"
    assert check_toml("a = " + "[" * 100_000 + "]" * 100_000, False).status == "unavailable"


@pytest.mark.parametrize("text", ['a = [\n  1,\n', 'a = """abc\n', "[tool.x", "a = tr", "a =", "a = 1.",
                                  "[[servers", "a.b", 'a = {x = 1,'])
def test_a_cut_off_toml_document_is_incomplete(text: str) -> None:
    assert check_toml(text, True).status == "incomplete"
    assert check_toml(text, False).status == "invalid"


def test_a_genuine_toml_error_blocks_with_its_location() -> None:
    verdict = check_toml("a = 1\nb = = 2\nc = 3\n", True)
    assert verdict.status == "invalid"
    assert verdict.problem is not None
    assert (verdict.problem.line, verdict.problem.column) == (2, 5)
    assert verdict.problem.message == "Invalid value"


@pytest.mark.parametrize(("text", "message"), [
    ("a = 1\na = 2", "Cannot overwrite a value"),                  # a duplicate key on the last line
    ("a = 1\na = 2\n", "Cannot overwrite a value"),
    ('[tool]\nname = "x"\nname = "y"', "Cannot overwrite a value"),
    ("a.b = 1\na = 2", "Cannot overwrite a value"),
    ("a = {b = 1}\na.c = 2", "Cannot mutate immutable namespace ('a',)"),
    ("a = {b = 1, b = 2", "Duplicate inline table key 'b'"),
    ("d = 2024-02-30", "Invalid date or datetime"),
    ('s = "\\uD800', "Escaped character is not a Unicode scalar value"),
])
def test_a_toml_error_no_append_can_fix_blocks_even_at_the_end(text: str, message: str) -> None:
    verdict = check_toml(text, True)
    assert verdict.status == "invalid" and verdict.problem is not None
    assert verdict.problem.message == message
    assert verdict.problem.line == text.count("\n", 0, len(text.rstrip("\n"))) + 1


def test_a_toml_key_still_being_typed_is_not_a_duplicate_yet() -> None:
    assert check_toml("ab = 1\na", True).status == "incomplete"     # `a` may become `ac = 2`
    assert check_toml("a = 1\na = [1,", True).status == "incomplete"  # the value is not read yet


def test_a_toml_value_after_a_finished_value_is_not_a_cut_off() -> None:
    assert check_toml("a = 1 2", True).status == "invalid"


@pytest.mark.parametrize("text", ["a: [1, 2\n", 'a: "abc\n', "a: {b: 1\n", "a: 'x"])
def test_a_cut_off_yaml_document_is_incomplete(text: str) -> None:
    assert check_yaml(text, True).status == "incomplete"
    assert check_yaml(text, False).status == "invalid"


def test_a_genuine_yaml_error_blocks_with_its_location() -> None:
    verdict = check_yaml("a: [1, 2]]\nb: 1\n", True)
    assert verdict.status == "invalid"
    assert verdict.problem is not None and (verdict.problem.line, verdict.problem.column) == (1, 10)


@pytest.mark.parametrize("text", ["a: 1\n\t", "b:\n\t", "a: 1\n@", "a: `"])
def test_a_yaml_character_no_token_starts_with_blocks_even_at_the_end(text: str) -> None:
    assert check_yaml(text, True).status == "invalid"


def test_yaml_tags_are_syntax_not_errors() -> None:
    assert check_yaml("Resources:\n  Bucket: !Ref Name\n", False).status == "valid"


# --- snippets ----------------------------------------------------------------------------------

def test_snippet_shows_the_line_before_and_a_caret_under_the_column() -> None:
    assert snippet("def f(x)\n    return x\n", 2, 5) == "1 | def f(x)\n2 |     return x\n  |     ^"


def test_snippet_numbers_are_right_aligned() -> None:
    text = "".join(f"x{n} = {n}\n" for n in range(1, 11))
    assert snippet(text, 10, 1).splitlines() == [" 9 | x9 = 9", "10 | x10 = 10", "   | ^"]


def test_snippet_aligns_the_caret_after_tabs() -> None:
    line, caret = snippet("if x:\n\ty = (1 2)\n", 2, 9).splitlines()[-2:]
    assert line == "2 |     y = (1 2)"
    assert line[caret.index("^")] == "2"


def test_snippet_of_an_error_past_the_end_points_after_the_last_line() -> None:
    assert snippet("x = (1,\n", 2, 1).splitlines() == ["1 | x = (1,", "  |        ^"]


def test_snippet_cuts_a_long_line_to_a_window_around_the_column() -> None:
    line = "[" + ", ".join(str(n) for n in range(2000)) + "]"
    shown, caret = snippet(line, 1, 5000).splitlines()
    assert len(shown) < 120 and shown.startswith("1 | …") and shown.endswith("…")
    assert shown[caret.index("^")] == line[4999]


def test_snippet_without_a_line_is_empty_and_without_a_column_has_no_caret() -> None:
    assert snippet("x", None, None) == ""
    assert snippet("a\nb\n", 2, None) == "1 | a\n2 | b"


DATA_SOUP_PIECES = ["[", "{", "]", "}", '"', "'", '"""', "\\", ",", ":", "=", " ", "\n", "  ", "- ", "a",
                    "1", "tr", "a = ", "[[", "#", "&x", "*x", "!!str ", "|", ">", "x" * 40]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["json", "toml", "yaml"]), st.lists(st.sampled_from(DATA_SOUP_PIECES), min_size=1,
                                                         max_size=30), st.integers(1, 4000))
def test_bracket_and_string_soups_of_data_files_are_checked_in_bounded_time(language: str, pieces: list[str],
                                                                            repeat: int) -> None:
    """As the Python gate's soups (test_gates_prefix.py): 1 s per 100 KB, at least 1 s; figures: bench/."""
    check = {"json": check_json, "toml": check_toml, "yaml": check_yaml}[language]
    text = "".join(random.Random(repeat).choice(pieces) for _ in range(repeat * 10))
    for partial in (True, False):
        start = time.perf_counter()
        check(text, partial)
        assert time.perf_counter() - start < max(1.0, len(text) / 100_000), (language, partial)

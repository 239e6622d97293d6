"""What is open at the end of a Python text, and the text that closes it."""

from __future__ import annotations

import ast

import pytest

from policy.runtime.gates.prefix import scan_python

COMPLETIONS = {
    "open call": ("print(a,\n", ")\n"),
    "nested brackets": ("x = {'a': [(1,\n", ")]}\n"),
    "open string inside a call": ('f("""doc\n', '""")\n'),
    "string ending in a backslash": ("x = 'a\\", "\\'\n"),
    "header": ("def f(x):\n", "    pass\n"),
    "header with a comment": ("class A:\n    if x:  # why\n", "        pass\n"),
    "header written mid-line": ("while True:", "\n    pass\n"),
    "match header": ("match x:\n", "    case _:\n        pass\n"),
    "lone decorator": ("class A:\n    @property\n", "    def _(): pass\n"),
    "try without handlers": ("try:\n    x = 1\n", "finally:\n    pass\n"),
    "nested open trys and a header": (
        "try:\n    y = 0\n    try:\n        if y:\n",
        "            pass\n    finally:\n        pass\nfinally:\n    pass\n",
    ),
    "try already handled": ("try:\n    x = 1\nexcept E:\n    y = 2\n", ""),
    "comment at the end": ("f(a,  # note", "\n)\n"),
    "backslash continuation": ("x = 1 + \\\n", ""),
    "nothing open": ("x = 1\n", ""),
    "blank text": ("", ""),
}


@pytest.mark.parametrize(("text", "completion"), COMPLETIONS.values(), ids=COMPLETIONS.keys())
def test_the_completion_closes_what_is_open(text: str, completion: str) -> None:
    assert scan_python(text).completion() == completion


PARSEABLE = {name: case for name, case in COMPLETIONS.items() if not case[0].endswith("\\\n")}
"""A trailing continuation is left open: whatever follows it must come from the next chunk."""


@pytest.mark.parametrize(("text", "completion"), PARSEABLE.values(), ids=PARSEABLE.keys())
def test_the_completed_text_parses(text: str, completion: str) -> None:
    ast.parse(text + completion)


def test_brackets_and_quotes_inside_strings_and_comments_do_not_count() -> None:
    tail = scan_python("x = ')]'  # ( [ {\ny = \"\"\"(\n'''\"\"\" + '\\''\n")
    assert (tail.brackets, tail.string_quote, tail.line_open) == ("", "", False)


def test_a_line_break_inside_brackets_does_not_end_the_logical_line() -> None:
    text = "x = 1\nfoo(a,\n    b,\n"
    tail = scan_python(text)
    assert tail.line_open and tail.brackets == "("
    assert tail.last_line_start == text.index("foo")


def test_errors_past_the_threshold_are_in_text_an_append_can_still_change() -> None:
    assert scan_python("x = f'''abc").threshold == 4        # the open string
    assert scan_python("x = 1 + \\\n").threshold == 8       # the continuation
    assert scan_python("x = 0x").threshold == 4             # the literal being typed
    assert scan_python("f(a)  # co").threshold == 6         # the comment
    assert scan_python("f(a)\n").threshold == 5             # a finished line: nothing

"""Incomplete prefixes: whether an error lies in text a later append can still change.

A file written in chunks is checked after every chunk.  An incomplete
prefix — an unclosed bracket or string, a block header with no body yet, a
word still being typed — is not an error: a later append can complete it.
Python's parser says itself when the text ends too early; what it reports
instead is an error in the text's open ending (``open_ending``) or a genuine
one.  For data formats (JSON, TOML) an error is a cut-off when nothing but
the scalar being written follows it (``is_cut_off``).  Every function here
is one pass over (the end of) the text.
"""

from __future__ import annotations

import re

_OPERATOR_CHARS = frozenset("-+*/%@&|^~<>=!:.")
_STRING_PREFIX_LETTERS = "rRbBuUfF"
_UNTERMINATED = "unterminated string literal"
_UNTERMINATED_TRIPLE = "unterminated triple-quoted string literal"
NEVER_CLOSED = "was never closed"
_TOO_DEEP = "too many nested parentheses"


def open_ending(text: str, offset: int, message: str) -> int | None:
    """Where the open ending of a Python text starts when an error at ``offset`` lies in it; None otherwise.

    The open ending is a string still open at the end of the text (the error
    says it is unterminated, and for a one-line string no newline follows),
    or the word or operator the unfinished last line ends in (``compute_``,
    ``0x``, ``else``), with the blanks after it, when the parser stopped on
    that line or at the end (it then names the bracket left open).
    """
    if message.startswith(_UNTERMINATED_TRIPLE) or (
        message.startswith(_UNTERMINATED) and "\n" not in text[offset:]
    ):
        return _string_start(text, offset)
    if message == _TOO_DEEP:  # no append closes a bracket opened past the limit
        return None
    on_last_line = bool(text) and not text.endswith("\n") and offset > text.rfind("\n")
    if on_last_line or message.endswith(NEVER_CLOSED):
        return last_word_start(text)
    return None


_BRACKETS_AND_SKIPPED = re.compile(
    r"""#[^\n]*|'{3}(?:[^'\\]|\\[\s\S]|'(?!''))*(?:'{3}|\Z)|"{3}(?:[^"\\]|\\[\s\S]|"(?!""))*(?:"{3}|\Z)"""
    r"""|'(?:[^'\\\n]|\\[\s\S])*'?|"(?:[^"\\\n]|\\[\s\S])*"?|[()\[\]{}]"""
)
_CLOSERS = {"(": ")", "[": "]", "{": "}"}


def closing_brackets(text: str) -> str:
    """The closers of the brackets still open at the end of a Python text (strings and comments skipped)."""
    stack: list[str] = []
    for found in _BRACKETS_AND_SKIPPED.finditer(text):
        token = found.group()
        if token in _CLOSERS:
            stack.append(_CLOSERS[token])
        elif token in ")]}" and stack:
            stack.pop()
    return "".join(reversed(stack))


def continued(text: str, end: int) -> str:
    """The text up to ``end``, continued by a backslash when it stops inside a line."""
    before = text[:end].rstrip(" \t\f")
    return before if not before or before.endswith("\n") else before + " \\\n"


def last_word_start(text: str) -> int:
    """The offset of the word or run of operator characters the text's unfinished last line ends in.

    The length of the text when it ends in a newline (nothing is being typed).
    """
    end = len(text)
    if not text or text.endswith("\n"):
        return end
    while end > 0 and text[end - 1] in " \t\f":
        end -= 1
    start = end
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
    else:
        while start > 0 and text[start - 1] in _OPERATOR_CHARS:
            start -= 1
    return start


_CLOSED_ON_ONE_LINE = re.compile(r"""(?:[^'"#\n]++|'(?:[^'\\\n]++|\\.)*+'|"(?:[^"\\\n]++|\\.)*+")*+""")
_ENDS_A_TOKEN = frozenset(" \t\f([{,=:;+-*/%<>!&|^~@")
"""Characters after which Python starts a new token, whatever follows."""
_OPEN_STRING = re.compile(r"""'(?:[^'\\\n]|\\.)*\\?|"(?:[^"\\\n]|\\.)*\\?""")


def trailing_open_string(text: str) -> int | None:
    """Where a one-line string left open at the very end of a Python text starts (before its prefix),
    when the last line alone tells: the text has no triple quote and no backslash-newline, so every
    line starts outside any string.  None otherwise, when the text does not end in an open string,
    when that string is an f-string (whose grammar differs between Python versions), or when it
    opens its line (the indentation before it is the line's, and Python checks that first)."""
    line_start = text.rfind("\n") + 1
    if text.find("'", line_start) < 0 and text.find('"', line_start) < 0:
        return None
    if "'''" in text or '"""' in text or "\\\n" in text:
        return None
    closed = _CLOSED_ON_ONE_LINE.match(text, line_start)
    quote = closed.end() if closed is not None else len(text)
    if quote == len(text) or not _OPEN_STRING.fullmatch(text, quote):
        return None
    start = _string_start(text, quote)
    if "f" in text[start:quote].lower() or not text[line_start:start].strip():
        return None  # the line's indentation would be cut off with the string
    if text[start - 1] not in _ENDS_A_TOKEN:
        return None  # `1b'x`: Python reads what comes before (a number, a name) with the string
    return start


def _string_start(text: str, quote: int) -> int:
    """Where the string whose quote is at ``quote`` starts: before its prefix (``rb``, ``f`` …)."""
    start = quote
    while start > quote - 2 and start > 0 and text[start - 1] in _STRING_PREFIX_LETTERS:
        start -= 1
    return start


def is_cut_off(text: str, position: int, scalar: re.Pattern[str], value_starts: str) -> bool:
    """Whether a data-format error at ``position`` is only the text being cut off.

    True when nothing but whitespace follows the error, or when the error lies in
    the scalar the text ends with (``tr`` of ``true``, ``1.`` of ``1.5``) and that
    scalar begins a value (follows one of ``value_starts`` or opens the text).
    """
    if not text[position:].strip():
        return True
    begin = len(text)
    while begin > 0 and not text[begin - 1].isspace() and text[begin - 1] not in "[]{},:=\"'":
        begin -= 1
    if position < begin or not scalar.fullmatch(text, begin):
        return False
    while begin > 0 and text[begin - 1].isspace():
        begin -= 1
    return begin == 0 or text[begin - 1] in value_starts

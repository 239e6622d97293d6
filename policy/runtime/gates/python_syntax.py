"""The Python validator: ``ast.parse`` with the running interpreter's grammar.

With ``partial``, CPython's parser itself says when a text ends too early
(``PyCF_ALLOW_INCOMPLETE_INPUT``); an error in the text's open ending is
checked once more (``policy.runtime.gates.prefix``).  Two parses decide (a
third only places a block's error behind open brackets; a text cut off in a
one-line string usually takes one): the time is linear in the text, whatever
its brackets, strings and lines.
"""

from __future__ import annotations

import ast
import codeop
import threading
import warnings

from policy.runtime.gates.prefix import (
    NEVER_CLOSED,
    closing_brackets,
    continued,
    open_ending,
    trailing_open_string,
)
from policy.runtime.gates.problems import (
    INCOMPLETE,
    TOO_DEEP,
    VALID,
    Problem,
    Verdict,
    invalid,
    line_column,
    unavailable,
)

_INDENTATION_MESSAGES = ("unindent does not match", "unexpected indent", "inconsistent use of tabs")
_FAIL_FAST: int = getattr(codeop, "PyCF_ALLOW_INCOMPLETE_INPUT", 0)
"""A parse that fails at the end of the text skips CPython's slow second pass for a better message."""
_WARNINGS_LOCK = threading.Lock()


def check_python(text: str, partial: bool, before: str | None = None) -> Verdict:
    """``ast.parse`` (the running Python's grammar); with ``partial``, an incomplete prefix is allowed."""
    source = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    try:
        error = _partial_error(source) if partial else _syntax_error(source)
    except (RecursionError, MemoryError):
        return unavailable(TOO_DEEP)
    if error is _INCOMPLETE:
        return INCOMPLETE
    return VALID if error is None else invalid(_python_problem(source, error))


_INCOMPLETE = SyntaxError("incomplete input")
"""What CPython's parser raises, given ``PyCF_ALLOW_INCOMPLETE_INPUT``, when the text ends too early."""


def _partial_error(source: str) -> SyntaxError | None:
    """The genuine error of a text that may be cut off; ``_INCOMPLETE`` when only its ending is missing.

    At most three parses decide, so the time is linear in the text.  The parser says
    itself when the text ends too early.  An error in the text's open ending
    (a string still open at the end, the word or literal being typed) is not
    one, but Python reports such a string before a real error earlier on: the
    text before the ending is parsed again, continued by a backslash so that
    the parser only asks whether it could go on.  When the last line shows
    that the text ends in a one-line string (``trailing_open_string``), that
    parse comes first, and an incomplete text is told in one.
    """
    string_start = trailing_open_string(source)
    before = _before(source, string_start) if string_start is not None else None
    if string_start is not None and (before is None or before is _INCOMPLETE):
        return _INCOMPLETE
    error = _syntax_error(source, _FAIL_FAST)
    if error is None or error.msg == _INCOMPLETE.msg:
        return None if error is None else _INCOMPLETE
    ending = open_ending(source, _offset(source, error), error.msg)
    if ending is None:
        return error
    if error.msg.endswith(NEVER_CLOSED) and ending == len(source):
        return _behind_open_brackets(source, error)
    if ending != string_start:
        before = _before(source, ending)
    return _INCOMPLETE if before is None else before


def _before(source: str, ending: int) -> SyntaxError | None:
    """The error of the text before its open ending, continued so that the parser only asks whether
    it could go on (``_INCOMPLETE`` when it could)."""
    error = _syntax_error(continued(source, ending), _FAIL_FAST)
    return _INCOMPLETE if error is not None and error.msg == _INCOMPLETE.msg else error


def _behind_open_brackets(source: str, error: SyntaxError) -> SyntaxError:
    """Where the parser stopped in a text that ends with brackets open: CPython names the bracket,
    the text with them closed shows the place."""
    closed = _syntax_error(source + closing_brackets(source) + "\n", _FAIL_FAST)
    if closed is not None and closed.msg != _INCOMPLETE.msg and _offset(source, closed) < len(source):
        return closed
    return error


def _syntax_error(source: str, flags: int = 0) -> SyntaxError | None:
    try:
        _parse(source, flags)
    except SyntaxError as error:
        if not any(entry[0] == "error" for entry in warnings.filters):
            return error
        try:  # a warning turned into an error (an invalid escape sequence) is not a syntax error
            with _WARNINGS_LOCK, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _parse(source, flags)
        except SyntaxError as real:
            return real
    except ValueError as error:  # NUL bytes, on Pythons that raise ValueError for them
        return SyntaxError(str(error))
    return None


def _parse(source: str, flags: int) -> None:
    compile(source, "<gate>", "exec", ast.PyCF_ONLY_AST | flags, dont_inherit=True)


def _offset(source: str, error: SyntaxError) -> int:
    """The character offset of an error (past the end of ``source`` when it lies in the completion)."""
    if error.lineno is None:
        return 0
    bounds = _line_bounds(source, error.lineno)
    if bounds is None:
        return len(source) + 1
    start, length = bounds
    return start + _column(source, error, start, length) - 1


def _line_bounds(source: str, line: int) -> tuple[int, int] | None:
    """Offset and length of a 1-based line; None past the end."""
    start = 0
    for _ in range(line - 1):
        start = source.find("\n", start) + 1
        if start == 0:
            return None
    end = source.find("\n", start)
    return start, (len(source) if end < 0 else end) - start


def _column(source: str, error: SyntaxError, start: int, length: int) -> int:
    """The error's 1-based column, kept within its line.

    An indentation error is about where the line's code starts (CPython puts
    it at the end of the line); some other columns count from the start of
    a backslash-continued logical line.
    """
    if isinstance(error, IndentationError) and error.msg.startswith(_INDENTATION_MESSAGES):
        return len(source[start : start + length]) - len(source[start : start + length].lstrip()) + 1
    return min(max(error.offset or 1, 1), length + 1)


def _python_problem(source: str, error: SyntaxError) -> Problem:
    line, column = error.lineno, error.offset
    bounds = _line_bounds(source, line) if line is not None else None
    if bounds is not None:
        column = _column(source, error, *bounds)
    elif "\0" in source:
        line, column = line_column(source, source.index("\0"))
    return Problem(error.msg or str(error), line, column, f"{type(error).__name__}: {error.msg or error}")

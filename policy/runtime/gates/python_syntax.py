"""The Python validator: ``ast.parse`` with the running interpreter's grammar.

With ``partial``, a text that does not parse is closed — open string and
brackets, a body for a block header, ``finally`` for an open ``try`` — and
parsed again (``policy.runtime.gates.prefix``).  What remains is a genuine error only
when it lies in text no append can change.
"""

from __future__ import annotations

import ast
import codeop
import threading
import warnings

from policy.runtime.gates.prefix import PythonTail, scan_python
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


def check_python(text: str, partial: bool) -> Verdict:
    """``ast.parse`` (the running Python's grammar); with ``partial``, close what is open and parse again."""
    source = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    try:
        if partial:
            if _syntax_error(source, _FAIL_FAST) is None:
                return VALID
            error = _error_despite_completion(source, scan_python(source))
            if error is None:
                return INCOMPLETE
        else:
            error = _syntax_error(source)
    except (RecursionError, MemoryError):
        return unavailable(TOO_DEEP)
    return VALID if error is None else invalid(_python_problem(source, error))


def _error_despite_completion(source: str, tail: PythonTail) -> SyntaxError | None:
    """The error left once what is open at the end is closed; None when only the ending was missing.

    An error at or past ``tail.threshold`` lies in text a later append can
    still change.  An error inside an unfinished last line may come from the
    completion itself (``f(a=`` closed as ``f(a=)``): it stands only if every
    alternative completion meets it too.
    """
    error = _error_before(source, tail.completion(), tail.threshold)
    if error is None:
        return None
    if not tail.line_open or _offset(source, error) < tail.last_line_start:
        return error
    if any(_error_before(source, other, tail.threshold) is None for other in tail.alternatives()):
        return None
    return error


def _error_before(source: str, completion: str, threshold: int) -> SyntaxError | None:
    """The syntax error of ``source + completion`` when it lies before ``threshold``."""
    error = _syntax_error(source + completion)
    return error if error is not None and _offset(source, error) < threshold else None


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

"""The built-in syntax checkers (python, json, toml, yaml) and the dispatch to them or to a command.

Each takes the text a write would leave and ``partial`` (the gate's ``partial
allow``): when true, an incomplete prefix is ``incomplete`` rather than
``invalid``.  The valid path is one parse and nothing else.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import threading
import tomllib
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

from policy.compiled import Validator
from policy.gates.command import run_checker
from policy.gates.prefix import PythonTail, is_cut_off, scan_python
from policy.gates.problems import INCOMPLETE, VALID, Problem, Verdict, invalid, line_column, unavailable

_WARNINGS_LOCK = threading.Lock()
_JSON_SCALAR = re.compile(
    r"-?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d*)?)?|t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?"
    r"|N(?:a(?:N)?)?|-?I(?:n(?:f(?:i(?:n(?:i(?:ty?)?)?)?)?)?)?"
)
_JSON_OPEN_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+(?:\\(?:u[0-9a-fA-F]{0,3})?)?')
_TOML_SCALAR = re.compile(r"[\w.:+-]+")
_TOML_LOCATION = re.compile(r"\(at line (\d+), column (\d+)\)$")
_TOML_AT_END = "(at end of document)"


TOO_DEEP = "the text is nested too deeply to check"


def validate(validator: Validator, text: str, path: str, *, partial: bool) -> Verdict:
    """Check ``text``, the content ``path`` would have after a write."""
    if validator.kind == "command":
        return run_checker(validator, text, path, partial=partial)
    check = BUILTIN_CHECKS.get(validator.kind)
    if check is None:
        return unavailable(f"no built-in validator named {validator.kind!r}")
    return check(text, partial)


def check_python(text: str, partial: bool) -> Verdict:
    """``ast.parse`` with the running Python's grammar; with ``partial``, close what is open and parse again."""
    source = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    try:
        error = _syntax_error(source)
        if error is not None and partial:
            error = _error_despite_completion(source, scan_python(source))
            if error is None:
                return INCOMPLETE
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
    if tail.line_open and _offset(source, error) >= tail.last_line_start:
        for other in tail.alternatives():
            if _error_before(source, other, tail.threshold) is None:
                return None
    return error


def _error_before(source: str, completion: str, threshold: int) -> SyntaxError | None:
    """The syntax error of ``source + completion`` when it lies before ``threshold``."""
    error = _syntax_error(source + completion)
    return error if error is not None and _offset(source, error) < threshold else None


def _syntax_error(source: str) -> SyntaxError | None:
    try:
        _parse(source)
    except SyntaxError as error:
        if not any(entry[0] == "error" for entry in warnings.filters):
            return error
        try:  # a warning turned into an error (an invalid escape sequence) is not a syntax error
            with _WARNINGS_LOCK, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _parse(source)
        except SyntaxError as real:
            return real
    except ValueError as error:  # NUL bytes, on Pythons that raise ValueError for them
        return SyntaxError(str(error))
    return None


def _parse(source: str) -> None:
    compile(source, "<gate>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)


def _offset(source: str, error: SyntaxError) -> int:
    """The character offset of an error (past the end of ``source`` when it lies in the completion)."""
    if error.lineno is None:
        return 0
    bounds = _line_bounds(source, error.lineno)
    if bounds is None:
        return len(source) + 1
    start, length = bounds
    return start + _column(error, length) - 1


def _line_bounds(source: str, line: int) -> tuple[int, int] | None:
    """Offset and length of a 1-based line; None past the end."""
    start = 0
    for _ in range(line - 1):
        start = source.find("\n", start) + 1
        if start == 0:
            return None
    end = source.find("\n", start)
    return start, (len(source) if end < 0 else end) - start


def _column(error: SyntaxError, line_length: int) -> int:
    """The error's 1-based column kept within its line (CPython counts some columns from the
    start of a backslash-continued logical line)."""
    return min(max(error.offset or 1, 1), line_length + 1)


def _python_problem(source: str, error: SyntaxError) -> Problem:
    line, column = error.lineno, error.offset
    bounds = _line_bounds(source, line) if line is not None else None
    if bounds is not None:
        column = _column(error, bounds[1])
    elif "\0" in source:
        line, column = line_column(source, source.index("\0"))
    return Problem(error.msg or str(error), line, column, f"{type(error).__name__}: {error.msg or error}")


def check_json(text: str, partial: bool) -> Verdict:
    try:
        _decode_json(text)
    except json.JSONDecodeError as error:
        if partial and _json_cut_off(text, error):
            return INCOMPLETE
        return invalid(Problem(error.msg, error.lineno, error.colno, str(error)))
    except RecursionError:
        return unavailable(TOO_DEEP)
    return VALID


def _decode_json(text: str) -> None:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer too long for Python to convert: only its syntax matters here
        json.loads(text, parse_int=str)


def _json_cut_off(text: str, error: json.JSONDecodeError) -> bool:
    if error.msg.startswith("Unterminated string") and _JSON_OPEN_STRING.fullmatch(text, error.pos):
        return True
    if error.msg.startswith("Invalid \\uXXXX escape") and re.fullmatch(r"u[0-9a-fA-F]{0,3}", text[error.pos :]):
        return True
    return is_cut_off(text, error.pos, _JSON_SCALAR, "[:,")


def check_toml(text: str, partial: bool) -> Verdict:
    try:
        tomllib.loads(text)
    except RecursionError:
        return unavailable(TOO_DEEP)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        located = _TOML_LOCATION.search(message)
        if located:
            line, column = int(located.group(1)), int(located.group(2))
            position = _position(text, line, column)
        else:
            position = len(text)
            line, column = line_column(text, position)
        if partial and (message.endswith(_TOML_AT_END) or is_cut_off(text, position, _TOML_SCALAR, "=[,{")):
            return INCOMPLETE
        brief = message.removesuffix(located.group() if located else _TOML_AT_END).strip()
        return invalid(Problem(brief, line, column, message))
    return VALID


def _position(text: str, line: int, column: int) -> int:
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
    return start + column - 1


def _load_yaml() -> ModuleType | None:
    try:
        return importlib.import_module("yaml")
    except ImportError:
        return None


_yaml = _load_yaml()


def check_yaml(text: str, partial: bool) -> Verdict:
    """YAML syntax (every document composed, tags left uninterpreted); needs PyYAML."""
    if _yaml is None:
        return unavailable("PyYAML is not installed")
    loader: Any = getattr(_yaml, "CSafeLoader", _yaml.SafeLoader)
    try:
        for _ in _yaml.compose_all(text, Loader=loader):
            pass
    except _yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        if mark is None:
            return invalid(Problem(str(error), None, None, str(error)))
        if partial and (mark.line, mark.column) >= _end_of_content(text):
            return INCOMPLETE
        message = f"{error.problem}" + (f" ({error.context})" if error.context else "")
        return invalid(Problem(message, mark.line + 1, mark.column + 1, str(error)))
    except _yaml.YAMLError as error:
        return invalid(Problem(str(error), None, None, str(error)))
    except RecursionError:
        return unavailable(TOO_DEEP)
    return VALID


def _end_of_content(text: str) -> tuple[int, int]:
    """0-based line and column just past the last non-blank character."""
    content = text.rstrip()
    line, column = line_column(content, len(content))
    return line - 1, column - 1


BUILTIN_CHECKS: dict[str, Callable[[str, bool], Verdict]] = {
    "python": check_python,
    "json": check_json,
    "toml": check_toml,
    "yaml": check_yaml,
}

"""The data-format validators: JSON (``json``), TOML (``tomllib``), YAML (PyYAML, when installed).

These parsers read left to right and report the first error, so a cut-off
text is told from a broken one by where the error is: at the end, or inside
the scalar the text ends with (``policy.runtime.gates.prefix.is_cut_off``).
"""

from __future__ import annotations

import importlib
import json
import re
import tomllib
from functools import cache
from types import ModuleType
from typing import Any

from policy.runtime.gates.prefix import is_cut_off
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

_JSON_SCALAR = re.compile(
    r"-?(?:(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d*)?|(?:0|[1-9]\d*)\.)?"
    r"|t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?"
    r"|N(?:a(?:N)?)?|-?I(?:n(?:f(?:i(?:n(?:i(?:ty?)?)?)?)?)?)?"
)
_JSON_OPEN_STRING = re.compile(
    r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+(?:\\(?:u[0-9a-fA-F]{0,3})?)?'
)
_JSON_OPEN_ESCAPE = re.compile(r"u[0-9a-fA-F]{0,3}")
_TOML_SCALAR = re.compile(r"[\w.:+-]+")
_TOML_COMPLETE_ERRORS = (
    "Cannot declare ", "Cannot overwrite a value", "Cannot mutate immutable namespace",
    "Cannot redefine namespace", "Duplicate inline table key", "Invalid date or datetime",
    "Escaped character is not a Unicode scalar value",
)
"""Errors in what the text already holds (a key defined twice, 30 February, a surrogate escape): no
append can fix them, wherever they are reported."""
_JSON_COMPLETE_ERRORS = ("Invalid control character",)
"""A raw control character in a string: it stays there whatever follows."""
_YAML_COMPLETE_ERRORS = ("that cannot start any token", "found a tab character that violates indentation")
"""A character no token starts with (``@``, a tab that indents a line): it stays there whatever follows
(the second wording is libyaml's)."""
_TOML_LOCATION = re.compile(r"\(at line (\d+), column (\d+)\)$")
_TOML_AT_END = "(at end of document)"


def check_json(text: str, partial: bool, before: str | None = None) -> Verdict:
    """``json.loads``; a document cut off mid-value is incomplete when ``partial``."""
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
    if error.msg.startswith(_JSON_COMPLETE_ERRORS):
        return False
    if error.msg.startswith("Unterminated string") and _JSON_OPEN_STRING.fullmatch(text, error.pos):
        return True
    if error.msg.startswith("Invalid \\uXXXX escape") and _JSON_OPEN_ESCAPE.fullmatch(text, error.pos):
        return True
    return is_cut_off(text, error.pos, _JSON_SCALAR, "[:,")


def check_toml(text: str, partial: bool, before: str | None = None) -> Verdict:
    """``tomllib.loads``; the location comes from its message (``at line L, column C``)."""
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
        if partial and not message.startswith(_TOML_COMPLETE_ERRORS) and (
                message.endswith(_TOML_AT_END) or is_cut_off(text, position, _TOML_SCALAR, "=[,{")):
            return INCOMPLETE
        brief = message.removesuffix(located.group() if located else _TOML_AT_END).strip()
        return invalid(Problem(brief, line, column, message))
    return VALID


def _position(text: str, line: int, column: int) -> int:
    """The offset of a 1-based line and column."""
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
    return start + column - 1


@cache
def _load_yaml() -> ModuleType | None:
    """PyYAML, imported on the first YAML check (a hook process that checks no YAML never pays for it)."""
    try:
        return importlib.import_module("yaml")
    except ImportError:
        return None


def check_yaml(text: str, partial: bool, before: str | None = None) -> Verdict:
    """YAML syntax (every document composed, tags left uninterpreted); needs PyYAML."""
    _yaml = _load_yaml()
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
        if partial and (mark.line, mark.column) >= _end_of_content(text) and not any(
                words in str(error.problem) for words in _YAML_COMPLETE_ERRORS):
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

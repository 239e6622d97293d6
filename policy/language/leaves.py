"""A token's text → its syntax-tree leaf, shared by both of the parser's paths.

Lark's tree builder (``policy.language.parser``) and the fast path
(``policy.language.fast_parser``) make leaves here, so a value reads the same
whichever path parsed it.  A value that cannot be read (a bad escape, a
number too large) raises :class:`BuildError` with its located diagnostic.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from typing import Any

from policy.language import ast
from policy.language.codes import severity_of
from policy.model.diagnostics import Diagnostic, Span

MAX_DEPTH = 32
"""Blocks and JSON literals nest at most this deep (E005)."""
MAX_NUMBER = 2**53
"""The largest integer a policy may write (every integer up to it is exact as a float too)."""
_MAX_DIGITS = 16

_SIZE_UNITS = {"B": 1, "KB": 1024, "KiB": 1024, "MB": 1024**2, "MiB": 1024**2, "GB": 1024**3, "GiB": 1024**3}


def diagnostic(code: str, message: str, span: Span, help: str | None = None) -> Diagnostic:
    """A diagnostic with the severity its code has."""
    return Diagnostic(code=code, severity=severity_of(code), message=message, span=span, help=help)


class BuildError(Exception):
    """Stops building the AST: the input has a problem only found while building (E005, E006, E007)."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic


def json_string(text: str, lines: ast.SourceLines, start: int) -> str:
    """A ``"string"``'s value (JSON escapes); E006 for an escape JSON does not have."""
    if _PLAIN_STRING.fullmatch(text):  # nothing JSON would read differently: the text between the quotes
        return text[1:-1]
    try:
        value = json.loads(text)
    except ValueError:
        raise BuildError(diagnostic("E006", "invalid escape sequence in string",
                                    lines.span(start, start + len(text)),
                                    r'use \" \\ \n \t \r \/ \b \f or \uXXXX')) from None
    assert isinstance(value, str)
    return value


_PLAIN_STRING = re.compile(r'"[^"\\\x00-\x1f]*"')


def long_string_value(text: str) -> str:
    """A text's value: line endings read as LF (a file's meaning does not depend on them), the first
    newline dropped, the common indentation removed."""
    body = text[3:-3]
    if "\r" in body:
        body = body.replace("\r\n", "\n").replace("\r", "\n")
    return textwrap.dedent(body.removeprefix("\n"))


def bounded(text: str, digits: str, lines: ast.SourceLines, start: int, scale: int = 1) -> int:
    """An integer literal (times ``scale``) written as ``text`` at ``start``; raises E007 past
    ``MAX_NUMBER``, before converting a long run of digits."""
    if len(digits.lstrip("-")) > _MAX_DIGITS or abs(value := int(digits) * scale) > MAX_NUMBER:
        span = lines.span(start, start + len(text))
        raise BuildError(diagnostic("E007", f"`{text}` is too large a number", span,
                                    f"numbers are at most {MAX_NUMBER}"))
    return value


def number_value(text: str, lines: ast.SourceLines, start: int) -> int | float:
    """A NUMBER token's value: an int unless it has a fraction or an exponent."""
    if "." in text or "e" in text or "E" in text:
        value = float(text)
        if not math.isfinite(value):
            raise BuildError(diagnostic("E007", f"`{text}` is too large a number",
                                        lines.span(start, start + len(text)),
                                        "a decimal number is at most about 1.8e308"))
        return value
    return bounded(text, text, lines, start)


# Each leaf is made from its token's text and where the token starts.


def name(text: str, lines: ast.SourceLines, start: int) -> ast.Name:
    return ast.Name(lines, start, start + len(text), text)


def string(text: str, lines: ast.SourceLines, start: int) -> ast.String:
    return ast.String(lines, start, start + len(text), json_string(text, lines, start), False)


def long_string(text: str, lines: ast.SourceLines, start: int) -> ast.String:
    return ast.String(lines, start, start + len(text), long_string_value(text), True)


def regex(text: str, lines: ast.SourceLines, start: int) -> ast.Regex:
    close = text.rindex("/")
    return ast.Regex(lines, start, start + len(text), text[1:close].replace("\\/", "/"), text[close + 1:])


def number(text: str, lines: ast.SourceLines, start: int) -> ast.Number:
    return ast.Number(lines, start, start + len(text), number_value(text, lines, start), text)


def size(text: str, lines: ast.SourceLines, start: int) -> ast.Size:
    digits = text.rstrip("BKMGi")
    value = bounded(text, digits, lines, start, _SIZE_UNITS[text[len(digits):]])
    return ast.Size(lines=lines, start=start, end=start + len(text), value=value, text=text)


def range_(text: str, lines: ast.SourceLines, start: int) -> ast.Range:
    low, high = (bounded(text, part, lines, start) for part in text.split(".."))
    return ast.Range(lines=lines, start=start, end=start + len(text), low=low, high=high)


LEAVES = {"NAME": name, "STRING": string, "LONG_STRING": long_string, "REGEX": regex, "NUMBER": number,
          "SIZE": size, "RANGE": range_}
"""Terminal name → the leaf it makes (from the token's text and start offset)."""


_JSON_NAMES: dict[str, Any] = {"true": True, "false": False, "null": None}


def json_python(node: Any) -> Any:
    """A JSON value node → its Python value; a bare name other than true/false/null stays a Name."""
    if isinstance(node, ast.Json):
        return node.value
    if isinstance(node, ast.Name):
        return _JSON_NAMES.get(node.value, BareName(node))
    if isinstance(node, (ast.String, ast.Number)):
        return node.value
    return node


class BareName(str):
    """A bare identifier inside a JSON literal (the checker reports it as E702)."""

    node: ast.Name

    def __new__(cls, node: ast.Name) -> BareName:
        self = super().__new__(cls, node.value)
        self.node = node
        return self

"""A token's text → its syntax-tree leaf, shared by both of the parser's paths.

Lark's tree builder (``policy.language.parser``) and the fast path
(``policy.language.fast_parser``) make leaves here, so a value reads the same
whichever path parsed it.  A value that cannot be read (a bad escape, a
number too large) raises :class:`BuildError` with its located diagnostic.
"""

from __future__ import annotations

import json
import math
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


def json_string(text: str, span: Span) -> str:
    """A ``"string"``'s value (JSON escapes); E006 for an escape JSON does not have."""
    try:
        value = json.loads(text)
    except ValueError:
        raise BuildError(diagnostic("E006", "invalid escape sequence in string", span,
                                    r'use \" \\ \n \t \r \/ \b \f or \uXXXX')) from None
    assert isinstance(value, str)
    return value


def long_string_value(text: str) -> str:
    """A text's value: line endings read as LF (a file's meaning does not depend on them), the first
    newline dropped, the common indentation removed."""
    body = text[3:-3]
    if "\r" in body:
        body = body.replace("\r\n", "\n").replace("\r", "\n")
    return textwrap.dedent(body.removeprefix("\n"))


def bounded(text: str, digits: str, span: Span, scale: int = 1) -> int:
    """An integer literal (times ``scale``); raises E007 past ``MAX_NUMBER``, before converting a
    long run of digits."""
    if len(digits.lstrip("-")) > _MAX_DIGITS or abs(value := int(digits) * scale) > MAX_NUMBER:
        raise BuildError(diagnostic("E007", f"`{text}` is too large a number", span,
                                    f"numbers are at most {MAX_NUMBER}"))
    return value


def number_value(text: str, span: Span) -> int | float:
    """A NUMBER token's value: an int unless it has a fraction or an exponent."""
    if "." in text or "e" in text or "E" in text:
        value = float(text)
        if not math.isfinite(value):
            raise BuildError(diagnostic("E007", f"`{text}` is too large a number", span,
                                        "a decimal number is at most about 1.8e308"))
        return value
    return bounded(text, text, span)


def name(text: str, span: Span) -> ast.Name:
    return ast.Name(span=span, value=text)


def string(text: str, span: Span) -> ast.String:
    return ast.String(span=span, value=json_string(text, span), triple=False)


def long_string(text: str, span: Span) -> ast.String:
    return ast.String(span=span, value=long_string_value(text), triple=True)


def regex(text: str, span: Span) -> ast.Regex:
    close = text.rindex("/")
    return ast.Regex(span=span, pattern=text[1:close].replace("\\/", "/"), flags=text[close + 1:])


def number(text: str, span: Span) -> ast.Number:
    return ast.Number(span=span, value=number_value(text, span), text=text)


def size(text: str, span: Span) -> ast.Size:
    digits = text.rstrip("BKMGi")
    return ast.Size(span=span, value=bounded(text, digits, span, _SIZE_UNITS[text[len(digits):]]), text=text)


def range_(text: str, span: Span) -> ast.Range:
    low, high = (bounded(text, part, span) for part in text.split(".."))
    return ast.Range(span=span, low=low, high=high)


LEAVES = {"NAME": name, "STRING": string, "LONG_STRING": long_string, "REGEX": regex, "NUMBER": number,
          "SIZE": size, "RANGE": range_}
"""Terminal name → the leaf it makes."""


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

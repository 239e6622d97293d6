"""Text → syntax tree.  Lark stays inside this module: no Lark object escapes it.

The LALR parser is built once per process; its tables are cached as plain
data in the user's private cache folder (``policy.language.grammar_cache``).  Syntax
errors become coded diagnostics with the expected tokens named in words, and
Lark's ``on_error`` recovery lets one run report several of them.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, cast

import lark
from lark import Lark, Token
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)

from policy.language import ast
from policy.language.codes import severity_of
from policy.language.grammar_cache import cached_parser
from policy.model.diagnostics import Diagnostic, Span
from policy.resources import data_dir

MAX_SYNTAX_ERRORS = 20
MAX_RECOVERIES = 200
"""Syntax errors the parser recovers from before it stops (a bad line can hold thousands)."""
MAX_DEPTH = 32
MAX_NUMBER = 2**53
"""The largest integer a policy may write (every integer up to it is exact as a float too)."""
_MAX_DIGITS = 16

_TOKEN_WORDS = {
    "NAME": "a name",
    "STRING": "a string",
    "LONG_STRING": 'a """text""" string',
    "REGEX": "a /regex/",
    "NUMBER": "a number",
    "SIZE": "a size such as 64KB",
    "RANGE": "a range such as 2..4",
    "LBRACE": "`{`",
    "RBRACE": "`}`",
    "LBRACKET": "`[`",
    "RBRACKET": "`]`",
    "EQUALS": "`=`",
    "COMMA": "`,`",
    "COLON": "`:`",
    "_SEP": "a newline or `;`",
    "$END": "the end of the file",
}

_SIZE_UNITS = {"B": 1, "KB": 1024, "KiB": 1024, "MB": 1024**2, "MiB": 1024**2, "GB": 1024**3, "GiB": 1024**3}


LARK_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "contextual",
    "strict": True,
    "maybe_placeholders": False,
}
"""How the grammar is built.  Positions are not propagated: tokens carry them (see ``_Builder``)."""


@cache
def _lark() -> Lark:
    grammar = (data_dir("grammar") / "policy.lark").read_text(encoding="utf-8")
    return cached_parser(grammar, LARK_OPTIONS)


def build_parser_uncached() -> Lark:
    """Build the parser from the grammar, with every strictness check (used by tests and bench/)."""
    grammar = (data_dir("grammar") / "policy.lark").read_text(encoding="utf-8")
    return Lark(grammar, **LARK_OPTIONS)


def token_words(names: set[str] | frozenset[str]) -> list[str]:
    """Human words for Lark terminal names, in a stable order."""
    return sorted({_TOKEN_WORDS.get(n, f"`{n.lower()}`") for n in names})


def parse_bytes(data: bytes, path: str) -> tuple[ast.PolicyFile | None, list[Diagnostic]]:
    """Decode and parse a file's bytes; undecodable input is a diagnostic, not an exception."""
    text, problems = decode_policy(data, path)
    return (None, problems) if text is None else parse(text, path)


def decode_policy(data: bytes, path: str) -> tuple[str | None, list[Diagnostic]]:
    """A policy file's text (UTF-8, a leading BOM dropped), or None and the E001 that says why not."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        prefix = data[: err.start].decode("utf-8", "replace")
        line = prefix.count("\n") + 1
        column = len(prefix) - (prefix.rfind("\n") + 1) + 1
        span = Span(file=path, line=line, column=column, end_line=line, end_column=column + 1)
        return None, [_diag("E001", f"invalid UTF-8 byte 0x{data[err.start]:02x}", span,
                            "policy files are UTF-8 text")]
    nul = text.find("\0")
    if nul >= 0:
        span = _span_at(text, nul, nul + 1, path)
        return None, [_diag("E001", "file contains a NUL byte: it looks binary, not a policy", span)]
    return text.removeprefix("\ufeff"), []


def parse(text: str, path: str) -> tuple[ast.PolicyFile | None, list[Diagnostic]]:
    """Parse policy text.  Returns the tree (None when there are syntax errors) and diagnostics."""
    errors: list[Diagnostic] = []
    seen_lines: set[int] = set()
    recoveries = 0

    def on_error(err: UnexpectedInput) -> bool:
        nonlocal recoveries
        recoveries += 1
        if getattr(err, "line", None) not in seen_lines:  # placing an error scans the text before it
            diagnostic = _syntax_diagnostic(err, text, path)
            if diagnostic.span.line not in seen_lines:
                seen_lines.add(diagnostic.span.line)
                errors.append(diagnostic)
        return len(errors) < MAX_SYNTAX_ERRORS and recoveries < MAX_RECOVERIES

    try:
        tree = _lark().parse(text, on_error=on_error)
    except UnexpectedInput as err:
        final = _syntax_diagnostic(err, text, path)
        if final.span.line not in seen_lines:
            errors.append(final)
        return None, errors
    if errors:
        return None, errors
    try:
        statements = _Builder(path).build(tree)
    except _BuildError as err:
        return None, [err.diagnostic]
    file_span = _span_at(text, 0, len(text), path)
    return ast.PolicyFile(span=file_span, path=path, source=text, statements=statements), []


# --- syntax errors ---------------------------------------------------------


def _diag(code: str, message: str, span: Span, help: str | None = None) -> Diagnostic:
    return Diagnostic(code=code, severity=severity_of(code), message=message, span=span, help=help)


def _span_at(text: str, start: int, end: int, path: str) -> Span:
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    end_line = text.count("\n", 0, end) + 1
    end_column = end - (text.rfind("\n", 0, end) + 1) + 1
    return Span(file=path, line=line, column=column, end_line=end_line, end_column=end_column,
                start=start, end=end)


def _describe(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    if token.type == "_SEP":
        return "end of line" if "\n" in token else "`;`"
    value = str(token)
    if len(value) > 30:
        value = value[:27] + "..."
    word = _TOKEN_WORDS.get(token.type, "token")
    if word.startswith("`"):
        return word
    return f"{word.split(' ', 1)[1] if word.startswith('a ') else word} `{value}`"


def _syntax_diagnostic(err: UnexpectedInput, text: str, path: str) -> Diagnostic:
    if isinstance(err, UnexpectedCharacters):
        start = err.pos_in_stream or 0
        char = text[start] if start < len(text) else ""
        span = _span_at(text, start, start + 1, path)
        if char == '"':
            return _diag("E004", "unterminated string", span,
                         'a "string" ends on its own line; use """triple quotes""" for text on several lines')
        if char.isdigit() or (char == "-" and text[start + 1:start + 2].isdigit()):
            word = re.match(r"-?[0-9A-Za-z_.]*", text[start:])
            shown = word.group() if word else char
            return _diag("E003", f"`{shown}` is not a number, a size or a name", span,
                         "a number ends before any letter: write sizes with a unit (64KB, 1MiB), "
                         "names starting with a letter")
        shown = repr(char)[1:-1]
        return _diag("E003", f"unexpected character `{shown}`", span,
                     "expected " + ", ".join(token_words(err.allowed or set())))
    if isinstance(err, UnexpectedToken):
        token = err.token
        if token.type == "$END" or token.start_pos is None:
            span = _span_at(text, len(text), len(text), path)
        else:
            span = _span_at(text, token.start_pos, token.end_pos or token.start_pos + 1, path)
        expected = token_words(err.accepts or err.expected)
        return _diag("E002", f"unexpected {_describe(token)}", span, "expected " + ", ".join(expected))
    if isinstance(err, UnexpectedEOF):
        span = _span_at(text, len(text), len(text), path)
        return _diag("E002", "unexpected end of file", span,
                     "expected " + ", ".join(token_words(set(err.expected))))
    span = _span_at(text, 0, 0, path)
    return _diag("E002", str(err).splitlines()[0], span)


# --- tree → AST -------------------------------------------------------------


class _BuildError(Exception):
    """Stops building the AST: the input has a problem only found while building (E005, E006)."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic


def _long_string_value(token: str) -> str:
    """A text's value: line endings read as LF (a file's meaning does not depend on them), the first
    newline dropped, the common indentation removed."""
    body = token[3:-3]
    if "\r" in body:
        body = body.replace("\r\n", "\n").replace("\r", "\n")
    return textwrap.dedent(body.removeprefix("\n"))


_NESTING = frozenset({"block", "json_object", "json_array"})


class _Builder:
    """Lark's parse tree → AST, bottom-up with an explicit stack (deep input cannot overflow).

    Positions come from the tokens (the parser does not propagate them, which
    would cost more than the parse itself); a node spans its first token to
    the end of its last child.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.leaves: dict[str, Callable[[Token], ast.Node]] = {
            "name": self.name, "string": self.string, "long_string": self.long_string, "regex": self.regex,
            "number": self.number, "size": self.size, "range": self.range,
        }
        self.rules: dict[str, Callable[[list[Any]], Any]] = {
            "start": self.start, "statement": self.statement, "block": self.block, "pair": self.pair,
            "json_object": self.json_object, "json_member": self.json_member, "json_array": self.json_array,
            "json_empty": self.json_empty,
        }

    def build(self, tree: lark.Tree[Token]) -> list[ast.Statement]:
        """The statements of the file; raises :class:`_BuildError`."""
        stack: list[tuple[str, Iterator[Any], list[Any], int]] = [(tree.data, iter(tree.children), [], 0)]
        while True:
            rule, children, done, depth = stack[-1]
            for child in children:
                if not isinstance(child, lark.Tree):
                    done.append(child)
                elif child.data in self.leaves:
                    done.append(self.leaves[child.data](cast(Token, child.children[0])))
                else:
                    nested = depth + 1 if child.data in _NESTING else depth
                    if nested > MAX_DEPTH:
                        raise _BuildError(_diag("E005", f"blocks nested more than {MAX_DEPTH} levels deep",
                                                self.span(cast(Token, child.children[0]))))
                    stack.append((child.data, iter(child.children), [], nested))
                    break
            else:
                stack.pop()
                value = self.rules[rule](done)
                if not stack:
                    statements: list[ast.Statement] = value
                    return statements
                stack[-1][2].append(value)

    # spans

    def span(self, token: Token) -> Span:
        located: Any = token  # the parser propagates positions: none of them is None
        return Span(file=self.path, line=located.line, column=located.column,
                    end_line=located.end_line, end_column=located.end_column,
                    start=located.start_pos, end=located.end_pos)

    def outer(self, children: list[Any]) -> Span:
        """From the start of the first child to the end of the last (each a token or a node)."""
        first, last = children[0], children[-1]
        line: Any  # tokens carry every position (see ``span``)
        column: Any
        start: Any
        end_line: Any
        end_column: Any
        end: Any
        if isinstance(first, Token):
            line, column, start = first.line, first.column, first.start_pos
        else:
            line, column, start = first.span.line, first.span.column, first.span.start
        if isinstance(last, Token):
            end_line, end_column, end = last.end_line, last.end_column, last.end_pos
        else:
            end_line, end_column, end = last.span.end_line, last.span.end_column, last.span.end
        return Span(file=self.path, line=line, column=column, end_line=end_line,
                    end_column=end_column, start=start, end=end)

    # leaves

    def json_string(self, token: Token) -> str:
        try:
            value = json.loads(token)
        except ValueError:
            raise _BuildError(_diag("E006", "invalid escape sequence in string", self.span(token),
                                    r'use \" \\ \n \t \r \/ \b \f or \uXXXX')) from None
        assert isinstance(value, str)
        return value

    def name(self, token: Token) -> ast.Name:
        return ast.Name(span=self.span(token), value=str(token))

    def string(self, token: Token) -> ast.String:
        span, value = self.span(token), self.json_string(token)
        return ast.String(span=span, value=value, triple=False)

    def long_string(self, token: Token) -> ast.String:
        value = _long_string_value(token)
        return ast.String(span=self.span(token), value=value, triple=True)

    def regex(self, token: Token) -> ast.Regex:
        text = str(token)
        close = text.rindex("/")
        pattern = text[1:close].replace("\\/", "/")
        span, flags = self.span(token), text[close + 1:]
        return ast.Regex(span=span, pattern=pattern, flags=flags)

    def bounded(self, token: Token, digits: str, scale: int = 1) -> int:
        """An integer literal (times ``scale``); raises E007 past ``MAX_NUMBER``, before converting a
        long run of digits."""
        if len(digits.lstrip("-")) > _MAX_DIGITS or abs(value := int(digits) * scale) > MAX_NUMBER:
            raise _BuildError(_diag("E007", f"`{token}` is too large a number", self.span(token),
                                    f"numbers are at most {MAX_NUMBER}"))
        return value

    def number(self, token: Token) -> ast.Number:
        text = str(token)
        value: int | float
        if any(c in text for c in ".eE"):
            value = float(text)
            if not math.isfinite(value):
                raise _BuildError(_diag("E007", f"`{text}` is too large a number", self.span(token),
                                        "a decimal number is at most about 1.8e308"))
        else:
            value = self.bounded(token, text)
        return ast.Number(span=self.span(token), value=value, text=text)

    def size(self, token: Token) -> ast.Size:
        text = str(token)
        digits = text.rstrip("BKMGi")
        value = self.bounded(token, digits, _SIZE_UNITS[text[len(digits):]])
        return ast.Size(span=self.span(token), value=value, text=text)

    def range(self, token: Token) -> ast.Range:
        low, high = (self.bounded(token, part) for part in str(token).split(".."))
        span = self.span(token)
        return ast.Range(span=span, low=low, high=high)

    # rules

    def pair(self, children: list[Any]) -> ast.Pair:
        key, _equals, value = children
        span = self.outer(children)
        return ast.Pair(span=span, key=str(key), value=value)

    def json_member(self, children: list[Any]) -> tuple[str, Any]:
        return self.json_string(children[0]), _json_python(children[-1])

    def json_object(self, children: list[Any]) -> ast.Json:
        members: dict[str, Any] = dict(child for child in children if isinstance(child, tuple))
        return ast.Json(span=self.outer(children), value=members)

    def json_empty(self, children: list[Any]) -> ast.Json:
        return ast.Json(span=self.outer(children), value={})

    def json_array(self, children: list[Any]) -> ast.Json:
        items = [_json_python(child) for child in children if not isinstance(child, Token)]
        return ast.Json(span=self.outer(children), value=items)

    def block(self, children: list[Any]) -> ast.Block:
        statements = [c for c in children if isinstance(c, ast.Statement)]
        return ast.Block(span=self.outer(children), statements=statements)

    def statement(self, children: list[Any]) -> ast.Statement:
        head, *rest = children
        block = rest.pop() if rest and isinstance(rest[-1], ast.Block) else None
        return ast.Statement(span=self.outer(children), name=str(head),
                             name_span=self.span(head), values=rest, block=block)

    def start(self, children: list[Any]) -> list[ast.Statement]:
        return [c for c in children if isinstance(c, ast.Statement)]


_JSON_NAMES: dict[str, Any] = {"true": True, "false": False, "null": None}


def _json_python(node: Any) -> Any:
    """A JSON value node → its Python value; a bare name other than true/false/null stays a Name."""
    if isinstance(node, ast.Json):
        return node.value
    if isinstance(node, ast.Name):
        return _JSON_NAMES.get(node.value, _BareName(node))
    if isinstance(node, (ast.String, ast.Number)):
        return node.value
    return node


class _BareName(str):
    """A bare identifier inside a JSON literal (the checker reports it as E702)."""

    node: ast.Name

    def __new__(cls, node: ast.Name) -> _BareName:
        self = super().__new__(cls, node.value)
        self.node = node
        return self

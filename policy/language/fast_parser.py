"""The parser's fast path: a policy that parses, read in one regex pass without Lark.

Lark's LALR parser costs a few microseconds a token in Python, and a large
policy has a million tokens.  This reads the same grammar
(``grammar/policy.lark``, whose terminals it takes from Lark, in the order
Lark's lexer tries them) with one compiled pattern and a small
recursive-descent reader, and builds the same nodes through
``policy.language.leaves``.  It only ever accepts: on anything it does not
read (a syntax error, a value that cannot be built, nesting past
``MAX_DEPTH``) it gives up, and the Lark parser reads the text again and
says what is wrong, so diagnostics come from one place.  A test checks on
random texts that whenever this path accepts, the tree equals Lark's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from policy.language import ast, leaves
from policy.language.leaves import MAX_DEPTH
from policy.model.diagnostics import Span

TERMINAL_ORDER = (
    "SIZE", "LONG_STRING", "RANGE", "STRING", "REGEX", "NUMBER", "NAME", "_SEP", "COMMENT", "WS",
    "COLON", "COMMA", "EQUALS", "LBRACE", "LBRACKET", "RBRACE", "RBRACKET",
)
"""Every terminal of the grammar, in the order Lark's lexer tries them (priority first)."""
_IGNORED = frozenset({"WS", "COMMENT"})
_SCALARS = frozenset({"NAME", "STRING", "NUMBER"})
_END_OF_STATEMENT = frozenset({"_SEP", "RBRACE", "$END"})

Token = tuple[str, str, int, int, int]
"""(terminal, text, offset, line, offset of that line's first character)."""


def token_pattern(regexps: Callable[[str], str]) -> re.Pattern[str]:
    """One pattern with a named group per terminal (``regexps(name)`` gives its regex) and a last
    group for any other character."""
    alternatives = [f"(?P<{name}>{regexps(name)})" for name in TERMINAL_ORDER]
    return re.compile("|".join([*alternatives, r"(?P<BAD>[\s\S])"]))


class _GiveUp(Exception):
    """This path does not read the text: Lark's parser will, and say why."""


def fast_parse(text: str, path: str, pattern: re.Pattern[str]) -> list[ast.Statement] | None:
    """The file's statements, or None when the text is not a policy this path reads."""
    try:
        return _Reader(text, path, pattern).file()
    except (_GiveUp, leaves.BuildError):
        return None


def _tokens(text: str, pattern: re.Pattern[str]) -> Iterator[Token]:
    line, line_start = 1, 0
    for match in pattern.finditer(text):
        kind = match.lastgroup
        if kind in _IGNORED:
            continue
        if kind == "BAD" or kind is None:
            raise _GiveUp
        value, start = match.group(), match.start()
        yield kind, value, start, line, line_start
        if (kind == "_SEP" or kind == "LONG_STRING") and "\n" in value:
            line += value.count("\n")
            line_start = start + value.rindex("\n") + 1
    yield "$END", "", len(text), line, line_start


class _Reader:
    """Recursive descent over the grammar's rules; nesting is bounded by ``MAX_DEPTH``."""

    def __init__(self, text: str, path: str, pattern: re.Pattern[str]) -> None:
        self.path = path
        self.next_token = _tokens(text, pattern).__next__
        self.token = self.next_token()

    def advance(self) -> Token:
        token = self.token
        self.token = self.next_token()
        return token

    def skip_separator(self) -> None:
        if self.token[0] == "_SEP":
            self.token = self.next_token()

    def expect(self, kind: str) -> Token:
        if self.token[0] != kind:
            raise _GiveUp
        return self.advance()

    def span(self, token: Token) -> Span:
        kind, value, start, line, line_start = token
        end = start + len(value)
        if kind == "LONG_STRING" and "\n" in value:
            last = start + value.rindex("\n") + 1
            return Span(self.path, line, start - line_start + 1, line + value.count("\n"), end - last + 1,
                        start, end)
        column = start - line_start + 1
        return Span(self.path, line, column, line, column + len(value), start, end)

    def outer(self, first: Span, last: Span) -> Span:
        return Span(self.path, first.line, first.column, last.end_line, last.end_column, first.start,
                    last.end)

    def leaf(self, token: Token) -> ast.Value:
        build: Callable[[str, Span], ast.Value] = leaves.LEAVES[token[0]]  # type: ignore[assignment]
        return build(token[1], self.span(token))

    # statements

    def file(self) -> list[ast.Statement]:
        return self.statements("$END", 0)

    def statements(self, closer: str, depth: int) -> list[ast.Statement]:
        """``_SEP? (statement (_SEP statement)* _SEP?)?`` up to ``closer`` (not consumed)."""
        statements: list[ast.Statement] = []
        self.skip_separator()
        while self.token[0] != closer:
            statements.append(self.statement(depth))
            if self.token[0] == "_SEP":
                self.token = self.next_token()
            elif self.token[0] != closer:
                raise _GiveUp
        return statements

    def statement(self, depth: int) -> ast.Statement:
        """``NAME _value* block?``"""
        head = self.expect("NAME")
        name_span = self.span(head)
        values: list[ast.Value] = []
        block: ast.Block | None = None
        last = name_span
        while (kind := self.token[0]) not in _END_OF_STATEMENT:
            value: ast.Value
            if kind == "NAME":
                key = self.advance()
                if self.token[0] == "EQUALS":
                    self.token = self.next_token()
                    if self.token[0] not in _SCALARS:
                        raise _GiveUp
                    scalar = self.leaf(self.advance())
                    assert isinstance(scalar, ast.Name | ast.String | ast.Number)
                    value = ast.Pair(span=self.outer(self.span(key), scalar.span), key=key[1], value=scalar)
                else:
                    value = self.leaf(key)
            elif kind == "LBRACE":
                opening = self.open(depth)
                if self.token[0] == "STRING":
                    value = self.json_object(opening, depth + 1)
                else:
                    block = self.block(opening, depth + 1)
                    last = block.span
                    break
            elif kind == "LBRACKET":
                value = self.json_array(self.open(depth), depth + 1)
            elif kind in leaves.LEAVES:
                value = self.leaf(self.advance())
            else:
                raise _GiveUp
            values.append(value)
            last = value.span
        return ast.Statement(span=self.outer(name_span, last), name=head[1], name_span=name_span,
                             values=values, block=block)

    def open(self, depth: int) -> Span:
        """Consume an opening bracket (and a separator after it); its span."""
        if depth >= MAX_DEPTH:
            raise _GiveUp
        opening = self.span(self.advance())
        self.skip_separator()
        return opening

    def block(self, opening: Span, depth: int) -> ast.Block:
        statements = self.statements("RBRACE", depth)
        closing = self.span(self.advance())
        return ast.Block(span=self.outer(opening, closing), statements=statements)

    # JSON literals

    def json_object(self, opening: Span, depth: int) -> ast.Json:
        """The rest of ``LBRACE _SEP? json_member (_SEP? COMMA _SEP? json_member)* _SEP? COMMA? _SEP?
        RBRACE``."""
        members: dict[str, Any] = {}
        while True:
            key = self.expect("STRING")
            self.skip_separator()
            self.expect("COLON")
            self.skip_separator()
            members[leaves.json_string(key[1], self.span(key))] = self.json_value(depth)
            self.skip_separator()
            if self.token[0] == "RBRACE":
                break
            self.expect("COMMA")
            self.skip_separator()
            if self.token[0] == "RBRACE":
                break
        return ast.Json(span=self.outer(opening, self.span(self.advance())), value=members)

    def json_array(self, opening: Span, depth: int) -> ast.Json:
        """The rest of ``LBRACKET _SEP? (_json (_SEP? COMMA _SEP? _json)* _SEP? COMMA? _SEP?)? RBRACKET``."""
        items: list[Any] = []
        while self.token[0] != "RBRACKET":
            items.append(self.json_value(depth))
            self.skip_separator()
            if self.token[0] == "COMMA":
                self.token = self.next_token()
                self.skip_separator()
            elif self.token[0] != "RBRACKET":
                raise _GiveUp
        return ast.Json(span=self.outer(opening, self.span(self.advance())), value=items)

    def json_value(self, depth: int) -> Any:
        """``_json``: an object, ``{}``, an array, a string, a text, a number or a name (its Python value)."""
        kind = self.token[0]
        if kind == "LBRACE":
            opening = self.open(depth)
            if self.token[0] == "RBRACE":
                self.advance()
                return {}
            return self.json_object(opening, depth + 1).value
        if kind == "LBRACKET":
            return self.json_array(self.open(depth), depth + 1).value
        if kind in ("STRING", "LONG_STRING", "NUMBER", "NAME"):
            return leaves.json_python(self.leaf(self.advance()))
        raise _GiveUp

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

TERMINAL_ORDER = (
    "SIZE", "LONG_STRING", "RANGE", "STRING", "REGEX", "NUMBER", "NAME", "_SEP", "COMMENT", "WS",
    "COLON", "COMMA", "EQUALS", "LBRACE", "LBRACKET", "RBRACE", "RBRACKET",
)
"""Every terminal of the grammar, in the order Lark's lexer tries them (priority first)."""
FIRST_TRIED = ("NAME", "_SEP", "LBRACE", "RBRACE")
"""The most frequent terminals, which the token pattern tries first: each alternative tried in vain
costs the regex engine a step per token (a quarter of the tokenizer's time on a large policy).
None of them starts with a character that a terminal it moves ahead of can start with, so the
same terminal matches as in Lark's order."""
TRIED_ORDER = (*FIRST_TRIED, *(name for name in TERMINAL_ORDER if name not in FIRST_TRIED))
_SCALARS = frozenset({"NAME", "STRING", "NUMBER"})
_END_OF_STATEMENT = frozenset({"_SEP", "RBRACE", "$END"})
_LEAVES: dict[str, Callable[[str, ast.SourceLines, int], ast.Value]] = leaves.LEAVES  # type: ignore[assignment]

Token = tuple[str, str, int]
"""(terminal, text, offset of its first character)."""


def token_pattern(regexps: Callable[[str], str], order: tuple[str, ...] = TRIED_ORDER) -> re.Pattern[str]:
    """One pattern with a named group per terminal (``regexps(name)`` gives its regex), tried in
    ``order``, and a last group for any other character, each after the blanks before it.

    No terminal but ``_SEP`` and ``WS`` starts with a blank, and ``_SEP`` may start anywhere in a
    run of blanks: so a match takes the same token as Lark's lexer, after the blanks Lark would
    have read as ``WS`` (a run of blanks is ``WS`` only at the end of the text).
    """
    alternatives = [f"(?P<{name}>{regexps(name)})" for name in order]
    tokens = "|".join([*alternatives, r"(?P<BAD>[\s\S])"])
    return re.compile(f"(?:{regexps('WS')})?(?:{tokens})")


class _GiveUp(Exception):
    """This path does not read the text: Lark's parser will, and say why."""


def fast_parse(text: str, path: str, pattern: re.Pattern[str],
               lines: ast.SourceLines | None = None) -> list[ast.Statement] | None:
    """The file's statements, or None when the text is not a policy this path reads (``lines``:
    the text's line index, when the caller has one)."""
    try:
        return _Reader(lines or ast.SourceLines(path, text), pattern).file()
    except (_GiveUp, leaves.BuildError):
        return None


def _tokens(text: str, pattern: re.Pattern[str]) -> Iterator[Token]:
    """The text's tokens; a name written many times (``hint``, ``match``) is one string, not one each."""
    terminals = {index: name for name, index in pattern.groupindex.items()}
    names: dict[str, str] = {}
    for match in pattern.finditer(text):
        index = match.lastindex or 0  # 0 (no group) is not a terminal
        kind = terminals.get(index)
        if kind == "NAME":
            name = match.group(index)
            yield kind, names.setdefault(name, name), match.start(index)
            continue
        if kind == "WS" or kind == "COMMENT":
            continue
        if kind == "BAD" or kind is None:
            raise _GiveUp
        yield kind, match.group(index), match.start(index)
    yield "$END", "", len(text)


class _Reader:
    """Recursive descent over the grammar's rules; nesting is bounded by ``MAX_DEPTH``."""

    def __init__(self, lines: ast.SourceLines, pattern: re.Pattern[str]) -> None:
        self.lines = lines
        self.next_token = _tokens(lines.text, pattern).__next__
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

    def leaf(self, token: Token) -> ast.Value:
        return _LEAVES[token[0]](token[1], self.lines, token[2])

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
        lines, next_token = self.lines, self.next_token
        head = self.token
        if head[0] != "NAME":
            raise _GiveUp
        start = head[2]
        end = start + len(head[1])
        self.token = next_token()
        values: list[ast.Value] = []
        block: ast.Block | None = None
        while (kind := self.token[0]) not in _END_OF_STATEMENT:
            value: ast.Value
            if kind == "NAME":
                key = self.token
                self.token = next_token()
                if self.token[0] == "EQUALS":
                    self.token = next_token()
                    if self.token[0] not in _SCALARS:
                        raise _GiveUp
                    scalar = self.leaf(self.advance())
                    assert isinstance(scalar, ast.Name | ast.String | ast.Number)
                    value = ast.Pair(lines, key[2], scalar.end, key[1], scalar)
                else:
                    value = ast.Name(lines, key[2], key[2] + len(key[1]), key[1])
            elif kind == "LBRACE":
                opening = self.open(depth)
                if self.token[0] == "STRING":
                    value = self.json_object(opening, depth + 1)
                else:
                    block = self.block(opening, depth + 1)
                    end = block.end
                    break
            elif kind == "LBRACKET":
                value = self.json_array(self.open(depth), depth + 1)
            elif (build := _LEAVES.get(kind)) is not None:
                token = self.token
                self.token = next_token()
                value = build(token[1], lines, token[2])
            else:
                raise _GiveUp
            values.append(value)
            end = value.end
        return ast.Statement(lines, start, end, head[1], values, block)

    def open(self, depth: int) -> int:
        """Consume an opening bracket (and a separator after it); its offset."""
        if depth >= MAX_DEPTH:
            raise _GiveUp
        opening = self.advance()[2]
        self.skip_separator()
        return opening

    def close(self) -> int:
        """Consume a closing bracket; the offset just past it."""
        return self.advance()[2] + 1

    def block(self, opening: int, depth: int) -> ast.Block:
        statements = self.statements("RBRACE", depth)
        return ast.Block(self.lines, opening, self.close(), statements)

    # JSON literals

    def json_object(self, opening: int, depth: int) -> ast.Json:
        """The rest of ``LBRACE _SEP? json_member (_SEP? COMMA _SEP? json_member)* _SEP? COMMA? _SEP?
        RBRACE``."""
        members: dict[str, Any] = {}
        while True:
            key = self.expect("STRING")
            self.skip_separator()
            self.expect("COLON")
            self.skip_separator()
            members[leaves.json_string(key[1], self.lines, key[2])] = self.json_value(depth)
            self.skip_separator()
            if self.token[0] == "RBRACE":
                break
            self.expect("COMMA")
            self.skip_separator()
            if self.token[0] == "RBRACE":
                break
        return ast.Json(lines=self.lines, start=opening, end=self.close(), value=members)

    def json_array(self, opening: int, depth: int) -> ast.Json:
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
        return ast.Json(lines=self.lines, start=opening, end=self.close(), value=items)

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

"""Text → syntax tree.  Lark stays inside this module: no Lark object escapes it.

The LALR parser is built once per process; its tables are cached as plain
data in the user's private cache folder (``policy.language.grammar_cache``).  Syntax
errors become coded diagnostics with the expected tokens named in words, and
Lark's ``on_error`` recovery lets one run report several of them.
"""

from __future__ import annotations

import re
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

from policy.language import ast, leaves
from policy.language.fast_parser import fast_parse, token_pattern
from policy.language.grammar_cache import cached_parser
from policy.language.leaves import MAX_DEPTH
from policy.model.diagnostics import Diagnostic, Span
from policy.resources import data_dir

MAX_SYNTAX_ERRORS = 20
MAX_RECOVERIES = 200
"""Syntax errors the parser recovers from before it stops (a bad line can hold thousands)."""

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


@cache
def _token_pattern() -> re.Pattern[str]:
    return token_pattern(lambda name: _lark().get_terminal(name).pattern.to_regexp())


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
        span = ast.SourceLines(path, text).span(nul, nul + 1)
        return None, [_diag("E001", "file contains a NUL byte: it looks binary, not a policy", span)]
    return text.removeprefix("\ufeff"), []


def parse(text: str, path: str) -> tuple[ast.PolicyFile | None, list[Diagnostic]]:
    """Parse policy text.  Returns the tree (None when there are syntax errors) and diagnostics.

    Text the fast path reads (``policy.language.fast_parser``) is not parsed again; Lark's parser
    reads the rest, and says what is wrong with it.
    """
    lines = ast.SourceLines(path, text)
    statements = fast_parse(text, path, _token_pattern(), lines)
    if statements is None:
        return parse_with_lark(text, path)
    return ast.PolicyFile(lines=lines, start=0, end=len(text), path=path, source=text,
                          statements=statements), []


def parse_with_lark(text: str, path: str) -> tuple[ast.PolicyFile | None, list[Diagnostic]]:
    """``parse`` by Lark's parser alone: the reference the fast path is tested against."""
    lines = ast.SourceLines(path, text)
    errors: list[Diagnostic] = []
    seen_lines: set[int] = set()
    recoveries = 0

    def on_error(err: UnexpectedInput) -> bool:
        nonlocal recoveries
        recoveries += 1
        if getattr(err, "line", None) not in seen_lines:  # one diagnostic a line
            diagnostic = _syntax_diagnostic(err, lines)
            if diagnostic.span.line not in seen_lines:
                seen_lines.add(diagnostic.span.line)
                errors.append(diagnostic)
        return len(errors) < MAX_SYNTAX_ERRORS and recoveries < MAX_RECOVERIES

    try:
        tree = _lark().parse(text, on_error=on_error)
    except UnexpectedInput as err:
        final = _syntax_diagnostic(err, lines)
        if final.span.line not in seen_lines:
            errors.append(final)
        return None, errors
    if errors:
        return None, errors
    try:
        statements = _Builder(lines).build(tree)
    except leaves.BuildError as err:
        return None, [err.diagnostic]
    return ast.PolicyFile(lines=lines, start=0, end=len(text), path=path, source=text,
                          statements=statements), []


# --- syntax errors ---------------------------------------------------------


_diag = leaves.diagnostic


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


def _syntax_diagnostic(err: UnexpectedInput, lines: ast.SourceLines) -> Diagnostic:
    text = lines.text
    if isinstance(err, UnexpectedCharacters):
        start = err.pos_in_stream or 0
        char = text[start] if start < len(text) else ""
        span = lines.span(start, start + 1)
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
            span = lines.span(len(text), len(text))
        else:
            span = lines.span(token.start_pos, token.end_pos or token.start_pos + 1)
        expected = token_words(err.accepts or err.expected)
        return _diag("E002", f"unexpected {_describe(token)}", span, "expected " + ", ".join(expected))
    if isinstance(err, UnexpectedEOF):
        span = lines.span(len(text), len(text))
        return _diag("E002", "unexpected end of file", span,
                     "expected " + ", ".join(token_words(set(err.expected))))
    span = lines.span(0, 0)
    return _diag("E002", str(err).splitlines()[0], span)


# --- tree → AST -------------------------------------------------------------


_LEAF_RULES = {"name": leaves.name, "string": leaves.string, "long_string": leaves.long_string,
               "regex": leaves.regex, "number": leaves.number, "size": leaves.size, "range": leaves.range_}
_NESTING = frozenset({"block", "json_object", "json_array"})


class _Builder:
    """Lark's parse tree → AST, bottom-up with an explicit stack (deep input cannot overflow).

    Positions come from the tokens (the parser does not propagate them, which
    would cost more than the parse itself); a node spans its first token to
    the end of its last child.
    """

    def __init__(self, lines: ast.SourceLines) -> None:
        self.lines = lines
        self.rules: dict[str, Callable[[list[Any]], Any]] = {
            "start": self.start, "statement": self.statement, "block": self.block, "pair": self.pair,
            "json_object": self.json_object, "json_member": self.json_member, "json_array": self.json_array,
            "json_empty": self.json_empty,
        }

    def build(self, tree: lark.Tree[Token]) -> list[ast.Statement]:
        """The statements of the file; raises :class:`leaves.BuildError`."""
        stack: list[tuple[str, Iterator[Any], list[Any], int]] = [(tree.data, iter(tree.children), [], 0)]
        while True:
            rule, children, done, depth = stack[-1]
            for child in children:
                if not isinstance(child, lark.Tree):
                    done.append(child)
                elif child.data in _LEAF_RULES:
                    token = cast(Token, child.children[0])
                    done.append(_LEAF_RULES[child.data](str(token), self.lines, _start(token)))
                else:
                    nested = depth + 1 if child.data in _NESTING else depth
                    if nested > MAX_DEPTH:
                        message = f"blocks nested more than {MAX_DEPTH} levels deep"
                        first = cast(Token, child.children[0])
                        span = self.lines.span(_start(first), _start(first) + len(first))
                        raise leaves.BuildError(_diag("E005", message, span))
                    stack.append((child.data, iter(child.children), [], nested))
                    break
            else:
                stack.pop()
                value = self.rules[rule](done)
                if not stack:
                    statements: list[ast.Statement] = value
                    return statements
                stack[-1][2].append(value)

    @staticmethod
    def bounds(children: list[Any]) -> tuple[int, int]:
        """From the start of the first child to the end of the last (each a token or a node)."""
        first, last = children[0], children[-1]
        start = _start(first) if isinstance(first, Token) else first.start
        end = _start(last) + len(last) if isinstance(last, Token) else last.end
        return start, end

    # rules

    def pair(self, children: list[Any]) -> ast.Pair:
        key, _equals, value = children
        start, end = self.bounds(children)
        return ast.Pair(lines=self.lines, start=start, end=end, key=str(key), value=value)

    def json_member(self, children: list[Any]) -> tuple[str, Any]:
        key = children[0]
        return leaves.json_string(str(key), self.lines, _start(key)), leaves.json_python(children[-1])

    def json_object(self, children: list[Any]) -> ast.Json:
        members: dict[str, Any] = dict(child for child in children if isinstance(child, tuple))
        start, end = self.bounds(children)
        return ast.Json(lines=self.lines, start=start, end=end, value=members)

    def json_empty(self, children: list[Any]) -> ast.Json:
        start, end = self.bounds(children)
        return ast.Json(lines=self.lines, start=start, end=end, value={})

    def json_array(self, children: list[Any]) -> ast.Json:
        items = [leaves.json_python(child) for child in children if not isinstance(child, Token)]
        start, end = self.bounds(children)
        return ast.Json(lines=self.lines, start=start, end=end, value=items)

    def block(self, children: list[Any]) -> ast.Block:
        statements = [c for c in children if isinstance(c, ast.Statement)]
        start, end = self.bounds(children)
        return ast.Block(lines=self.lines, start=start, end=end, statements=statements)

    def statement(self, children: list[Any]) -> ast.Statement:
        head, *rest = children
        block = rest.pop() if rest and isinstance(rest[-1], ast.Block) else None
        start, end = self.bounds(children)
        return ast.Statement(lines=self.lines, start=start, end=end, name=str(head), values=rest, block=block)

    def start(self, children: list[Any]) -> list[ast.Statement]:
        return [c for c in children if isinstance(c, ast.Statement)]


def _start(token: Token) -> int:
    located: Any = token  # the lexer gives every token its position: it is never None
    start: int = located.start_pos
    return start

"""Text → syntax tree.  Lark stays inside this module: no Lark object escapes it.

The LALR parser is built once per process and cached (pickled) in the user's
own cache folder, keyed by the grammar text and the Lark version.  Syntax
errors become coded diagnostics with the expected tokens named in words, and
Lark's ``on_error`` recovery lets one run report several of them.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from functools import cache
from typing import Any

import lark
from lark import Lark, Token, Transformer_NonRecursive, v_args
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from lark.tree import Meta

from policy import ast
from policy.codes import severity_of
from policy.diagnostics import Diagnostic, Span
from policy.resources import data_dir, user_cache_dir

MAX_SYNTAX_ERRORS = 20
MAX_DEPTH = 32

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


@cache
def _lark() -> Lark:
    grammar = (data_dir("grammar") / "policy.lark").read_text(encoding="utf-8")
    digest = hashlib.sha256(f"{lark.__version__}\0{grammar}".encode()).hexdigest()[:16]
    try:
        cache_file: str | bool = str(user_cache_dir() / f"grammar-{digest}.lark-cache")
    except OSError:
        cache_file = False  # no writable cache folder: build in memory every time
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        strict=True,
        propagate_positions=True,
        maybe_placeholders=False,
        cache=cache_file,
    )


def build_parser_uncached() -> Lark:
    """Build the parser from the grammar, with every strictness check (used by tests)."""
    grammar = (data_dir("grammar") / "policy.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="contextual", strict=True, propagate_positions=True)


def token_words(names: set[str] | frozenset[str]) -> list[str]:
    """Human words for Lark terminal names, in a stable order."""
    return sorted({_TOKEN_WORDS.get(n, f"`{n.lower()}`") for n in names})


def parse_bytes(data: bytes, path: str) -> tuple[ast.PolicyFile | None, list[Diagnostic]]:
    """Decode and parse a file's bytes; undecodable input is a diagnostic, not an exception."""
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
    if text.startswith("\ufeff"):
        text = text[1:]
    return parse(text, path)


def parse(text: str, path: str) -> tuple[ast.PolicyFile | None, list[Diagnostic]]:
    """Parse policy text.  Returns the tree (None when there are syntax errors) and diagnostics."""
    errors: list[Diagnostic] = []
    seen_lines: set[int] = set()

    def on_error(err: UnexpectedInput) -> bool:
        diagnostic = _syntax_diagnostic(err, text, path)
        if diagnostic.span.line not in seen_lines:
            seen_lines.add(diagnostic.span.line)
            errors.append(diagnostic)
        return len(errors) < MAX_SYNTAX_ERRORS

    try:
        tree = _lark().parse(text, on_error=on_error)
    except UnexpectedInput as err:
        final = _syntax_diagnostic(err, text, path)
        if final.span.line not in seen_lines:
            errors.append(final)
        return None, errors
    if errors:
        return None, errors
    depth_error = _check_depth(tree, path)
    if depth_error:
        return None, [depth_error]
    try:
        statements = _ToAst(text, path).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, _StringError):
            return None, [err.orig_exc.diagnostic]
        raise
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
        start = err.pos_in_stream
        char = text[start] if start < len(text) else ""
        span = _span_at(text, start, start + 1, path)
        if char == '"':
            return _diag("E004", "unterminated string", span,
                         'a "string" ends on its own line; use """triple quotes""" for text on several lines')
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


def _check_depth(tree: lark.Tree[Token], path: str) -> Diagnostic | None:
    stack: list[tuple[lark.Tree[Token], int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        nested = depth + (1 if node.data in ("block", "json_object", "json_array") else 0)
        if nested > MAX_DEPTH:
            meta = node.meta
            span = Span(file=path, line=meta.line, column=meta.column, end_line=meta.line,
                        end_column=meta.column + 1, start=meta.start_pos, end=meta.start_pos + 1)
            return _diag("E005", f"blocks nested more than {MAX_DEPTH} levels deep", span)
        stack.extend((child, nested) for child in node.children if isinstance(child, lark.Tree))
    return None


# --- tree → AST -------------------------------------------------------------


class _StringError(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic


def _token_span(token: Token, path: str) -> Span:
    return Span.model_construct(file=path, line=token.line or 1, column=token.column or 1,
                end_line=token.end_line or 1, end_column=token.end_column or 1,
                start=token.start_pos or 0, end=token.end_pos or 0)


def _meta_span(meta: Meta, path: str) -> Span:
    return Span.model_construct(file=path, line=meta.line, column=meta.column, end_line=meta.end_line,
                end_column=meta.end_column, start=meta.start_pos, end=meta.end_pos)


def _long_string_value(token: str) -> str:
    body = token[3:-3]
    if body.startswith("\r\n"):
        body = body[2:]
    elif body.startswith("\n"):
        body = body[1:]
    return textwrap.dedent(body)


@v_args(inline=True)
class _ToAst(Transformer_NonRecursive):  # type: ignore[type-arg]
    """Builds pydantic nodes bottom-up without recursion (deep input cannot overflow)."""

    def __init__(self, text: str, path: str) -> None:
        super().__init__()
        self.path = path

    def _span(self, token: Token) -> Span:
        return _token_span(token, self.path)

    def _json_string(self, token: Token) -> str:
        try:
            value = json.loads(token)
        except ValueError:
            raise _StringError(_diag("E006", "invalid escape sequence in string", self._span(token),
                                     r'use \" \\ \n \t \r \/ \b \f or \uXXXX')) from None
        assert isinstance(value, str)
        return value

    def name(self, token: Token) -> ast.Name:
        return ast.Name.model_construct(span=self._span(token), value=str(token))

    def string(self, token: Token) -> ast.String:
        return ast.String.model_construct(span=self._span(token), value=self._json_string(token))

    def long_string(self, token: Token) -> ast.String:
        return ast.String.model_construct(span=self._span(token), value=_long_string_value(token), triple=True)

    def regex(self, token: Token) -> ast.Regex:
        text = str(token)
        close = text.rindex("/")
        pattern = text[1:close].replace("\\/", "/")
        return ast.Regex.model_construct(span=self._span(token), pattern=pattern, flags=text[close + 1:])

    def number(self, token: Token) -> ast.Number:
        text = str(token)
        value: int | float = float(text) if any(c in text for c in ".eE") else int(text)
        return ast.Number.model_construct(span=self._span(token), value=value, text=text)

    def size(self, token: Token) -> ast.Size:
        text = str(token)
        digits = text.rstrip("BKMGi")
        return ast.Size.model_construct(span=self._span(token), value=int(digits) * _SIZE_UNITS[text[len(digits):]], text=text)

    def range(self, token: Token) -> ast.Range:
        low, high = str(token).split("..")
        return ast.Range.model_construct(span=self._span(token), low=int(low), high=int(high))

    @v_args(meta=True)
    def pair(self, meta: Meta, children: list[Any]) -> ast.Pair:
        key, _equals, value = children
        return ast.Pair.model_construct(span=_meta_span(meta, self.path), key=str(key), value=value)

    @v_args(meta=True)
    def json_member(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        key = self._json_string(children[0])
        value = children[-1]
        return key, _json_python(value)

    @v_args(meta=True)
    def json_object(self, meta: Meta, children: list[Any]) -> ast.Json:
        members = dict(child for child in children if isinstance(child, tuple))
        return ast.Json.model_construct(span=_meta_span(meta, self.path), value=members)

    @v_args(meta=True)
    def json_empty(self, meta: Meta, children: list[Any]) -> ast.Json:
        return ast.Json.model_construct(span=_meta_span(meta, self.path), value={})

    @v_args(meta=True)
    def json_array(self, meta: Meta, children: list[Any]) -> ast.Json:
        items = [_json_python(child) for child in children if not isinstance(child, Token)]
        return ast.Json.model_construct(span=_meta_span(meta, self.path), value=items)

    @v_args(meta=True)
    def block(self, meta: Meta, children: list[Any]) -> ast.Block:
        statements = [c for c in children if isinstance(c, ast.Statement)]
        return ast.Block.model_construct(span=_meta_span(meta, self.path), statements=statements)

    @v_args(meta=True)
    def statement(self, meta: Meta, children: list[Any]) -> ast.Statement:
        head, *rest = children
        block = rest.pop() if rest and isinstance(rest[-1], ast.Block) else None
        return ast.Statement.model_construct(span=_meta_span(meta, self.path), name=str(head), name_span=self._span(head),
                             values=rest, block=block)

    @v_args(meta=True)
    def start(self, meta: Meta, children: list[Any]) -> list[ast.Statement]:
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

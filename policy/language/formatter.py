"""Canonical layout of a .policy file (``policyctl fmt``).

The rules, applied to the parsed file:

* one statement per line, indented two spaces per block level; values are
  separated by one space; ``key=value`` pairs have no spaces around ``=``;
* a block is written ``name values {`` … ``}`` with its statements on their
  own lines, except that a block that holds exactly one statement (itself
  without a block), was written on one line, and fits in
  :data:`LINE_LENGTH` columns stays on one line: ``scope { max_scopes 1000 }``;
  an empty block is ``{}``;
* top level: one blank line between declarations, except between one-line
  declarations of the same kind (``normalize``, ``hint … file``, ``tool …``),
  where a blank line is kept only if the source had one;
* inside blocks, and around comments, a blank line is kept where the source
  had one (runs of blank lines become one); never right after ``{`` or
  before ``}``;
* comments stay where they were: a comment on its own line stays above the
  statement that follows it (or at the end of its block), and a comment after
  code stays after the same code, two spaces from it;
* strings, patterns, numbers and sizes are kept exactly as written (a
  triple-quoted string byte for byte); JSON literals are normalised to
  ``{ "key": value, … }`` and ``[a, b]`` on one line, or one member per line
  when they were written over several lines (then a nested value that does
  not fit in :data:`LINE_LENGTH` columns is expanded the same way).

The parser drops comments, so they are recovered from the source text: every
``#`` outside a string, pattern or JSON literal starts one.  A comment inside
a JSON literal cannot be placed safely, so such a file is refused.  The
result is parsed again and compared (tree and comments) with the original
before it is returned: a file is never rewritten into something else.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from dataclasses import dataclass, field, fields
from typing import Any

from policy.language import ast
from policy.language.leaves import BareName
from policy.language.parser import parse
from policy.model.diagnostics import Diagnostic, Span

LINE_LENGTH = 100
INDENT = "  "

_BLANK_LINE = re.compile(r"\n[ \t\f\r]*\n")
_COMMENT = re.compile(r"#[^\n]*")
_JSON_TOKENS = re.compile(r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""|"(?:[^"\\\n]|\\.)*"|#')


class FormatError(Exception):
    """A file that cannot be formatted; ``diagnostics`` holds its syntax errors, if that is why."""

    def __init__(self, message: str, diagnostics: list[Diagnostic] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics or []


def format_text(text: str, path: str = "<string>") -> str:
    """Parse and format policy text; raises :class:`FormatError`."""
    tree, diagnostics = parse(text, path)
    if tree is None:
        raise FormatError(f"{path}: not formatted: it has syntax errors", diagnostics)
    return format_policy(tree)


def format_policy(tree: ast.PolicyFile) -> str:
    """The canonical text of a parsed file; raises :class:`FormatError` rather than lose anything."""
    formatted = _Formatter(tree).format()
    reparsed, _ = parse(formatted, tree.path)
    if reparsed is None or structure(reparsed) != structure(tree):
        raise FormatError(f"{tree.path}: not formatted: the result would not mean the same "
                          "(a formatter bug; please report it)")
    if [c.text for c in find_comments(reparsed)] != [c.text for c in find_comments(tree)]:
        raise FormatError(f"{tree.path}: not formatted: its comments could not all be kept in place")
    return formatted


def structure(tree: ast.PolicyFile) -> list[Any]:
    """The file as plain data without positions: equal for two texts that mean the same."""
    return [_statement_structure(s) for s in tree.statements]


def _statement_structure(statement: ast.Statement) -> Any:
    block = statement.block
    return (
        statement.name,
        [_value_structure(v) for v in statement.values],
        None if block is None else [_statement_structure(s) for s in block.statements],
    )


def _value_structure(value: ast.Value) -> Any:
    if isinstance(value, ast.Json):
        return ("json", _json_structure(value.value))
    if isinstance(value, ast.Pair):
        return ("pair", value.key, _value_structure(value.value))
    return (value.kind, *(getattr(value, f.name) for f in fields(value) if f.name not in _POSITION))


_POSITION = frozenset(f.name for f in fields(ast.Node))


def _json_structure(value: Any) -> Any:
    if isinstance(value, dict):
        return ("object", [(k, _json_structure(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("array", [_json_structure(v) for v in value])
    if isinstance(value, BareName):
        return ("name", str(value))
    return (type(value).__name__, value)


# --- comments -----------------------------------------------------------------


@dataclass(frozen=True)
class Comment:
    """A ``# …`` comment; ``end`` is one past its last non-blank character."""

    start: int
    end: int
    text: str
    own_line: bool
    """Nothing but blanks before it on its line."""


def find_comments(tree: ast.PolicyFile) -> list[Comment]:
    """Every comment of the file, in order; raises :class:`FormatError` for one inside a JSON literal."""
    text = tree.source
    opaque: list[tuple[int, int]] = []
    for value in _values(tree.statements):
        if isinstance(value, ast.Pair):
            value = value.value
        if isinstance(value, ast.Json):
            _refuse_json_comment(tree, value)
        if isinstance(value, (ast.String, ast.Regex, ast.Json)):
            opaque.append((value.span.start, value.span.end))
    opaque.sort()
    comments: list[Comment] = []
    position = 0
    for start, end in [*opaque, (len(text), len(text))]:
        for match in _COMMENT.finditer(text, position, start):
            body = match.group().rstrip()
            line_start = text.rfind("\n", 0, match.start()) + 1
            own_line = not text[line_start:match.start()].strip(" \t\f")
            comments.append(Comment(match.start(), match.start() + len(body), body, own_line))
        position = max(position, end)
    return comments


def _values(statements: list[ast.Statement]) -> list[ast.Value]:
    values: list[ast.Value] = []
    stack = list(statements)
    while stack:
        statement = stack.pop()
        values.extend(statement.values)
        if statement.block is not None:
            stack.extend(statement.block.statements)
    return values


def _refuse_json_comment(tree: ast.PolicyFile, value: ast.Json) -> None:
    for match in _JSON_TOKENS.finditer(tree.source, value.span.start, value.span.end):
        if match.group() == "#":
            line = tree.source.count("\n", 0, match.start()) + 1
            column = match.start() - tree.source.rfind("\n", 0, match.start())
            raise FormatError(f"{tree.path}:{line}:{column}: not formatted: a comment inside a JSON "
                              "literal cannot be kept in place; move it above the statement")


# --- layout -------------------------------------------------------------------


@dataclass
class _Item:
    """A statement or an own-line comment of one block, with its rendered lines."""

    start: int
    end: int
    lines: list[str]
    statement: ast.Statement | None = None


@dataclass
class _Anchors:
    """Trailing comments by the line they follow: a statement's header or a block's ``}``."""

    header: dict[int, list[Comment]] = field(default_factory=dict)
    """By the statement's start offset."""
    close: dict[int, list[Comment]] = field(default_factory=dict)
    """By the block's end offset."""


class _Formatter:
    def __init__(self, tree: ast.PolicyFile) -> None:
        self.tree = tree
        self.text = tree.source
        first_newline = self.text.find("\n")
        self.newline = "\r\n" if first_newline > 0 and self.text[first_newline - 1] == "\r" else "\n"
        comments = find_comments(tree)
        self.comment_starts = [c.start for c in comments]
        self.anchors = _Anchors()
        unanchored = self._anchor_trailing([c for c in comments if not c.own_line], comments)
        self.own_line = sorted([c for c in comments if c.own_line] + unanchored, key=lambda c: c.start)
        self.own_line_starts = [c.start for c in self.own_line]

    def format(self) -> str:
        lines = self._block_lines(self.tree.statements, 0, len(self.text), 0)
        return self.newline.join(lines) + self.newline if lines else ""

    # trailing comments

    def _anchor_trailing(self, trailing: list[Comment], comments: list[Comment]) -> list[Comment]:
        """Attach comments that follow code to that code's line; returns those with no code before them."""
        if not trailing:
            return []
        anchors = self.anchors
        unanchored: list[Comment] = []
        opens: dict[int, ast.Statement] = {}
        closes: set[int] = set()
        headers: list[tuple[int, int, ast.Statement]] = []
        stack = list(self.tree.statements)
        while stack:
            statement = stack.pop()
            block = statement.block
            header_end = block.span.start if block else statement.span.end
            headers.append((statement.span.start, header_end, statement))
            if block is not None:
                opens[block.span.start] = statement
                closes.add(block.span.end)
                stack.extend(block.statements)
        headers.sort(key=lambda h: h[0])
        header_starts = [h[0] for h in headers]
        by_last_char = {c.end - 1: c for c in comments}
        for comment in trailing:
            at = self._code_before(comment.start, by_last_char)
            if at < 0:
                unanchored.append(comment)  # only `;` before it: a comment of its own
            elif at in opens:
                anchors.header.setdefault(opens[at].span.start, []).append(comment)
            elif at + 1 in closes:
                anchors.close.setdefault(at + 1, []).append(comment)
            else:
                index = bisect.bisect_right(header_starts, at) - 1
                if index < 0 or not headers[index][0] <= at < headers[index][1]:
                    raise FormatError(f"{self.tree.path}: not formatted: cannot tell which statement "
                                      f"the comment `{comment.text}` belongs to")
                anchors.header.setdefault(headers[index][2].span.start, []).append(comment)
        return unanchored

    def _code_before(self, position: int, by_last_char: dict[int, Comment]) -> int:
        """Offset of the last character of code before ``position`` (blanks, ``;`` and comments skipped)."""
        at = position - 1
        while at >= 0:
            if self.text[at] in " \t\f\r\n;":
                at -= 1
            elif at in by_last_char:
                at = by_last_char[at].start - 1
            else:
                break
        return at

    # blocks

    def _own_line_between(self, low: int, high: int) -> list[Comment]:
        first = bisect.bisect_left(self.own_line_starts, low)
        last = bisect.bisect_left(self.own_line_starts, high)
        return self.own_line[first:last]

    def _comment_item(self, comment: Comment, depth: int) -> _Item:
        return _Item(comment.start, comment.end, [INDENT * depth + comment.text])

    def _block_lines(self, statements: list[ast.Statement], low: int, high: int, depth: int) -> list[str]:
        """The lines of the statements and own-line comments between offsets ``low`` and ``high``."""
        items: list[_Item] = []
        position = low
        for statement in statements:
            above = self._own_line_between(position, statement.span.start)
            items.extend(self._comment_item(c, depth) for c in above)
            items.append(_Item(statement.span.start, statement.span.end,
                               self._statement_lines(statement, depth), statement))
            position = statement.span.end
        items.extend(self._comment_item(c, depth) for c in self._own_line_between(position, high))
        lines: list[str] = []
        for index, item in enumerate(items):
            if index and self._blank_before(items, index, top_level=depth == 0):
                lines.append("")
            lines.extend(item.lines)
        return lines

    def _had_blank(self, before: _Item, after: _Item) -> bool:
        return _BLANK_LINE.search(self.text, before.end, after.start) is not None

    def _blank_before(self, items: list[_Item], index: int, top_level: bool) -> bool:
        previous, current = items[index - 1], items[index]
        had_blank = self._had_blank(previous, current)
        if not top_level or previous.statement is None:
            return had_blank
        following = current if current.statement is not None else self._attached_statement(items, index)
        if following is None:
            return had_blank
        return had_blank or not _same_kind_one_liners(previous, following)

    def _attached_statement(self, items: list[_Item], index: int) -> _Item | None:
        """The statement that the run of comments starting at ``index`` sits directly above."""
        while index + 1 < len(items) and not self._had_blank(items[index], items[index + 1]):
            index += 1
            if items[index].statement is not None:
                return items[index]
        return None

    # statements

    def _statement_lines(self, statement: ast.Statement, depth: int) -> list[str]:
        indent = INDENT * depth
        header = self._header(statement, depth)
        header_comments = self.anchors.header.get(statement.span.start, [])
        block = statement.block
        if block is None:
            return self._with_comments((indent + header).split("\n"), header_comments, indent)
        close_comments = self.anchors.close.get(block.span.end, [])
        inner = self._block_lines(block.statements, block.span.start + 1, block.span.end - 1, depth + 1)
        if not inner:
            lines = f"{indent}{header} {{}}".split("\n")
            return self._with_comments(lines, header_comments + close_comments, indent)
        one_line = self._one_line_block(statement, block, indent, header)
        if one_line is not None:
            return self._with_comments(one_line, close_comments, indent)
        lines = self._with_comments(f"{indent}{header} {{".split("\n"), header_comments, indent)
        lines.extend(inner)
        return lines + self._with_comments([indent + "}"], close_comments, indent)

    def _one_line_block(self, statement: ast.Statement, block: ast.Block, indent: str,
                        header: str) -> list[str] | None:
        if len(block.statements) != 1 or block.statements[0].block is not None:
            return None
        if "\n" in self.text[block.span.start:block.span.end] or self._has_comment(block.span):
            return None
        lines = f"{indent}{header} {{ {self._header(block.statements[0], 0)} }}".split("\n")
        return lines if len(lines[-1]) <= LINE_LENGTH else None

    def _has_comment(self, span: Span) -> bool:
        index = bisect.bisect_left(self.comment_starts, span.start)
        return index < len(self.comment_starts) and self.comment_starts[index] < span.end

    @staticmethod
    def _with_comments(lines: list[str], comments: list[Comment], indent: str) -> list[str]:
        if comments:
            lines[-1] += "  " + comments[0].text
            lines.extend(indent + c.text for c in comments[1:])
        return lines

    def _header(self, statement: ast.Statement, depth: int) -> str:
        return " ".join([statement.name, *(self._value(v, depth) for v in statement.values)])

    def _value(self, value: ast.Value, depth: int) -> str:
        if isinstance(value, ast.Pair):
            return f"{value.key}={self._as_written(value.value)}"
        if isinstance(value, ast.Json):
            return self._json(value, depth)
        return self._as_written(value)

    def _as_written(self, value: ast.Node) -> str:
        return self.text[value.span.start:value.span.end].replace("\r\n", "\n")

    def _json(self, value: ast.Json, depth: int) -> str:
        if not _finite(value.value):
            return self._as_written(value)  # 1e999 has no other spelling
        if "\n" not in self.text[value.span.start:value.span.end]:
            return _json_inline(value.value)
        return _json_multiline(value.value, INDENT * depth)


def _same_kind_one_liners(first: _Item, second: _Item) -> bool:
    return (first.statement is not None and second.statement is not None
            and first.statement.name == second.statement.name
            and len(first.lines) == 1 and len(second.lines) == 1)


# --- JSON literals ---------------------------------------------------------------


def _finite(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


def _json_inline(value: Any) -> str:
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_json_scalar(k)}: {_json_inline(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_json_inline(v) for v in value) + "]"
    return _json_scalar(value)


def _json_multiline(value: Any, indent: str) -> str:
    """One member (or item) per line; a nested value stays on one line if that fits, else expands too."""
    inner = indent + INDENT
    if isinstance(value, dict) and value:
        members = [f"{_json_scalar(k)}: " for k in value]
        lines = [_json_fitted(v, inner, prefix) for prefix, v in zip(members, value.values(), strict=True)]
        return "{\n" + ",\n".join(lines) + f"\n{indent}}}"
    if isinstance(value, list) and value:
        return "[\n" + ",\n".join(_json_fitted(v, inner, "") for v in value) + f"\n{indent}]"
    return _json_inline(value)


def _json_fitted(value: Any, indent: str, prefix: str) -> str:
    inline = _json_inline(value)
    if len(indent) + len(prefix) + len(inline) + 1 <= LINE_LENGTH:
        return indent + prefix + inline
    return indent + prefix + _json_multiline(value, indent)


def _json_scalar(value: Any) -> str:
    if isinstance(value, BareName):
        return str(value)  # not JSON; the checker reports it, the formatter keeps it
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape
            return json.dumps(value)
        return text
    return json.dumps(value)

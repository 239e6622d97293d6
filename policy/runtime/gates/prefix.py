"""Incomplete prefixes: what is still open at the end of a text, and how to close it.

A file written in chunks is checked after every chunk.  An incomplete
prefix — an unclosed bracket or string, a block header with no body yet —
is not an error: a later append can still complete it.  For Python the
gate closes whatever is open (``PythonTail.completion``) and parses again,
so a genuine error earlier in the text is still found: Python's tokenizer
reports an unterminated string at the end before a real error earlier on,
and the parser never gets past an unclosed bracket.  For data formats
(JSON, TOML) an error is a cut-off when nothing but the scalar being
written follows it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_SPECIAL = re.compile(r"[#'\"\\()\[\]{}\n]")
_INDENT = re.compile(r"[ \t\f]*")
_SINGLE_QUOTED_BODY = {q: re.compile(rf"(?:[^{q}\\\n]++|\\[\s\S])*+") for q in "'\""}
_TRIPLE_QUOTED_REST = {q: re.compile(rf"(?:[^{q}\\]++|\\[\s\S]|{q}(?!{q}{q}))*+{q}{q}{q}") for q in "'\""}
_FIRST_WORD = re.compile(r"[A-Za-z_]\w*")
_EXTENDABLE_END = re.compile(r"(?:\w+|[-+*/%@&|^~<>=!:.]+)?[ \t\f]*\Z")
_BODY_INDENT = "    "
_STRING_PREFIX_LETTERS = "rRbBuUfF"

FILLERS = (" _", " = _", " _ in _", " _ else _", ": _", " in _")
"""Text tried after an unfinished last line (``f(a=``, ``def f(a=1, b``, ``[x for``, ``lambda x``)."""


@dataclass(frozen=True)
class PythonTail:
    """The lexical state at the end of a Python text (newlines normalised to ``\\n``)."""

    text: str
    brackets: str = ""
    """Brackets still open at the end, outermost first."""
    string_quote: str = ""
    """The quote (``'``, ``\"\"\"`` …) of a string still open at the end."""
    string_start: int = 0
    continuation: int | None = None
    """Offset of a backslash that continues the last line."""
    comment_start: int | None = None
    """Offset of the comment the text ends in (no newline after it yet)."""
    line_open: bool = False
    """The last logical line is unfinished: no newline outside brackets has ended it."""
    logical_starts: tuple[int, ...] = ()
    """Offset of the first character of every logical line."""
    code_end: int = 0
    """Offset just past the code (before any comment) of the last logical line."""

    @property
    def threshold(self) -> int:
        """Errors at or after this offset are in text a later append can still change."""
        if self.string_quote:
            return self.string_start
        if self.continuation is not None:
            return self.continuation
        if self.comment_start is not None:
            return self.comment_start
        if self.text.endswith("\n") or not self.text:
            return len(self.text)
        line_start = self.text.rfind("\n") + 1
        found = _EXTENDABLE_END.search(self.text, line_start)
        return found.start() if found else len(self.text)

    @property
    def last_line_start(self) -> int:
        return self.logical_starts[-1] if self.logical_starts else 0

    def completion(self, filler: str = "", depth: int = 0) -> str:
        """Text that closes what is open at the end: string, brackets, then the blocks still waiting.

        ``filler`` goes after the ``depth`` innermost closing brackets.
        """
        parts = []
        if self.string_quote:
            if _ends_with_escape(self.text):
                parts.append("\\")
            parts.append(self.string_quote)
        if self.continuation is not None and not self.brackets:
            return "".join(parts) + filler
        if self.comment_start is not None:
            parts.append("\n")
        closers = [_CLOSERS[bracket] for bracket in reversed(self.brackets)]
        parts.extend([*closers[:depth], filler, *closers[depth:]])
        closing = "".join(parts)
        ends_line = closing.endswith("\n") if closing else self.text.endswith("\n") or not self.text
        return (closing if ends_line else closing + "\n") + self._blocks()

    def alternatives(self) -> Iterator[str]:
        """Other completions for an unfinished last line: each filler, inside each open bracket."""
        for depth in range(len(self.brackets) + 1):
            for filler in FILLERS:
                yield self.completion(filler, depth)

    def _blocks(self) -> str:
        """A body for a header, a function for a lone decorator, ``finally`` for each open ``try``."""
        if not self.logical_starts:
            return ""
        text, start = self.text, self.last_line_start
        indent = _indent(text, start)
        word = _word(text, start)
        body = ""
        closed = not self.brackets and not self.string_quote
        ends_header = closed and text[self.code_end - 1 : self.code_end] == ":"
        if text.startswith("@", start):
            body = f"{indent}def _(): pass\n"
        elif ends_header and word == "match":
            body = f"{indent}{_BODY_INDENT}case _:\n{indent}{_BODY_INDENT * 2}pass\n"
        elif ends_header:
            body = f"{indent}{_BODY_INDENT}pass\n"
        return body + "".join(f"{ind}finally:\n{ind}{_BODY_INDENT}pass\n" for ind in self._open_try_indents())

    def _open_try_indents(self) -> list[str]:
        """Indentation of every ``try`` whose block is still open at the end, innermost first."""
        text, starts = self.text, self.logical_starts
        last = starts[-1]
        level = _indent_width(text, last)
        found = [_indent(text, last)] if _word(text, last) == "try" else []
        for start in reversed(starts[:-1]):
            if level == 0:
                break
            width = _indent_width(text, start)
            if width < level:
                level = width
                if _word(text, start) == "try":
                    found.append(_indent(text, start))
        return found


def scan_python(text: str) -> PythonTail:
    """Walk ``text`` (newlines normalised to ``\\n``) once, tracking brackets, strings and logical lines."""
    size = len(text)
    starts: list[int] = []
    brackets: list[str] = []
    line_open = _begin_line(text, 0, starts)
    code_end = 0
    comment = None
    search = _SPECIAL.search
    pos = 0
    while (found := search(text, pos)) is not None:
        at = found.start()
        char = text[at]
        if char == "\n":
            if not brackets:
                if line_open:
                    code_end = comment if comment is not None else at
                line_open = _begin_line(text, at + 1, starts)
            comment = None
            pos = at + 1
        elif char == "#":
            comment = at
            newline = text.find("\n", at)
            if newline < 0:
                return _tail(text, brackets, starts, line_open, code_end, comment_start=at)
            pos = newline
        elif char in "([{":
            brackets.append(char)
            pos = at + 1
        elif char in ")]}":
            if brackets:  # an unmatched closer is the parser's to report
                brackets.pop()
            pos = at + 1
        elif char == "\\":
            if at + 1 >= size or (text[at + 1] == "\n" and at + 2 >= size):
                return _tail(text, brackets, starts, line_open, code_end, continuation=at)
            pos = at + 2 if text[at + 1] == "\n" else at + 1
        elif text.startswith(char * 3, at):
            rest = _TRIPLE_QUOTED_REST[char].match(text, at + 3)
            if rest is None:
                start = _string_start(text, at)
                return _tail(text, brackets, starts, line_open, code_end, quote=char * 3, string_start=start)
            pos = rest.end()
        else:
            end = _match_end(_SINGLE_QUOTED_BODY[char], text, at + 1)
            if end >= size or text[end] == "\\":
                start = _string_start(text, at)
                return _tail(text, brackets, starts, line_open, code_end, quote=char, string_start=start)
            # at a newline the string is unterminated: the parser reports that
            pos = end + 1 if text[end] == char else end
    return _tail(text, brackets, starts, line_open, code_end)


def _tail(
    text: str,
    brackets: list[str],
    starts: list[int],
    line_open: bool,
    code_end: int,
    *,
    quote: str = "",
    string_start: int = 0,
    continuation: int | None = None,
    comment_start: int | None = None,
) -> PythonTail:
    if line_open and not brackets and not quote:
        code_end = comment_start if comment_start is not None else len(text)
    while code_end > 0 and text[code_end - 1] in " \t\f":
        code_end -= 1
    return PythonTail(
        text=text,
        brackets="".join(brackets),
        string_quote=quote,
        string_start=string_start,
        continuation=continuation,
        comment_start=comment_start,
        line_open=line_open,
        logical_starts=tuple(starts),
        code_end=code_end,
    )


def _begin_line(text: str, pos: int, starts: list[int]) -> bool:
    """Note where the logical line beginning at ``pos`` starts; False for a blank or comment-only line."""
    first = _match_end(_INDENT, text, pos)
    if first >= len(text) or text[first] in "\n#":
        return False
    starts.append(first)
    return True


def _string_start(text: str, quote: int) -> int:
    """Where the string whose quote is at ``quote`` starts: before its prefix (``rb``, ``f`` …)."""
    start = quote
    while start > quote - 2 and start > 0 and text[start - 1] in _STRING_PREFIX_LETTERS:
        start -= 1
    return start


def _match_end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where ``pattern`` (which also matches the empty string) stops when matched at ``pos``."""
    found = pattern.match(text, pos)
    return found.end() if found else pos


def _indent(text: str, start: int) -> str:
    return text[text.rfind("\n", 0, start) + 1 : start]


def _indent_width(text: str, start: int) -> int:
    return len(_indent(text, start).expandtabs(8))


def _word(text: str, start: int) -> str:
    found = _FIRST_WORD.match(text, start)
    return found.group() if found else ""


def _ends_with_escape(text: str) -> bool:
    """The text ends with an unpaired backslash (it would escape a closing quote)."""
    end = len(text)
    while end > 0 and text[end - 1] == "\\":
        end -= 1
    return (len(text) - end) % 2 == 1


def is_cut_off(text: str, position: int, scalar: re.Pattern[str], value_starts: str) -> bool:
    """Whether a data-format error at ``position`` is only the text being cut off.

    True when nothing but whitespace follows the error, or when the error lies in
    the scalar the text ends with (``tr`` of ``true``, ``1.`` of ``1.5``) and that
    scalar begins a value (follows one of ``value_starts`` or opens the text).
    """
    if not text[position:].strip():
        return True
    begin = len(text)
    while begin > 0 and not text[begin - 1].isspace() and text[begin - 1] not in "[]{},:=\"'":
        begin -= 1
    if position < begin or not scalar.fullmatch(text, begin):
        return False
    while begin > 0 and text[begin - 1].isspace():
        begin -= 1
    return begin == 0 or text[begin - 1] in value_starts

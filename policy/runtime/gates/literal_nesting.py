"""What closes literals nested in interpolations that a text ends inside (Ruby's ``/[#{ %W(`` … ``)}/``).

A syntax tree in error recovery does not say which literals are open inside
an interpolation: a ``%W(`` or ``%Q[`` there is text to it, and a bracket in
one may read as code.  So ``nesting_closing`` reads the text from where the
outermost literal's content starts, as the language's lexer does, and keeps
a stack: a literal (its delimiters, how many of them are open, whether it
interpolates), and in an interpolation the brackets open in its code.  What
it does not read (a regular expression or a ``?x`` character in code, a
comment) it reads as code; where the text does not nest as it reads it (a
closer that closes nothing open), it gives up, and the gate's other endings
stand.
"""

from __future__ import annotations

import re

PAIRS = {b"(": b")", b"[": b"]", b"{": b"}", b"<": b">"}
"""A literal's opening bracket → its closing one (``%w(`` … ``)``); any other delimiter closes itself."""
_INTERPOLATION = b"#{"
_MARKS = re.compile(rb"\\.|#\{|[()\[\]{}<>|!/^\"'`%]", re.DOTALL)
"""What the scan acts on: an escaped byte, an interpolation's opener, a bracket, a quote, a ``%`` and the
other bytes a ``%`` literal may be delimited by."""
_PLAIN_LITERALS = frozenset(b"qwis")
"""``%`` literal kinds that do not interpolate (``%q``, ``%w``, ``%i``, ``%s``)."""


class _Literal:
    """An open literal: its delimiters, how many closers it waits for and whether ``#{`` opens code in it."""

    __slots__ = ("closer", "depth", "interpolates", "opener")

    def __init__(self, opener: bytes, closer: bytes, interpolates: bool) -> None:
        self.opener = opener
        self.closer = closer
        self.depth = 1
        self.interpolates = interpolates


def nesting_closing(data: bytes, start: int, delimited: re.Pattern[bytes],
                    closer: bytes = b"") -> bytes | None:
    """What closes, innermost first, the interpolations, brackets and literals opened in the interpolating
    literal whose content starts at ``start`` (closed by ``closer``; a heredoc's body: none), then ``closer``;
    None when no interpolation in it is open or the text does not nest as read.  ``delimited`` matches a
    ``%`` literal's opener, its group 1 the delimiter."""
    if data.find(_INTERPOLATION, start) < 0:
        return None
    stack: list[_Literal | list[bytes]] = [_Literal(closer, closer, True)]
    resume = start  # past a `%` literal's opener, whose delimiter is a mark too
    for mark in _MARKS.finditer(data, start):
        if mark.start() < resume:
            continue
        token = mark.group()
        top = stack[-1]
        if isinstance(top, _Literal):
            if token == _INTERPOLATION and top.interpolates:
                stack.append([])
            elif token == top.closer and top.closer:
                top.depth -= 1
                if not top.depth:
                    stack.pop()
                    if not stack:  # the outer literal closed: the text does not end inside it
                        return None
            elif token == top.opener and top.opener != top.closer:
                top.depth += 1
        elif token in PAIRS and token != b"<":
            top.append(PAIRS[token])
        elif token in b")]}":
            if top:
                if top.pop() != token:
                    return None
            elif token == b"}":
                stack.pop()  # the interpolation closed
            else:
                return None
        elif token in (b'"', b"`", b"'"):
            stack.append(_Literal(token, token, token != b"'"))
        elif token == b"%":
            opener = delimited.match(data, mark.start())
            if opener is not None:
                delimiter = opener.group(1)
                interpolates = data[mark.start() + 1] not in _PLAIN_LITERALS
                stack.append(_Literal(delimiter, PAIRS.get(delimiter, delimiter), interpolates))
                resume = opener.end()
    if len(stack) == 1:
        return None
    return b"".join(top.closer * top.depth if isinstance(top, _Literal) else b"".join(reversed(top)) + b"}"
                    for top in reversed(stack))

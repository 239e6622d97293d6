"""Where an incomplete prefix is still open: the bracket, string or block a later append must close.

Used to tell the model what a file it left incomplete still lacks.  A
light scan of brackets, strings and comments per validator; it never
decides validity (the validators do), it only names the innermost thing open
at the end of the text.
"""

from __future__ import annotations

from dataclasses import dataclass

_SYNTAX = {
    # validator: (comment start, string quotes, quotes without escapes, triple-quoted)
    "python": ("#", "'\"", "", True),
    "toml": ("#", "'\"", "'", True),
    "json": ("", '"', "", False),
    "yaml": ("#", "'\"", "'", False),
}
_CLOSERS = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True, slots=True)
class OpenEnd:
    """What is open at the end of a text: ``where`` in words, at 1-based ``line`` and ``column``."""

    line: int
    column: int
    where: str


def open_end(text: str, validator: str) -> OpenEnd:
    """The innermost bracket, string or (Python) block left open at the end of ``text``."""
    comment, quotes, raw_quotes, triple = _SYNTAX.get(validator, ("#", "'\"", "", False))
    opened: list[tuple[str, int]] = []
    string: tuple[str, int] | None = None
    pos, size = 0, len(text)
    while pos < size:
        char = text[pos]
        if string is not None:
            quote = string[0]
            if char == "\\" and quote[0] not in raw_quotes:
                pos += 2
                continue
            if text.startswith(quote, pos):
                string = None
                pos += len(quote)
                continue
            if char == "\n" and len(quote) == 1:
                string = None  # a one-line string does not run past its line
            pos += 1
        elif comment and char == comment:
            end = text.find("\n", pos)
            pos = size if end < 0 else end
        elif char in quotes:
            quote = char * 3 if triple and text.startswith(char * 3, pos) else char
            string = (quote, pos)
            pos += len(quote)
        elif char in _CLOSERS:
            opened.append((char, pos))
            pos += 1
        elif char in ")]}":
            if opened and _CLOSERS[opened[-1][0]] == char:
                opened.pop()
            pos += 1
        else:
            pos += 1
    if string is not None and (not opened or string[1] > opened[-1][1]):
        kind = "triple-quoted string" if len(string[0]) == 3 else "string"
        return _at(text, string[1], f"the {kind} opened here is not closed (it needs {string[0]})")
    if opened:
        bracket, at = opened[-1]
        return _at(text, at, f"the `{bracket}` opened here is not closed (it needs `{_CLOSERS[bracket]}`)")
    return _last_line(text, validator)


def _last_line(text: str, validator: str) -> OpenEnd:
    stripped = text.rstrip()
    start = stripped.rfind("\n") + 1
    last = stripped[start:]
    if validator == "python" and last.rstrip().endswith(":"):
        return _at(text, start + len(last) - len(last.lstrip()),
                   f"the block `{last.strip()}` has no body yet")
    if last.endswith("\\"):
        return _at(text, start + len(last) - 1, "the line is continued (`\\`) but nothing follows")
    return _at(text, start, "the text stops before it is complete")


def _at(text: str, offset: int, where: str) -> OpenEnd:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return OpenEnd(line, column, where)

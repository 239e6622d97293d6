"""C and C++ preprocessor conditionals, blanked so that one branch of each is parsed as plain code.

tree-sitter-c and tree-sitter-cpp parse ``#if`` … ``#endif`` as nodes that must
hold whole declarations or statements, so real code whose braces are split
across conditionals (``extern "C" {`` under ``#ifdef __cplusplus``), a header
guard still open at the end of a chunk, or ``#if 0`` text is an error to them.
The compiler sees one branch of each conditional; so does the gate: the
directive lines, every branch after the first (``#elif``, ``#else``) and the
first branch of an ``#if 0`` are replaced by spaces, keeping every newline, so
that the text keeps its length and every error its line and column.
"""

from __future__ import annotations

import re

_DIRECTIVE = re.compile(rb"[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)")
_FALSE = re.compile(rb"\s*0\s*(?:/[/*].*)?$")
_MACRO_NAME = rb"(?:[A-Z][A-Z0-9]*_[A-Za-z0-9_]*|[A-Z][A-Z0-9]+)"
"""An upper-case name, or one with an underscore starting upper-case (``DECLARE_PEM_rw``)."""
_MACRO_CALL = re.compile(rb"^[ \t]*(" + _MACRO_NAME + rb"[ \t]*\()", re.MULTILINE)
_LINE_REST = re.compile(rb"[ \t]*(;?)[ \t]*(?://[^\n]*)?(?:\r?\n|$)\s*(.?)")
_MACRO_LINE = re.compile(rb"^[ \t]*(" + _MACRO_NAME + rb")[ \t]*$", re.MULTILINE)
"""A line that is only a macro's name (``FMT_BEGIN_NAMESPACE``)."""
_CONTINUATION = frozenset(b".-+*/%&|^<>=?:,")
"""What the line after a macro call without ``;`` may not start with (``ON_CALL(…)\n.Will…``)."""
_MACRO_SPAN = 4096
"""The longest macro call blanked, in bytes."""


def blank_conditionals(data: bytes) -> bytes:
    """``data`` with its conditional directives and all branches but the compiled-looking one blanked."""
    lines = data.splitlines(keepends=True)
    out: list[bytes] = []
    open_branches: list[list[bool]] = []
    """Per open conditional: [a branch was kept, the branch being read is blanked]."""
    continued = False
    for line in lines:
        if continued:
            out.append(_blank(line))
            continued = line.rstrip(b"\r\n").endswith(b"\\")
            continue
        found = _DIRECTIVE.match(line)
        if found is None:
            out.append(_blank(line) if any(blanked for _, blanked in open_branches) else line)
            continue
        keyword = found.group(1)
        if keyword in (b"if", b"ifdef", b"ifndef"):
            never = keyword == b"if" and _FALSE.match(found.group(2)) is not None
            open_branches.append([not never, never])
        elif keyword == b"endif":
            if open_branches:
                open_branches.pop()
        elif open_branches:
            branch = open_branches[-1]
            branch[1] = branch[0]
            branch[0] = True
        out.append(_blank(line))
        continued = line.rstrip(b"\r\n").endswith(b"\\")
    return b"".join(out)


def directives_only(data: bytes) -> bytes:
    """``data`` with all but its ``#if``/``#elif`` lines blanked (an ``#elif`` read as an ``#if``) and one
    ``#endif`` per such line after the end: the conditions' own errors keep their offsets."""
    out: list[bytes] = []
    opened = 0
    continued = False
    for line in data.splitlines(keepends=True):
        found = None if continued else _DIRECTIVE.match(line)
        if continued:
            out.append(line)
        elif found is None or found.group(1) in (b"else", b"endif"):
            out.append(_blank(line))
            continue
        else:
            opened += 1
            keyword = found.group(1)
            read_as = b"if" + keyword[4:] if keyword.startswith(b"elif") else keyword
            padding = b" " * (len(keyword) - len(read_as))
            out.append(line[: found.start(1)] + read_as + padding + line[found.end(1) :])
        continued = line.rstrip(b"\r\n").endswith(b"\\")
    return b"".join(out) + b"\n#endif" * opened + b"\n"


def blank_macro_calls(data: bytes) -> bytes:
    """``data`` with each statement that is only a macro call blanked (``MOCK_METHOD(void, F, ());``: an
    upper-case name, balanced parentheses, nothing after but a ``;``): the grammar cannot know what the
    macro expands to, so it finds a ``;`` missing or an argument that is no expression."""
    out = bytearray(data)
    for found in _MACRO_LINE.finditer(data):
        _blank_span(out, found.start(1), found.end(1))
    for found in _MACRO_CALL.finditer(data):
        end = _balanced_end(data, found.end() - 1)
        if end is None or _continues_declaration(out, found.start(1)):
            continue
        rest = _LINE_REST.match(data, end)
        if rest is None or (not rest.group(1) and rest.group(2) and rest.group(2)[0] in _CONTINUATION):
            continue
        _blank_span(out, found.start(1), end)
    return bytes(out)


def _continues_declaration(out: bytearray, start: int) -> bool:
    """Whether the line before ``start`` leaves a declaration open, so that ``NAME(…)`` is its declarator
    (``CMS_ContentInfo *`` on the line before ``CMS_create_ex(…);``), not a macro call."""
    end = start
    while end > 0 and out[end - 1] in _BLANKS:  # back over the blanks only: no copy of what precedes
        end -= 1
    line = bytes(out[out.rfind(b"\n", 0, end) + 1 : end]).strip()
    if not line or line.startswith((b"//", b"#", b"*", b"/*")) or line.endswith(b"*/"):
        return False
    return line[-1:].isalnum() or line[-1:] in b"_*&,=("


_BLANKS = b" \t\n\r\x0b\x0c"


def _blank_span(out: bytearray, start: int, end: int) -> None:
    for index in range(start, end):
        if out[index] not in (10, 13):
            out[index] = 32


def _balanced_end(data: bytes, start: int) -> int | None:
    """The offset after the ``)`` matching the ``(`` at ``start``, skipping strings and comments."""
    depth, index, limit = 0, start, min(len(data), start + _MACRO_SPAN)
    while index < limit:
        byte = data[index]
        if byte in b"\"'":
            close = data.find(bytes([byte]), index + 1, limit)
            while close > 0 and data[close - 1] == 92 and data[close - 2] != 92:
                close = data.find(bytes([byte]), close + 1, limit)
            if close < 0:
                return None
            index = close
        elif data.startswith(b"/*", index):
            close = data.find(b"*/", index + 2, limit)
            if close < 0:
                return None
            index = close + 1
        elif byte == 40:
            depth += 1
        elif byte == 41:
            depth -= 1
            if depth == 0:
                return index + 1
        elif byte in b";{}":
            return None
        index += 1
    return None


def _blank(line: bytes) -> bytes:
    body = line.rstrip(b"\r\n")
    return b" " * len(body) + line[len(body) :]

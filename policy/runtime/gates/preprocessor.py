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


def _blank(line: bytes) -> bytes:
    body = line.rstrip(b"\r\n")
    return b" " * len(body) + line[len(body) :]

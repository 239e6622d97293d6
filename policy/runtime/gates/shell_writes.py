"""The files a shell command writes, when its text says exactly what it writes.

Read from the command, before it runs:

- ``cat > f <<'EOF' … EOF``, ``cat >> f <<EOF … EOF``, ``cat <<EOF > f`` (``<<-`` strips tabs);
- ``tee [-a] f… <<EOF … EOF``;
- ``printf 'text' > f`` (escapes such as ``\\n``; no ``%`` conversions);
- ``echo [-n] words > f`` (without backslashes, whose meaning differs between shells).

Nothing the shell would expand is guessed at: a heredoc whose delimiter is
unquoted and whose body holds ``$`` or a backquote, a word with ``$``, a
backquote, a glob or a ``~``, a command inside a loop, a condition, a
subshell, a pipeline or the background — each ends what is read.  Commands
are read in order, separated by newlines, ``;``, ``&&`` and ``||``; ``cd``
to a plain folder and ``mkdir`` are followed; after any other command the
earlier text of a file is unknown, so an append is not read past it.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
from dataclasses import dataclass

MAX_COMMAND = 1 << 20
"""Longer commands are not read."""


@dataclass(frozen=True, slots=True)
class ShellWrite:
    """One write a command makes: ``path`` as written (relative to the shell's starting folder unless
    absolute), and ``text`` written over the file or, with ``append``, added to its end."""

    path: str
    text: str
    append: bool


class _Unreadable(Exception):
    """The rest of the command cannot be read without guessing."""


@dataclass(slots=True)
class _Word:
    text: str
    literal: bool
    """No expansion, glob or tilde: ``text`` is exactly the shell's word."""
    quoted: bool


@dataclass(slots=True)
class _Redirect:
    op: str
    target: _Word | None = None
    heredoc: str | None = None
    """The heredoc's body once read (``op`` is ``<<`` or ``<<-``); None when it expands."""


@dataclass(slots=True)
class _Simple:
    words: list[_Word]
    redirects: list[_Redirect]


_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")")
_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
                       "esac", "function", "select", "{", "}", "!", "[[", "]]", "time", "coproc"})
_GLOB = re.compile(r"[*?\[]")
_UNESCAPED_EXPANSION = re.compile(r"[$`]")
_NEUTRAL = frozenset({"mkdir", "true", ":"})


def shell_writes(command: str) -> list[ShellWrite]:
    """The writes ``command`` makes that its text fully determines, in the order it makes them."""
    if len(command) > MAX_COMMAND or (">" not in command and "tee" not in command):
        return []  # every write read here redirects output or is a tee
    writes: list[ShellWrite] = []
    with contextlib.suppress(_Unreadable):
        _read(command, writes)
    return writes


def _read(command: str, writes: list[ShellWrite]) -> None:
    cwd = ""
    known = True
    """Every command so far was read: a file's text before an append is what the writes left."""
    piped = False
    for simple, separator in _Lexer(command).commands():
        name = simple.words[0].text if simple.words and simple.words[0].literal else None
        if piped or separator in ("|", "&"):
            known = False  # in a pipeline or the background: what it writes, and when, is not read
        elif (step := _writes_of(simple, cwd)) is not None:
            for write in step:
                if write.append and not known:
                    raise _Unreadable
                writes.append(write)
        elif name == "cd":
            cwd = _cd(simple, cwd)
        elif name not in _NEUTRAL or any(r.op != "2>&1" for r in simple.redirects):
            known = False
        piped = separator == "|"


def _cd(simple: _Simple, cwd: str) -> str:
    args = simple.words[1:]
    if len(args) != 1 or not args[0].literal or args[0].text.startswith("-") or simple.redirects:
        raise _Unreadable
    target = args[0].text
    if target.startswith("/"):
        return posixpath.normpath(target)
    return posixpath.normpath(posixpath.join(cwd, target)) if cwd else posixpath.normpath(target)


def _writes_of(simple: _Simple, cwd: str) -> list[ShellWrite] | None:
    """The writes of one simple command; None when it writes nothing this module reads."""
    if not simple.words or not simple.words[0].literal:
        return None
    name = simple.words[0].text
    args = simple.words[1:]
    outputs = [r for r in simple.redirects if r.op in (">", ">>", ">|")]
    heredocs = [r for r in simple.redirects if r.op in ("<<", "<<-")]
    others = [r for r in simple.redirects if r not in outputs and r not in heredocs]
    if name not in ("cat", "tee", "printf", "echo") or any(r.op != "2>&1" for r in others):
        return None
    if len(outputs) > 1 or len(heredocs) > 1:
        raise _Unreadable
    if not all(word.literal for word in args):
        raise _Unreadable
    if name in ("cat", "tee"):
        if len(heredocs) != 1 or heredocs[0].heredoc is None:
            raise _Unreadable
        text = heredocs[0].heredoc
        files: list[tuple[str, bool]] = []
        if name == "cat":
            if args:
                raise _Unreadable
        else:
            append = False
            for arg in args:
                if arg.text in ("-a", "--append"):
                    append = True
                elif arg.text.startswith("-"):
                    raise _Unreadable
                else:
                    files.append((arg.text, append))
            files = [(path, append) for path, _ in files]
    else:
        if heredocs:
            raise _Unreadable
        text = _printf_text(args) if name == "printf" else _echo_text(args)
        files = []
    for redirect in outputs:
        assert redirect.target is not None
        files.append((redirect.target.text, redirect.op == ">>"))
    written = [(path, append) for path, append in files if path != "/dev/null"]
    if not written and name != "tee":
        return None
    return [ShellWrite(_joined(cwd, path), text, append) for path, append in written]


def _joined(cwd: str, path: str) -> str:
    if not cwd or path.startswith("/"):
        return path
    return posixpath.join(cwd, path)


def _echo_text(args: list[_Word]) -> str:
    newline = True
    while args and args[0].text.startswith("-") and not args[0].quoted:
        flag = args[0].text
        if flag == "-n":
            newline = False
        elif flag != "-E":
            raise _Unreadable
        args = args[1:]
    text = " ".join(arg.text for arg in args)
    if "\\" in text:
        raise _Unreadable
    return text + ("\n" if newline else "")


_PRINTF_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b",
                   "f": "\f", "r": "\r", "v": "\v", "e": "\x1b", "E": "\x1b"}
_OCTAL = re.compile(r"0?[0-7]{1,3}")


def _printf_text(args: list[_Word]) -> str:
    if len(args) != 1 or args[0].text.startswith("-"):
        raise _Unreadable
    fmt = args[0].text
    out: list[str] = []
    i = 0
    while i < len(fmt):
        char = fmt[i]
        if char == "%":
            if fmt.startswith("%%", i):
                out.append("%")
                i += 2
                continue
            raise _Unreadable
        if char == "\\" and i + 1 < len(fmt):
            following = fmt[i + 1]
            if following in _PRINTF_ESCAPES:
                out.append(_PRINTF_ESCAPES[following])
                i += 2
                continue
            octal = _OCTAL.match(fmt, i + 1)
            if octal is not None:
                out.append(chr(int(octal.group(), 8)))
                i = octal.end()
                continue
            raise _Unreadable
        out.append(char)
        i += 1
    return "".join(out)


class _Lexer:
    """Splits a command into simple commands, reading heredoc bodies where their lines end."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.pending: list[tuple[_Redirect, str, bool, bool]] = []
        """Heredocs opened on the current line: redirect, delimiter, strip tabs, quoted delimiter."""

    def commands(self) -> list[tuple[_Simple, str | None]]:
        """Every simple command with the separator after it (None for the last), up to the first
        text that cannot be read; a command whose heredoc body is not complete is left out."""
        found: list[tuple[_Simple, str | None]] = []
        complete = 0
        """How many of ``found`` have every heredoc body read."""
        try:
            while True:
                simple, separator = self._simple_command()
                if simple is not None:
                    found.append((simple, separator))
                if not self.pending:
                    complete = len(found)
                if separator is None:
                    break
        except _Unreadable:
            pass
        return found[:complete]

    def _simple_command(self) -> tuple[_Simple | None, str | None]:
        words: list[_Word] = []
        redirects: list[_Redirect] = []
        while True:
            self._blanks()
            if self.pos >= len(self.text):
                if self.pending:
                    raise _Unreadable  # bash would take the rest, with a warning: not guessed at
                return self._done(words, redirects), None
            char = self.text[self.pos]
            if char == "\n":
                self.pos += 1
                self._bodies()
                if words or redirects:
                    return self._done(words, redirects), "\n"
                continue
            if char == "#" and self._word_start():
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
                continue
            redirect = self._redirect()
            if redirect is not None:
                redirects.append(redirect)
                continue
            operator = next((op for op in _OPERATORS if self.text.startswith(op, self.pos)), None)
            if operator is not None:
                self.pos += len(operator)
                if operator in ("(", ")", ";;") or not (words or redirects):
                    raise _Unreadable
                return self._done(words, redirects), operator
            word = self._word()
            if not words and word.literal and word.text in _RESERVED:
                raise _Unreadable
            if not words and word.literal and "=" in word.text and not word.text.startswith("="):
                raise _Unreadable  # an assignment changes what later words expand to
            words.append(word)

    @staticmethod
    def _done(words: list[_Word], redirects: list[_Redirect]) -> _Simple | None:
        return _Simple(words, redirects) if words or redirects else None

    def _word_start(self) -> bool:
        return self.pos == 0 or self.text[self.pos - 1] in " \t\n;&|"

    def _blanks(self) -> None:
        while self.pos < len(self.text):
            if self.text[self.pos] in " \t":
                self.pos += 1
            elif self.text.startswith("\\\n", self.pos):
                self.pos += 2
            else:
                return

    def _redirect(self) -> _Redirect | None:
        text, pos = self.text, self.pos
        if text.startswith("2>&1", pos) or text.startswith("1>&2", pos) or text.startswith(">&2", pos):
            self.pos += 4 if text[pos] != ">" else 3
            return _Redirect("2>&1")
        if text.startswith("<<<", pos):
            raise _Unreadable
        for op in ("<<-", "<<", ">>", ">|", ">", "<"):
            if text.startswith(op, pos):
                break
        else:
            if pos < len(text) and text[pos].isdigit():
                end = pos
                while end < len(text) and text[end].isdigit():
                    end += 1
                if end < len(text) and text[end] in "<>":
                    raise _Unreadable  # other descriptors: not read
            if text.startswith("&>", pos):
                raise _Unreadable
            return None
        self.pos += len(op)
        if text.startswith("&", self.pos):
            raise _Unreadable
        self._blanks()
        word = self._word()
        if op in ("<<", "<<-"):
            redirect = _Redirect(op)
            delimiter = word.text
            self.pending.append((redirect, delimiter, op == "<<-", word.quoted))
            return redirect
        if op == "<" or not word.literal or not word.text:
            raise _Unreadable
        return _Redirect(op, word)

    def _word(self) -> _Word:
        text = self.text
        out: list[str] = []
        literal, quoted = True, False
        start = self.pos
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t\n;&|<>()":
                break
            if char == "'":
                end = text.find("'", self.pos + 1)
                if end < 0:
                    raise _Unreadable
                out.append(text[self.pos + 1 : end])
                quoted = True
                self.pos = end + 1
            elif char == '"':
                self.pos += 1
                while True:
                    if self.pos >= len(text):
                        raise _Unreadable
                    inner = text[self.pos]
                    if inner == '"':
                        self.pos += 1
                        break
                    if inner in "$`":
                        literal = False
                    if inner == "\\" and self.pos + 1 < len(text) and text[self.pos + 1] in '$`"\\\n':
                        if text[self.pos + 1] != "\n":
                            out.append(text[self.pos + 1])
                        self.pos += 2
                        continue
                    out.append(inner)
                    self.pos += 1
                quoted = True
            elif char == "\\":
                if self.pos + 1 < len(text) and text[self.pos + 1] != "\n":
                    out.append(text[self.pos + 1])
                quoted = True
                self.pos += 2
            else:
                if char in "$`" or (char == "~" and self.pos == start) or _GLOB.match(char) or char in "{":
                    literal = False
                out.append(char)
                self.pos += 1
        if self.pos == start:
            raise _Unreadable
        return _Word("".join(out), literal, quoted)

    def _bodies(self) -> None:
        """Read the bodies of the heredocs opened on the line that just ended."""
        for redirect, delimiter, strip_tabs, quoted in self.pending:
            lines: list[str] = []
            while True:
                if self.pos >= len(self.text):
                    raise _Unreadable
                end = self.text.find("\n", self.pos)
                line = self.text[self.pos : len(self.text) if end < 0 else end]
                self.pos = len(self.text) if end < 0 else end + 1
                if strip_tabs:
                    line = line.lstrip("\t")
                if line == delimiter:
                    break
                lines.append(line + "\n")
            body = "".join(lines)
            redirect.heredoc = body if quoted else _unquoted_body(body)
        self.pending = []


def _unquoted_body(body: str) -> str | None:
    """An unquoted heredoc's text: ``\\$``, ``\\```, ``\\\\`` and ``\\``-newline are escapes; any other
    ``$`` or backquote expands (None)."""
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body) and body[i + 1] in "$`\\\n":
            if body[i + 1] != "\n":
                out.append(body[i + 1])
            i += 2
            continue
        if _UNESCAPED_EXPANSION.match(char):
            return None
        out.append(char)
        i += 1
    return "".join(out)

"""The tree-sitter validator: JavaScript, TypeScript, Go, Rust, Java, C, C++, Ruby, PHP, shell, HTML, CSS.

A syntax error is an ``ERROR`` or ``MISSING`` node.  The valid path is one
parse.  Otherwise the gate blocks only what the write breaks:

- constructs the grammar is known not to parse (``Grammar.stand_ins``) are
  replaced by an identifier of the same length, C's preprocessor
  conditionals reduced to one branch (``preprocessor``; their conditions
  are checked on their own), and the text parsed again;
- with ``partial``, what is open at the end is closed — a string or comment
  (``Grammar.tails``, used only when the tail really ends a string or
  comment the text left open), then every bracket and keyword block still
  open, after an optional filler for an unfinished statement — and the
  completed text parsed again; an error that remains stands when it starts
  before the last line (or before the string or comment the completion
  closed) or ends before the text does: valid text follows it; or when it
  starts the last line and that line is finished (``_FINISHED``): no append
  changes a line that ended;
- an error the file already had before the write (same line, the edit's
  shift applied) is not the write's doing.

Every step is a linear parse or scan; the slow steps run only on a text
with an error.  What each grammar can and cannot see is in docs/language.md.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from policy.runtime.gates.grammars import GRAMMARS, Grammar, GrammarUnavailable, StandIn, parser
from policy.runtime.gates.preprocessor import (
    blank_conditionals,
    blank_continued_comments,
    blank_macro_calls,
    blank_open_directive,
    directives_only,
)
from policy.runtime.gates.problems import INCOMPLETE, VALID, Problem, Verdict, invalid, unavailable

_OPENERS = {"(": ")", "[": "]", "{": "}", "${": "}", "#{": "}", "$(": ")", "$((": "))", "{$": "}"}
_CLOSERS = frozenset({")", "]", "}", "))"})
_PATTERN = ""
"""On the closers' stack: a case pattern may come, its ``)`` no closer (``Grammar.pattern_starts``)."""
_OPENING_TAGS = ("jsx_opening_element", "start_tag")
_TAGS = (*_OPENING_TAGS, "jsx_closing_element", "end_tag")
"""The tags whose closing ``>`` opens or closes an element (JSX, HTML)."""
_TYPE_LISTS = frozenset({"type_arguments", "type_parameters"})
_ANGLES_CLOSED = frozenset({">", ">>", ">>>"})
_VOID_ELEMENTS = frozenset(f"</{name}>" for name in (
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"))
FILLERS = (b" _", b" _;", b" : _", b" {}")
"""Text tried after an unfinished statement (``x =``, ``a ?`` …, a declaration header with no body)."""
_CLOSED_KINDS = ("string", "comment", "heredoc", "template", "text_block", "raw", "quote", "attribute_value")
_SNIPPET_TEXT = 30
_FOR_HEADER = re.compile(rb"\bfor\s*\(")
_FINISHED = (b")", b"]", b"}", b";", b"end")
"""How a finished line ends: an error the completion leaves at its first token is no cut-off statement (an
``end`` inside a hash, a method header inside a method)."""


@dataclass(frozen=True)
class Site:
    """One ``ERROR`` or ``MISSING`` node, in bytes of the UTF-8 text."""

    start: int
    end: int
    missing: str | None
    """The token tree-sitter expected, for a ``MISSING`` node."""


def check_syntax_tree(name: str, text: str, partial: bool, before: str | None = None) -> Verdict:
    """Check ``text`` with the named grammar; ``before`` is the file's text before the write."""
    grammar = GRAMMARS[name]
    try:
        tree_parser = parser(name)
    except GrammarUnavailable as error:
        return unavailable(str(error))
    data = text.encode("utf-8", "surrogateescape")
    status, sites = _analyse(tree_parser, grammar, data, partial)
    if status != "invalid":
        return INCOMPLETE if status == "incomplete" else VALID
    if before:
        sites = _introduced(tree_parser, grammar, before.encode("utf-8", "surrogateescape"), data, sites,
                            partial)
        if not sites:
            return VALID
    return invalid(_problem(data, min(sites, key=lambda site: site.start)))


def _analyse(tree_parser: Any, grammar: Grammar, data: bytes, partial: bool) -> tuple[str, list[Site]]:
    """``valid``, ``incomplete`` or ``invalid`` with the error sites that stand."""
    tree = tree_parser.parse(data)
    if not tree.root_node.has_error:
        broken = _line_broken_strings(grammar, data) if grammar.lenient_strings else []
        return ("invalid", broken) if broken else ("valid", [])
    errors = _errors(tree, grammar)
    conditions: list[Site] = []
    complete = "valid"
    if grammar.conditionals:
        data = blank_continued_comments(data)
        if partial:
            cut = blank_open_directive(data)
            complete, data = ("incomplete", cut) if cut != data else (complete, data)
        conditions = [site for site in error_sites(tree_parser.parse(directives_only(data)))
                      if site.start < len(data)]
        data = blank_macro_calls(blank_conditionals(data, grammar.foreign))
    if grammar.stand_ins or grammar.conditionals:
        data = _stand_in(data, grammar)
        tree = tree_parser.parse(data)
        errors = _errors(tree, grammar)
        if not errors:
            return ("invalid", conditions) if conditions else (complete, [])
    conditions += _line_broken_strings(grammar, data)
    if not partial:
        # a tree can flag an error that no ERROR or MISSING node holds: nothing to point at, no block
        return ("invalid", conditions + errors) if conditions or errors else (complete, [])
    first: list[Site] | None = None
    for suffix, closed in _completions(tree_parser, grammar, data, tree):
        completed = tree_parser.parse(data + suffix)
        standing = _standing(data, completed, closed, grammar) or _unclosed_calls(grammar, data, completed)
        if not standing:
            return ("invalid", conditions) if conditions else ("incomplete", [])
        first = standing if first is None else first
    assert first is not None
    return "invalid", conditions + first


def _line_broken_strings(grammar: Grammar, data: bytes) -> list[Site]:
    """Strings a line break ends, where the language says so (``Grammar.line_strings``)."""
    if grammar.line_strings is None:
        return []
    return [Site(found.end() - 1, found.end() - 1, found.group()[:1].decode())
            for found in grammar.line_strings.finditer(data)
            if found.group()[:1] in b"\"'" and found.group().endswith(b"\n")]


def completions(name: str, text: str) -> list[str]:
    """The endings the gate tries after ``text`` to close what is open at its end, in the order tried.

    ``text`` followed by one of them is what the gate parses to decide that ``text`` is a cut-off
    prefix; a caller can hand the result to the language's own checker.
    """
    tree_parser = parser(name)
    data = text.encode("utf-8", "surrogateescape")
    return [suffix.decode("utf-8", "surrogateescape")
            for suffix, _ in _completions(tree_parser, GRAMMARS[name], data, tree_parser.parse(data))]


def _completions(tree_parser: Any, grammar: Grammar, data: bytes, tree: Any) -> Iterator[tuple[bytes, bool]]:
    """Endings that close what is open at the end of the text; True: a tail closed a string or comment."""
    close = closers(tree, grammar)
    # a statement cut before its `;`: `$t = $a['x']` closes as `;}`, `$a = f(\n  1,` as `);`
    statement_end = (grammar.terminator.encode(),) if grammar.terminator else ()
    for filler in (b"", *FILLERS, *grammar.fillers, *statement_end):
        yield filler + close, False
    for pattern, filler in grammar.continued:
        if pattern.search(data, max(0, len(data) - 80)):
            yield filler + close, False
    angled = closers(tree, grammar, angles=True) if grammar.angles else close
    if angled != close:
        for filler in (b"", b" _"):
            yield filler + angled, False
        for ending in grammar.endings:
            yield angled + ending, False  # `T extends Array<\n  infer A,` waiting for `>` and `? :`
    if grammar.parameter_types:
        if b")" in close:
            yield _function_type(close), False  # `f: <T>(` …, `(ctx: {` …: a function type's parameters
        if angled != close:
            last = angled.rfind(b">") + 1
            yield angled[:last] + b"(): _;" + angled[last:], False  # `m<T extends X<{` … : a method's
    for ending in (*grammar.endings, *statement_end):
        yield close + ending, False
    if grammar.block_end and close:
        yield close.replace(b"}", grammar.block_end), False
    raw = _open_raw_string(grammar, data)
    for tail in (*grammar.tails, *raw):
        with_tail = data + tail.encode()
        tail_tree = tree_parser.parse(with_tail)
        # a raw string open at the end is no token to a tree in error recovery: its opener tells
        if tail in raw or _closes_open_token(tail_tree, len(data), len(with_tail)):
            close = closers(tail_tree, grammar)
            yield tail.encode() + close, True
            if statement_end and close:
                yield tail.encode() + statement_end[0] + close, True  # `$s = "…` closes as `";}`
            if grammar.block_end and close:
                yield tail.encode() + close.replace(b"}", grammar.block_end), True
            if grammar.parameter_types and b")" in close:
                yield tail.encode() + _function_type(close), True
    if grammar.heredoc is not None:
        openers = list(grammar.heredoc.finditer(data))
        if openers:
            terminator = b"\n" + openers[-1].group(2) + b"\n"
            close = closers(tree_parser.parse(data + terminator), grammar)
            for filler in (b"", b";"):
                yield terminator + filler + close, True


def _function_type(close: bytes) -> bytes:
    """The closers with `` => _`` after their first ``)``: the parameter list it closes a function type's."""
    end = close.index(b")") + 1
    return close[:end] + b" => _" + close[end:]


def _open_raw_string(grammar: Grammar, data: bytes) -> tuple[str, ...]:
    """The closing quote of the text's last raw-string opener when the text does not close it."""
    if grammar.raw_string is None:
        return ()
    last = None
    for last in grammar.raw_string.finditer(data):  # noqa: B007 (the last opener is wanted)
        pass
    if last is None:
        return ()
    quote = b'"' + last.group(1)
    return () if data.find(quote, last.end()) >= 0 else (quote.decode(),)


def _unclosed_calls(grammar: Grammar, data: bytes, tree: Any) -> list[Site]:
    """A line inside a function's arguments that ends in ``grammar.call_line_end``: the ``)`` is missing."""
    sites = []
    for found in grammar.call_line_end.finditer(data) if grammar.call_line_end is not None else ():
        node = tree.root_node.descendant_for_byte_range(found.start(), found.end())
        if node is not None and node.start_byte == found.start() and node.parent is not None \
                and node.parent.type == "arguments":
            sites.append(Site(found.start(), found.start(), ")"))
    return sites


def _closes_open_token(tree: Any, content_end: int, tail_end: int) -> bool:
    """Whether the tail ends a string or comment that the text left open (and not some new token)."""
    node = tree.root_node.descendant_for_byte_range(tail_end - 1, tail_end)
    while node is not None:
        if node.start_byte < content_end and node.end_byte >= tail_end:
            return any(kind in node.type for kind in _CLOSED_KINDS)
        node = node.parent
    return False


def _standing(data: bytes, tree: Any, closed: bool, grammar: Grammar) -> list[Site]:
    """The errors of a completed text that no append can change."""
    content_end = len(data.rstrip())
    threshold = data.rfind(b"\n", 0, content_end) + 1
    if closed:
        threshold = min(threshold, _closed_start(tree, content_end, threshold))
    last_line = data[threshold:content_end]
    first_token = content_end - len(last_line.lstrip())
    finished = not closed and data.endswith(b"\n") and last_line.endswith(_FINISHED)
    ended = (finished and grammar.statement_lines and last_line.endswith(grammar.terminator.encode())
             and _FOR_HEADER.search(last_line) is None)
    return [site for site in _errors(tree, grammar) if site.start < threshold or site.end < content_end
            or (finished and site.missing is None and site.start == first_token)
            or (ended and site.start < content_end)]


def _closed_start(tree: Any, position: int, fallback: int) -> int:
    """Start of the string, comment or heredoc that spans the end of the text (the tail closed it)."""
    node = tree.root_node.descendant_for_byte_range(max(0, position - 1), position)
    while node is not None and node.parent is not None:
        if node.end_byte > position and any(kind in node.type for kind in _CLOSED_KINDS):
            return int(node.start_byte)
        node = node.parent
    return fallback


def _errors(tree: Any, grammar: Grammar) -> list[Site]:
    """The tree's ``ERROR`` and ``MISSING`` nodes, and what the grammar misreads (``Grammar.misread``)."""
    sites = list(error_sites(tree)) if tree.root_node.has_error else []
    if grammar.misread:
        captures = _misread_query(grammar.name).captures(tree.root_node)
        sites += [Site(node.start_byte, node.start_byte, "}") for node in captures.get("brace", ())]
        sites += [Site(node.start_byte, node.end_byte, None) for node in captures.get("unexpected", ())]
    return sites


@functools.cache
def _misread_query(name: str) -> Any:
    import tree_sitter

    return tree_sitter.QueryCursor(tree_sitter.Query(parser(name).language, GRAMMARS[name].misread))


def error_sites(tree: Any) -> Iterator[Site]:
    """Every ``ERROR`` and ``MISSING`` node, outermost only, visiting just the subtrees that hold one."""
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            yield Site(node.start_byte, node.end_byte, node.type if node.is_missing else None)
        elif node.has_error:
            stack.extend(reversed(node.children))


def closers(tree: Any, grammar: Grammar, angles: bool = False) -> bytes:
    """The closing brackets and keywords for every block still open at the end, innermost first; with
    ``angles``, type arguments' ``<`` too (``_angle``)."""
    stack: list[str] = []
    cursor = tree.walk()
    while True:
        node = cursor.node
        if node.child_count == 0 and not node.is_missing and not (angles and _angle(stack, node)):
            _track(stack, node, grammar)
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                separator = "\n" if grammar.keywords else ""
                entries = [grammar.followers[entry][1] if entry in grammar.followers else entry
                           for entry in reversed(stack) if entry != _PATTERN]
                if grammar.terminator:
                    entries = [grammar.terminator + entry if entry == "}" and index and entries[index - 1] in
                               (")", "]") else entry for index, entry in enumerate(entries)]
                text = separator.join(entries)
                return (separator + text).encode() if stack else b""


def _angle(stack: list[str], node: Any) -> bool:
    """Track ``node`` if it is an angle bracket of type arguments: a ``<`` of ``type_arguments`` or
    ``type_parameters``, or one in an error right after a name (``Fn<``); a ``>`` closing one."""
    kind = node.type
    if kind == "<":
        parent, previous = node.parent, node.prev_sibling
        if parent is not None and (parent.type in _TYPE_LISTS or (
                parent.is_error and previous is not None and previous.end_byte == node.start_byte)):
            stack.append(">")
            return True
    elif kind in _ANGLES_CLOSED and stack and stack[-1] == ">":
        for _ in kind:
            if stack and stack[-1] == ">":
                stack.pop()
        return True
    return False


def _track(stack: list[str], node: Any, grammar: Grammar) -> None:
    kind = node.type
    parent = node.parent
    if kind == ">" and parent is not None and parent.type in _TAGS:
        tag = _end_tag(parent)
        if parent.type in _OPENING_TAGS:
            if tag not in _VOID_ELEMENTS:
                stack.append(tag)
        elif tag in stack:
            while stack.pop() != tag:
                pass
    elif kind in grammar.pattern_starts and (kind != "in" or stack[-1:] == [grammar.keywords.get("case")]):
        stack.append(_PATTERN)
    elif kind == ")" and stack[-1:] == [_PATTERN]:
        stack.pop()  # a shell case pattern's `a)` closes no bracket
    elif kind in grammar.followers:
        if kind in grammar.keywords:
            stack.append(grammar.keywords[kind])  # shell's `if` waits for its `then`, then for `fi`
        stack.append(kind)  # a ``try`` or ``do`` whose block has not been followed by its keyword yet
    elif stack and stack[-1] in grammar.followers and kind in grammar.followers[stack[-1]][0]:
        stack.pop()
        if kind in grammar.keywords:
            stack.append(grammar.keywords[kind])  # shell's `do` after `while …` opens the loop's body
    elif kind in grammar.quotes:
        if stack and stack[-1] == kind:
            stack.pop()
        else:
            stack.append(kind)
    elif kind in _OPENERS:
        stack.append(_OPENERS[kind])
    elif kind in _CLOSERS or kind in grammar.keywords.values():
        if kind in stack:
            while stack.pop() != kind:
                pass
    elif kind in grammar.keywords and not (parent is not None and parent.type in grammar.modifier_parents):
        stack.append(grammar.keywords[kind])


def _end_tag(tag: Any) -> str:
    """``</name>`` for an HTML or JSX tag (``</>`` for a JSX fragment)."""
    name = tag.child_by_field_name("name")
    if name is None:
        name = next((child for child in tag.children if child.type == "tag_name"), None)
    return f"</{name.text.decode('utf-8', 'replace').lower() if name is not None else ''}>"


def _stand_in(data: bytes, grammar: Grammar) -> bytes:
    for pattern, fill in grammar.stand_ins:
        data = pattern.sub(functools.partial(_filled, fill), data)
    return data


def _filled(fill: StandIn, found: re.Match[bytes]) -> bytes:
    """The match with its group 1 (or all of it) replaced byte for byte by ``fill`` (or what it gives)."""
    if callable(fill):
        return fill(found)
    group = 1 if found.re.groups else 0
    text, start, end = found.group(), found.start(group) - found.start(), found.end(group) - found.start()
    return text[:start] + fill * (end - start) + text[end:]


def _introduced(tree_parser: Any, grammar: Grammar, old: bytes, data: bytes, sites: list[Site],
                partial: bool) -> list[Site]:
    """The sites of ``data`` on no line where ``old`` had an error (lines mapped across the edit)."""
    status, previous = _analyse(tree_parser, grammar, old, partial)
    if status != "invalid":
        return sites
    limit = min(len(old), len(data))
    prefix = 0
    while prefix < limit and old[prefix] == data[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == data[-1 - suffix]:
        suffix += 1
    shift = len(data) - len(old)
    lines = set()
    for site in previous:
        if site.start < prefix:  # before the edit (an error spanning it starts on the same line)
            lines.add(data.count(b"\n", 0, site.start))
        elif site.start >= len(old) - suffix:
            lines.add(data.count(b"\n", 0, site.start + shift))
    return [site for site in sites if data.count(b"\n", 0, site.start) not in lines]


def _problem(data: bytes, site: Site) -> Problem:
    line_start = data.rfind(b"\n", 0, site.start) + 1
    line = data.count(b"\n", 0, site.start) + 1
    column = len(data[line_start : site.start].decode("utf-8", "replace")) + 1
    if site.missing is not None:
        message = f"missing `{site.missing}`"
    else:
        found = data[site.start : site.end].decode("utf-8", "replace").strip().split("\n")[0]
        if len(found) > _SNIPPET_TEXT:
            found = found[:_SNIPPET_TEXT] + "…"
        message = f"unexpected `{found}`" if found else "syntax error"
    return Problem(message, line, column, f"tree-sitter: {message} at line {line}, column {column}")

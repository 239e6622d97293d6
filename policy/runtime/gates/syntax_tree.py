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
- the completions are tried in order, the likeliest first (every bracket
  closed, nothing else); a tail only when the text may end inside what it
  closes (its opener occurs with no closer after it); and when the first
  completion leaves an ``ERROR`` or a ``MISSING`` token between valid
  neighbours before the last line (and before any string or comment the
  text may end in), no other ending reaches back there: the text is
  broken, no more parses;
- a text of 8 KB or more whose first error lies in its first 1/32 is
  first checked up to the end of that share's line, as if that start had
  been written alone: when the error ends there (or the text ends in a run
  of block-comment openers), by all of the above and below, before the
  whole is read again; else by that start's completions after the whole's
  preprocessing.  A start the gate would block is taken to break the text
  too (so this rule blocks a valid text only where the gate would block a
  valid prefix of it cut at a line end, what the corpus test counts);
- a long text whose parse is one ``ERROR`` from its first byte, in a
  grammar whose text is complete at any line end where it parses with no
  error (shell: ``Grammar.line_commands``), is judged by its rest when the
  text before the line of the first broken top-level node, at least half
  of it, parses with no error (``_rest_read_alone``): the text is then a
  cut-off prefix, or broken, as that rest written alone is;
- in C, an ending's parse reads the text from the top-level node holding
  its first error on (tree-sitter's included ranges): the nodes before it
  are whole, and nothing an ending appends changes them
  (``Grammar.closed_items``);
- an error the file already had before the write (same line, the edit's
  shift applied) is not the write's doing;
- a text ending inside one block comment, once its parse has an error (the
  comment read as code, which each tail read again), is a cut-off prefix
  when that comment closed (then what that leaves open, or another ending
  after the closer) leaves no error;
- a text ending inside a block comment that holds more openers (which
  tree-sitter's lexer reads to the end from each: a quadratic parse) is
  parsed with the comment closed (then what that leaves open), and decided
  by that completion when it has no error, or an error that no ending of
  the code before the comment reaches, or by the gate's other endings
  after the closer when one of them leaves no standing error
  (``_open_comment``).

Every step is a linear parse or walk (a tree's leaves are walked once with
their parents, never asked for ``parent``, which scans from the root), and
at most a fixed number of parses per grammar; the slow steps run only on a
text with an error.  What each grammar can and cannot see is in
docs/language.md.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from policy.runtime.gates.grammars import (
    BLOCK_COMMENT_END,
    GRAMMARS,
    Grammar,
    GrammarUnavailable,
    StandIn,
    parser,
)
from policy.runtime.gates.literal_nesting import PAIRS, nesting_closing
from policy.runtime.gates.preprocessor import (
    blank_conditionals,
    blank_continued_comments,
    blank_listed_defines,
    blank_macro_calls,
    blank_named_variadics,
    blank_open_call,
    blank_open_directive,
    directives_only,
    has_checked_directives,
)
from policy.runtime.gates.problems import INCOMPLETE, VALID, Problem, Verdict, invalid, unavailable
from policy.runtime.gates.shortening import START_SHARE, Shortened, shortened

_OPENERS = {"(": ")", "[": "]", "{": "}", "${": "}", "#{": "}", "$(": ")", "$((": "))", "{$": "}"}
_CLOSERS = frozenset({")", "]", "}", "))"})
_OPENING_TAGS = ("jsx_opening_element", "start_tag")
_TAGS = (*_OPENING_TAGS, "jsx_closing_element", "end_tag")
"""The tags whose closing ``>`` opens or closes an element (JSX, HTML)."""
_PATTERN = ""
"""On the closers' stack: a case pattern may come, its ``)`` no closer (``Grammar.pattern_starts``)."""
_TYPE_LISTS = frozenset({"type_arguments", "type_parameters"})
_ANGLES_CLOSED = frozenset({">", ">>", ">>>"})
_VOID_ELEMENTS = frozenset(f"</{name}>" for name in (
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"))
FILLERS = (b" _", b" _;", b" : _", b" {}")
"""Text tried after an unfinished statement (``x =``, ``a ?`` …, a declaration header with no body)."""
_OPERAND_EXPECTED = frozenset(b"([{,=+-*/%&|^!<>?:")
"""The last byte of a text cut before an operand (``x = (``): the filler `` _`` is tried first."""
_CLOSED_KINDS = ("string", "comment", "heredoc", "template", "text_block", "raw", "quote", "attribute_value",
                 "regex", "symbol_array")
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
    old = before.encode("utf-8", "surrogateescape") if before else None
    excusal = functools.cache(functools.partial(_introduced, tree_parser, grammar, old, data, partial)) \
        if old else None
    status, sites, alone = _analyse(tree_parser, grammar, data, partial)
    if alone is not None:  # its start, read alone, is broken: so is the text, unless that is old or macros'
        verdict = _judged(tree_parser, grammar, data[:alone], True, status, sites, excusal)
        if verdict.status == "invalid":
            return verdict
        status, sites, _ = _analyse(tree_parser, grammar, data, partial, start_alone=False)
    return _judged(tree_parser, grammar, data, partial, status, sites, excusal)


_Excusal = Callable[[], tuple[Callable[[list[Site]], list[Site]], list[Site]]]
"""What ``_introduced`` gives for the text written, made once when first asked for."""


def _judged(tree_parser: Any, grammar: Grammar, data: bytes, partial: bool, status: str, sites: list[Site],
            excusal: _Excusal | None) -> Verdict:
    """The verdict on ``data`` analysed as ``status`` with ``sites``: the errors the file had before the write
    (``excusal``) are not the write's, and those an unknown macro's name explains (``_macro_read``) do not
    block."""
    if status != "invalid":
        return INCOMPLETE if status == "incomplete" else VALID
    errors, earlier = sites, list[Site]()
    excused: Callable[[list[Site]], list[Site]] = _keep
    if excusal is not None:
        excused, earlier = excusal()
        sites = excused(sites)
        if not sites:
            return VALID
    # (not on a text read shortened: a long run of repeats or comment lines at its end is no header's)
    if grammar.reserved and not (partial and shortened(data, grammar.conditionals)):
        read = _macro_read(tree_parser, grammar, data, errors, partial, excused, earlier)
        if read is not None:
            return INCOMPLETE if read == "incomplete" else VALID
    return invalid(_problem(data, min(sites, key=lambda site: site.start)))


def _keep(sites: list[Site]) -> list[Site]:
    return sites


_QUOTES = frozenset({'"', "'"})
_MACRO_TRIES = 4
"""How many blanked names ``_macro_read`` checks in all: each a check of the whole text."""
_LINE_TOKENS = re.compile(rb"([A-Za-z_]\w*+)|^[ \t]*[*#].*|/\*.*?(?:\*/|$)|//.*|\"(?:[^\"\\\n]|\\.)*+\"?"
                          rb"|'(?:[^'\\\n]|\\.)*+'?|([)\]*])|[^\s]", re.MULTILINE)
"""A name (group 1) or what ends a declaration's part before a macro (group 2), or a directive, comment,
string or other byte to skip, on one line."""
_STATEMENT_KEYWORDS = frozenset(b"""return case goto sizeof else do _Alignof throw new delete co_return
co_yield co_await""".split())
"""Keywords after which a name with arguments is an operand (``return f(a +)``), not a macro in a
declaration."""
_ARGUMENTS = re.compile(rb"[ \t]*+\((?:[^()\n]|\((?:[^()\n]|\([^()\n]*+\))*+\))*+\)")
"""A parenthesized argument list on one line, nested up to three deep."""


def _macro_read(tree_parser: Any, grammar: Grammar, data: bytes, errors: list[Site], partial: bool,
                excused: Callable[[list[Site]], list[Site]], earlier: list[Site]) -> str | None:
    """Whether the text's errors (``errors``; those the file had before the write are ``excused``) go away
    to none the write brings, one after another, each once a name near it (``_error_names``: alone, or with
    the parenthesized arguments after it) is blanked, no blanking adding an error on another line: each
    is then taken for an unknown macro (``externalref``, ``_Xconst``, ``FGUNUSED``) that expands to
    nothing the grammar needs.  A name blanked so is then tried blanked wherever it occurs (one macro on many
    lines).  An error over more than ``_WIDE_LINES`` lines (tree-sitter's recovery from an error that comes
    back on many lines, in a text cut inside a block: gpgrt's ``const char *_GPGRT__RESTRICT path``) tells
    no name; there the name nearest each of the errors the file had before the write (``earlier``) inside it
    is tried blanked wherever it occurs.  At most ``_MACRO_TRIES`` blanked texts are checked (a check of the
    whole text each), and only when the gate would block the text (not read shortened: ``shortening``).  Gives
    the last blanked text's status (``incomplete``: a cut-off prefix; ``invalid``: only errors the file had
    stand), or None."""
    if any(site.missing in _QUOTES for site in excused(errors)):
        return None  # a string a line ends: no name is to blame, the write is blocked whatever is blanked
    tries, status = 0, "invalid"
    lines = _lines_of(data)
    known: dict[bytes, bool] = {}  # the names blanked so far, and whether each was tried everywhere
    while excused(errors):
        site = min(errors, key=lambda site: site.start)
        standing = {lines(other.start) for other in errors} - {lines(site.start)}
        wide = lines(site.end) - lines(site.start) > _WIDE_LINES
        near = list(dict.fromkeys(_wide_names(grammar, data, site, earlier) if wide
                                  else _error_names(grammar, data, site)))
        for name_start, name_end in sorted(near, key=lambda span: data[span[0] : span[1]] not in known):
            if tries == _MACRO_TRIES:
                return None
            tries += 1
            macro = data[name_start:name_end]
            blanked = _blank_all(data, macro) if wide else \
                data[:name_start] + _NOT_NEWLINE.sub(b" ", macro) + data[name_end:]
            found, found_status = _errors_of(tree_parser, grammar, blanked, partial)
            if {lines(other.start) for other in found} <= standing:
                data, errors, status = blanked, found, found_status
                known.setdefault(macro, wide)
                break
        else:
            return None
        if excused(errors) and tries < _MACRO_TRIES and not known.get(macro):  # elsewhere too (`_Xconst`)
            tries += 1
            known[macro] = True
            everywhere = _blank_all(data, macro)
            found, found_status = _errors_of(tree_parser, grammar, everywhere, partial)
            if {lines(other.start) for other in found} < {lines(other.start) for other in errors}:
                data, errors, status = everywhere, found, found_status
    return status


def _errors_of(tree_parser: Any, grammar: Grammar, data: bytes, partial: bool) -> tuple[list[Site], str]:
    """The errors that stand in ``data`` (none when it is valid or a cut-off prefix), and its status."""
    status, found, _ = _analyse(tree_parser, grammar, data, partial)
    return (found if status == "invalid" else []), status


_NOT_NEWLINE = re.compile(rb"[^\n]")


def _blank_all(data: bytes, macro: bytes) -> bytes:
    """``data`` with each occurrence of ``macro`` (a name, maybe with its arguments) as a word blanked, but in
    directives (``#define FGAPIENTRY``)."""
    pattern = re.compile(rb"(^[ \t]*#(?:[^\n\\]|\\.)*)|(?<!\w)" + re.escape(macro)
                         + (rb"(?!\w)" if macro[-1:] != b")" else b""), re.MULTILINE | re.DOTALL)
    return pattern.sub(lambda found: found.group() if found.lastindex
                       else _NOT_NEWLINE.sub(b" ", found.group()), data)


_WIDE_LINES = 3
_WIDE_NAMES = 4
"""How many of the earlier errors inside a wide one ``_wide_names`` takes a name from."""


def _wide_names(grammar: Grammar, data: bytes, site: Site, earlier: list[Site]) -> Iterator[tuple[int, int]]:
    """The name nearest each of the first ``_WIDE_NAMES`` errors of ``earlier`` inside ``site``."""
    inside = [other for other in earlier if site.start <= other.start <= site.end]
    for other in sorted(inside, key=lambda other: other.start)[:_WIDE_NAMES]:
        yield from itertools.islice(_error_names(grammar, data, other), 1)


def _error_names(grammar: Grammar, data: bytes, site: Site) -> Iterator[tuple[int, int]]:
    """The names on the last line of the error ``site`` spans, then on its first line (an error over a
    declaration cut after a macro: ``f(a)`` then ``__THROW __nonnull ((1)) __wur``)."""
    first = data.rfind(b"\n", 0, site.start) + 1
    last = data.rfind(b"\n", 0, max(site.start, len(data[: site.end].rstrip()))) + 1
    if first < last:
        yield from _macro_names(grammar, data, last, data.find(b"\n", last) + 1 or len(data))
    # on the first line the nearest first, those before the error first (`_Xconst *`: the `*` is the error)
    names = _macro_names(grammar, data, first, data.find(b"\n", first) + 1 or len(data))
    yield from sorted(names, key=lambda span: (span[0] >= site.start, abs(site.start - span[1])
                                               if span[0] < site.start else span[0] - site.start))


def _macro_names(grammar: Grammar, data: bytes, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The names in the line ``data[start:end]`` that are no keyword and in no directive, comment or string
    (a line starting with ``*`` is taken for a comment's), each alone and, when a ``(`` follows and it comes
    after a name, a ``)``, ``]`` or ``*`` (in a declaration: ``__THROW __nonnull ((1))``, ``extern
    FORM_EXPORT_VAR(T *) x;``, not a call in a statement or an operand), with its arguments first."""
    previous = b""
    for found in _LINE_TOKENS.finditer(data, start, end):
        before, previous = previous, found.group() if found.lastindex else b""
        if found.lastindex != 1 or previous in grammar.reserved:
            continue
        arguments = _ARGUMENTS.match(data, found.end())
        if arguments is not None and before and before not in _STATEMENT_KEYWORDS:
            yield found.start(), arguments.end()
        yield found.start(), found.end()


def _lines_of(data: bytes) -> Callable[[int], int]:
    """The line of an offset in ``data``."""
    return functools.partial(bisect.bisect_right, [found.start() for found in _NEWLINE.finditer(data)])


def _analyse(tree_parser: Any, grammar: Grammar, data: bytes, partial: bool,
             start_alone: bool = True) -> tuple[str, list[Site], int | None]:
    """``valid``, ``incomplete`` or ``invalid`` with the error sites that stand, and where the start that was
    read alone ends when those are its sites (``_start_read_alone``; only with ``start_alone``), else None."""
    alone = partial and start_alone
    found = _open_block_comment(grammar, data)
    run = found if found is not None and _read_quadratically(data, *found[1:]) else None
    if alone and run is not None:  # closing its comment parses the whole several times: the start comes first
        early = _start_read_alone(tree_parser, grammar, data, None)
        if early is not None:
            return early
    comment = _open_comment(tree_parser, grammar, data, *run) if run is not None else None
    if comment is not None and comment[4] and partial:  # cut off inside the comment
        return "incomplete", [], None
    tree = tree_parser.parse(data) if comment is None else comment[3]
    if partial and found is not None and run is None and tree.root_node.has_error \
            and _opens_there(tree, found[2]):  # one comment open at the end: read as code
        closed = _open_comment(tree_parser, grammar, data, *found)
        if closed is not None and (closed[4] or not (_errors(closed[3], grammar)
                                                     or _line_broken_strings(grammar, data))):
            return "incomplete", [], None  # (else as before: its errors are read on the text's own tree)
    if alone and run is None and tree.root_node.has_error:
        early = _start_read_alone(tree_parser, grammar, data, tree)
        if early is not None:
            return early
    if partial and comment is None and grammar.line_commands and tree.root_node.is_error:
        late = _rest_read_alone(tree_parser, grammar, data, tree)
        if late is not None:
            return late
    if comment is None:
        shorter = shortened(data, grammar.conditionals) if partial and tree.root_node.has_error else None
        if shorter is None:
            return *_analyse_tree(tree_parser, grammar, data, tree, partial, None, start_alone), None
        short = shorter.text
        status, sites = _analyse_tree(tree_parser, grammar, short, tree_parser.parse(short), partial, shorter,
                                      start_alone)
        if status == "valid":  # the whole has an error: read it whole (no grammar seen does this)
            return *_analyse_tree(tree_parser, grammar, data, tree, partial, None, start_alone), None
        return status, [_lengthened(site, shorter.kept, len(data) - len(short)) for site in sites], None
    start, closer, completed, tree, _ = comment
    # (sites: a CSS string a line ends)
    _, sites = _analyse_tree(tree_parser, grammar, completed, tree, partial, None, start_alone)
    if not partial:  # whole, the text is broken where the comment opens
        sites.append(Site(start, start, closer.strip(b"\n").decode()))
    return ("invalid", sites, None) if sites else ("incomplete", [], None)


_START_ALONE_MIN = 8192
"""The smallest text whose start is judged on its own first (``_start_read_alone``, ``_broken_start``): a
smaller one is cheap."""


def _start_read_alone(tree_parser: Any, grammar: Grammar, data: bytes,
                      tree: Any | None) -> tuple[str, list[Site], int] | None:
    """``_analyse``'s answer for a text whose start, read alone, is broken: ``invalid``, the start's sites,
    and where the start ends; else None.  Only for a text of ``_START_ALONE_MIN`` bytes or more whose ``tree``
    (when given) has its first error in the text's first ``1/START_SHARE``, ending in the start; the start
    runs to the end of the line that share ends on (``_share_end``).  The start is judged as if it had been
    written alone, by the whole gate (its stand-ins, preprocessor and completions; then, in
    ``check_syntax_tree``, the errors the file had and unknown macros), and a start the gate would block is
    taken to break the text, before anything reads the whole again.  This is no proof that no continuation
    exists: it adds a false block only where the gate blocks a valid prefix cut at a line end, what the
    corpus test counts.  A line broken before 100 KB of C, where each name ``_macro_read`` blanks would be a
    check of the whole, costs the text's parse and checks of its start; a text that ends in a run of comment
    openers (``tree`` None: its parse is quadratic, and closing them takes several) costs checks of its
    start only; a text with no error, nothing more.  (An error that runs on past the start is left to
    ``_broken_start``, which judges the start's endings after the whole's preprocessing.)"""
    if len(data) < _START_ALONE_MIN:
        return None
    share = len(data) // START_SHARE
    first = next(_error_nodes(tree), None) if tree is not None else None
    if tree is not None and (first is None or first.start_byte >= share):
        return None
    cut = _share_end(data, share, len(data))
    if cut is None or (first is not None and first.end_byte > cut):  # an error running on past the start:
        return None  # the start alone is cut inside it, and reads as a prefix would
    status, sites, _ = _analyse(tree_parser, grammar, data[:cut], True)
    return (status, sites, cut) if status == "invalid" else None


def _rest_read_alone(tree_parser: Any, grammar: Grammar, data: bytes,
                     tree: Any) -> tuple[str, list[Site], None] | None:
    """``_analyse``'s answer for a text of a grammar of ``line_commands``, parsed as ``tree`` whose root
    tree-sitter could only make one ``ERROR``, when the text before the line of the first error among the
    root's nodes, at least half of it and ``_START_ALONE_MIN`` bytes or more, parses with no error: that start
    is complete, so the text is a cut-off prefix, or broken, exactly as the rest after it is (its sites moved
    to the text's bytes); None when no such start is found or the rest alone has no error (the two read
    apart differ from the whole: it is read whole).  With a root in error no completion reuses a subtree,
    and ``_open`` walks every top-level node: 100 KB of shell functions, then 100 ``$(``, cost nine times the
    parse.  This costs the start's parse, reusing ``tree`` (half a parse), and the rest's analysis."""
    if len(data) < _START_ALONE_MIN:
        return None
    first = _first_broken_child(tree.root_node)
    split = data.rfind(b"\n", 0, first) + 1 if first is not None else 0
    if split < max(_START_ALONE_MIN, len(data) // 2):
        return None
    start = tree.copy()
    start.edit(split, len(data), split, _point(data, split), _point(data, len(data)), _point(data, split))
    if tree_parser.parse(data[:split], start).root_node.has_error:
        return None
    status, sites, _ = _analyse(tree_parser, grammar, data[split:], True, start_alone=False)
    if status == "valid":
        return None
    return status, [_lengthened(site, 0, split) for site in sites], None


def _first_broken_child(node: Any) -> int | None:
    """Where the first child of ``node`` that is an error, holds one, is missing or is an unnamed token
    starts (a cursor: the list of children is not built)."""
    cursor = node.walk()
    found = cursor.goto_first_child()
    while found:
        child = cursor.node
        if child.has_error or child.is_missing or not child.is_named:
            return int(child.start_byte)
        found = cursor.goto_next_sibling()
    return None


def _lengthened(site: Site, kept: int, cut: int) -> Site:
    """A site of a text ``shortened`` in the whole text: what lies at or after ``kept`` lies ``cut`` bytes
    later there."""
    return Site(site.start + (cut if site.start >= kept else 0), site.end + (cut if site.end >= kept else 0),
                site.missing)


def _read_quadratically(data: bytes, opener: bytes, start: int) -> bool:
    """Whether more openers follow the comment open at ``start`` than tree-sitter reads in about one pass
    (their count times what follows the first exceeds the text's length): the text's own parse is then
    quadratic, and is not made."""
    return data.count(opener, start + len(opener)) * (len(data) - start) > len(data)


def _opens_there(tree: Any, start: int) -> bool:
    """Whether what starts at ``start`` in ``tree`` lies in no string or comment that starts before it (a
    ``/*`` in Go's ``//go:embed dir/*`` or in a string opens nothing: trying its closer cost a parse)."""
    node = tree.root_node.descendant_for_byte_range(start, start + 1)
    while node is not None and node.start_byte == start:  # the opener's own leaf, and what it starts
        node = node.parent
    return node is None or not any(kind in node.type for kind in _CLOSED_KINDS)


def _open_block_comment(grammar: Grammar, data: bytes) -> tuple[str, bytes, int] | None:
    """The tail, opener and start of a block comment the text may end inside, for ``_open_comment``; None
    when there is none."""
    for tail in grammar.tails:
        opener = _TAIL_OPENERS.get(tail)
        start = _open_token_start(tail, data) if opener is not None else None
        if opener is not None and start is not None:
            return tail, opener, start
    return None


def _open_comment(tree_parser: Any, grammar: Grammar, data: bytes, tail: str, opener: bytes,
                  start: int) -> tuple[int, bytes, bytes, Any, bool] | None:
    """For a text that may end inside a block comment with more of its openers after the first one
    (``int x; /*`` many times, ``_read_quadratically``), or inside one whose text's own parse has an error
    (``tail``, ``opener`` and ``start`` as ``_open_block_comment`` found them): where the comment starts,
    its closer (``Grammar.tails``), and the text completed by that closer (one per comment open where
    comments nest, ``_open_nested_comment``; then the closers of what it leaves open) with its
    tree, when the closer's tree reads a comment from inside the text to the closer and that tree has no
    error, or an error out of reach of any ending of the code before the comment (``_error_out_of_reach``:
    broken code with valid code after it), or when another of the gate's endings after the closer leaves no
    standing error (``_ending_after_comment``: ``x = /*`` … closes as ``*/ _;``), and whether it was that
    ending (the text is then a cut-off prefix); None otherwise.

    Tree-sitter lexes each opener after an unclosed one to the end of the text, so its own parse of such a
    text is quadratic; with the closer appended it parses in linear time.  The comment runs to the end (no
    closer follows its opener): a completion without an error makes the text a cut-off prefix (the gate's
    own completion with that tail, tried first), and, whole, broken only there (the comment is not closed);
    a completion whose error no ending reaches makes it broken there (the gate's completions stop at such
    an error too), decided by the analysis of that completion, not by a parse of the text as it is (broken
    code before 20 KB of openers: 0.1 to 0.4 s, quadratic; code cut before them, ``x = /*``, tried with more
    endings: 0.7 to 3 s).  No ending found is no proof: once a closer follows, tree-sitter reads a comment
    even inside a CSS string or an HTML attribute's value (``a { content: "/*"``), leaving that string open;
    such a text is parsed as it is (code broken on the comment's own line too: still quadratic), and so is
    one whose later openers re-read less than the whole text in all (their count times what follows the
    first): there the parse as it is costs about what this one more parse would (valid Go with ``//go:embed
    tests/*`` and one more ``/*`` in a string after it)."""
    closer = tail.encode()
    nested = _open_nested_comment(grammar, data) if tail == BLOCK_COMMENT_END else None
    completed = data + closer * (nested[1] if nested is not None else 1)  # Rust's: one per comment open
    if nested is not None:  # a line end after it: the closers below then leave the comment's token be
        completed += b"\n"  # (else tree-sitter reads it again: 20 KB, a parse's time), as Rust reads it
    tree = tree_parser.parse(completed)
    found = _comment_start(tree, data, opener, len(completed.rstrip(b"\n")))
    if found is None:
        return None
    if tree.root_node.has_error:
        closed, closed_tree = completed, tree
        close = closers(tree, grammar)
        if close:
            tree = _parse_appended(tree_parser, completed, tree, close)
            completed += close
        if tree.root_node.has_error and not _error_out_of_reach(tree, found):
            ending = _ending_after_comment(tree_parser, grammar, data, closed, closed_tree, start)
            return None if ending is None else (found, closer, *ending, True)
    return found, closer, completed, tree, False


def _ending_after_comment(tree_parser: Any, grammar: Grammar, data: bytes, closed: bytes, tree: Any,
                          start: int) -> tuple[bytes, Any] | None:
    """The first of the gate's endings after a comment's closer (``_completions``' for that tail, all but the
    closers of the text as it is, which need its quadratic parse) that completes ``closed`` (``data`` with
    the comment that starts at ``start`` closed, parsed as ``tree``) with no standing error, and its tree;
    None when none does, or when the grammar's preprocessor or stand-ins change the text (its endings are
    then tried on the text they give)."""
    if grammar.conditionals or (grammar.stand_ins and _stand_in(data, grammar) != data) \
            or _line_broken_strings(grammar, data):
        return None  # (a string a line ends blocks the text whatever ending is tried)
    state = _open(tree, grammar)
    close = _closing(state.entries, grammar)
    endings = [FILLERS[0] + close] if _expects_operand(data[:start].rstrip(b" \t\r\n")) else []
    endings += _block_endings(state, grammar)
    if grammar.terminator and close:
        endings.append(grammar.terminator.encode() + close)
    if grammar.block_end and close:
        endings.append(close.replace(b"}", grammar.block_end))
    if grammar.parameter_types and b")" in close:
        endings.append(_function_type(close))
    for ending in dict.fromkeys(endings):
        completed = _parse_appended(tree_parser, closed, tree, ending)
        if not (_standing(data, completed, True, grammar) or _unclosed_calls(grammar, data, completed)):
            return closed + ending, completed
    return None


def _parse_appended(tree_parser: Any, data: bytes, tree: Any, suffix: bytes, closes_token: bool = False,
                    start: int = 0) -> Any:
    """The tree of ``data + suffix``, parsed from ``tree`` (``data``'s, left as it is) edited by the append:
    tree-sitter reads again what the append can change and takes the rest from ``tree`` (100 KB of code,
    then a completion's closers: 3 to 15 times less than a parse of the whole).  A suffix that
    ``closes_token`` (a tail), or holds a byte that can end a string or comment, may turn what follows an
    error into a string's content (a Ruby string that an appended quote closes had been read on as code):
    then all from the text's first error on is read again.  With a ``start`` (``_items_start``), only what
    follows it is read, alone: the tree holds the nodes from there on, at their offsets in the text."""
    completed = data + suffix
    if start:
        return _parse_from(tree_parser, completed, start)
    ends_token = closes_token or not _TOKEN_ENDS.isdisjoint(suffix.replace(b"</", b""))  # `</p>`: an end tag
    first = next(_error_nodes(tree), None) if ends_token else None
    changed = len(data) if first is None else int(first.start_byte)
    edited = tree.copy()
    edited.edit(changed, len(data), len(completed), _point(data, changed), _point(data, len(data)),
                _point(completed, len(completed)))
    return tree_parser.parse(completed, edited)


def _parse_from(tree_parser: Any, data: bytes, start: int) -> Any:
    """The tree of ``data`` read from ``start`` on only (tree-sitter's included ranges)."""
    import tree_sitter

    whole = tree_parser.included_ranges
    tree_parser.included_ranges = [tree_sitter.Range(_point(data, start), _point(data, len(data)), start,
                                                     len(data))]
    try:
        return tree_parser.parse(data)
    finally:
        tree_parser.included_ranges = whole


def _items_start(grammar: Grammar, tree: Any, errors: list[Site]) -> int:
    """Where the top-level node holding the first of the text's ``errors`` starts, in a grammar of
    ``closed_items`` whose ``tree`` has a root it knows, when that is ``_START_ALONE_MIN`` bytes or more into
    the text; else 0.  The nodes before it are whole and nothing after them continues them, so an ending
    changes nothing there, and its parse reads the text from that node on only (``_parse_appended``):
    tree-sitter-c reuses no node of a tree whose lines it read two ways (a macro call taken for a
    declaration), and 2,000 such lines before an ending cost a second parse of the whole for each."""
    if not grammar.closed_items or not errors or tree.root_node.is_error:
        return 0
    first = min(site.start for site in errors)
    holder = tree.root_node.first_child_for_byte(max(0, first - 1))  # (a `;` missing at a node's end)
    start = int(holder.start_byte) if holder is not None else 0
    return start if start >= _START_ALONE_MIN else 0


_TOKEN_ENDS = frozenset(b"\"'`/*#%-\\")
"""Bytes that can end a string, comment or heredoc (or a Ruby ``%`` literal): a suffix with none of them only
closes brackets and blocks and fills operands."""


def _point(data: bytes, offset: int) -> tuple[int, int]:
    """The row and column (in bytes) of ``offset`` in ``data``."""
    return data.count(b"\n", 0, offset), offset - data.rfind(b"\n", 0, offset) - 1


def _comment_start(tree: Any, data: bytes, opener: bytes, end: int) -> int | None:
    """Where the comment ending at ``end`` in ``tree`` starts, when it starts inside ``data`` with
    ``opener`` and is whole (not closed by a ``MISSING`` closer: a comment that nests deeper); None
    otherwise."""
    node = tree.root_node.descendant_for_byte_range(end - 1, end)
    for _ in range(_COMMENT_PARTS):  # the comment, or a part of it (Rust's doc comments)
        if node is None:
            break
        if node.end_byte >= end and "comment" in node.type and not node.has_error \
                and data.startswith(opener, node.start_byte) and node.start_byte < len(data):
            return int(node.start_byte)
        node = node.parent
    return None


_COMMENT_PARTS = 2
"""How many nodes up from the closer's last byte the comment it closes is looked for (a bounded walk: each
``parent`` scans from the root)."""


def _analyse_tree(tree_parser: Any, grammar: Grammar, data: bytes, tree: Any, partial: bool,
                  shorter: Shortened | None = None, start_alone: bool = True) -> tuple[str, list[Site]]:
    """``_analyse`` of ``data`` parsed as ``tree``; ``shorter`` says how, when ``data`` is the text written
    ``shortened``; without ``start_alone``, its start never decides (``_broken_start``)."""
    if not tree.root_node.has_error:
        broken = _line_broken_strings(grammar, data) if grammar.lenient_strings else []
        return ("invalid", broken) if broken else ("valid", [])
    conditions: list[Site] = []
    complete = "valid"
    original = data
    listed = None  # the first tree's errors, when _completes_as_written listed them
    if grammar.conditionals and partial:
        completes, listed = _completes_as_written(tree_parser, grammar, data, tree)
        if completes:
            return "incomplete", []
    if grammar.conditionals:
        data = blank_named_variadics(blank_continued_comments(data))
        if partial:
            cut = blank_open_call(blank_open_directive(data))
            complete, data = ("incomplete", cut) if cut != data else (complete, data)
        if has_checked_directives(data):
            directives = directives_only(data, grammar.line_strings)
            conditions = [site for site in error_sites(tree_parser.parse(directives))
                          if site.start < len(data)]
        data = blank_macro_calls(blank_listed_defines(blank_conditionals(data, grammar.foreign)))
    if grammar.stand_ins or grammar.conditionals:
        data = _stand_in(data, grammar)
        if data != original:  # otherwise the first parse stands
            tree = tree_parser.parse(data)
            listed = None
    # the errors of the tree that stands only (a replaced one's were 2,000 sites and a query over 118 KB of
    # C++ macro calls, for nothing)
    errors = _errors(tree, grammar) if listed is None else listed
    if not errors and (grammar.stand_ins or grammar.conditionals):
        return ("invalid", conditions) if conditions else (complete, [])
    conditions += _line_broken_strings(grammar, data)
    if not partial:
        # a tree can flag an error that no ERROR or MISSING node holds: nothing to point at, no block
        return ("invalid", conditions + errors) if conditions or errors else (complete, [])
    standing = _broken_start(tree_parser, grammar, data, errors, shorter) if start_alone else None
    if standing is None:
        standing = _completion_errors(tree_parser, grammar, data, tree, _items_start(grammar, tree, errors))
    if standing is None:
        return ("invalid", conditions) if conditions else ("incomplete", [])
    return "invalid", conditions + standing


def _completes_as_written(tree_parser: Any, grammar: Grammar, data: bytes,
                          tree: Any) -> tuple[bool, list[Site] | None]:
    """Whether the text, not preprocessed, completed by the closers of what it leaves open (after a filler
    where it ends expecting an operand, as ``_completions`` tries first) parses with no standing error, and
    no string in it is ended by a line break: a cut-off prefix as tree-sitter reads it, the reading that
    decides a whole text valid.  The preprocessor's passes (``blank_macro_calls`` and the rest: several
    regular-expression scans of the whole text) run only on a text that does not complete so (a 100 KB
    string line of export macros: 40 times the parse's time).  Tried only where the tree's errors all reach
    the last line: one that ends before it has text after it that the closers do not change (macros
    the grammar cannot read, one error each), and the parse would be one more for nothing.  Also the tree's
    errors once listed (not when an error node ends before the last line: the query is not run then)."""
    content = data.rstrip()
    last_line = data.rfind(b"\n", 0, len(content)) + 1
    if any(node.end_byte < last_line for node in _error_nodes(tree)):
        return False, None
    errors = _errors(tree, grammar)
    if any(site.end < last_line for site in errors) or _line_broken_strings(grammar, data):
        return False, errors
    operand = _operand_expected(grammar, content)  # `int x = (` closes as ` _)`
    ending = (FILLERS[0] if operand else b"") + closers(tree, grammar)
    completed = _parse_appended(tree_parser, data, tree, ending, start=_items_start(grammar, tree, errors)) \
        if ending else tree
    standing = _standing(data, completed, False, grammar) or _unclosed_calls(grammar, data, completed)
    return not standing, errors


def _completion_errors(tree_parser: Any, grammar: Grammar, data: bytes, tree: Any,
                       start: int = 0) -> list[Site] | None:
    """The standing errors of the likeliest completion of ``data`` (parsed as ``tree``, its endings from
    ``start`` on: ``_items_start``) when no completion leaves none; None when one does (``data`` is a cut-off
    prefix)."""
    first: list[Site] | None = None
    tried = set()
    for suffix, closed, plain in _completions(tree_parser, grammar, data, tree):
        if (suffix, closed) in tried:
            continue
        tried.add((suffix, closed))
        completed = _parse_appended(tree_parser, data, tree, suffix, closed, start) if suffix else tree
        standing = _standing(data, completed, closed, grammar) or _unclosed_calls(grammar, data, completed)
        if not standing:
            return None
        if plain:  # its errors are the ones reported
            first = standing
            if _error_out_of_reach(completed, _unreachable_before(grammar, data)):
                break
    assert first is not None
    return first


def _broken_start(tree_parser: Any, grammar: Grammar, data: bytes, errors: list[Site],
                  shorter: Shortened | None) -> list[Site] | None:
    """When the text written is ``_START_ALONE_MIN`` bytes or more (``data``, or the text ``shorter`` says
    ``data`` was shortened from) and ``data``'s first error lies in its first ``1/START_SHARE`` (or up to
    ``shorter``'s ``start_share``): the standing errors of the text up to the end of the line that share
    ends on, when that start alone is no cut-off prefix (no ending of it parses); None otherwise.  The start
    is judged as if it had been written alone, and a start the gate would block is taken to break the text;
    the completions are parsed on that start only, not on the whole text (a text that is one error from its
    start, such as lines of open strings, has no other early decision).  This is no proof that no
    continuation exists: it adds a false block only where the gate already blocks a valid prefix cut at a
    line end.  Undecided, it costs at most a few parses of that share."""
    written, share, limit = (len(data), len(data) // START_SHARE, len(data)) if shorter is None else \
        (shorter.written, shorter.start_share, shorter.start_limit)
    if written < _START_ALONE_MIN or not errors:
        return None
    if min(site.start for site in errors) >= share:
        return None
    cut = _share_end(data, share, limit)
    if cut is None:  # no line end near (or none in what a shorter text kept)
        return None
    start = data[:cut]
    return _completion_errors(tree_parser, grammar, start, tree_parser.parse(start))


def _share_end(data: bytes, share: int, limit: int) -> int | None:
    """The end of the line the offset ``share`` lies on, when it lies within ``2 * share`` and ``limit`` (a
    shorter text's kept part) and that line does not go on after a backslash (a C directive); else None."""
    cut = data.find(b"\n", share) + 1
    if cut <= 0 or cut > min(2 * share, limit) or data[max(0, cut - 3) : cut].rstrip(b"\r\n").endswith(b"\\"):
        return None
    return cut


def _error_out_of_reach(tree: Any, limit: int) -> bool:
    """Whether the completed tree holds an error that ends before ``limit`` with valid text after it: an
    ``ERROR`` inside a construct parsed without error around it, followed by more of it (not a comment)
    that starts before ``limit``, or at the top level, followed by a whole top-level node without error
    that ends before ``limit``; or a ``MISSING`` node between valid neighbours (``_missing_between_valid``).
    With every bracket closed, no other ending of the text reaches back there (the other completions differ
    only after the text; they need not be parsed)."""
    stack: list[tuple[Any, bool]] = []
    followed = False
    top = tree.root_node.children
    for index in range(len(top) - 1, -1, -1):
        child = top[index]
        if child.is_error:
            if followed and child.end_byte < limit:
                return True
        elif child.has_error:
            stack.append((child, _starts_valid(_next_code(top, index), limit)))
        elif child.is_named and not child.is_extra and child.end_byte < limit:
            followed = True
    while stack:
        node, valid_after = stack.pop()
        if node.start_byte >= limit:
            continue
        code_after = False
        children = node.children
        for index in range(len(children) - 1, -1, -1):
            child = children[index]
            if child.is_error and not _bare_ampersand(child, node):
                if code_after and child.end_byte < limit:
                    return True
            elif child.is_missing:
                if _missing_between_valid(children, index, valid_after, limit):
                    return True
            elif child.has_error:
                following = _next_code(children, index)
                stack.append((child, valid_after if following is None else _starts_valid(following, limit)))
            if not child.is_extra and child.start_byte < limit:
                code_after = True
    return False


def _missing_between_valid(children: list[Any], index: int, valid_after: bool, limit: int) -> bool:
    """Whether the ``MISSING`` node ``children[index]`` ends before ``limit`` with a node parsed without error
    just before it and one just after it (its next sibling's first leaf-ward node, or, when it is the last
    child, what follows its parent: ``valid_after``), the latter ending before ``limit`` too: the parser took
    up the text again after the token it had to invent (Java's ``x = "a`` lines: each string runs to the
    next line's quote, then a ``;`` is missing before the next line's rest)."""
    before = children[index - 1] if index else None
    following = _next_code(children, index)
    after = valid_after if following is None else _starts_valid(following, limit)
    return (children[index].end_byte < limit and before is not None and not before.has_error
            and not before.is_extra and after)


def _next_code(children: list[Any], index: int) -> Any:
    """The first sibling after ``children[index]`` that is not a comment, or None (read in place: a slice per
    call would copy the rest of a long list of children each time)."""
    for position in range(index + 1, len(children)):
        if not children[position].is_extra:
            return children[position]
    return None


def _starts_valid(node: Any, limit: int) -> bool:
    """Whether ``node`` (None: nothing) begins with a node parsed without error that ends before ``limit``:
    itself, or down its first children through nodes that are not errors themselves."""
    while node is not None and node.has_error and not (node.is_error or node.is_missing):
        node = _next_code(node.children, -1)
    return node is not None and not node.has_error and not node.is_extra and node.end_byte < limit


def _unreachable_before(grammar: Grammar, data: bytes) -> int:
    """Where an ending could start to change the text's reading: the start of its last line, or of a
    string, comment or heredoc the text may end inside, whichever comes first."""
    content_end = len(data.rstrip())
    limit = data.rfind(b"\n", 0, content_end) + 1
    for tail in grammar.tails:
        start = _open_token_start(tail, data)
        if start is not None:
            limit = min(limit, start)
    nested = _open_nested_comment(grammar, data)
    if nested is not None:
        limit = min(limit, nested[0])
    for pattern in (grammar.heredoc, grammar.raw_string, grammar.delimited):
        if pattern is not None:
            for found in pattern.finditer(data):
                limit = min(limit, found.start())
                break
    return limit


_TAIL_OPENERS = {BLOCK_COMMENT_END: b"/*", "-->": b"<!--", "\n=end\n": b"=begin"}
"""A tail that closes no quote → what opens the comment it closes."""
_UNBOUNDED_TAILS = frozenset({">"})
"""Tails whose opener may be anywhere in the text (HTML's ``>``: quoted values may hold ``<`` and ``>``)."""


def _open_token_start(tail: str, data: bytes) -> int | None:
    """Where the string, comment or tag ``tail`` closes starts if the text may end inside one; None if it
    cannot (no opener without a closer after it; for a quote, no unescaped quote)."""
    if tail in _UNBOUNDED_TAILS:
        return 0
    opener = _TAIL_OPENERS.get(tail)
    if opener is not None:  # the first opener after the last closer (a comment may hold `/*`: `'a/*.js'`)
        closing = tail.strip("\n").encode()
        last = data.rfind(closing)
        start = data.find(opener, last + len(closing) if last >= 0 else 0)
        if start < 0:  # `/*/`: the closer's `*` is the opener's
            start = data.rfind(opener)
            if start < 0 or data.find(closing, start + len(opener)) >= 0:
                return None
        return start
    quote = tail.encode()
    start = data.rfind(quote)
    while start > 0:
        escape = start
        while escape > 0 and data[escape - 1] == 92:  # the backslashes before it
            escape -= 1
        if (start - escape) % 2 == 0:
            break
        start = data.rfind(quote, 0, escape)
    return start if start >= 0 else None


def _line_broken_strings(grammar: Grammar, data: bytes) -> list[Site]:
    """Strings a line break ends, where the language says so (``Grammar.line_strings``); none without a quote
    (the scan for comments and strings costs a fifth of a C++ parse: 8 ms on 100 KB)."""
    if grammar.line_strings is None or (b'"' not in data and b"'" not in data):
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
    endings = _completions(tree_parser, GRAMMARS[name], data, tree_parser.parse(data))
    return list(dict.fromkeys(suffix.decode("utf-8", "surrogateescape") for suffix, _, _ in endings))


def _completions(tree_parser: Any, grammar: Grammar, data: bytes,
                 tree: Any) -> Iterator[tuple[bytes, bool, bool]]:
    """Endings that close what is open at the end of the text, each with whether a tail closed a string or
    comment and whether it is the plain one (only the closers), likeliest first: after an opener or an
    operator, a filler for the operand."""
    state = _open(tree, grammar)
    opened = state.entries
    close = plain_close = _closing(opened, grammar)
    # a statement cut before its `;`: `$t = $a['x']` closes as `;}`, `$a = f(\n  1,` as `);`
    statement_end = (grammar.terminator.encode(),) if grammar.terminator else ()
    operand = _operand_expected(grammar, data)  # an operator or opener ends the text
    if operand:
        yield FILLERS[0] + close, False, False
        if grammar.conditionals and statement_end:  # `int f(\n  a,  /* one */` closes as ` _);`
            yield FILLERS[0] + close + statement_end[0], False, False
    for filler in (b"", *FILLERS, *grammar.fillers, *statement_end):
        yield filler + close, False, not filler
    for pattern, filler in grammar.continued:
        if pattern.search(data, max(0, len(data) - 80)):
            yield filler + close, False, False
    parameter_endings = []
    if grammar.parameters is not None and opened and opened[-1][0] == ")":  # `A(\n  int a,`: ` _ _) {}}`
        parameter, body = grammar.parameters
        rest = b")" + body + _closing(opened[:-1], grammar)
        parameter_endings = [filler + rest for filler in ((parameter,) if operand else (b"", parameter))]
        for ending in parameter_endings:  # (`#[S]` then its parameter)
            yield ending, False, False
    tagged = _open_tag_closing(state, grammar, data) if grammar.open_tags else None
    if tagged is not None:  # `<button\n  type="b"` closes as `/>`, then what was open before it
        yield (FILLERS[0] if operand else b"") + tagged, False, False
    angled = closers(tree, grammar, angles=True) if grammar.angles else close
    if angled != close:
        for filler in (b"", b" _", b" : _"):
            yield filler + angled, False, False
        if grammar.call_body:  # `: data_{make_arg<\n  a,` closes as ` _>} {}} _;`: the constructor's body
            end = min((angled.find(closer) + 1 for closer in (b")", b"}") if closer in angled), default=0)
            if end:
                body = angled[:end] + grammar.call_body + angled[end:].replace(b"}", grammar.block_end)
                yield (FILLERS[0] if operand else b"") + body, False, False
        for ending in grammar.endings:
            yield angled + ending, False, False  # `T extends Array<\n  infer A,` waiting for `>` and `? :`
    if grammar.parameter_types:
        if b")" in close:
            yield _function_type(close), False, False  # `f: <T>(` …, `(ctx: {` …: a function type
            # `T extends (\n  k: infer I` …: the function type a conditional type extends, waiting for `? :`
            yield _function_type(close, _CONDITIONAL_TYPE), False, False
        if angled != close:
            last = angled.rfind(b">") + 1
            yield angled[:last] + b"(): _;" + angled[last:], False, False  # `m<T extends X<{` … : a method's
    for ending in (*grammar.endings, *statement_end):
        yield close + ending, False, False
    blocks = grammar.headers or grammar.type_bodies or grammar.clauses
    for ending in _block_endings(state, grammar) if blocks else ():
        yield ending, False, False
        if operand:
            yield FILLERS[0] + ending, False, False  # `if a ||` closes as ` _ {}}`
    if grammar.block_end and close:
        yield close.replace(b"}", grammar.block_end), False, False
        conditional = data.rfind(b"?") > max(data.rfind(b";"), data.rfind(b"{"))  # a `?` in the statement
        yield from _block_end_variants(grammar, opened, operand, conditional)
    arm = _arm_ending(grammar, data, opened)
    if arm:
        yield arm, False, False
    raw = _open_raw_string(grammar, data)
    delimited = _delimiter_closing(grammar, data)
    nested = _open_nested_comment(grammar, data)
    comment = (BLOCK_COMMENT_END * nested[1],) if nested is not None else ()
    for tail in dict.fromkeys((*grammar.tails, *raw, *delimited, *comment)):
        if tail not in (*raw, *delimited, *comment) and _open_token_start(tail, data) is None:
            continue  # the text cannot end inside what this tail closes
        if tail in grammar.interpolated:
            yield from _interpolation_ending(tree_parser, grammar, data, opened, tail)
        tail_tree = _parse_appended(tree_parser, data, tree, tail.encode(), closes_token=True)
        # a raw string open at the end is no token to a tree in error recovery: its opener tells
        if tail in raw or _closes_open_token(tail_tree, len(data), len(data) + len(tail.rstrip("\n"))):
            tail_state = _open(tail_tree, grammar)
            close = _closing(tail_state.entries, grammar)
            yield tail.encode() + close, True, False
            if tail in _TAIL_OPENERS:  # `a,` then a comment: `*/ _}`
                before = data[: _open_token_start(tail, data) or 0].rstrip(b" \t\r\n")
                if _expects_operand(before):
                    yield tail.encode() + FILLERS[0] + close, True, False
            if close != plain_close:  # the tree with the tail may hide a bracket in its error (`f(`, `%w{`)
                yield tail.encode() + plain_close, True, False
            # `range []struct {` … `{"a", \`` closes as `\`}}{} {}}`: the literal, then the header's block
            for ending in _block_endings(tail_state, grammar):
                yield tail.encode() + ending, True, False
            if statement_end and close:
                yield tail.encode() + statement_end[0] + close, True, False  # `$s = "…` closes as `";}`
            if grammar.block_end and close:
                yield tail.encode() + close.replace(b"}", grammar.block_end), True, False
            if grammar.parameter_types and b")" in close:
                yield tail.encode() + _function_type(close), True, False
    for ending in (plain_close, *parameter_endings) if grammar.expression_blocks else ():
        for variant in _expression_block_variants(ending, grammar):
            yield variant, False, False
    if grammar.heredoc is not None:
        openers = list(grammar.heredoc.finditer(data))
        if openers:
            # the last opener, then the latest ones no terminator follows (the last may be text in a body)
            unclosed = [opener for opener in _unclosed_heredocs(openers, data) if opener is not openers[-1]]
            for opener in (openers[-1], *reversed(unclosed[len(unclosed) - _UNCLOSED_HEREDOCS :])):
                yield from _heredoc_endings(tree_parser, grammar, data, tree, opened, opener, operand)


def _open_tag_closing(state: _Opened, grammar: Grammar, data: bytes) -> bytes | None:
    """The closers with the last JSX tag still waiting for its ``>`` closed as ``/>`` in its place (what it
    opened since, innermost first, then ``/>``, then what was open before it); None when no such tag: its
    ``<`` right before a name, what was open when it came still open below it, what is open above it opened
    after it."""
    if not state.tag_starts:
        return None
    depth, at = state.tag_starts[-1]
    entries = state.entries
    if depth > len(entries) or not _TAG_NAME_START.match(data, at + 1) \
            or (depth and entries[depth - 1][1] > at) or any(start < at for _, start in entries[depth:]):
        return None
    return _closing([*entries[:depth], (_SELF_CLOSING, at), *entries[depth:]], grammar)


_SELF_CLOSING = "/>"


def _expression_block_variants(ending: bytes, grammar: Grammar) -> Iterator[bytes]:
    """``ending`` with one of its first ``Grammar.expression_blocks`` ``}`` followed by the terminator, one
    variant each: the one that closes a block an expression holds (PHP's anonymous class)."""
    start = 0
    for _ in range(grammar.expression_blocks):
        index = ending.find(b"}", start)
        if index < 0:
            return
        yield ending[: index + 1] + grammar.terminator.encode() + ending[index + 1 :]
        start = index + 1


def _expects_operand(content: bytes) -> bool:
    """Whether code stripped of its trailing blanks ends expecting an operand (an operator or an opener:
    ``x = (``, ``recal,`` before a comment, ``f(<<-End),`` before a heredoc's body)."""
    return bool(content) and content[-1] in _OPERAND_EXPECTED


def _operand_expected(grammar: Grammar, data: bytes) -> bool:
    """Whether the text ends expecting an operand (``_expects_operand``); in C and C++
    (``Grammar.conditionals``), when comments end it, whether its code before them does, but for a ``{``,
    which opens a block (``f(\n  a,  /* one */``: a list's next item; a ``#define`` line ending in a comment
    is finished, though its ``*/`` ends in an operator's byte: the one ending ``_completes_as_written`` tries
    was then a filler that fails, and a header cut after such a line went through the preprocessor: elf.h,
    17 times the parse).  The other grammars' figures were measured on the text's own end, and are kept
    so."""
    content = data.rstrip()
    end = _code_end(content) if grammar.conditionals else len(content)
    if end == len(content):
        return _expects_operand(content)
    code = content[:end].rstrip()
    return _expects_operand(code) and not code.endswith(b"{")


def _code_end(content: bytes) -> int:
    """Where ``content`` (stripped) ends without the comments that end it: closed block comments, lines of
    ``//`` comments.  Walked back by offsets, each byte once (a copy per comment was quadratic in their
    number: 40,000 of them took 1.5 s)."""
    end = len(content)
    while True:
        if content.endswith(b"*/", 0, end):
            start = content.rfind(b"/*", 0, end - 2)
            if start < 0:
                return end
            end = _blank_before(content, start)
            continue
        line_start = content.rfind(b"\n", 0, end) + 1
        if not content[line_start:end].lstrip().startswith(b"//"):  # the line alone: each read once
            return end
        end = _blank_before(content, line_start)


def _blank_before(data: bytes, end: int) -> int:
    """``end`` moved back over the blanks (spaces, tabs, line breaks) before it."""
    while end and data[end - 1] in b" \t\r\n\f\v":
        end -= 1
    return end


_INTERPOLATIONS = (b"#{", b"${")


def _interpolation_ending(tree_parser: Any, grammar: Grammar, data: bytes, opened: list[tuple[str, int]],
                          tail: str) -> Iterator[tuple[bytes, bool, bool]]:
    """The ending that closes what opened since the string ``tail`` closes started (an interpolation and a
    block in it spanning lines: ``"< #{a.map{|e|`` closes as ``}}"``), then ``tail``, then what is open
    around the string; nothing unless an interpolation is open in the string."""
    start = _open_token_start(tail, data)
    if start is None:
        return
    heads = []
    if grammar.delimited is not None:  # literals the tree cannot see may be open in it (`/[#{ %W(`)
        nested = nesting_closing(data, start + 1, grammar.delimited, tail.encode())
        if nested is not None:
            heads.append(nested)
    inside = [entry for entry in opened if entry[1] > start]
    if inside and data.startswith(_INTERPOLATIONS, inside[0][1]):
        head = _closing(inside, grammar, terminated=False) + tail.encode()
        if head not in heads:
            heads.append(head)
    for head in heads:
        tree = tree_parser.parse(data + head)
        if _closes_open_token(tree, len(data), len(data) + len(head)):
            yield head + closers(tree, grammar), True, False


_HEREDOC_SCAN = 256
"""How many heredoc openers ``_unclosed_heredocs`` reads."""
_UNCLOSED_HEREDOCS = 2
"""How many of the latest openers no terminator follows are tried besides the last opener."""


def _unclosed_heredocs(openers: list[re.Match[bytes]], data: bytes) -> list[re.Match[bytes]]:
    """The heredoc openers (of the first ``_HEREDOC_SCAN``) no line of their terminator follows, in order;
    openers inside a closed heredoc's body are skipped.  An opener may be text in a string (``"<<'#{s}'"``)
    or in a body still open (``f(<<-End),`` then ``eval(<<'%s')`` in its body): each is kept, and the body
    of none is skipped."""
    found = []
    line_end = -1  # the end of the line of the openers whose bodies are read
    resume = 0  # where the next body starts: after that line, or after the last terminator
    for opener in openers[:_HEREDOC_SCAN]:
        at = opener.start()
        if line_end < at < resume:
            continue  # text in a closed body
        if at > line_end:  # the first opener on its line: its body starts on the next
            line_end = data.find(b"\n", opener.end())
            if line_end < 0:
                found.append(opener)
                break
            resume = line_end + 1
        terminator = _terminator_line(opener.group(2)).search(data, resume)
        if terminator is None:
            found.append(opener)
        else:
            resume = terminator.end()
    return found


@functools.lru_cache(maxsize=64)
def _terminator_line(name: bytes) -> re.Pattern[bytes]:
    """A line that is a heredoc's terminator, maybe after blanks (Ruby's and shell's ``<<-``), maybe followed
    by what ends the statement (PHP's ``EOT;``, ``EOT)``)."""
    return re.compile(rb"^[ \t]*" + re.escape(name) + rb"[ \t]*(?:[;,)][^\n]*)?$\n?", re.MULTILINE)


def _heredoc_endings(tree_parser: Any, grammar: Grammar, data: bytes, tree: Any,
                     opened: list[tuple[str, int]], opener: re.Match[bytes],
                     operand: bool) -> Iterator[tuple[bytes, bool, bool]]:
    """Endings that close the heredoc ``opener`` starts (``data`` parsed as ``tree``), then what is open
    around it; first what opened inside its body (an interpolation ``#{f((a +`` spanning lines closes as
    `` _))}`` before the terminator, after a filler when the text ends expecting an ``operand``); after the
    terminator, a filler when the opener's line ends expecting one (``f(<<-End),``: the next argument
    follows the body)."""
    terminator = b"\n" + opener.group(2) + b"\n"
    body = data.find(b"\n", opener.end()) + 1
    inside = _closing([entry for entry in opened if entry[1] >= body], grammar) if body else b""
    heads = [b""]
    if inside:
        heads += [inside, FILLERS[0] + inside] if operand else [inside]
    if body and grammar.delimited is not None and opener.group(1) != b"'":  # `#{f(%Q[` … in the body
        nested = nesting_closing(data, body, grammar.delimited)
        if nested is not None and nested not in heads:
            heads.append(nested)
    line = data[opener.end() : body].rstrip() if body else b""
    fillers = (b"", b";", FILLERS[0]) if _expects_operand(line) else (b"", b";")
    for head in heads:
        ended = _parse_appended(tree_parser, data, tree, head + terminator, closes_token=True)
        close = closers(ended, grammar)
        for filler in fillers:
            yield head + terminator + filler + close, True, False


def _block_end_variants(grammar: Grammar, opened: list[tuple[str, int]], operand: bool,
                        conditional: bool) -> Iterator[tuple[bytes, bool, bool]]:
    """The closers with each ``}`` as ``Grammar.block_end`` and no terminator before it (an enum's ``{ v = !(a
    ||`` closes as `` _)} _;``), after a filler when the text ends expecting an ``operand``; and with
    ``Grammar.call_body`` after their first ``)`` (a constructor's initializer list cut inside an
    initializer, ``: a_(b``, closes as ``) {}} _;``), also after `` : _`` when the text may end inside a
    ``conditional``'s branch, and after a next initializer when it ends expecting an operand (``: a_(m),``
    closes as `` _() {}} _;``)."""
    bare = _closing(opened, grammar, terminated=False)
    blocks = bare.replace(b"}", grammar.block_end)
    if operand:
        yield FILLERS[0] + blocks, False, False
        if grammar.call_body:  # `: a_(m),` then comment lines: the next initializer, the body, `};`s
            yield FILLERS[0] + b"()" + grammar.call_body + blocks, False, False
    yield blocks, False, False
    if grammar.call_body and b")" in bare:
        end = bare.index(b")") + 1
        body = bare[:end] + grammar.call_body + bare[end:].replace(b"}", grammar.block_end)
        yield body, False, False
        if conditional:  # `: m_(a != b\n  ? c` closes as ` : _) {}`
            yield FILLERS[2] + body, False, False


def _function_type(close: bytes, rest: bytes = b"") -> bytes:
    """The closers with `` => _`` (then ``rest``) after their first ``)``: the parameter list it closes a
    function type's."""
    end = close.index(b")") + 1
    return close[:end] + b" => _" + rest + close[end:]


_CONDITIONAL_TYPE = b" ? _ : _"
"""The rest of a conditional type after the type it extends."""


def _arm_ending(grammar: Grammar, data: bytes, opened: list[tuple[str, int]]) -> bytes:
    """The closers with ``Grammar.arms``' rest written where the innermost block of arms still open gets back
    control: after the matcher the text is cut inside (``)) => {}}``); empty if no block of arms is open."""
    if grammar.arms is None:
        return b""
    before, rest = grammar.arms
    for index in range(len(opened) - 2, -1, -1):
        at = opened[index][1]
        if before.search(data, max(0, at - _ARMS_REACH), at):
            return _closing(opened[index + 1 :], grammar) + rest + _closing(opened[: index + 1], grammar)
    return b""


_ARMS_REACH = 200
"""How far before a block's opener ``Grammar.arms``' pattern is looked for."""


def _delimiter_closing(grammar: Grammar, data: bytes) -> tuple[str, ...]:
    """What closes the text's last literals opened by ``Grammar.delimited`` that are still open (``mk << %{``
    … ``#{a.sub(%r[x]) {'c'}}``: the ``%{``, not the ``%r[`` closed inside it): its bracket's pair, once per
    bracket still open inside it (``%r(`` … ``(?:`` closes as ``))``), or the delimiter itself; the last
    literal's pair when the scans back from it (``_literal_depth``, all of them reading at most the text's
    length) find none open."""
    openers = list(grammar.delimited.finditer(data)) if grammar.delimited is not None else []
    if not openers:
        return ()
    budget = len(data)
    found: list[str] = []
    for opener in reversed(openers):
        delimiter = opener.group(1)
        closer = PAIRS.get(delimiter, delimiter)
        depth, scanned = _literal_depth(data, opener.end(), delimiter, closer, opener.end() + budget)
        budget -= scanned
        if depth:
            found.append((closer * depth).decode())
            if len(found) == _OPEN_LITERALS:
                break
        if depth is None:
            break
    if found:
        return tuple(found)
    delimiter = openers[-1].group(1)
    return (PAIRS.get(delimiter, delimiter).decode(),)


_OPEN_LITERALS = 2
"""How many literals still open ``_delimiter_closing`` gives closers for, innermost first (``eval %[`` …
``eval %[`` inside it: ``]``, then ``]]``)."""


@functools.cache
def _literal_marks(opener: bytes, closer: bytes) -> re.Pattern[bytes]:
    """What a literal's scan acts on: an escaped byte, the opening bracket (nested ones count) and the
    closer."""
    marks = {re.escape(opener), re.escape(closer)}
    return re.compile(b"|".join([rb"\\.", *sorted(marks)]), re.DOTALL)


def _literal_depth(data: bytes, start: int, opener: bytes, closer: bytes,
                   limit: int) -> tuple[int | None, int]:
    """How many closers the literal whose text starts at ``start`` still waits for at the end of the text
    (0: it closes; None: the text goes on past ``limit`` undecided), and how many bytes were read."""
    depth = 1
    for mark in _literal_marks(opener, closer).finditer(data, start, limit):
        token = mark.group()
        if token == closer:
            depth -= 1
            if not depth:
                return 0, mark.end() - start
        elif token == opener:
            depth += 1
    return (depth if limit >= len(data) else None), min(limit, len(data)) - start


_COMMENT_MARKS = re.compile(rb"/\*|\*/")


def _open_nested_comment(grammar: Grammar, data: bytes) -> tuple[int, int] | None:
    """Where the outermost block comment still open at the end starts and how many are open inside it
    (itself included), when the grammar's comments nest (``Grammar.nested_comments``); None otherwise.  A
    ``*/`` with none open counts for nothing (a string's ``"a*/b"``); a ``/*`` in a string counts, and the
    tail it gives then closes no comment that the text left open, so it is not used."""
    if not grammar.nested_comments:
        return None
    if b"*/" not in data:  # no closer (the common case, and a hostile one): every opener is open
        first = data.find(b"/*")
        return (first, data.count(b"/*")) if first >= 0 else None
    depth, start = 0, 0
    for mark in _COMMENT_MARKS.finditer(data):
        if mark.group() == b"/*":
            if not depth:
                start = mark.start()
            depth += 1
        elif depth:
            depth -= 1
    return (start, depth) if depth else None


def _open_raw_string(grammar: Grammar, data: bytes) -> tuple[str, ...]:
    """The closing quote of the text's last raw-string opener when the text does not close it."""
    last = _last_match(grammar.raw_string, data)
    if last is None:
        return ()
    quote = b'"' + last.group(1)
    return () if data.find(quote, last.end()) >= 0 else (quote.decode(),)


def _last_match(pattern: re.Pattern[bytes] | None, data: bytes) -> re.Match[bytes] | None:
    """The last of ``pattern``'s matches in ``data`` (an opener the text may end inside), or None."""
    last = None
    if pattern is not None:
        for last in pattern.finditer(data):  # noqa: B007 (the last opener is wanted)
            pass
    return last


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
    """The tree's ``ERROR`` and ``MISSING`` nodes, and what the grammar misreads (``Grammar.misread``; not
    looked for past ``_QUERY_BUDGET``: the tree has an error already)."""
    nodes = list(_error_nodes(tree)) if tree.root_node.has_error else []
    sites = [_site(node) for node in nodes]
    if grammar.misread and sum(node.child_count ** 2 for node in nodes) <= _QUERY_BUDGET:
        captures = _misread_query(grammar.name).captures(tree.root_node)
        sites += [Site(node.start_byte, node.start_byte, "}") for node in captures.get("brace", ())]
        sites += [Site(node.start_byte, node.end_byte, None) for node in captures.get("unexpected", ())]
    return sites


_QUERY_BUDGET = 1_000_000
"""The most ``children²`` summed over a tree's outermost ``ERROR`` nodes for which a query runs on it:
tree-sitter's query cursor reads an ``ERROR`` node's children in time quadratic in their number (20,000
children: 1.9 s)."""


@functools.cache
def _misread_query(name: str) -> Any:
    import tree_sitter

    return tree_sitter.QueryCursor(tree_sitter.Query(parser(name).language, GRAMMARS[name].misread))


def error_sites(tree: Any) -> Iterator[Site]:
    """Every ``ERROR`` and ``MISSING`` node, outermost only, visiting just the subtrees that hold one."""
    return map(_site, _error_nodes(tree))


def _error_nodes(tree: Any) -> Iterator[Any]:
    stack: list[tuple[Any, Any]] = [(tree.root_node, None)]
    while stack:
        node, parent = stack.pop()
        if node.is_missing or (node.is_error and not _bare_ampersand(node, parent)):
            yield node
        elif node.has_error:
            stack.extend((child, node) for child in reversed(node.children))


def _bare_ampersand(error: Any, parent: Any) -> bool:
    """Whether ``error`` (a child of ``parent``) is what tree-sitter-javascript 0.23 makes of an ``&`` that
    starts no character reference in JSX text or in a JSX attribute's string (``Terms & Conditions``,
    ``href="/a?b=1&c=2"``), which JSX allows: an ``ERROR`` from the ``&`` to the word's end, inside a text or
    string that closes around it."""
    if parent is None or parent.type not in _JSX_TEXTS:
        return False
    first = error.child(0)
    if first is None or first.type != "&":
        return False
    holder = parent.parent if parent.type == "string" else None
    return parent.type == "jsx_element" or (holder is not None and holder.type == "jsx_attribute")


_JSX_TEXTS = frozenset({"jsx_element", "string"})
"""The parents of an ``ERROR`` that ``_bare_ampersand`` reads: an element (its text), a string."""


def _site(node: Any) -> Site:
    return Site(node.start_byte, node.end_byte, node.type if node.is_missing else None)


def closers(tree: Any, grammar: Grammar, angles: bool = False) -> bytes:
    """The closing brackets and keywords for every block still open at the end, innermost first; with
    ``angles``, type arguments' ``<`` too (``_angle``)."""
    return _closing(open_at_end(tree, grammar, angles), grammar)


def _block_endings(opened: _Opened, grammar: Grammar) -> Iterator[bytes]:
    """Closers that write what a type's body or a header still waits for: the outermost type's body open
    followed by its literal (``Grammar.type_bodies``); the innermost header of clauses still open closed with
    each of its keyword's clauses, then a block (``Grammar.clauses``); a block after the closers opened since
    the last header still waiting for one (``Grammar.headers``), one ending per block its keyword may take,
    those closers also with the literal."""
    entries = opened.entries
    literal = next((index for index, (_, at) in enumerate(entries) if at in opened.type_bodies), None)
    if literal is not None:
        yield _closing(entries, grammar, literal)
    header = max((index for index, (_, at) in enumerate(entries) if at in opened.clause_headers),
                 default=None)
    if header is not None:
        inside, after = _closing(entries[header + 1 :], grammar), _closing(entries[:header], grammar)
        for clause in grammar.clauses[opened.clause_headers[entries[header][1]]]:
            yield inside + clause + b") {}" + after
    last = max((index for index, (entry, _) in enumerate(entries) if entry in grammar.headers), default=None)
    if last is None:
        return
    outer = _closing(entries[:last], grammar)
    inner = [_closing(entries[last + 1 :], grammar)]
    if literal is not None and literal > last:
        inner.append(_closing(entries[last + 1 :], grammar, literal - last - 1))
    for block in grammar.headers[entries[last][0]]:
        for closed in inner:
            yield closed + block + outer


def _closing(opened: list[tuple[str, int]], grammar: Grammar, literal: int | None = None,
             terminated: bool = True) -> bytes:
    """The text closing what is open (``open_at_end``'s entries, outermost first), innermost first; the entry
    at index ``literal`` followed by the grammar's ``type_literal``; unless not ``terminated``, the grammar's
    terminator before a ``}`` that follows a ``)``, ``]``, ``>`` or a conditional's `` : _``."""
    entries = [grammar.followers[entry][1] if entry in grammar.followers
               else entry + grammar.type_literal.decode() if index == literal else entry
               for index, (entry, _) in reversed(list(enumerate(opened)))
               if entry != _PATTERN and entry not in grammar.headers]
    if not entries:
        return b""
    if grammar.terminator and terminated:
        entries = [grammar.terminator + entry
                   if entry == "}" and index and entries[index - 1] in _ENDS_STATEMENT else entry
                   for index, entry in enumerate(entries)]
    separator = "\n" if grammar.keywords else ""
    return (separator + separator.join(entries)).encode()


_ENDS_STATEMENT = frozenset({")", "]", ">", " : _"})
"""Closers after which a ``}`` ends a statement first (``f(a,`` closes as ``);}``, C++'s ``using T = A<`` as
``>;}``, PHP's ``$v = $a`` then ``? f()`` as `` : _;}``)."""


def open_at_end(tree: Any, grammar: Grammar, angles: bool = False) -> list[tuple[str, int]]:
    """What is still open at the end, outermost first: each closer (or follower's keyword) with the offset
    of what opened it."""
    return _open(tree, grammar, angles).entries


def _open(tree: Any, grammar: Grammar, angles: bool = False) -> _Opened:
    """``open_at_end`` with the types' bodies.  One walk of a tree cursor (which moves without building a
    node's list of children), carrying each leaf's parent and previous sibling (a node's ``parent`` and
    ``prev_sibling`` each scan from the root)."""
    opened = _Opened()
    tracked = _tracked(grammar.name) | (_ANGLES if angles else frozenset())
    skip_valid = not angles and grammar.name not in _UNBALANCED_VALID
    skip_closed = grammar.name == "html"
    plain = _plain_tokens(grammar.name)
    cursor = tree.walk()
    first_child, next_sibling, up = cursor.goto_first_child, cursor.goto_next_sibling, cursor.goto_parent
    parents: list[Any] = [None]  # the nodes the cursor is inside, innermost last (None: above the root)
    previous = None
    while True:
        node = cursor.node
        if node.child_count:
            if skip_valid and not node.has_error and node.type not in _OPENING_TAGS:
                pass  # parsed without error: every bracket it opens it closes
            elif skip_closed and node.type == "element" and not node.has_error and _closes_itself(node):
                pass  # its end tag closes all it opened (its own `</p>`-less elements too)
            elif first_child():
                parents.append(node)
                previous = None
                continue
        else:
            kind = node.type
            if kind in tracked and not node.is_missing:
                closer = plain.openers.get(kind)
                if closer is not None:
                    opened.push(closer, node.start_byte)
                elif kind in plain.closers:
                    opened.close(kind)
                elif kind in plain.keywords:
                    if parents[-1] is None or parents[-1].type not in grammar.modifier_parents:
                        opened.push(plain.keywords[kind], node.start_byte)
                elif kind in plain.quotes:
                    if opened.top() == kind:
                        opened.pop()
                    else:
                        opened.push(kind, node.start_byte)
                elif kind == plain.pattern_end:
                    if opened.top() == _PATTERN:
                        opened.pop()  # a shell case pattern's `a)` closes no bracket
                    else:
                        opened.close(kind)
                elif not (angles and _angle(opened, node, parents[-1], previous)):
                    _track(opened, node, parents[-1], previous, grammar)
        while not next_sibling():
            if not up():
                return opened
            node = parents.pop()
        previous = node


def _closes_itself(element: Any) -> bool:
    """Whether an HTML element parsed without error ends in the end tag of its own start tag: the walk of
    ``_open`` would push its tag, then pop down to it at that end tag, leaving the stack as it was."""
    first, last = element.child(0), element.child(element.child_count - 1)
    if first is None or last is None or first.type != "start_tag" or last.type != "end_tag":
        return False
    opening, closing = first.child(1), last.child(1)  # a tag's name follows its `<` or `</`
    if opening is not None and closing is not None and opening.type == closing.type == "tag_name" \
            and opening.text == closing.text:
        return True
    return _end_tag(first) == _end_tag(last)


_ANGLES = frozenset({"<", *_ANGLES_CLOSED})
_TAG_MARKS = frozenset({"<", ">", "/>"})
"""The leaves in an error that open or end a JSX tag (``Grammar.open_tags``)."""
_TAG_NAME_START = re.compile(rb"[A-Za-z_$]")
_UNBALANCED_VALID = frozenset({"html", "ruby", "shell"})
"""Grammars whose nodes parsed without error may leave a tracked token open, so that ``open_at_end`` walks
them too: HTML's elements whose end tag may be left out (``<p>``, ``<li>``), and the keyword blocks of Ruby
and shell, where a keyword opens a block only outside a modifier (``x = 1 if y``).  In the other grammars a
node without error closes every bracket it opens, and the walk skips it (not an opening tag, which opens
its element; not when angle brackets are tracked, since any ``>`` leaf may close one): it visits only the
nodes on the way to the errors (100 KB of code ending in open brackets: 12,000 leaves fewer)."""


@dataclass(frozen=True)
class _PlainTokens:
    """The tracked leaf types ``_open`` acts on itself, without ``_track``'s chain of tests: those whose
    action there depends on nothing but their type (and, for a keyword, its parent's), or on the top of the
    stack alone (a quote, a pattern's ``)``).  ``_track`` keeps the rest: a follower's keyword, a header's
    ``{``, the ``(`` of a header of clauses, a tag's ``>``."""

    openers: dict[str, str]
    """A bracket that always opens → the closer pushed."""
    closers: frozenset[str]
    """A bracket or keyword that always closes down to itself."""
    keywords: dict[str, str]
    """A keyword that opens a block unless under one of ``Grammar.modifier_parents`` → its closer."""
    quotes: frozenset[str]
    """A quote that closes the one on top, or opens one (``Grammar.quotes``)."""
    pattern_end: str
    """``)`` where patterns may be open (``Grammar.pattern_starts``): it ends the one on top, or closes down
    to its ``(``; empty otherwise."""


@functools.cache
def _plain_tokens(name: str) -> _PlainTokens:
    """The named grammar's ``_PlainTokens``: the types no earlier case of ``_track`` (or ``_angle``) takes."""
    grammar = GRAMMARS[name]
    special = {">", *_ANGLES, *grammar.headers, *grammar.followers, *grammar.pattern_starts,
               *(kind for entry in grammar.followers.values() for kind in entry[0])}
    if grammar.headers or grammar.type_bodies:
        special.add("{")
    if grammar.clauses:
        special.add("(")  # `_track` notes a header of clauses it opens
    taken = {*special, *grammar.quotes, *grammar.keywords}
    pattern_end = ")" if grammar.pattern_starts and ")" not in taken else ""
    if grammar.pattern_starts:
        special.add(")")
    quotes = frozenset(kind for kind in grammar.quotes if kind not in special)
    special |= grammar.quotes
    closing = {*_CLOSERS, *grammar.keywords.values()}
    closers = frozenset(kind for kind in closing if kind not in special and kind not in _OPENERS)
    return _PlainTokens(
        {kind: closer for kind, closer in _OPENERS.items() if kind not in special},
        closers,
        {kind: closer for kind, closer in grammar.keywords.items()
         if kind not in special and kind not in _OPENERS and kind not in closing},
        quotes, pattern_end)


@functools.cache
def _tracked(name: str) -> frozenset[str]:
    """The leaf types ``_track`` acts on for the named grammar."""
    grammar = GRAMMARS[name]
    followers = {kind for entry in grammar.followers.values() for kind in entry[0]}
    return frozenset({">", *_OPENERS, *_CLOSERS, *grammar.keywords, *grammar.keywords.values(),
                      *grammar.quotes, *grammar.followers, *followers, *grammar.pattern_starts,
                      *grammar.headers, *(_TAG_MARKS if grammar.open_tags else ())})


class _Opened:
    """A stack of closers with a count of each, so that a closer finds its opener in constant time."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, int]] = []
        self._counts: dict[str, int] = {}
        self.type_bodies: set[int] = set()
        """Where each ``{`` opening a type's body is (``Grammar.type_bodies``)."""
        self.clause_headers: dict[int, str] = {}
        """Where each ``(`` opening a header of clauses is, and its keyword (``Grammar.clauses``)."""
        self.tag_starts: list[tuple[int, int]] = []
        """Each ``<`` in an error that may open a tag still waiting for its ``>`` (``Grammar.open_tags``): the
        stack's depth when it came, and where it is."""

    def push(self, entry: str, at: int) -> None:
        self.entries.append((entry, at))
        self._counts[entry] = self._counts.get(entry, 0) + 1

    def pop(self) -> str:
        entry = self.entries.pop()[0]
        self._counts[entry] -= 1
        return entry

    def top(self) -> str | None:
        return self.entries[-1][0] if self.entries else None

    def __contains__(self, entry: str) -> bool:
        return self._counts.get(entry, 0) > 0

    def close(self, entry: str) -> None:
        """Pop down to and including ``entry``, if it is open (one call: the walk closes a bracket a leaf)."""
        counts = self._counts
        if counts.get(entry, 0) > 0:
            entries = self.entries
            while True:
                popped = entries.pop()[0]
                counts[popped] -= 1
                if popped == entry:
                    return


def _angle(opened: _Opened, node: Any, parent: Any, previous: Any) -> bool:
    """Track ``node`` if it is an angle bracket of type arguments: a ``<`` of ``type_arguments`` or
    ``type_parameters``, or one in an error right after a name (``Fn<``); a ``>`` closing one."""
    kind = node.type
    if kind == "<":
        if parent is not None and (parent.type in _TYPE_LISTS or (
                parent.is_error and previous is not None and previous.end_byte == node.start_byte)):
            opened.push(">", node.start_byte)
            return True
    elif kind in _ANGLES_CLOSED and opened.top() == ">":
        for _ in kind:
            if opened.top() == ">":
                opened.pop()
        return True
    return False


def _track(opened: _Opened, node: Any, parent: Any, previous: Any, grammar: Grammar) -> None:
    kind = node.type
    top = opened.top()
    if kind in grammar.headers:
        opened.push(kind, node.start_byte)  # a header: its block still to come
    elif kind == "{" and grammar.type_bodies and _after(
            parent, previous, grammar.type_bodies):
        opened.type_bodies.add(node.start_byte)
        opened.push("}", node.start_byte)
    elif kind == "{" and top in grammar.headers and not _after(parent, previous, grammar.literals):
        opened.pop()  # the header's block opens
        opened.push("}", node.start_byte)
    elif grammar.open_tags and parent is not None and parent.is_error and kind in _TAG_MARKS:
        if kind == "<":
            opened.tag_starts.append((len(opened.entries), node.start_byte))
        elif opened.tag_starts:
            opened.tag_starts.pop()  # a `>` or `/>` ends it
    elif kind == ">" and parent is not None and parent.type in _TAGS:
        tag = _end_tag(parent)
        if parent.type in _OPENING_TAGS:
            if tag not in _VOID_ELEMENTS:
                opened.push(tag, parent.start_byte)
        else:
            opened.close(tag)
    elif kind in grammar.pattern_starts and (kind != "in" or (top is not None
                                                              and top == grammar.keywords.get("case"))):
        opened.push(_PATTERN, node.start_byte)
    elif kind == ")" and top == _PATTERN:
        opened.pop()  # a shell case pattern's `a)` closes no bracket
    elif kind in grammar.followers:
        if kind in grammar.keywords:
            opened.push(grammar.keywords[kind], node.start_byte)  # shell's `if` waits for `then`, then `fi`
        opened.push(kind, node.start_byte)  # a ``try`` or ``do`` whose block has not been followed yet
    elif (top is not None and top in grammar.followers and kind in grammar.followers[top][0]
          and not (kind in _OPENERS and previous is not None and previous.type == top)):
        # (a `{` right after its keyword opens a block in the header: Rust's `if {` … `} {`)
        opened.pop()
        if kind in grammar.keywords:
            opened.push(grammar.keywords[kind], node.start_byte)  # `do` after `while …` opens the body
        elif kind in _OPENERS:
            opened.push(_OPENERS[kind], node.start_byte)  # Rust's `{` after `if …` opens the block
    elif kind in grammar.quotes:
        if top == kind:
            opened.pop()
        else:
            opened.push(kind, node.start_byte)
    elif kind in _OPENERS:
        if previous is not None and previous.type in grammar.clauses and kind == "(":
            opened.clause_headers[node.start_byte] = previous.type
        opened.push(_OPENERS[kind], node.start_byte)
    elif kind in _CLOSERS or kind in grammar.keywords.values():
        opened.close(kind)
    elif kind in grammar.keywords and not (parent is not None and parent.type in grammar.modifier_parents):
        opened.push(grammar.keywords[kind], node.start_byte)


def _after(parent: Any, previous: Any, kinds: frozenset[str]) -> bool:
    """Whether a token's parent or the node before it is one of ``kinds``."""
    return (parent is not None and parent.type in kinds) or (previous is not None and previous.type in kinds)


def _end_tag(tag: Any) -> str:
    """``</name>`` for an HTML or JSX tag (``</>`` for a JSX fragment); HTML's names in lower case (JSX's are
    case-sensitive: ``<Link>`` closes with ``</Link>``)."""
    name = tag.child_by_field_name("name")
    if name is None:
        name = next((child for child in tag.children if child.type == "tag_name"), None)
    text = name.text.decode("utf-8", "replace") if name is not None else ""
    return f"</{text.lower() if name is not None and name.type == 'tag_name' else text}>"


def _stand_in(data: bytes, grammar: Grammar) -> bytes:
    for pattern, fill in grammar.stand_ins:
        data = pattern.sub(functools.partial(_filled, fill), data)
    return data


def _filled(fill: StandIn, found: re.Match[bytes]) -> bytes:
    """The match with the group that matched (or all of it, ``Grammar.stand_ins``) replaced byte for byte by
    ``fill`` (or what it gives)."""
    if callable(fill):
        return fill(found)
    group = found.lastindex or 0
    text, start, end = found.group(), found.start(group) - found.start(), found.end(group) - found.start()
    return text[:start] + fill * (end - start) + text[end:]


def _introduced(tree_parser: Any, grammar: Grammar, old: bytes, data: bytes,
                partial: bool) -> tuple[Callable[[list[Site]], list[Site]], list[Site]]:
    """What keeps, of sites in ``data`` (or in a text of its lines), those on no line where ``old`` had an
    error (lines mapped across the edit), and those errors of ``old`` outside the edit, at their offsets in
    ``data``."""
    status, previous, _ = _analyse(tree_parser, grammar, old, partial)
    if status != "invalid":
        return _keep, []
    prefix, suffix = _common_ends(old, data)
    shift = len(data) - len(old)
    line_of = _lines_of(data)
    lines = set()
    mapped = []
    for site in previous:
        if site.start < prefix:  # before the edit (an error spanning it starts on the same line)
            lines.add(line_of(site.start - 1))
            mapped.append(site)
        elif site.start >= len(old) - suffix:
            lines.add(line_of(site.start + shift - 1))
            mapped.append(Site(site.start + shift, site.end + shift, site.missing))
    return (lambda sites: [site for site in sites if line_of(site.start - 1) not in lines]), mapped


_NEWLINE = re.compile(rb"\n")


def _common_ends(old: bytes, new: bytes) -> tuple[int, int]:
    """The lengths of the longest common prefix and of the longest common suffix after it (slices compared
    by halves: a bisection of whole-slice comparisons, not a loop over bytes)."""
    limit = min(len(old), len(new))
    prefix = _longest(lambda size: old[:size] == new[:size], limit)
    suffix = _longest(lambda size: old[len(old) - size :] == new[len(new) - size :], limit - prefix)
    return prefix, suffix


def _longest(agrees: Callable[[int], bool], limit: int) -> int:
    """The largest size up to ``limit`` for which ``agrees`` holds (it holds for every smaller size)."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if agrees(middle):
            low = middle
        else:
            high = middle - 1
    return low


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

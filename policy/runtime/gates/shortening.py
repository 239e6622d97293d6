"""A long text's end read shorter: the runs the gate's completions need not read whole.

A partial text with an error is analysed as a shorter text when it ends in
a long run whose parts all read alike: one short unit repeated (20,000
``(``, lines of ``f(x``), or, in C and C++, lines that are only comments
after the code.  The run is cut in its middle or at its end, and what the
analysis finds after the cut maps back to the whole text by the bytes cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from policy.runtime.gates.preprocessor import MACRO_SPAN

_REPEAT_UNIT = 16
"""The longest unit whose repeats at the end of a text ``shortened`` reads fewer of."""
REPEATS_KEPT = 256
"""How many of those repeats it keeps at least: tree-sitter's error recovery reads a short run otherwise than
a long one (the gate blocks shell's ``x=$f(1, 1, …`` with up to 150 repeats of ``1, ``, not with 200); and
how many comment lines it keeps at the end."""
_REPEATS_CYCLE = 60
"""It cuts a multiple of this many repeats (the least common multiple of 1 to 6), so that the count left is
the whole count modulo any cycle up to 6 repeats long (a quote that opens and closes in turn: 2)."""
REPEATS_CUT = 4096
"""The fewest bytes it cuts: a shorter run costs little to read."""
START_SHARE = 32
"""The gate checks a long text's start on its own first: up to the end of the line its first ``1/START_SHARE``
ends on (``syntax_tree._broken_start``)."""


@dataclass(frozen=True)
class Shortened:
    """A text read shorter."""

    text: bytes
    kept: int
    """What lies at or after this offset in ``text`` lies ``written - len(text)`` bytes later in the whole."""
    written: int
    """The whole text's length."""
    start_share: int
    """Where the share of the text whose start is checked on its own ends."""
    start_limit: int
    """How far that start may reach in ``text``: beyond, it holds what was cut, and it is not checked."""


def shortened(data: bytes, comment_lines: bool) -> Shortened | None:
    """``data`` shortened (``_repeats_cut``, or with ``comment_lines``, ``_comment_lines_cut``); None when
    neither cuts ``REPEATS_CUT`` bytes or more."""
    cut = _repeats_cut(data)
    if cut is None and comment_lines:
        cut = _comment_lines_cut(data)
    return cut


def _repeats_cut(data: bytes) -> Shortened | None:
    """``data`` with the run of one unit (up to ``_REPEAT_UNIT`` bytes) repeated at its end cut by a multiple
    of ``_REPEATS_CYCLE`` repeats to ``REPEATS_KEPT`` or up to 59 more; the start of its last repeat kept
    maps to the whole's last one, and the start checked on its own is the shorter text's.

    Twenty thousand ``(``, lines of ``f(x`` or of an open string, a long line of ``1, ``: each repeat reads as
    the one before it does, opening or leaving open what that one did (what a grammar reads in a unit
    depends on what is open before it, and the repeats before the cut open the same), so the shortened text
    is a cut-off prefix, or broken, where the whole is.  Its completions close 260 repeats, not 20,000:
    tree-sitter reads a deep nest in more than linear time, and a completion doubles it.  One slice
    comparison per step of a bisection finds each run: O(n log n) bytes compared, in C."""
    size = len(data)
    best_cut, best_unit = 0, 0
    for unit in range(1, _REPEAT_UNIT + 1):
        if unit * (REPEATS_KEPT + 1) > size or (best_unit and unit % best_unit == 0) \
                or data[size - 2 * unit : size - unit] != data[size - unit :]:
            continue  # (a multiple of a period found has the same run)
        low, high = 2 * unit, size  # the longest tail with period ``unit``
        while low < high:
            middle = (low + high + 1) // 2
            if data[size - middle : size - unit] == data[size - middle + unit :]:
                low = middle
            else:
                high = middle - 1
        cut = (low // unit - REPEATS_KEPT) // _REPEATS_CYCLE * _REPEATS_CYCLE * unit
        if cut > best_cut:
            best_cut, best_unit = cut, unit
    if best_cut < REPEATS_CUT:
        return None
    short = size - best_cut
    return Shortened(data[:short], short - best_unit, size, short // START_SHARE, short)


_PLAIN = rb"\\\"';{}()\[\]?\n"
"""What a comment in a line ``_comment_lines_cut`` cuts never holds: a backslash, a quote, none of
``;{}()[]?`` (which the gate's and the preprocessor's scans read even inside comments: the last ``;`` or
brace before a macro call left open, a ``?`` before the end; or start from: a bracket), no line break."""
_COMMENT_LINES_REVERSED = re.compile(
    rb"(?:/\*[^*/" + _PLAIN + rb"]*+\*/\n|[^/*" + _PLAIN + rb"]*+//[ \t]*+\n"  # the common lines first
    rb"|[ \t\r]*+(?:/\*[^*/" + _PLAIN + rb"]*+(?:(?:\*(?!/)|/(?!\*))[^*/" + _PLAIN + rb"]*+)*+\*/[ \t]*+)?\n"
    rb"|(?:[^/*" + _PLAIN + rb"]++|/(?!/[ \t]*+\n))*+//[ \t]*+\n)*+")
"""The lines at the end of a text, read backwards (the text reversed), that are blank, one block comment
(``/* … */`` holding no other ``/*`` or ``*/``) or one ``//`` comment (holding no ``*``), each holding
nothing of ``_PLAIN``: each up to and with the line break before it.  Each class runs possessively to a byte
that may end it: one pass in C (1 ms on 400 KB)."""


def _comment_lines_cut(data: bytes) -> Shortened | None:
    """``data`` with the comment lines (``_COMMENT_LINES_REVERSED``) that end it cut in their middle: the
    last ``REPEATS_KEPT`` kept, and the first ones, up to ``MACRO_SPAN`` bytes after the code with the last
    (the preprocessor's scans from the code read that far, and tell a text that ends within their reach from
    one that goes on), and those in the whole's start checked on its own when that holds up to
    ``REPEATS_KEPT`` more.

    C and C++ code cut off, then 20,000 different comment lines (``int f(\\n  a,`` then ``/* note N */``
    lines): a comment is an extra that tree-sitter reads alike between any two tokens, and comment lines as
    ``_COMMENT_LINES_REVERSED`` reads them change nothing the gate's scans read (its strings, tails and the
    preprocessor's passes), so the shorter text is a cut-off prefix, or broken, where the whole is.  Without
    the cut each ending the gate tries (``f(\\n  a,`` … `` _);``) is a parse of the whole run, since the
    comments move into the list the ending closes, and the preprocessor's passes read it all.  The whole's
    start is checked on its own where it lies in what is kept; a start holding more comment lines than that
    reads as the shorter text does, and is not checked apart."""
    found = _COMMENT_LINES_REVERSED.match(data[::-1])  # (it matches, maybe nothing)
    run = found.end() if found is not None else 0
    code_end = len(data) - run  # the line break that ends the code's last line
    continued = data[max(0, code_end - 2) : code_end].rstrip(b"\r").endswith(b"\\")
    if run < REPEATS_CUT or code_end <= 0 or continued:
        return None  # (a backslash would continue the code's line into the first comment line)
    last = len(data)
    for _ in range(REPEATS_KEPT):
        last = data.rfind(b"\n", code_end + 1, last)
        if last < 0:
            return None
    head = data.find(b"\n", max(code_end + 1, code_end + MACRO_SPAN + 1 - (len(data) - last)))
    share = len(data) // START_SHARE
    start = data.find(b"\n", share) + 1  # the whole's start checked on its own, when it has one
    if head < start - 1 and data.count(b"\n", head, start) <= REPEATS_KEPT:
        head = start - 1
    if last - head < REPEATS_CUT:
        return None
    return Shortened(data[:head] + data[last:], head, len(data), share, head + 1)

"""The tree-sitter grammars a gate can name, and what each needs to tell a cut-off text from a broken one.

Grammars ship compiled inside their own wheels (``tree-sitter-javascript`` …);
nothing is downloaded or built at run time.  A grammar's module is imported
the first time a gate of that language checks a text, so a policy that
gates only Python never imports ``tree_sitter``.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from policy.model.validators import SYNTAX_TREE_LANGUAGES
from policy.runtime.gates.preprocessor import ALL_CAPS
from policy.runtime.gates.witnessed import Witnessed

BLOCK_COMMENT_END = "*/"
_IMPORT_TYPE = re.compile(rb"\bimport\(\s*(?:\"[^\"\n]*\"|'[^'\n]*')\s*\)")
"""``import("./types").T``: a TypeScript import type, which tree-sitter-typescript 0.23 does not know."""


StandIn = bytes | Callable[[re.Match[bytes]], bytes]


@dataclass(frozen=True)
class Grammar:
    """One language: where its compiled grammar lives and how its open constructs close."""

    name: str
    module: str
    """The wheel's module (``tree_sitter_javascript``)."""
    function: str
    """The module's function returning the language pointer."""
    tails: tuple[str, ...] = ()
    """Text that may close a string or comment the text ends inside, tried in order."""
    keywords: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """A token that opens a block → the one closing it (Ruby's ``def`` … ``end``, shell's ``if`` … ``fi``)."""
    interpolated: frozenset[str] = frozenset({'"', "`"})
    """Tails closing a literal that may hold code (``"#{…}"``, Ruby's ``/#{…}/``): an interpolation open in it
    closes before the tail."""
    quotes: frozenset[str] = frozenset()
    """String delimiters that are tokens of their own (shell's ``"``): closed like brackets, innermost first
    (``"$(a "b" \\`` closes as ``)"``)."""
    modifier_parents: frozenset[str] = frozenset()
    """Node types under which a keyword does not open a block (``x = 1 if y``)."""
    followers: Mapping[str, tuple[frozenset[str], str]] = field(default_factory=lambda: MappingProxyType({}))
    """A keyword whose block another keyword must follow → those keywords and what a completion writes when
    none has come (``try`` → ``catch``/``finally``: `` finally {}``; ``do`` → ``while``: `` while (0);``)."""
    pattern_starts: frozenset[str] = frozenset()
    """Tokens after which a ``)`` ends a pattern and closes no bracket: shell's ``;;`` and a ``case``'s ``in``
    (``case $1 in *.a)``)."""
    fillers: tuple[bytes, ...] = ()
    """More text tried after an unfinished statement (shell's ``if x`` waiting for its ``then``)."""
    continued: tuple[tuple[re.Pattern[bytes], bytes], ...] = ()
    """Text tried after an unfinished statement whose end matches the pattern (shell's ``a | \\`` in a case
    pattern list waiting for ``_) ;;``)."""
    endings: tuple[bytes, ...] = ()
    """Text tried after the closers (JavaScript's ``({ a, b = {} })`` waiting for its ``=> body``)."""
    heredoc: re.Pattern[bytes] | None = None
    """An opener whose group 2 is the terminator a heredoc still open at the end waits for."""
    raw_string: re.Pattern[bytes] | None = None
    """A raw string's opener whose group 1 its closing quote repeats: the last one gives one more tail (Rust's
    ``r###"`` closes with ``"###``)."""
    nested_comments: bool = False
    """Block comments nest (Rust): one still open at the end may need a ``*/`` for each ``/*`` open inside it
    (also when a comment inside it was closed), one more tail."""
    delimited: re.Pattern[bytes] | None = None
    """An opener of a literal that its delimiter (group 1) closes, or the bracket pairing it (Ruby's ``%{``,
    ``%w(``): the last one gives one more tail, tried as the ``tails`` are."""
    stand_ins: tuple[tuple[re.Pattern[bytes] | Witnessed, StandIn], ...] = ()
    """Valid constructs the grammar cannot parse and the byte each byte of the group that matched (the last,
    ``Match.lastindex``: a pattern of alternatives has one each; the whole match when it has none) becomes: an
    identifier or separator of the same length; or a function giving the match's replacement, as long as the
    match."""
    arms: tuple[re.Pattern[bytes], bytes] | None = None
    """What comes right before the opener of a block of arms ``matcher => body`` (Rust's ``macro_rules! m {``,
    ``match x {``), and the arm's rest: a text cut inside a matcher closes it, writes the rest, then closes
    the block (``($x:expr, $(`` closes as ``)*) => {}}``)."""
    terminator: str = ""
    """What ends a statement before a closing ``}`` (``f(a,`` closes as ``f(a,);}``)."""
    line_strings: re.Pattern[bytes] | None = None
    """The language's comments and strings, a string ending at a line break: a string a line break ends is
    broken whatever follows (CSS), though the grammar reads it on to the end of the text."""
    lenient_strings: bool = False
    """The grammar reads a string a line break ends on to a later quote without an error (CSS): the
    ``line_strings`` are looked for on the valid path too."""
    call_line_end: re.Pattern[bytes] | None = None
    """A token that, ending a line inside a function's arguments, means the function's ``)`` is missing
    whatever follows (CSS's ``;``: ``color: var(--x;`` then a line break), though the grammar reads the
    arguments on to the end of the text."""
    conditionals: bool = False
    """C's preprocessor conditionals: one branch of each is parsed (``policy.runtime.gates.preprocessor``)."""
    foreign: re.Pattern[bytes] | None = None
    """A line of another language's code (C++ in a C header): a conditional branch holding one is a branch a
    compiler of this language skips (``#ifdef __cplusplus``, ``#if U_SHOW_CPLUSPLUS_API``)."""
    block_end: bytes = b""
    """What each ``}`` of the closers becomes in one more try: C's ``} _;`` ends a struct, union or enum body
    that waits for a member's or a typedef's name and its ``;`` (and is an empty statement elsewhere)."""
    call_body: bytes = b""
    """What may follow the innermost ``)`` among the closers: C++'s constructor body `` {}``, after an
    initializer list cut inside an initializer (``: a_(b``)."""
    statement_lines: bool = False
    """A last line that ends with the terminator (outside a ``for (`` header) is finished: an error on it
    stands, though the grammar reads it on to the end of the text (C's ``} __attribute__((packed);``)."""
    reserved: frozenset[bytes] = frozenset()
    """The language's keywords, where a name the grammar cannot place may be an unknown macro's (C): a write
    whose error goes away, with none new, once one name on the error's line (with its parenthesized
    arguments) is blanked is not blocked (``syntax_tree._macro_read``); a keyword is no such name."""
    misread: str = ""
    """A tree-sitter query for what the grammar accepts though no valid text holds it: a capture ``@brace``
    is a ``}`` missing before the node, ``@unexpected`` an unexpected node (checked once a text has an error,
    so the valid path stays one parse)."""
    parameter_types: bool = False
    """The innermost parameter list among the closers may be a function type's, waiting for ``=> T``
    (``f: <T>(`` …, ``(ctx: {`` …; also then for ``? T : U``, the type a conditional type extends: ``T extends
    (\n  k: infer I``), and type parameters last among the angle brackets a method's, waiting
    for ``(): T;`` (TypeScript)."""
    angles: bool = False
    """``<`` … ``>`` of type arguments are brackets too: closed in a second try, since a ``<`` in a broken
    region may be a comparison (``Fn<{`` closes as ``}>``)."""

    headers: Mapping[str, tuple[bytes, ...]] = field(default_factory=lambda: MappingProxyType({}))
    """A keyword whose header waits for a block (Go's ``if``) → the blocks a completion tries, each written
    after the brackets opened since the last such keyword whose block has not opened, before the rest (``if
    err := f(T{`` closes as ``}); _ {}}``)."""
    clauses: Mapping[str, tuple[bytes, ...]] = field(default_factory=lambda: MappingProxyType({}))
    """A keyword whose parenthesized header holds clauses and is followed by a statement (JavaScript's ``for
    (``) → what a header cut inside its parentheses may still lack before its ``)``, each tried followed by
    the ``)`` and a block (``for (\n  i = 0,`` closes as `` _;;) {}``, ``for (\n  x of y`` as ``) {}``)."""
    type_bodies: frozenset[str] = frozenset()
    """Nodes or tokens after (or in) which a ``{`` opens a type's body (Go's ``struct {``), not a header's
    block; the outermost still open closes, in one more try, followed by ``type_literal`` (``x := []struct {``
    … closes as ``}{}``)."""
    type_literal: bytes = b""
    """The literal a type's body closed at the end may wait for (Go's ``{}``)."""
    literals: frozenset[str] = frozenset()
    """Nodes or tokens after (or in) which a ``{`` opens a literal (Go's ``[]T{``, ``}{``), not a header's
    block."""
    parameters: tuple[bytes, bytes] | None = None
    """A method or constructor cut among its parameters: what a parameter list cut after its ``,`` or ``(``
    (or after an attribute) still lacks, and the body after its ``)``, tried when a ``(`` is the innermost
    bracket open (Java's ``public A(\n    int a,`` closes as `` _ _) {}}``: a constructor takes no ``;``;
    PHP's ``function f(`` then ``#[SensitiveParameter]`` as `` $_) {}``)."""
    expression_blocks: int = 0
    """How many of the innermost ``}`` of an ending are each tried followed by the terminator, one per try: a
    block that is an expression's (PHP's anonymous class, ``return new class ($d) extends B {`` … closes as
    ``};``)."""
    closed_items: bool = False
    """A top-level node parsed without error is whole and nothing after it continues it (C: a declaration ends
    at its ``;`` or ``}``, a directive at its line's end, a conditional at its ``#endif``): an ending's parse
    reads the text from the top-level node holding its first error on (``syntax_tree._items_start``).  Not
    C++, whose ``misread`` query reads the whole tree."""
    line_commands: bool = False
    """A text that parses with no error up to the end of a line is complete there, and the lines after it read
    the same alone (shell: a command list ends at a line break; a heredoc, quote or block still open, or a
    line ending in ``\\``, ``&&`` or ``|``, is an error of that start): a long text whose parse is one error
    is judged by its rest (``syntax_tree._rest_read_alone``)."""
    open_tags: bool = False
    """JSX: a ``<`` in an error, right before a name, may open a tag that is still waiting for its ``>``
    (a text cut among its attributes: ``<button\n  type="button"``); one more try closes it as ``/>``."""


_FOR_DO = re.compile(rb"\bfor[ \t]+\w+([ \t])[ \t]*do\b")
"""``for name do`` (POSIX; no ``in`` list, no ``;``), which tree-sitter-bash 0.25 does not know."""
# ``_TILDE`` to ``_QUOTED_BLANKS`` start with their literal and check in a lookbehind after it what precedes:
# ``re`` then finds the literal in C; a leading lookbehind was tried at each byte (100 KB: 19 -> 0.3 ms).
_TILDE = re.compile(rb"~(?<=[ \t]~)(?=[ \t;\n])")
"""A bare ``~`` word (``[ "$c" = ~ ]``), which tree-sitter-bash 0.25 reads as an operator in a test."""
_TEST_OPEN = re.compile(rb"\[(?<![^\s;&|(!{]\[)(?=[ \t])")
_TEST_CLOSE = re.compile(rb"\](?<=[ \t]\])(?=[ \t]*(?:[;&|)\n]|$))")
"""The brackets of a ``[ … ]`` test, read as a command named ``_``: tree-sitter-bash 0.25 rejects valid tests
(``[ \\( -n "$a" \\) ]``, ``[ "$a" = x -o ! -h "$b" ]``); bash itself reads ``[`` as a command."""
_BACKTICK_BLANKS = re.compile(rb"`(?:(?<![^\s(]`)([ \t]+)|(?<==`)(\s+))")
"""An opening backtick followed by blanks (`` a=` echo x` ``), or after ``=`` by a line break (``a=` ``, the
command on the next lines), moved past them (`` a= `echo x` ``, the same command): tree-sitter-bash 0.25 reads
such an opener as a closer after a substitution ending in a word (`` `basename "$0"` ``), and the rest of the
file as one error.  An opener follows ``=``, a blank or ``(``; a closer (`` `… "$1"` in``) follows a word or a
quote."""


def _backtick_after_blanks(found: re.Match[bytes]) -> bytes:
    return (found.group(1) or found.group(2)) + b"`"


_QUOTED_BLANKS = re.compile(rb"'(?<!\\')([ \t]+)'")
"""A single-quoted string of blanks only (``?*' '?*)``, ``less' '4*``), read as ``'_'``: tree-sitter-bash 0.25
rejects it in some case patterns."""
_ASSIGNMENT_REDIRECTED = re.compile(rb"(?m)(?:^|[;&|({]|\bthen|\bdo|\belse)[ \t]*[A-Za-z_]\w*(=)(?!\()"
                                    rb"(?=(?:[^\n;&|#\\]|\\[^\n]|\\\n)*?[ \t]\d*[<>])")
"""An assignment with a redirection (``n=$((x + 0)) 2>/dev/null``, also on a line the assignment continues
with ``\\``: npm's completion.sh), read as a command: tree-sitter-bash 0.25 rejects it."""
_NEGATED_ASSIGNMENTS = re.compile(rb"(!)(?<=[\s;&|(]!)(?=[ \t]++[A-Za-z_]\w*+=)")
"""A ``!`` before assignments (``if ! IFS=$'\\n' R=($(f)); then``, npm's completion.sh), which
tree-sitter-bash 0.25 rejects when more than one assignment follows: read as a blank (the negation changes no
syntax)."""
_LITERAL_DOLLAR = re.compile(rb"\$(?=[\\/.,:=+%^~\]}&;|<>])")
"""A ``$`` that starts no expansion, before a backslash (``lv_name=~\\(e2scrub$\\)``), a slash (``sed
s/.$//``, Python's makesetup) or other punctuation: a plain ``$`` to bash, which tree-sitter-bash 0.25
rejects; read as ``_``."""
_TWO_SUBSHELLS = re.compile(rb"\(\(\w(?=[\w.-]*[ \t]+-[A-Za-z])")
"""``((gzip -cdfq …) …)``: two subshells, not arithmetic (bash reads it so once the arithmetic fails), read
as ``( (`` (the command's first letter given up)."""


def _subshells(found: re.Match[bytes]) -> bytes:
    return b"( ("


_QUOTED_HEREDOC = re.compile(rb"<<-?[ \t]*(?:(?P<quote>['\"])|\\)(?P<name>\w+)(?(quote)(?P=quote))[^\n]*\n"
                             rb"(?P<body>.*?)(?=^\t*(?P=name)$|\Z)", re.DOTALL | re.MULTILINE)
"""A heredoc whose delimiter is quoted (``<<'EOF'``, or ``<<\\EOF`` as git's scripts write it): its body is
text, read as ``_`` (tree-sitter-bash 0.25 misreads a body line starting with ``#``, ``{`` or blank, after
``<<'EOF' &&`` or ``<<\\EOF ||``)."""


def _blank_body(found: re.Match[bytes]) -> bytes:
    """A heredoc's match with its ``body`` group read as ``_`` (its line breaks kept)."""
    start, end = found.start("body") - found.start(), found.end("body") - found.start()
    text = found.group()
    return text[:start] + re.sub(rb"[^\n]", b"_", found.group("body")) + text[end:]


_ODD_HEREDOC = re.compile(rb"<<-?+[ \t]*+(?P<name>[=.:@+%^,/!?~][^\s;|&<>()]*+)\n"
                          rb"(?P<body>.*?)(?:^\t*(?P=name)$|\Z)", re.DOTALL | re.MULTILINE)
"""A heredoc whose delimiter starts with punctuation that opens no expansion, quote or operator (``: <<=cut``
before POD, postgresql-common's scripts), which tree-sitter-bash 0.25 reads as an operator: its body is text
(``_``), and the delimiter, at both ends (the body may run to the end: a text cut inside it), a name of
``_``."""


def _odd_heredoc(found: re.Match[bytes]) -> bytes:
    """``_blank_body``, with the delimiter made a name of ``_`` (the blanked body holds none of it)."""
    name = found.group("name")
    return _blank_body(found).replace(name, re.sub(rb"\W", b"_", name))


_BARE_HEREDOC = re.compile(rb"^[ \t]*+(<)(?=<-?[ \t]*[\\'\"]?\w)", re.MULTILINE)
"""A heredoc with no command, alone at the start of its line (``<<\\DOC_END``, git's pre-rebase.sample: a
block of text nothing reads), which tree-sitter-bash 0.25 rejects: its first ``<`` read as ``:``, a command
reading a file (after the body is blanked)."""
_CSS_STRINGS = re.compile(rb"/\*.*?(?:\*/|\Z)|\"(?:[^\"\\\n]++|\\.)*+[\"\n]|'(?:[^'\\\n]++|\\.)*+['\n]",
                          re.DOTALL)
"""CSS's comments and strings (a string a line break ends is broken).  The strings' runs are possessive: a
100 KB string is one step of the scan, not one backtracking entry a byte."""
_NTH_ARGUMENT = re.compile(rb":nth-(?:last-)?(?:child|of-type)\(([^()\n]*)\)")
"""``:nth-child(2n-1)``, whose ``An+B`` tree-sitter-css 0.25 does not know."""

_KEYFRAME_FRACTION = re.compile(rb"(\.)(?<=[\d\s,{]\.)(?=\d++%\s*+[,{])")
"""A keyframe selector with a fraction (``@keyframes j { 11.1%, 22.2% {``, animate.css), which
tree-sitter-css 0.25 rejects: the point read as ``0``."""
_STAR_HACK = re.compile(rb"(\*)(?<=[{;\s]\*)(?=[A-Za-z-]++\s*+:)")
"""A declaration behind IE's star hack (``*zoom: 1;``, tachyons), which browsers drop and tree-sitter-css
0.25 rejects: the star read as ``_``."""
_CUSTOM_MEDIA = re.compile(rb"@custom-media\s++(--[\w-]++)")
"""A custom media query's name (``@custom-media --b screen and (…);``, Media Queries 5, which PostCSS
users write), which tree-sitter-css 0.25 rejects: read as blanks."""
_JAVA_ENDINGS = (b" class _ {}",)
"""Annotations cut inside their arguments (``@CapacitorPlugin(\n    permissions = {``) waiting for what they
annotate."""
_JS_ENDINGS = (b" => {}", b" from ''")
"""An arrow function's parameters waiting for ``=> body``; an import list (``import {\n  A,``) waiting for
``from``."""
_JS_RESERVED = (rb"(?:break|case|catch|class|const|continue|debugger|delete|do|else|export|extends|false"
                rb"|finally|for|function|if|import|in|instanceof|new|null|return|super|switch|this|throw|true"
                rb"|try|typeof|var|void|while|with)")
_EXPORTED_KEYWORD = re.compile(rb"\bas\s+(" + _JS_RESERVED + rb")(?=\s*[,}])")
_IMPORTED_KEYWORD = re.compile(rb"(?<=[{,])\s*(" + _JS_RESERVED + rb")(?=\s+as\b)")
"""A reserved word as a name an import or export clause gives or takes (``export { f as function, n as null
}``, zod's v3/types.js; ``import { function as f } from``), which any name may be and tree-sitter-javascript
0.23 rejects: read as ``_`` of its length."""
_JSX_ATTRIBUTE = (rb"\s++(?:(?P<name>[\w$:-]++)(?:\s*+=\s*+(?:\"[^\"]*+\"|'[^']*+'"
                  rb"|\{(?:[^{}]++|\{[^{}]*+\})*+\}))?|\{\s*+\.\.\.[^{}]*+\})")
"""One attribute of a JSX tag, its name the group ``name``: a value in braces nested once at most; or a
spread."""
_JSX_TAG = re.compile(rb"<([A-Za-z_$][\w$.:-]*+)(?:" + _JSX_ATTRIBUTE.replace(b"?P<name>", b"?:") + rb")++")
"""A JSX tag's start: ``<``, a name and attributes (no group inside the repeat: Python 3.11's ``re`` gets
a group's span wrong in a possessive repeat)."""
_JSX_ATTRIBUTES = re.compile(_JSX_ATTRIBUTE)
_JSX_RESERVED = re.compile(rb"(?:" + _JS_RESERVED + rb"|default)\Z")


def _jsx_reserved_names(found: re.Match[bytes]) -> bytes:
    """A JSX tag whose attributes named by reserved words (Preact's ``class="a"``, ``<Route default />``),
    which any name may be and tree-sitter-javascript 0.23 rejects, read as ``_`` of their length."""
    tag = found.group()
    attributes = _JSX_ATTRIBUTES.finditer(tag, found.end(1) - found.start())
    names = [attribute.span("name") for attribute in attributes
             if attribute.group("name") is not None and _JSX_RESERVED.match(attribute.group("name"))]
    for start, end in reversed(names):
        tag = tag[:start] + b"_" * (end - start) + tag[end:]
    return tag


_VARIANCE = re.compile(rb"[<,](?:\s|/\*(?:[^*]|\*(?!/)){0,400}\*/)*((?:in|out)(?:\s+out)?)\s+(?=[A-Za-z_$])")
"""A type parameter's variance (``interface A<in T>``, ``<in out T>``, a comment before it; TypeScript 4.7),
which tree-sitter-typescript 0.23 does not know: read as blanks."""
_CALL_SIGNATURE_LINE = re.compile(rb"(?<=[\w>\])])\n([ \t])[ \t]*<"
                                  rb"(?=[A-Za-z_$][\w$]*\s*(?:extends\b|=|,|>\())")
"""A generic call signature on the line after another member of an object type, no ``;`` between
(``{ <R>(p: R): T`` then ``<F>(p: F): T }``), which tree-sitter-typescript 0.23 reads as type arguments of
the type before: the line's first blank read as ``;``."""
_EXPORT_TYPE_ALL = re.compile(rb"\bexport\s+(type)\s+\*")
"""``export type * from "./t"`` (TypeScript 5.0), which tree-sitter-typescript 0.23 does not know: read as
``export *``."""
_KEYOF_READONLY = re.compile(rb"\bkeyof\s+(readonly)(?=\s)")
"""``keyof readonly any[]``, the keys of a read-only array type, which tree-sitter-typescript 0.23 does not
parse (it does ``keyof (readonly any[])``): read without the ``readonly``."""
_DEFAULT_FUNCTION = re.compile(rb"\bdefault[ \t]+function[ \t]*(?=[(<])")
"""``export default function (a: T): R;``, an anonymous default function's overload signature (a
declaration file's), which tree-sitter-typescript 0.23 parses only with a name: read as ``function _____(``,
the ``default`` given up for the name."""


def _named_function(found: re.Match[bytes]) -> bytes:
    """``default function (`` read as ``function _____(``: a name as long as ``default`` and its blanks."""
    return b"function " + b"_" * (len(found.group()) - len(b"function "))


_TS_STAND_INS = ((_IMPORT_TYPE, b"_"), (_VARIANCE, b" "), (_EXPORT_TYPE_ALL, b" "), (_KEYOF_READONLY, b" "),
                 (_DEFAULT_FUNCTION, _named_function))
_TYPESCRIPT_STAND_INS = (*_TS_STAND_INS, (_CALL_SIGNATURE_LINE, b";"))
"""In ``.ts`` only: in TSX a line may start a JSX element."""
_TS_ENDINGS = (*_JS_ENDINGS, b" ? _ : _")
"""Also a conditional type cut inside the type it extends (``T extends {`` … ``}`` waiting for ``? :``)."""
_TYPE_ARGUMENTS = (b">", b" _>", b">() {}", b">() => {}", b"> = _", b"> {}", b" ? _ : _")
"""A type's argument list still open (``Fn<\n  Date,``, a generic arrow function's ``<T,``, an interface's
``<T,`` waiting for its body); a conditional type waiting for its ``?`` (``T extends U``)."""
_PHP_STRING_KEY = re.compile(rb"\$[A-Za-z_]\w*\[([A-Za-z_]\w*)\]")
"""``"$frame[class]"``: an array key written bare in a string, which tree-sitter-php 0.25 rejects when it is
a keyword (matched outside strings too: there PHP rejects it, and the gate misses that error)."""
_XML_DECLARATION = re.compile(rb"<\?xml\b[^<>]*\?>")
"""XHTML's ``<?xml version="1.0"?>``, which tree-sitter-html 0.23 does not know."""
_TEMPLATE_TAG = re.compile(rb"\{\{.{0,400}?\}\}|\{%.{0,400}?%\}|<%.{0,400}?%>")
"""A template's tag on one line (Hugo's ``{{< docsref "/x" >}}``, ``{{ .Title }}``, Jinja's ``{% if a %}``,
EJS's ``<%= a %>``), read as a name: in a quoted attribute its quotes end the value to tree-sitter-html."""
_TEXT_ANGLE = re.compile(rb"(?:<[A-Za-z/!?](?:[^<>\"']++|\"[^\"]{0,4096}+\"|'[^']{0,4096}+')*+>"
                         rb"|[^<>]++|<(?![\s\d=]))*+(>|<(?=[\s\d=])|\Z)")
"""A ``>`` or ``<`` in text (``info->skip``, a ``'> '`` prompt, ``a < b``: valid HTML that tree-sitter-html
0.23 rejects), read as a blank: group 1 of a match that first passes over tags (their quoted values may hold
``>``; bounded, so the scan stays linear), other text, and a ``<`` that starts no tag and no such angle.  A
match ends at each such angle or at the end, so the scan never starts again from a later byte, and a tag
costs no call."""


_MEMBER_OPERATOR = Witnessed(
    re.compile(
        # (each way in starts with a byte, not ``\b``: re scans for those in C)
        rb"(?:->|\.|r(?<!\wr)eturn[ \t]|e(?<!\we)lse[ \t]|\)[ \t])[ \t]*(operator\b[ \t]*"
        rb"(?:\(\)|\[\]|->\*?|(?:new|delete)\b(?:\[\])?|[-+*/%^&|~!=<>,]{1,3}|[A-Za-z_]\w*))"
        rb"|[{;}]\s*(operator[ \t]*(?:\(\)|\[\]))(?=[ \t]*\()"),
    rb"\boperator")
"""An operator called by name through ``->`` or ``.``, returned, after a condition or starting a statement
(``this->operator+(n)``, ``a.operator bool()``, ``return operator*();``, ``if (a) operator()<bool>(v);``,
nlohmann's ``{`` then ``operator[](it.key()).merge_patch(v);``), which tree-sitter-cpp 0.23 does not parse."""
_ARROW_MEMBER_POINTER = Witnessed(
    re.compile(rb"(?<=[\w)\]])[ \t]*->(\*)(?=[ \t]*[A-Za-z_])"),
    rb"->\*")
"""A pointer to member applied through a pointer (gmock's ``(obj_ptr->*method_ptr)(args...)``), which
tree-sitter-cpp 0.23 does not parse (``.*`` it does): read as ``->`` and a blank."""
_DEFAULTED_POINTER = Witnessed(
    re.compile(rb"(?<=[\w>])[ \t]*(\*)(?=(?:\s|/\*(?:[^*]|\*(?!/)){0,200}\*/)+=(?!=))"),
    rb"[\w>][ \t]*\*[\t\n\v\f\r /]")
"""An unnamed pointer with a default (``typename std::enable_if<…>::type* = nullptr``, a parameter or a
template parameter), which tree-sitter-cpp 0.23 does not parse; read without its ``*``."""
_NESTED = rb"(?:[^();{}]|\{\}|\((?:[^();{}]|\{\}|\([^();{}]*\))*\))"
"""Text within parentheses nested two deep, empty braces too (nlohmann's ``decltype(f(j, priority_tag<3> {}),
…)``)."""
_DECLTYPE_LIST = Witnessed(
    re.compile(rb"\bdecltype\s*\((" + _NESTED.replace(b"[^();{}]", b"[^(),;{}]", 1) + rb"*,"
               + _NESTED + rb"*)\)"),
    rb"\bdecltype[\t\n\v\f\r ]*\(")
"""``decltype((void)p->find('a'), int())``: a comma expression, which tree-sitter-cpp 0.23 does not parse in
a ``decltype``; read as a name."""
_TEMPLATE_MACRO = Witnessed(
    re.compile(rb"(?<=[<,])\s*([A-Z][A-Z0-9]*_[A-Z0-9_]*[ \t]*\(" + _NESTED + rb"*"
               rb"(?:\)(?=\s*[>,])|\Z))"),
    rb"[<,][\t\n\v\f\r ]*[A-Z][A-Z0-9]*_[A-Z0-9_]*[ \t]*\(")
"""A macro call as a template parameter (``template <typename T, FMT_ENABLE_IF(!is_x<T>::value)>``), or one
the text ends inside (``FMT_ENABLE_IF(!is_x<T>::value &&``), read as a name."""
_BARE_SWITCH = Witnessed(
    re.compile(rb"\bswitch\s*\(" + _NESTED + rb"*\)(?=\s*[^\s{])"),
    rb"\bswitch[\t\n\v\f\r ]*\(")
"""A ``switch`` whose body is one statement (``switch (0) default: f();``), valid C that tree-sitter-c and
tree-sitter-cpp reject: read as the statement alone."""
_TYPE_ARGUMENT = Witnessed(
    re.compile(rb",\s*(struct|union|enum)[ \t]+\w+\s*\)"),
    rb",[\t\n\v\f\r ]*(?:struct|union|enum)[ \t]+\w+[\t\n\v\f\r ]*\)")
"""A tagged type as a macro's last argument (the kernel's ``_IOR('r', 2, struct binder_t)``), which
tree-sitter-c reads as no expression: read as the tag's name."""
_STRING_MACRO = re.compile(rb"//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/|'(?:[^'\\\n]|\\.)*'"
                           rb"|\"(?<!operator \")(?:[^\"\\\n]|\\.)*\"(?:[ \t]+([A-Za-z_]\w+)(?=\s*[\"),;]))?")
"""A macro that expands to a string literal after a string (``"adir" GTEST_PATH_SEP_ "b"``, ``"%" PRIu64
")"``), which tree-sitter-cpp 0.23 does not parse (tree-sitter-c does); comments and literals are matched
whole so that a quote inside one starts no string; not a literal operator's suffix (``operator "" _json``).
Each alternative starts with its literal (the operator is looked behind from the quote): searches skip to
them."""


def _string_for_macro(found: re.Match[bytes]) -> bytes:
    """The macro after a string read as a string of its length (``"_____________"``)."""
    if found.group(1) is None:
        return found.group()
    start, end = found.start(1) - found.start(), found.end(1) - found.start()
    return found.group()[:start] + b'"' + b"_" * (end - start - 2) + b'"' + found.group()[end:]


_NEW_CONST = Witnessed(
    re.compile(rb"\bnew[ \t]+(const)\b"),
    rb"\bnew[ \t]+const\b")
"""``new const char('a')``, which tree-sitter-cpp 0.23 does not parse: read without the ``const``."""
_NEW_POINTER_ARRAY = Witnessed(
    re.compile(rb"\bnew[ \t]+(?:const[ \t]+)?[A-Za-z_][\w:]*+[ \t]*(\*++)(?=[ \t]*\[)"),
    rb"\bnew[ \t]+(?:const[ \t]+)?[A-Za-z_][\w:]*[ \t]*\*+[ \t]*\[")
"""``new const T*[n]``, an array of pointers, which tree-sitter-cpp 0.23 does not parse: read without the
``*``."""
_TYPENAME_VALUE = Witnessed(
    re.compile(rb"(?:(?:=|\breturn)[ \t]*"
               rb"|[(,][ \t]*"
               rb"(?=typename[ \t]+[A-Za-z_][\w:<>, \t]{0,200}?::[A-Za-z_]\w*[ \t]*[({]))"
               rb"(typename)[ \t]+\w"),
    rb"typename[ \t]+\w")
"""``x = typename T::iterator();``, a value of a dependent type, also as an argument (gtest's ``f(typename
Types::Tail(), r)``, fmt's ``vis(typename basic_format_arg<Context>::handle(v))``; a qualified name called or
braced, no parameter's type), which tree-sitter-cpp 0.23 does
not parse: read without the ``typename``."""
_TYPENAME_MACRO = Witnessed(
    re.compile(rb"\b(typename[ \t]+" + ALL_CAPS + rb"[ \t]*\([^()\n]*\))"),
    rb"\btypename[ \t]+" + ALL_CAPS + rb"[ \t]*\([^()\n]*\)")
"""``typename`` before a macro's call that gives a type (gtest's ``typedef typename GTEST_BIND_(TestSel, Type)
TestClass;``), which tree-sitter-cpp 0.23 does not parse: read as one name."""
_ENUM_BASE = Witnessed(
    re.compile(rb"\benum[ \t]*(:[ \t]*[\w: \t]+?)(?=[ \t]*\{)"
               rb"|\benum[ \t]+(?:class[ \t]+|struct[ \t]+)?\w+[ \t]+(" + ALL_CAPS
               + rb"[ \t]*\([^()\n]*\))(?=\s*\{)"),
    rb"\benum\b")
"""An unnamed enum's underlying type (fmt's ``enum : unsigned long long { is_unpacked_bit = 1ULL << 63 };``),
which tree-sitter-cpp 0.23 does not parse, or a macro giving a named one's (``enum type
FMT_ENUM_UNDERLYING_TYPE(unsigned char){``): read without it."""
_DEFAULT_DECLARATOR_TYPE = Witnessed(
    re.compile(
        rb"(?<=[<,])\s*(?:typename|class)[ \t]+\w+[ \t]*"
        rb"(=[ \t]*(?:const[ \t]+)?[\w:]+[ \t]*(?:\*++(?:[ \t]*const)?|&&?|\(&\)[ \t]*\[\w*\]))"
        rb"(?=[ \t]*[,>])"),
    rb"[<,][\t\n\v\f\r ]*(?:typename|class)[ \t]+\w+[ \t]*=")
"""A type parameter's default that holds a declarator (fmt's ``typename Ptr = const T*>``, nlohmann's
``typename Array = T (&)[N],``), which tree-sitter-cpp 0.23 does not parse: read without the default."""
_DEFAULT_BRACES = Witnessed(
    re.compile(rb"=[ \t]*(\{\})(?=[ \t]*[,)])"),
    rb"=[ \t]*\{\}[ \t]*[,)]")
"""A parameter's default ``{}`` (nlohmann's ``array(initializer_list_t init = {})``), which tree-sitter-cpp
0.23 reads as a compound literal missing its type: read as a name."""
_DELETED_FUNCTION = Witnessed(
    re.compile(rb"\)[ \t]*(?:(?:const|noexcept|&&?)[ \t]*)*=[ \t]*(delete)(?=[ \t]*;)"),
    rb"=[ \t]*delete[ \t]*;")
"""A function declared deleted outside a class (gmock's ``ReturnRefAction<R> ReturnRef(R&&) = delete;``),
which tree-sitter-cpp 0.23 reads as an initializer missing its operand: read as ``= 0``."""
_MEMBER_POINTER_TYPE = Witnessed(
    re.compile(rb"\([ \t]*([A-Za-z_][\w:]*::)\*[ \t]*(?:[A-Za-z_]\w*[ \t]*)?\)"),
    rb"::\*")
"""A pointer to member function's type or declarator (gmock's ``void (C::*)()``, gtest's ``void
(NativeArray::*clone_)(const Element*, size_t);``), which tree-sitter-cpp 0.23 does not parse: read as a
function pointer's."""
_EXPLICIT_INSTANTIATION = Witnessed(
    re.compile(rb"^[ \t]*(?:((?:extern[ \t]+)?template)(?=[ \t]+(?:class|struct)\b)"
               rb"|extern[ \t]+(template)\b)", re.MULTILINE),
    rb"(?m)^[ \t]*(?:extern[ \t]+)?template\b")
"""A class template's explicit instantiation (fmt's ``template class file_access<…,
&std::filebuf::_Myfile>;``), or any one declared ``extern`` (``extern template FMT_API auto f<char>(l) ->
R;``), which tree-sitter-cpp 0.23 reads as a declaration missing its declarator: read without the
``template`` (a class's: without its ``extern`` too)."""


def _as_zero(found: re.Match[bytes]) -> bytes:
    """``_DELETED_FUNCTION``'s match with its ``delete`` read as ``0``."""
    start = found.start(1) - found.start()
    return found.group()[:start] + b"0     " + found.group()[start + 6 :]


_REFERENCE_INIT = Witnessed(
    re.compile(
        rb"^[ \t]*+(?:(?:const|static|constexpr|volatile)[ \t]++)*+"
        rb"(?!(?:return|case|delete|throw|co_return|co_yield|goto|else|do|new)\b)[A-Za-z_][\w:]*+(?:<[^<>;\n]{0,200}>)?"
        rb"[ \t]*+(&&?|\*)[ \t]*+[A-Za-z_]\w*+\((?=[^;{}\n]{0,200}\?)", re.MULTILINE),
    rb"[&*][ \t]*[A-Za-z_]\w*\([^;{}\n]*\?")
"""A reference or pointer declared with its initializer in parentheses holding a conditional (``const
FilePath& path(IsRoot() ? *this : R());``), which tree-sitter-cpp 0.23 reads as a function declaration and
rejects: read without its ``&``."""
_CPP_LINE = re.compile(rb"[ \t]*(?:namespace(?:[ \t]+\w+)?(?:[ \t]+\w+\([^()\n]*\))?[ \t]*(?:\{|\r?\n)"
                       rb"|template[ \t]*<|using[ \t]+namespace\b"
                       rb"|extern[ \t]+\"C\+\+\"|class[ \t]+\w+(?:[ \t]+\w+){0,2}[ \t]*(?:final[ \t]*)?[:{]"
                       rb"|(?![*/])[^\n/\"']*?(?<![\w:\[])[A-Za-z_]\w*::[A-Za-z_~])")
"""A line only C++ has: a namespace (libstdc++'s ``namespace std _GLIBCXX_VISIBILITY(default)``, its ``{`` on
the next line), a template, a class (ICU's ``class U_COMMON_API CanonicalIterator U_FINAL : public``), a
name qualified by a scope before any comment or string (ICU's ``utext_openUnicodeString(UText *ut,
icu::UnicodeString *s,``; not a C23 attribute's ``[[gnu::unused]]``)."""
_C_STRINGS = re.compile(
    rb"/\*.*?(?:\*/|\Z)|//[^\n]*|(?<!\w)(?:u8|[uUL])?R\"([^()\\ \t\n]{0,16})\(.*?(?:\)\1\"|\Z)"
    rb"|'(?:[^'\\\n]|\\.){1,8}'|\"(?:[^\"\\\n]++|\\.)*+[\"\n]", re.DOTALL)
"""C's comments, C++ raw strings, character literals and strings: a string a line break ends is broken (a
backslash before the break continues it).  Possessive, as ``_CSS_STRINGS``."""
_TEMPLATE_HEADS = (b" struct _;", b"> struct _;", b" _> struct _;", b">> struct _;", b" _>> struct _;",
                   b" _>>> struct _;")
"""A template header waiting for its declaration, maybe cut inside its parameters (``template <typename T,
typename E = std::is_void<``, nlohmann's ``template <`` … ``enable_if_t < !std::is_constructible<typename
B::string_t,``): ``<`` is no bracket to the closers."""
_NEXT_INITIALIZER = b" _() {}"
"""A constructor's initializer list cut after a ``,`` (``: a_(m),``, then comment lines, which hide that
``,`` from the filler tried after an operator): the next initializer and the constructor's body."""
_CPP_MISREAD = """
(compound_statement (function_definition type: (_)) @brace)
(_ name: [(type_identifier) @class (template_type name: (type_identifier) @class)]
   body: (field_declaration_list
     (function_definition !type declarator: (function_declarator declarator: (identifier) @brace)))
   (#not-eq? @brace @class))
(function_definition declarator: (function_declarator declarator: (identifier) @unexpected)
   (#eq? @unexpected "catch"))
(initializer_list (identifier) @unexpected (#eq? @unexpected "const"))
"""
"""What tree-sitter-cpp 0.23 accepts after a deleted ``}`` or ``)``: a function defined inside the one before
(no C++ has that, unlike GNU C), a member function with no type that is no constructor (``TEST_F(A, B) {``
inside ``class A {``), ``catch (…) {`` inside a ``try`` block read as a function named ``catch``, ``const`` in
a block read as braces (``TEST(A, B {`` … ``const T x;``)."""
# As the shell ones: each starts with its literal, its lookbehind after it (100 KB of Rust: 8 -> 0.1 ms).
_RUST_TRY = re.compile(rb"(try)(?<![\w$]try)!")
"""Rust 2015's ``try!(…)`` macro, a keyword to tree-sitter-rust 0.24: read as a macro named ``___``."""
_LONE_TOKEN = re.compile(rb"[~$](?=[ \t]*[)\]},])")
"""A ``~`` or ``$`` alone in a macro's tokens (``Token![~]``, ``($m:ident, ~) =>``, ``[$] =>``), which
tree-sitter-rust 0.24 does not know there: read as ``_`` (as an operator ``~`` would have an operand after
it, ``$`` a name or ``(``)."""
_RAW_NAME = re.compile(rb"raw(?<![\w#$']raw)(?!\w)(?![ \t]+(?:const|mut)\b)")
"""``raw`` used as a name (syn's ``Option<raw>``, ``input.peek(raw)``), a keyword to tree-sitter-rust 0.24
(``&raw const x``): read as ``___``."""
_NEGATIVE_IMPL = re.compile(rb"impl(?<!\wimpl)[ \t]+(!)(?=!|[A-Za-z_][\w:]*[ \t]*\{)")
"""``impl !Trait {}``, ``impl !! {}``: a negative impl with no type (rustc parses it under ``#[cfg]``),
which tree-sitter-rust 0.24 does not know: read without its ``!``."""
_UNIT_STRUCT_WHERE = re.compile(rb"struct(?<!\wstruct)[ \t]+\w+\s*(where\b[^;{}()]*);")
"""A unit struct with a where clause (``struct _Test where Error: Send;``), which tree-sitter-rust 0.24 does
not know: the clause read as blanks (its line breaks kept)."""

_FIELD_ATTRIBUTE = re.compile(rb"[{,][ \t\r\n]*+"
                              rb"(#\[(?:[^\[\]()\n]++|\((?:[^()\n]++|\([^()\n]*+\))*+\))*+\])"
                              rb"(?=\s*+(?:#\[|\.\.|(?:ref[ \t]+|mut[ \t]+)*[A-Za-z_]\w*+\s*+[:,}]))")
"""An attribute on a field after ``{`` or ``,`` (``L { #[cfg(x)] inner: l, .. }``), which tree-sitter-rust
0.24 does not know in a struct pattern: read as blanks (a whole attribute on one line, its parentheses
balanced: a broken one stays)."""


def _blank_clause(found: re.Match[bytes]) -> bytes:
    start, end = found.start(1) - found.start(), found.end(1) - found.start()
    text = found.group()
    return text[:start] + re.sub(rb"[^\n]", b" ", text[start:end]) + text[end:]


_RUST_FOLLOWERS = MappingProxyType({
    "$": (frozenset({"*", "+", "?"}), "*"),
    **dict.fromkeys(("if", "match", "for"), (frozenset({"{"}), " {}")),
})
"""A macro's repetition ``$( … ),*``, whose ``)`` waits for the operator; an ``if`` condition, a ``match``
scrutinee or a ``for`` loop's iterator cut before its block (``if match x {`` … closes as ``} {}``, ``for x in
&[`` … as ``] {}``).  Not ``while``: ``while a < b.len( {`` (a deleted ``)``) would then close as ``}) {}``, a
block argument, and pass."""
_RUST_ARMS = re.compile(rb"(?:\bmacro_rules![ \t]*[A-Za-z_]\w*\s*|\bmatch\b[^;{}\n]*)\Z")
"""The head of a ``macro_rules!`` or ``match`` block, whose arms are ``matcher => body`` (a ``match`` on the
block's line: one in a comment above a function's ``{`` is no head)."""
_RUST_ATTRIBUTED = (b" _ => {}", b" fn _f() {}", b" _f: ()", b" _f")
"""What an attribute at the end (``#[cfg(x)]``) may wait for: a match arm, an item, a field, a variant."""
_SHELL_CONDITIONS = MappingProxyType({
    **dict.fromkeys(("if", "elif"), (frozenset({"then"}), ": ; then :")),
    **dict.fromkeys(("while", "until"), (frozenset({"do"}), ": ; do :\ndone")),
    **dict.fromkeys(("for", "select"), (frozenset({"do"}), "do :\ndone")),
})
"""A condition cut before its ``then`` or ``do`` (``if a || {`` … ``}``, ``if case … esac``), a ``for`` list
before its ``do``: the completion writes the keyword where the condition ends, after the blocks open inside
it."""
_SPECIAL_GLOBAL_SYMBOL = re.compile(rb"(?<=:\$)[,;\\.$?@:=\"'](?=[\s,)\]}])")
"""A symbol of a special global (``:$,``, ``:$;``, ``:$\\``, ``:$.``, ``:$$``, ``:$?``, ``:$"``), which
tree-sitter-ruby 0.23 does not know: read as ``:$_``."""
_RUBY_BLOCKS = ("def", "class", "module", "do", "begin", "case", "if", "unless", "while", "until", "for")
_C_LIKE = (BLOCK_COMMENT_END, '"')
_DO_WHILE = {"do": (frozenset({"while"}), " while (0);")}
_FOLLOWERS = MappingProxyType({"try": (frozenset({"catch", "finally"}), " finally {}"), **_DO_WHILE})
"""``try`` … ``catch``/``finally`` and ``do`` … ``while``: JavaScript, TypeScript, Java, PHP."""
_JS_FOLLOWERS = MappingProxyType({**_FOLLOWERS, "?": (frozenset({":"}), " : _")})
"""JavaScript's and TypeScript's also: a ``?`` of a conditional expression (or type) waiting for its ``:``
(``a ? function () {`` … closes as ``} : _``)."""
_PHP_FOLLOWERS = _JS_FOLLOWERS
"""PHP's are JavaScript's: ``try``, ``do``, and a conditional's ``?`` waiting for its ``:`` (``$v =
is_array($v)`` then ``? sprintf(…)`` on the next line, cut there, closes as `` : _;}``)."""
_PHP_ATTRIBUTE_TARGETS = (b" function _() {}",)
"""What an attribute cut before its target (``#[\\ReturnTypeWillChange]`` on its line) may still annotate: a
function or method, standing for any declaration there (a parameter's: ``Grammar.parameters``)."""
_TS_HEADERS = MappingProxyType({"switch": (b" {}",)})
"""A ``switch (`` cut before its block (``switch (\n  (a &&`` inside a block closes as ``)) {}}``)."""
_JS_HEADERS = MappingProxyType({**_TS_HEADERS, "function": (b" {}",)})
"""JavaScript's also: a function's parameters cut before its body (``function f(\n  a,`` inside a block
closes as ``) {}}``; TypeScript reads ``function f(a)`` as an overload)."""
_GO_HEADERS = MappingProxyType({
    **dict.fromkeys(("if", "switch"), (b" {}", b"; _ {}")),
    "for": (b" {}",),
})
"""Go's headers cut before their block: ``if a ||``, ``if err := f(T{``, ``switch x := g(`` (an initializer
waiting for its condition), ``for _, c := range []struct {`` (``}{} {}}``: a type waiting for its literal)."""
_GO_TYPE_BODIES = frozenset({"struct", "interface", "field_declaration_list", "interface_type"})
_GO_LITERALS = frozenset({"}", "struct_type", "slice_type", "array_type", "implicit_length_array_type",
                          "map_type", "literal_value"})
"""A ``{`` after a type that is no bare name opens its literal (``range []struct{ … }{``; ``if x == T{`` opens
the ``if``'s block, as Go reads it)."""
_C_KEYWORDS = frozenset(b"""auto break case char const continue default do double else enum extern float for
goto if inline int long register restrict return short signed sizeof static struct switch typedef union
unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
_Static_assert _Thread_local""".split())
"""C's keywords (C11): names no macro can be taken for."""
_C_FOLLOWERS = MappingProxyType(_DO_WHILE)
_CPP_FOLLOWERS = MappingProxyType({"try": (frozenset({"catch"}), " catch (...) {}"), **_DO_WHILE})
_FOR_CLAUSES = MappingProxyType({"for": (b";;", b";", b"")})
"""A ``for (`` header cut in its first, second or last clause (or in a ``for … of``)."""
_PHP_CLAUSES = MappingProxyType({"foreach": (b" as $_",)})
"""A ``foreach (`` header cut inside the array it iterates (``foreach (\n    [\n        'host' => 'H',``)."""
_JS_TAILS = (BLOCK_COMMENT_END, "`", '"', "'")
_TEMPLATE_QUOTES = frozenset({"`"})
"""A template literal's backtick, closed like a bracket: a text cut inside a ``${`` that spans lines closes
the substitution, then the template (``m = `A ${\n  a ? `b` : `c``` closes as ``}`…``)."""

GRAMMARS: dict[str, Grammar] = {
    grammar.name: grammar
    for grammar in (
        Grammar("javascript", "tree_sitter_javascript", "language", _JS_TAILS, followers=_JS_FOLLOWERS,
                endings=_JS_ENDINGS, headers=_JS_HEADERS, quotes=_TEMPLATE_QUOTES, clauses=_FOR_CLAUSES,
                stand_ins=((_EXPORTED_KEYWORD, b"_"), (_IMPORTED_KEYWORD, b"_"),
                           (_JSX_TAG, _jsx_reserved_names)), open_tags=True),
        Grammar("typescript", "tree_sitter_typescript", "language_typescript", _JS_TAILS,
                followers=_JS_FOLLOWERS, endings=_TS_ENDINGS, fillers=_TYPE_ARGUMENTS,
                stand_ins=_TYPESCRIPT_STAND_INS, angles=True, parameter_types=True, headers=_TS_HEADERS,
                quotes=_TEMPLATE_QUOTES, clauses=_FOR_CLAUSES),
        Grammar("tsx", "tree_sitter_typescript", "language_tsx", _JS_TAILS, followers=_JS_FOLLOWERS,
                endings=_TS_ENDINGS, fillers=_TYPE_ARGUMENTS, stand_ins=_TS_STAND_INS, angles=True,
                parameter_types=True, headers=_TS_HEADERS, quotes=_TEMPLATE_QUOTES, clauses=_FOR_CLAUSES,
                open_tags=True),
        Grammar("go", "tree_sitter_go", "language", (*_C_LIKE, "`"), terminator="\n", headers=_GO_HEADERS,
                type_bodies=_GO_TYPE_BODIES, type_literal=b"{}", literals=_GO_LITERALS),
        Grammar("rust", "tree_sitter_rust", "language", _C_LIKE, nested_comments=True, terminator=";",
                fillers=_RUST_ATTRIBUTED, arms=(_RUST_ARMS, b" => {}"), followers=_RUST_FOLLOWERS,
                stand_ins=((_RUST_TRY, b"_"), (_LONE_TOKEN, b"_"), (_RAW_NAME, b"_"), (_NEGATIVE_IMPL, b" "),
                           (_UNIT_STRUCT_WHERE, _blank_clause), (_FIELD_ATTRIBUTE, b" ")),
                raw_string=re.compile(rb'(?<!\w)[bc]?r(#+)"')),
        Grammar("java", "tree_sitter_java", "language", (BLOCK_COMMENT_END, '"""', '"'), followers=_FOLLOWERS,
                terminator=";", endings=_JAVA_ENDINGS, parameters=(b" _ _", b" {}")),
        Grammar("c", "tree_sitter_c", "language", _C_LIKE, followers=_C_FOLLOWERS,
                terminator=";", conditionals=True, foreign=_CPP_LINE, block_end=b"} _;",
                stand_ins=((_BARE_SWITCH, b" "), (_TYPE_ARGUMENT, b" ")), line_strings=_C_STRINGS,
                statement_lines=True, reserved=_C_KEYWORDS, closed_items=True),
        Grammar("cpp", "tree_sitter_cpp", "language", (*_C_LIKE, ')"'), followers=_CPP_FOLLOWERS,
                terminator=";", conditionals=True, block_end=b"} _;", call_body=b" {}", angles=True,
                fillers=(*_TEMPLATE_HEADS, _NEXT_INITIALIZER),
                stand_ins=((_MEMBER_OPERATOR, b"_"), (_ARROW_MEMBER_POINTER, b" "),
                           (_DEFAULTED_POINTER, b" "), (_DECLTYPE_LIST, b"_"), (_TEMPLATE_MACRO, b"_"),
                           (_BARE_SWITCH, b" "), (_NEW_CONST, b" "), (_STRING_MACRO, _string_for_macro),
                           (_TYPENAME_VALUE, b" "), (_REFERENCE_INIT, b" "), (_NEW_POINTER_ARRAY, b" "),
                           (_DEFAULT_BRACES, b"_"), (_DELETED_FUNCTION, _as_zero),
                           (_MEMBER_POINTER_TYPE, b" "), (_EXPLICIT_INSTANTIATION, b" "),
                           (_TYPENAME_MACRO, b"_"), (_ENUM_BASE, b" "),
                           (_DEFAULT_DECLARATOR_TYPE, b" ")),
                line_strings=_C_STRINGS, statement_lines=True, misread=_CPP_MISREAD),
        Grammar(
            "ruby", "tree_sitter_ruby", "language", ('"', "'", "`", "/", "\n=end\n"),
            interpolated=frozenset({'"', "`", "/"}),
            keywords=MappingProxyType(dict.fromkeys(_RUBY_BLOCKS, "end")), fillers=(b" = _",),
            modifier_parents=frozenset({"if_modifier", "unless_modifier", "while_modifier", "until_modifier",
                                        "rescue_modifier", "conditional"}),
            heredoc=re.compile(rb"<<[~-]?(['\"`]?)((?<=['\"`])[^'\"`\n]+|[A-Za-z_]\w*)\1"),
            delimited=re.compile(rb"(?<![\w)\]}])%[qQwWiIrsx]?([({\[<|!/^]|%(?=\s)|(?<=%r)%)"),
            stand_ins=((_SPECIAL_GLOBAL_SYMBOL, b"_"),),
        ),
        Grammar("php", "tree_sitter_php", "language_php", (*_C_LIKE, "'"), followers=_PHP_FOLLOWERS,
                fillers=_PHP_ATTRIBUTE_TARGETS, parameters=(b" $_", b" {}"), clauses=_PHP_CLAUSES,
                expression_blocks=4,
                terminator=";", heredoc=re.compile(rb"<<<[ \t]*(['\"]?)([A-Za-z_]\w*)\1"),
                stand_ins=((_PHP_STRING_KEY, b"k"),)),
        Grammar("shell", "tree_sitter_bash", "language", ("'", '"', "`"),
                keywords=MappingProxyType({"if": "fi", "do": "done", "case": "esac"}),
                quotes=frozenset({'"', "`"}), followers=_SHELL_CONDITIONS,
                pattern_starts=frozenset({"in", ";;", ";&", ";;&"}),
                fillers=(b" ; then :", b" ; do :\ndone", b" : ; then :", b" : ; do :\ndone"),
                continued=((re.compile(rb"\|[ \t]*\\\n\Z"), b"_) ;;"),),
                heredoc=re.compile(rb"<<-?[ \t]*\\?(['\"]?)([A-Za-z_]\w*)\1"),
                stand_ins=((_FOR_DO, b";"), (_TILDE, b"_"), (_TEST_OPEN, b"_"), (_TEST_CLOSE, b"_"),
                           (_BACKTICK_BLANKS, _backtick_after_blanks), (_QUOTED_BLANKS, b"_"),
                           (_ASSIGNMENT_REDIRECTED, b"_"), (_NEGATED_ASSIGNMENTS, b" "),
                           (_LITERAL_DOLLAR, b"_"),
                           (_TWO_SUBSHELLS, _subshells), (_QUOTED_HEREDOC, _blank_body),
                           (_ODD_HEREDOC, _odd_heredoc), (_BARE_HEREDOC, b":")),
                line_commands=True),
        Grammar("html", "tree_sitter_html", "language", ("-->", '"', "'", ">"),
                stand_ins=((_XML_DECLARATION, b" "), (_TEMPLATE_TAG, b"_"), (_TEXT_ANGLE, b" "))),
        Grammar("css", "tree_sitter_css", "language", (BLOCK_COMMENT_END, '"', "'"),
                stand_ins=((_NTH_ARGUMENT, b"2"), (_KEYFRAME_FRACTION, b"0"), (_STAR_HACK, b"_"),
                           (_CUSTOM_MEDIA, b" ")), line_strings=_CSS_STRINGS, lenient_strings=True,
                call_line_end=re.compile(rb";(?=[ \t]*\r?\n)")),
    )
}
"""Every tree-sitter language a gate can name (``check javascript``)."""
assert tuple(GRAMMARS) == SYNTAX_TREE_LANGUAGES, "model.validators.SYNTAX_TREE_LANGUAGES names every grammar"

_LANGUAGES: dict[str, Any] = {}
_LOCK = threading.Lock()


class GrammarUnavailable(Exception):
    """The grammar's wheel (or the ``tree-sitter`` binding) is not installed or does not load."""


def parser(name: str) -> Any:
    """A ``tree_sitter.Parser`` for the language, its grammar imported on first use.

    A parser is not thread-safe: each thread gets its own, sharing the loaded language.
    """
    parsers: dict[str, Any] | None = getattr(_THREAD, "parsers", None)
    if parsers is None:
        parsers = _THREAD.parsers = {}
    found = parsers.get(name)
    if found is None:
        language = _language(name)
        import tree_sitter

        found = parsers[name] = tree_sitter.Parser(language)
    return found


_THREAD = threading.local()


def _language(name: str) -> Any:
    with _LOCK:
        language = _LANGUAGES.get(name)
        if language is None:
            grammar = GRAMMARS[name]
            try:
                import tree_sitter

                module = importlib.import_module(grammar.module)
                language = tree_sitter.Language(getattr(module, grammar.function)())
            except (ImportError, AttributeError, ValueError, TypeError) as error:
                raise GrammarUnavailable(
                    f"the {name} grammar does not load ({error}); install policyctl's grammars: "
                    f"pip install {grammar.module.replace('_', '-')}"
                ) from error
            _LANGUAGES[name] = language
    return language

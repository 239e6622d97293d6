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

import bisect
import re
from collections import deque
from collections.abc import Callable

from policy.runtime.gates.witnessed import Witnessed

_DIRECTIVE_START = re.compile(rb"^[ \t]*#", re.MULTILINE)
_CONDITIONAL_KEYWORDS = rb"if|ifdef|ifndef|elif|elifdef|elifndef|else|endif"
_DIRECTIVE = re.compile(rb"[ \t]*#[ \t]*(" + _CONDITIONAL_KEYWORDS + rb")\b(.*)")
_ANY_DIRECTIVE = re.compile(rb"#[ \t]*(?:" + _CONDITIONAL_KEYWORDS + rb")\b")
"""What each line ``_DIRECTIVE`` matches holds: one search (from its literal ``#``) finds whether any does."""
_BLOCK_COMMENT = re.compile(rb"/\*(?:[^*]++|\*(?!/))*+(\*/|\Z)")
"""A block comment, or one open to the end of the text: matched whole, so that no search starts again at an
opener inside it (one open comment holding many openers was read to its end from each)."""
_CONTINUED = re.compile(rb"[ \t]*\\\r?\n")
_CODE_AFTER = re.compile(rb"[ \t]*[^\s\\]")
_NOT_NEWLINE = re.compile(rb"[^\r\n]")
_FUNCTION_DEFINE = re.compile(rb"[ \t]*#[ \t]*define[ \t]+\w+\(")
"""A function-like macro's definition: its parameter list is grammar, its body a token list."""
_CONDITION_NAME = re.compile(rb"((?:__has_include|HAS_INCLUDE)[ \t]*\([ \t]*)?"
                             rb"(<[^<>\n]*>|\"(?:[^\"\\\n]|\\.)*\")")
"""A header name ``__has_include`` tests in angle brackets (also in a macro wrapping it, fmt's
``FMT_HAS_INCLUDE(<version>)``), or a string (``__has_include ("linux/mount.h")``, hedley's
``JSON_HEDLEY_HAS_WARNING("-Wc++98-compat")``): a macro's argument, which tree-sitter reads as no
expression in a condition: read as a name."""
_FALSE = re.compile(rb"\s*0\s*(?:/[/*].*)?$")
_MACRO_NAME = rb"(?:_*[A-Z][A-Z0-9]*_[A-Za-z0-9_]*|_*[A-Z][A-Z0-9]+|__declspec)"
"""An upper-case name, or one with an underscore starting upper-case (``DECLARE_PEM_rw``,
``__BEGIN_DECLS``), or Microsoft's ``__declspec`` (``__declspec(align(8))`` alone on its line)."""
_MACRO_CALL = re.compile(rb"^[ \t]*(" + _MACRO_NAME + rb"[ \t]*\()", re.MULTILINE)
_LINE_REST = re.compile(
    rb"[ \t]*([;,]?)[ \t]*(?://[^\n]*|/\*(?:[^*\n]|\*(?!/))*+\*/[ \t]*)?(?:\r?\n|$)"
    rb"\s*(?:(?:/\*.{0,2048}?\*/|//[^\n]*)\s*)*(.?)", re.DOTALL)
"""What follows a macro call: a ``;`` or ``,`` (maybe then a comment that ends on the line: rdma's
``RDMA_UAPI_PTR(void *, p); /* … */``), and the first character after the comments of the next lines."""
_MACRO_LINE = Witnessed(
    re.compile(rb"^[ \t]*+((?:" + _MACRO_NAME + rb"(?!\w)[ \t]*+)++:?)[ \t]*+$", re.MULTILINE),
    rb"(?m)^[ \t]*[A-Z_][A-Za-z0-9_ \t]*:?[ \t]*$")
"""A line that is only macros' names (``FMT_BEGIN_NAMESPACE``, ``GTEST_NO_SANITIZE_A_ GTEST_NO_SANITIZE_B_``),
maybe an access specifier's (``JSON_PRIVATE_UNLESS_TESTED:``).  Each name ends where its word ends and the
blanks are possessive, so a line matches in one way only and one that is not such a line fails in time linear
in its length (without them ``GMOCK_DEFINE_DEFAULT_ACTION_FOR_RETURN_TYPE_(`` was split into names in
exponentially many ways, and a name then 100,000 blanks took 190 s)."""
_BLOCK_MACRO = Witnessed(
    re.compile(rb"^[ \t]*(_?[A-Z][A-Z0-9_]*)[ \t]*(?=\{[ \t]*(?://[^\n]*)?\r?$)", re.MULTILINE),
    rb"(?m)^[ \t]*_?[A-Z][A-Z0-9_]*[ \t]*\{[ \t]*(?://[^\n]*)?\r?$")
"""An all-caps name starting a statement, before the ``{`` that ends its line (fmt's ``FMT_TRY {``): a macro
that expands to a keyword, such as ``try``, or to nothing."""
_NAME_MACRO = Witnessed(
    re.compile(rb"[ \t](?<=[\w>*&][ \t])[ \t]*([A-Za-z_]\w*[a-z]\w*)[ \t]+(_?[A-Z][A-Z0-9_]+)"
               rb"(?=[ \t]*\()"),
    rb"[\w>*&][ \t]+[A-Za-z_]\w*[a-z]\w*[ \t]+_?[A-Z][A-Z0-9_]+[ \t]*\(")
"""An all-caps name between a declarator's name and its parameters (fmt's ``inline null<> localtime_r
FMT_NOMACRO(...)``): a macro that expands to nothing (group 2).  It starts with a blank, the name before it
looked behind from there: the search skips to blanks rather than trying each byte."""
ALL_CAPS = rb"_?[A-Z][A-Z0-9]*_[A-Z0-9_]*"
"""An all-caps name with an underscore, maybe after one more (an implementation's: gcrypt's
``_GCRY_GCC_ATTR_SENTINEL(0)``, nettle's ``_NETTLE_ATTRIBUTE_PURE``): a macro's, as C and C++ write them (the
C++ stand-ins of ``grammars`` read them too)."""
_ALL_CAPS_NAME = re.compile(ALL_CAPS)
_SPECIFIER_MACRO = Witnessed(
    re.compile(rb"(?<![\w.>:])(" + ALL_CAPS + rb")[ \t]+"
               rb"(?=~[A-Za-z_]\w*[ \t]*\(|[A-Za-z_]\w*\b[ \t]*(?:[A-Za-z_(*&<]|::"
               rb"|\r?\n[ \t]*[A-Za-z_]\w*[ \t]*\())"),
    ALL_CAPS + rb"[ \t]+(?:~[A-Za-z_]\w*[ \t]*\(|[A-Za-z_]\w*\b[ \t]*(?:[A-Za-z_(*&<]|::"
    rb"|\r?\n[ \t]*[A-Za-z_]\w*[ \t]*\())")
"""An all-caps name with an underscore before a type and a name (``GTEST_API_ void f();``, ``FMT_CONSTEXPR
inline T f(``, ``GL_API void (*f)(``, libffi's ``FFI_API ffi_status`` then ``ffi_prep_cif (`` on the next
line, ``FMT_CONSTEXPR typed_node(`` a constructor in its class, ``FMT_API ~buffered_file()`` a destructor): an
export or attribute macro, which expands
to a specifier or to nothing; not a type before a function's name at a line's start (``X509_LOOKUP_TYPE
X509_OBJECT_get_type(``, ``_NAME_CALL``)."""
_NAME_CALL = re.compile(rb"[ \t]+[A-Za-z_]\w*[ \t]*\(")
_LEADING_MACRO = Witnessed(
    re.compile(rb"^[ \t]*+((?:(?:" + ALL_CAPS + rb"|__[a-z]\w*+)[ \t]++)*?)"
               rb"(__[a-z]\w*+|[A-Z][A-Z0-9_]*+)[ \t]++"
               rb"(?=(?:(?:const|volatile)[ \t]+)?(?:(?:struct|union|enum)[ \t]+)?"
               rb"(?!(?:const|volatile|struct|union|enum)\b)"
               rb"([A-Za-z_]\w*+)(?:\([\w \t*]*+\))?[ \t*]+(?:[A-Z][A-Z0-9_]*+[ \t]++)?"
               rb"[A-Za-z_]\w*+[ \t]*\()", re.MULTILINE),
    rb"(?m)^[ \t]*(?:(?:" + ALL_CAPS + rb"|__[a-z]\w*)[ \t]+)*(?:__[a-z]\w*|[A-Z][A-Z0-9_]*)[ \t]+"
    rb"(?:(?:const|volatile)[ \t]+)?(?:(?:struct|union|enum)[ \t]+)?"
    rb"[A-Za-z_]\w*(?:\([\w \t*]*\))?[ \t*]+(?:[A-Z][A-Z0-9_]*[ \t]+)?[A-Za-z_]\w*[ \t]*\(")
"""A name starting a line before a type and a function's name (openssl's ``__owur const BIO_METHOD
*BIO_f_ssl(``, ``__owur STACK_OF(X509_NAME) *f(``, ``__owur const struct t *f(``, Tcl's ``EXTERN mp_err
TclBN_mp_add(``), maybe after more of these or all-caps ones (group 1: ``OSSL_DEPRECATEDIN_3_0 __owur
BIGNUM *f(``, ``__owur __owur T *f(``): an implementation's name or an upper-case macro that expands to a
specifier or nothing.  Its group 3 is the type, kept whatever read it as a macro before (``__owur
OSSL_HANDSHAKE_STATE SSL_get_state(``: no calling convention)."""
_CLASS_MACRO = Witnessed(
    re.compile(rb"\b(?:class|struct|union)[ \t]+(" + ALL_CAPS + rb")[ \t]+"
               rb"(?=[A-Za-z_]\w*\b\s*(?::(?!:)|\{|final\b|<))"),
    rb"\b(?:class|struct|union)[ \t]+" + ALL_CAPS
    + rb"[ \t]+[A-Za-z_]\w*\b[\t\n\v\f\r ]*(?::|\{|final\b|<)")
"""The same in a class head (``class GTEST_API_ Cardinality {``, ``class GTEST_API_ Matcher<const T&>``)."""
_CALLING_CONVENTION = (rb"(?:" + ALL_CAPS
                       + rb"|WINAPI|APIENTRY|CALLBACK|NTAPI|WSAAPI|__(?:std|c|fast|this|vector)call)")
"""An all-caps macro with an underscore, or one of Windows' calling conventions (``DWORD WINAPI f(``, fmt's
``extern "C" __declspec(dllimport) int __stdcall WriteConsoleW(``, which tree-sitter-cpp 0.23 rejects after a
linkage specification)."""
_DECLARATOR_MACRO = Witnessed(
    re.compile(
        rb"(?<=[*&])[ \t]*(_?[A-Z][A-Z0-9_]+)(?=\s+[A-Za-z_]\w*[ \t]*\()"
        rb"|(?<=\w[ \t])(?<!\bstruct[ \t])(?<!\bunion[ \t])(?<!\benum[ \t])(?<!\bclass[ \t])"
        rb"[ \t]*(" + _CALLING_CONVENTION + rb")(?=\s+[A-Za-z_]\w*[ \t]*\()"
        rb"|(?<=\()[ \t]*(_?[A-Z][A-Z0-9_]+)"
        rb"(?=(?:[ \t]+|[ \t]*\*[ \t]*)[A-Za-z_]\w*[ \t]*\)[ \t]*\()"
        rb"|\b(?:void|char|short|int|long|float|double|signed|unsigned|bool|_Bool"
        rb"|[A-Z][A-Z0-9_]*[ \t]+[A-Za-z_]\w*)[ \t]+([A-Z][A-Z0-9]+)"
        rb"(?=\s+[A-Za-z_]\w*[ \t]*\()"),
    rb"[*&][ \t]*_?[A-Z][A-Z0-9_]+[\t\n\v\f\r ]+[A-Za-z_]\w*[ \t]*\("
    rb"|\w[ \t]+" + _CALLING_CONVENTION + rb"[\t\n\v\f\r ]+[A-Za-z_]\w*[ \t]*\("
    rb"|\([ \t]*_?[A-Z][A-Z0-9_]+(?:[ \t]+|[ \t]*\*[ \t]*)[A-Za-z_]\w*[ \t]*\)[ \t]*\("
    rb"|\b(?:void|char|short|int|long|float|double|signed|unsigned|bool|_Bool"
    rb"|[A-Z][A-Z0-9_]*[ \t]+[A-Za-z_]\w*)[ \t]+[A-Z][A-Z0-9]+[\t\n\v\f\r ]+[A-Za-z_]\w*[ \t]*\(")
"""The same between a function's type and its name (ICU's ``U_CAPI UFormatter* U_EXPORT2`` or ``U_CAPI
void U_EXPORT2``, then ``ufmt_open(`` on the next line; not after a tag, ``struct NODE_T f(``; gtest's
``static DWORD WINAPI ThreadMain(``), or any all-caps name before a function pointer's name (``typedef void
(GL_APIENTRYP PFNGLPROC) (GLenum t);``, gl.h's ``(APIENTRYP PFNGLTEXIMAGE3DPROC) (``, node's ``typedef
napi_value(NAPI_CDECL* napi_callback)(``), or any all-caps name between a basic type, or a macro and a
type, and a function's name (gl.h's ``GLAPI void GLAPIENTRY glClearIndex(``, ``GLAPI GLboolean GLAPIENTRY
glIsEnabled(``), or after a ``*`` (``const GLubyte * GLAPIENTRY glGetString(``): a calling convention,
which expands to an attribute, a ``*`` or nothing."""
_ATTRIBUTE_CALL = Witnessed(
    re.compile(rb"\b([A-Za-z_]\w*)[ \t]+(" + ALL_CAPS + rb"[ \t]*\([^()\n]*\))"
               rb"(?=\s+\**[A-Za-z_]\w*[ \t]*[;,=(\[])"),
    rb"\b[A-Za-z_]\w*[ \t]+" + ALL_CAPS
    + rb"[ \t]*\([^()\n]*\)[\t\n\v\f\r ]+\**[A-Za-z_]\w*[ \t]*[;,=(\[]")
"""An all-caps macro's call between a type and a declarator (Tcl's ``typedef T MP_DEPRECATED(x) name;``, X11's
``static inline void _X_ATTRIBUTE_PRINTF(2, 3)`` then ``prmsg(`` on the next line): an attribute; not after a
keyword other than a basic type's (``extern NCURSES_EXPORT(int) f(``: the call is the type)."""
_DECLARATOR_WRAPPER = Witnessed(
    re.compile(rb"\b([A-Za-z_]\w*)\s+(__[A-Za-z]\w*|" + ALL_CAPS + rb")[ \t]*(\()"
               rb"(?=[ \t]*[^\s();{}][^();{}]*\()"),
    rb"\b[A-Za-z_]\w*[\t\n\v\f\r ]+(?:__[A-Za-z]\w*|" + ALL_CAPS
    + rb")[ \t]*\([ \t]*[^\t\n\v\f\r ();{}][^();{}]*\(")
"""A macro wrapping a declarator whose parameter list it holds, after a type (glibc's ``int`` then ``__NTH
(tolower (int __c))``, ``extern int __REDIRECT_NTH (timerfd_settime, (int __ufd, …), __timerfd_settime64)``):
its arguments are blanked (group 3 is its ``(``), so that it reads as a function with no parameters; not an
attribute, whose arguments start with a ``(`` (``timer __attribute__((aligned(8)))``)."""
_BEFORE_TYPE = Witnessed(
    re.compile(rb"(?<![\w.>:])([A-Za-z_]\w*+)[ \t]++(?=(?:[A-Za-z_]\w*+[ \t]+){0,3}?"
               rb"(?:void|char|short|int|long|float|double|signed|unsigned|bool|_Bool)\b)"),
    rb"[A-Za-z_]\w*[ \t]+(?:[A-Za-z_]\w*[ \t]+){0,3}"
    rb"(?:void|char|short|int|long|float|double|signed|unsigned|bool|_Bool)\b")
"""A name before a basic type, maybe with a few more names between (``__owur int f(``, ``ossl_noreturn void
g(``, ``static ossl_unused ossl_inline int h(``): no type or declarator comes there, so unless it is a keyword
(``unsigned int``) it is a macro that expands to a specifier or nothing."""
_KEYWORDS = frozenset(b"""
alignas alignof asm auto bool break case catch char class co_await co_return co_yield concept const
consteval constexpr constinit const_cast continue decltype default delete do double dynamic_cast
else enum explicit export extern float for friend goto if inline int long mutable namespace new
noexcept operator private protected public register reinterpret_cast requires restrict return short
signed sizeof static static_assert static_cast struct switch template this thread_local throw try
typedef typeid typename union unsigned using virtual void volatile while _Alignas _Alignof _Atomic
_Bool _Noreturn _Static_assert _Thread_local""".split())
_ATTRIBUTE_NAME = rb"(?:__\w+|" + ALL_CAPS + rb"|[A-Za-z_]\w*+(?=[ \t]*\(\())"
_TRAILING_ATTRIBUTE = Witnessed(
    re.compile(rb"[)\]](?:\s*+(?:const|volatile|override|final|noexcept)\b)*+"
               rb"[ \t]*(?:\r?\n[ \t]*)?(" + _ATTRIBUTE_NAME + rb")"),
    rb"[)\]](?:[\t\n\v\f\r ]*(?:const|volatile|override|final|noexcept)\b)*[ \t]*(?:\r?\n[ \t]*)?"
    rb"(?:__\w+|" + ALL_CAPS + rb"|[A-Za-z_]\w*[ \t]*\(\()")
"""An implementation's name, an all-caps macro or a name called with ``((`` after a declarator's ``)`` or
``]`` (glibc's ``__THROW``, ``__nonnull ((1))``, ``__LOCK_ALIGNMENT``, fmt's ``FMT_DECLTYPE_RETURN(…)``,
openssl's ``ossl_bio__attr__((__format__(…)))``), maybe after a method's qualifiers (``) const
GTEST_LOCK_EXCLUDED_(mu) = 0;``): an attribute or a trailing return type, blanked with its arguments."""
_DECLARATION_END = frozenset(b";,{=")
_ALIGNMENT_MACRO = Witnessed(
    re.compile(rb"\b([A-Za-z_]\w*+)[ \t]++(__?[A-Z][A-Z0-9_]*+)(?=[ \t]*[;,=)])"),
    rb"\b[A-Za-z_]\w*[ \t]+__?[A-Z][A-Z0-9_]*[ \t]*[;,=)]")
"""An implementation's all-caps macro after a declarator's name (glibc's ``int __data __ONCE_ALIGNMENT;``,
X11's ``int sig _X_UNUSED)``)."""
_FIELD_MACRO = Witnessed(
    re.compile(rb"(?<![\w.>:*&])([A-Za-z_]\w*)[ \t]+([A-Za-z_]\w*)[ \t]+([A-Z][A-Z0-9_]*)"
               rb"(?=[ \t]*[;,)])"),
    rb"[A-Za-z_]\w*[ \t]+[A-Za-z_]\w*[ \t]+[A-Z][A-Z0-9_]*[ \t]*[;,)]")
"""Any all-caps name after a type and a declarator's name (X11's ``CARD32 length B32;``, a bit-field's width):
a macro, as three names in a row are no declaration."""
_BASIC_TYPES = frozenset(b"void char short int long float double signed unsigned bool _Bool".split())
_TAGS = (b"class", b"struct", b"union", b"enum")
_CONTINUATION = frozenset(b".-+*/%&|^<>=?:,")
"""What the line after a macro call without ``;`` starts with when the call is an operand
(``ON_CALL(…)\n.Will…``, ``ASSERT_DEATH(…)\n<< "…"``): the call is read as a name then."""
MACRO_SPAN = 4096
"""The longest macro call blanked, in bytes."""


def blank_conditionals(data: bytes, foreign: re.Pattern[bytes] | None = None) -> bytes:
    """``data`` with its conditional directives and all branches but the compiled-looking one blanked; a
    branch with a line ``foreign`` matches (C++ in a C header) is one a compiler of this language skips."""
    if _ANY_DIRECTIVE.search(data) is None:  # no line is a conditional's: a loop over lines for nothing
        return data
    lines = data.splitlines(keepends=True)
    skipped = _foreign_branches(lines, foreign) if foreign is not None else set()
    out: list[bytes] = []
    open_branches: list[list[bool]] = []
    """Per open conditional: [a branch was kept, the branch being read is blanked]."""
    branches = 0
    continued = in_comment = False
    for line in lines:
        if in_comment:  # a comment a directive's line opened: blanked with it, up to its end
            close = line.find(b"*/") + 2
            in_comment = close == 1
            out.append(_blank(line) if in_comment else b" " * close + line[close:])
            continue
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
            branches += 1
            never = (keyword == b"if" and _FALSE.match(found.group(2)) is not None) or branches in skipped
            open_branches.append([not never, never])
        elif keyword == b"endif":
            if open_branches:
                open_branches.pop()
        elif open_branches:
            branches += 1
            branch = open_branches[-1]
            branch[1] = branch[0] or branches in skipped
            branch[0] = not branch[1] or branch[0]
        out.append(_blank(line))
        continued = line.rstrip(b"\r\n").endswith(b"\\")
        in_comment = not continued and _opens_comment(line)
    return b"".join(out)


def _opens_comment(line: bytes) -> bool:
    """Whether ``line`` (a directive's) ends inside a block comment it opens (Xtrans's ``#ifdef
    XTRANS_TRANSPORT_C /* only provide`` … ``building the transport.c file that has them in */``)."""
    index = 0
    while (start := line.find(b"/*", index)) >= 0:
        if line.find(b"//", index, start) >= 0:
            return False
        close = line.find(b"*/", start + 2)
        if close < 0:
            return True
        index = close + 2
    return False


def _foreign_branches(lines: list[bytes], foreign: re.Pattern[bytes]) -> set[int]:
    """The numbers (in order, from 1) of the branches that hold a line ``foreign`` matches outside a nested
    conditional, and of the first branches of every conditional whose condition is one such branch's (gmp's
    ``#if defined (__cplusplus)`` then ``extern "C" {`` and ``using std::FILE;``, and later under the same
    condition the ``}`` that closes it: the condition is false for this language's compiler)."""
    found: set[int] = set()
    current: list[int] = []
    conditions: dict[bytes, list[int]] = {}  # each first branch's condition → those branches
    branches = 0
    continued = False
    for line in lines:
        directive = None if continued else _DIRECTIVE.match(line)
        if directive is not None:
            keyword = directive.group(1)
            if keyword == b"endif":
                if current:
                    current.pop()
            elif keyword in (b"if", b"ifdef", b"ifndef") or current:
                branches += 1
                if keyword.startswith(b"if"):
                    current.append(branches)
                    condition = keyword + b" " + b"".join(directive.group(2).split())
                    conditions.setdefault(condition, []).append(branches)
                else:
                    current[-1] = branches
        elif not continued and current and foreign.match(line):
            found.add(current[-1])
        continued = line.rstrip(b"\r\n").endswith(b"\\")
    for numbers in conditions.values():
        if not found.isdisjoint(numbers):
            found.update(numbers)
    return found


_CHECKED_DIRECTIVE = re.compile(
    rb"^[ \t]*#[ \t]*(?:(?:if|ifdef|ifndef|elif|elifdef|elifndef)\b|define[ \t]+\w+\()", re.MULTILINE)


def has_checked_directives(data: bytes) -> bool:
    """Whether ``data`` has a line ``directives_only`` keeps (without one it keeps only blanks)."""
    return _CHECKED_DIRECTIVE.search(data) is not None


_CONDITIONAL_OPERATOR = re.compile(rb"\?|(?<!:):(?!:)")
"""A condition's ``?`` and ``:`` (linux/aio_abi.h's ``#if defined(__BYTE_ORDER) ? __BYTE_ORDER ==
__LITTLE_ENDIAN : defined(__LITTLE_ENDIAN)``), which tree-sitter-c and -cpp 0.23 do not parse in one."""


def _readable_condition(text: bytes) -> bytes:
    """A condition's ``text`` (or a line of a directive ``directives_only`` keeps) as tree-sitter reads a
    condition: each header name and string ``_CONDITION_NAME`` finds read as a name of its length, each ``?``
    and ``:`` as ``|``, each ``::`` of a scoped attribute's name as ``__`` (llvm's
    ``__has_cpp_attribute(gnu::fallthrough)``)."""
    return _CONDITIONAL_OPERATOR.sub(b"|", _CONDITION_NAME.sub(_as_name, text).replace(b"::", b"__"))


def _as_name(found: re.Match[bytes]) -> bytes:
    """What ``_CONDITION_NAME`` found, its header name or string read as a name."""
    tested, name = found.group(1), found.group(2)
    if tested is None and name.startswith(b"<"):  # `a < b && c > d`: no header name
        return found.group()
    return (tested or b"") + b"_" * len(name)


def _comment_blanked(found: re.Match[bytes]) -> bytes:
    """A comment or string the language's pattern found, blanked but for its line breaks if it is a block
    comment."""
    text = found.group()
    return text.translate(_TO_BLANK) if text.startswith(b"/*") else text


def directives_only(data: bytes, literals: re.Pattern[bytes] | None) -> bytes:
    """``data`` with all but its ``#if``/``#elif`` lines and function-like ``#define`` lines blanked (an
    ``#elif`` read as an ``#if``) and one ``#endif`` per ``#if`` after the end: the conditions' and
    parameter lists' own errors keep their offsets, and a directive ends at its line's end, whatever the
    code around it lacks.  A line inside a block comment is no directive (glibc's cdefs.h quotes ``#if
    defined __has_attribute && __has_attribute (...)`` in one): ``literals``, the language's comments and
    strings matched whole (``Grammar.line_strings``), find the comments, so that a ``/*`` in a string or
    after ``//`` opens none."""
    out: list[bytes] = []
    opened = 0
    continued = False
    if literals is not None and b"/*" in data:
        data = literals.sub(_comment_blanked, data)
    for line in data.splitlines(keepends=True):
        found = None if continued else _DIRECTIVE.match(line)
        if continued or (found is None and _FUNCTION_DEFINE.match(line)):
            out.append(_readable_condition(line))
        elif found is None or found.group(1) in (b"else", b"endif"):
            out.append(_blank(line))
            continue
        else:
            opened += 1
            keyword = found.group(1)
            read_as = b"if" + keyword[4:] if keyword.startswith(b"elif") else keyword
            padding = b" " * (len(keyword) - len(read_as))
            condition = _readable_condition(line[found.end(1) :])
            out.append(line[: found.start(1)] + read_as + padding + condition)
        continued = line.rstrip(b"\r\n").endswith(b"\\")
    return b"".join(out) + b"\n#endif" * opened + b"\n"


_DEFINE = re.compile(rb"^[ \t]*#[ \t]*(?:define|undef)\b", re.MULTILINE)


def blank_listed_defines(data: bytes) -> bytes:
    """``data`` with each ``#define`` and ``#undef`` inside a list blanked: after code that ends with ``,``
    (an enum's ``PTRACE_TRACEME = 0,`` then ``#define PT_TRACE_ME PTRACE_TRACEME``, a struct's declarators
    ``gap,`` … ``rate,``), or before a ``}`` (or the text's end, maybe after more directives: linux/xfrm.h's
    enum cut after its ``#define``s) that code without ``;`` precedes (an enum's last member).
    tree-sitter-c reads a directive only where a declaration or statement may start; a compiler reads it
    anywhere.  An object-like macro's body is no grammar, and a function-like one's parameter list is
    checked on its own (``directives_only``)."""
    out: bytearray | None = None
    previous_end, previous_before = -1, b""
    for found in _DEFINE.finditer(data):
        start = found.start()
        end = _line_end(data, start)
        before = _code_before(data if out is None else out, start, previous_end, previous_before)
        if before == b"," or (before not in b";{}" and _code_after(data, end) in (b"}", b"")):
            out = bytearray(data) if out is None else out
            _blank_span(out, start, end)
            previous_end, previous_before = end, before
    return data if out is None else bytes(out)


def _line_end(data: bytes, start: int) -> int:
    """The end of the directive starting at ``start``: its last continued line's end (before its newline)."""
    end = data.find(b"\n", start)
    while end > 0 and _continued(data, end):
        end = data.find(b"\n", end + 1)
    return len(data) if end < 0 else end


def _code_before(data: bytes | bytearray, start: int, blanked_end: int, blanked_before: bytes) -> bytes:
    """The last byte of code before ``start``, past blanks and comments (empty: none, a directive's, or
    not found past ``_COMMENTS_WALKED`` comments); a walk that reaches ``blanked_end``, the end of the
    directive blanked last, has that one's answer ``blanked_before`` (a run of blanked directives is
    walked once)."""
    index = start
    for _ in range(_COMMENTS_WALKED):
        while index > 0 and data[index - 1] in _BLANKS:
            index -= 1
            if index == blanked_end:
                return blanked_before
        if data.endswith(b"*/", 0, index):
            index = data.rfind(b"/*", 0, index - 2)
            if index < 0:
                return b""
            continue
        line_start = data.rfind(b"\n", 0, index) + 1
        comment = data.find(b"//", line_start, index)
        if comment >= 0:
            index = comment
            continue
        if data.startswith(b"#", _skip_spaces(data, line_start)) or index == 0:
            return b""
        return bytes(data[index - 1 : index])
    return b""


_COMMENTS_WALKED = 16
"""How many comments ``_code_before`` walks back over (each step reads back to its line's start)."""


def _code_after(data: bytes, end: int) -> bytes:
    """The first byte of code from ``end`` on, past blanks, block comments and directives (empty: none)."""
    index = _skip_comments(data, end)
    while data.startswith(b"#", index):
        index = _skip_comments(data, _line_end(data, index))
    return data[index : index + 1]


_NAMED_VARIADIC = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+\w+\([^()\n]*?\b(\w+)(?=[ \t]*\.\.\.[ \t]*\))",
                             re.MULTILINE)
"""GNU C's named variadic parameter (linux/netfilter/x_tables.h's ``#define XT_MATCH_ITERATE(type, e, fn,
args...)``), which tree-sitter-c and -cpp 0.23 do not parse: group 1 is its name."""


def blank_named_variadics(data: bytes) -> bytes:
    """``data`` with the name of each named variadic parameter (``_NAMED_VARIADIC``) blanked, ``...`` left."""
    if b"..." not in data:
        return data
    return _NAMED_VARIADIC.sub(lambda found: found.group()[: found.start(1) - found.start()]
                               + b" " * len(found.group(1)), data)


def blank_continued_comments(data: bytes) -> bytes:
    """``data`` with each block comment that a line continuation follows blanked (``x += 1; /* carry */ \\``
    in a ``#define``), and each one on one line that more code follows on it (``#define F(r) (g(r, 1 /* asn1
    */, 0) && h(r, "P"))``): tree-sitter-c ends the directive there, or misreads the rest of its body, though
    a comment is only a space."""
    if _CLOSER_FOLLOWED.search(data) is None:  # none is followed so: no Python call per comment for nothing
        return data
    return _BLOCK_COMMENT.sub(_blank_if_continued, data)


_CLOSER_FOLLOWED = re.compile(rb"\*/[ \t]*+(?:\\\r?\n|[^\s\\])")
"""A ``*/`` followed as a comment ``blank_continued_comments`` blanks is (``_CONTINUED``, ``_CODE_AFTER``)."""


def _blank_if_continued(found: re.Match[bytes]) -> bytes:
    """The comment ``_BLOCK_COMMENT`` found, blanked if closed and followed as ``blank_continued_comments``
    says."""
    comment, end = found.group(), found.end()
    if found.group(1) and (_CONTINUED.match(found.string, end) is not None
                           or (b"\n" not in comment and _CODE_AFTER.match(found.string, end) is not None)):
        return _NOT_CONTINUATION.sub(b" ", comment)  # its lines' backslashes kept: the directive goes on
    return comment


_NOT_CONTINUATION = re.compile(rb"[^\n\\]|\\(?!\r?\n)")
"""A byte that is neither a line break nor the backslash that continues a line (libuv's ``/* Splay … \\``
then `` * Used … \\`` in a ``#define``)."""


def blank_open_directive(data: bytes) -> bytes:
    """``data`` with the directive it ends inside blanked (its last line continued by a backslash, or not
    ended yet): the rest of that directive is still to come, and what it holds so far belongs to it, not
    to the code the text leaves open (``#define F(a) \\`` then ``  g(a); \\``)."""
    body = data.rstrip(b" \t")
    if data.endswith(b"\n") and not body.rstrip(b"\r\n").endswith(b"\\"):
        return data
    start = data.rfind(b"\n", 0, len(body.rstrip(b"\r\n"))) + 1
    while start > 0 and _continued(data, start - 1):
        start = data.rfind(b"\n", 0, start - 1) + 1
    if not data[start:].lstrip(b" \t").startswith(b"#"):
        return data
    out = bytearray(data)
    _blank_span(out, start, len(out))
    return bytes(out)


def blank_open_call(data: bytes) -> bytes:
    """``data`` with the macro call it ends inside blanked from its name on (a statement's, gmock's
    ``MOCK_METHOD(void, Push, (const T& e),``, or the last of a line of calls, openssl's), or the arguments of
    a macro wrapping a declarator it ends inside (glibc's ``extern int __REDIRECT_NTH (timerfd_settime,``
    then ``(int __ufd,``): the rest of the call is still to come, and its arguments are token lists, no code
    the text leaves open.  Only where no ``;`` or brace follows the call's ``(``."""
    after = max(data.rfind(b";"), data.rfind(b"{"), data.rfind(b"}")) + 1
    calls = _MACRO_CALL.finditer(data, after)
    first = next(calls, None)
    if first is not None and _open_to_end(data, first.end() - 1) and _after_statement(data, first.start(1)):
        return _blanked_from(data, first.start(1))
    last = deque(calls, maxlen=1)  # the last of the others (openssl's calls have no `;`)
    call = last[0] if last else None
    if call is not None and _open_to_end(data, call.end() - 1) \
            and (_after_statement(data, call.start(1)) or _after_macro_call(data, call)):
        return _blanked_from(data, call.start(1))
    wrapper = _DECLARATOR_WRAPPER.pattern.search(data, after)
    if wrapper is not None and _open_to_end(data, wrapper.start(3)) \
            and (wrapper.group(1) in _BASIC_TYPES or wrapper.group(1) not in _KEYWORDS):
        return _blanked_from(data, wrapper.end(3))
    return data


def _after_macro_call(data: bytes, call: re.Match[bytes]) -> bool:
    """Whether an all-caps macro's ``call`` follows a ``)`` that ends a line: the call before it, a statement
    with no ``;`` (openssl's lines of ``OSSL_CORE_MAKE_FUNC(…)``)."""
    name = call.group(1).rstrip(b" \t(")
    return _ALL_CAPS_NAME.fullmatch(name) is not None and _code_before(data, call.start(1), -1, b"") == b")"


def _blanked_from(data: bytes, start: int) -> bytes:
    out = bytearray(data)
    _blank_span(out, start, len(out))
    return bytes(out)


def _open_to_end(data: bytes, opener: int) -> bool:
    """Whether the ``(`` at ``opener`` is still open at the text's end (strings and comments skipped)."""
    depth = 0
    for token in _PARENTHESIS_SCAN.finditer(data, opener):
        if token.group() == b"(":
            depth += 1
        elif token.group() == b")":
            depth -= 1
            if depth == 0:
                return False
    return depth > 0


_PARENTHESIS_SCAN = re.compile(rb"[()]|\"(?:[^\"\\\n]|\\.)*+\"|'(?:[^'\\\n]|\\.)*+'"
                               rb"|/\*.*?(?:\*/|\Z)|//[^\n]*", re.DOTALL)


def blank_macro_calls(data: bytes) -> bytes:
    """``data`` with the macros the grammar cannot expand blanked: each statement that is only a macro call
    (``MOCK_METHOD(void, F, ());``: an upper-case name, balanced parentheses, nothing after but a ``;``; one
    with a body, ``MATCHER(IsEmpty, x ? "a" : "b") {``, keeps its parentheses around one name), a
    line that is only a macro's name, and an export or attribute macro before a declaration
    (``_SPECIFIER_MACRO``): the grammar cannot know what the macro expands to, so it finds a ``;`` missing,
    an argument that is no expression or two types in a row."""
    out = bytearray(data)
    directives = _directive_spans(data)
    budget = _scan_budget(data)

    def code_at(offset: int) -> bool:
        return bisect.bisect_right(directives, offset) % 2 == 0  # a directive's text is its own

    def code(found: re.Match[bytes]) -> bool:
        return code_at(found.start())

    for found in filter(code, _MEMBER_GROUP.finditer(data)):
        if budget[0] > 0 and found.group(1) not in _KEYWORDS and _after_statement(data, found.start(1)):
            _member_group(data, out, found, budget)
    for found in filter(code, _BLOCK_MACRO.finditer(data)):
        if found.group(1) not in _KEYWORDS and _after_statement(data, found.start(1)):
            _blank_span(out, found.start(1), found.end(1))
    for found in filter(code, _NAME_MACRO.finditer(data)):
        if found.group(1) not in _KEYWORDS and not _after_tag(data, found.start(1)):  # `enum type M(`: a base
            _blank_span(out, found.start(2), found.end(2))
    for found in filter(code, _MACRO_LINE.finditer(data)):
        after = _skip_spaces(data, found.end())
        # not a type whose declarator follows (`T\n*f(void);`), a name given a value on the next line
        # (valgrind's enum member `_VG_USERREQ__MEMCHECK_RECORD_OVERLAP_ERROR` then `= …`) nor a function's
        # name whose parameters start there (NSPR's `PL_Base64Encode` then `(`), nor an operand (siw-abi.h's
        # `A = B |` then `C` on the next line)
        if data[after : after + 1] not in (b"*", b"=", b"(") \
                and _code_before(data, found.start(), -1, b"") not in _OPERAND_BEFORE:
            _blank_span(out, found.start(1), found.end(1))
    for found in filter(code, _SPECIFIER_MACRO.finditer(data)):
        if _after_tag(data, found.start()):  # `struct A_B x`: a type
            continue
        line_start = data[found.start() - 1 : found.start()] in (b"", b"\n")
        if line_start and _NAME_CALL.match(data, found.end(1)):
            continue  # a type, then a function name at the top level (a constructor is indented in its class)
        _blank_span(out, found.start(1), found.end(1))
    for found in filter(code, _CLASS_MACRO.finditer(data)):
        _blank_span(out, found.start(1), found.end(1))
    for found in filter(code, _DECLARATOR_MACRO.finditer(data)):
        _blank_span(out, found.start(found.lastindex or 0), found.end(found.lastindex or 0))
    for found in filter(code, _ATTRIBUTE_CALL.finditer(data)):
        if found.group(1) in _BASIC_TYPES or found.group(1) not in _KEYWORDS:
            _blank_span(out, found.start(2), found.end(2))
    for found in filter(code, _DECLARATOR_WRAPPER.finditer(data)):
        if found.group(1) in _BASIC_TYPES or found.group(1) not in _KEYWORDS:
            end = _balanced_end(data, found.start(3), budget)
            if end is not None:
                _blank_span(out, found.end(3), end - 1)
    for found in filter(code, _BEFORE_TYPE.finditer(data)):
        if found.group(1) not in _KEYWORDS:
            _blank_span(out, found.start(1), found.end(1))
    for found in filter(code, _LEADING_MACRO.finditer(data)):
        if found.group(2) not in _KEYWORDS:
            _blank_span(out, found.start(1), found.end(2))
            # the type kept, but for an indented macro before a constructor in its class (fmt's
            # `  FMT_CONSTEXPR FMT_INLINE arg_data(`): a member's type is no export macro's name
            if not (data[found.start()] in b" \t" and _ALL_CAPS_NAME.fullmatch(found.group(3))):
                out[found.start(3) : found.end(3)] = found.group(3)
    in_line_comment = _LineComments(data)
    walked = -1
    for found in filter(code, _TRAILING_ATTRIBUTE.finditer(data)):
        if found.start(1) >= walked and not in_line_comment(found.start()):
            walked = _blank_attributes(data, out, found.start(1), data[found.start()] == 41, budget)
    for found in filter(code, _ALIGNMENT_MACRO.finditer(data)):
        if found.group(1) not in _KEYWORDS:
            _blank_span(out, found.start(2), found.end(2))
    for found in filter(code, _FIELD_MACRO.finditer(data)):
        type_name, name = found.group(1, 2)
        if name not in _KEYWORDS and (type_name in _BASIC_TYPES or type_name not in _KEYWORDS):
            _blank_span(out, found.start(3), found.end(3))
    for found in filter(code, _OPERAND_CALL.finditer(data)):
        if out[found.start(1)] == data[found.start(1)]:
            end = _balanced_end(data, found.end() - 1, budget)
            if end is not None and data.find(b"\n", found.start(1), end) < 0:
                _blank_span(out, found.start(1), end)
                out[found.start(1)] = ord("_")
    declaration_open = _DeclarationOpen(out, lambda offset: not code_at(offset))
    budget = _scan_budget(data)  # the attributes' scans leave the calls' their own (openssl's lines of calls)
    for found in filter(code, _MACRO_CALL.finditer(data)):
        if out[found.start(1)] != data[found.start(1)]:
            continue  # blanked already, as an attribute (`)`, then `GTEST_LOCK_REQUIRED_(mu) {` on its line)
        if budget[0] <= 0:  # the scans have read all they may: no later call's `)` can be found
            break
        end = _balanced_end(data, found.end() - 1, budget)
        if end is None:
            continue
        opened = declaration_open(found.start(1))
        rest = _LINE_REST.match(data, end)
        if rest is not None and rest.group(1) == b",":  # an enumerator (v4l2's `F(FIXED),`), an argument
            _blank_span(out, found.start(1), end)
            out[found.start(1)] = ord("_")
            continue
        if opened:
            continue
        if data[_skip_spaces(data, end) : _skip_spaces(data, end) + 1] == b"{":  # a body: `MATCHER(a, b) {`
            if end - 1 > found.end():  # one name, also when the arguments span lines
                _blank_span(out, found.end(), end - 1)
                out[found.end()] = ord("_")
            continue
        if rest is None:
            specifier = _NEXT_WORD.match(data, end)  # fmt's `FMT_MSC_WARNING(suppress : 4566) constexpr …`
            if specifier is not None and specifier.group(1) in _KEYWORDS:
                _blank_span(out, found.start(1), end)
            continue
        if not rest.group(1) and rest.group(2) and rest.group(2)[0] in _CONTINUATION:
            _blank_span(out, found.start(1), end)  # an operand: one name, also when its arguments span lines
            out[found.start(1)] = ord("_")
        elif (not rest.group(1) and rest.group(2) == b"(" and found.end() - found.start(1) > 3
              and _parameters_follow(data, rest.start(2), budget)):
            _blank_span(out, found.start(1), end)  # a method's type and name: `_ _` then `(bool b, …) = 0;`
            out[found.start(1) : found.start(1) + 3] = b"_ _"
        elif (not rest.group(1) and rest.group(2) and b"\n" not in data[found.start(1) : end]
              and _function_follows(data, rest.start(2), found.group(1), budget)):
            out[found.start(1) : end] = b"_" * (end - found.start(1))  # a type: `NSPR_API( T *)`, then `f(`
        else:
            _blank_span(out, found.start(1), end)
            if rest.group(1) and _after_statement(data, found.start(1)):
                _declaration(out, found.start(1), found.end() - 1, end)
    return bytes(out)


_MEMBER_GROUP = Witnessed(
    re.compile(rb"^[ \t]*([A-Za-z_]\w*)[ \t]*\([^()\n]*,[ \t]*\r?\n(?=[^;{}()]*;)", re.MULTILINE),
    rb"(?m)^[ \t]*[A-Za-z_]\w*[ \t]*\([^()\n]*,[ \t]*\r?\n[^;{}()]*;")
"""A macro call whose first line ends with a ``,`` and whose arguments go on with declarations (the kernel's
``__struct_group(/* no tag */, addrs, /* no attrs */,`` then ``__be32 saddr;`` … ``);``): a group of
members."""
_GROUP_SCAN = re.compile(rb"[(){}]|/\*")


def _member_group(data: bytes, out: bytearray, found: re.Match[bytes], budget: list[int]) -> None:
    """The call ``_MEMBER_GROUP`` found written as an anonymous ``struct {`` … ``}`` when its ``)`` closes it
    before any brace, within ``MACRO_SPAN`` bytes (or the text ends inside it, the rest still to come): its
    first line becomes the ``struct {``, its ``)`` the ``}``.  The scan is charged to ``budget``."""
    depth, index, limit = 1, found.end(), min(len(data), found.end() + MACRO_SPAN, found.end() + budget[0])
    close = None
    while (token := _GROUP_SCAN.search(data, index, limit)) is not None:
        byte = data[token.start()]
        if byte == 47:  # a comment
            end = data.find(b"*/", token.end(), limit)
            if end < 0:
                break
            index = end + 2
            continue
        if byte in b"{}":
            return
        depth += 1 if byte == 40 else -1
        if depth == 0:
            close = token.start()
            break
        index = token.end()
    budget[0] -= (limit if close is None else close) - found.end()
    line = data[found.start(1) : found.end()].rstrip(b"\r\n")
    if (close is None and limit < len(data)) or len(line) < len(_STRUCT_HEAD):
        return
    out[found.start(1) : found.start(1) + len(line)] = _STRUCT_HEAD.ljust(len(line))
    if close is not None:
        out[close] = ord("}")


_STRUCT_HEAD = b"struct {"


_OPERAND_CALL = Witnessed(
    re.compile(rb"[-(,!=\[?:+*/%&|^~][ \t]*(" + ALL_CAPS + rb")[ \t]*\("),
    rb"[-(,!=\[?:+*/%&|^~][ \t]*" + ALL_CAPS + rb"[ \t]*\(")
"""An all-caps macro's call as an operand (after an operator, ``(``, ``[`` or ``,``), read as one name when it
lies on one line: its arguments are token lists, no expressions (gmock's ``GMOCK_PP_HAS_COMMA(b, )``,
``GMOCK_PP_IS_BEGIN_PARENS(sss() sss)``)."""
_NEXT_WORD = re.compile(rb"[ \t]+([A-Za-z_]\w*)")


def _parameters_follow(data: bytes, start: int, budget: list[int]) -> bool:
    """Whether the ``(`` at ``start`` opens a parameter list: its ``)`` followed by ``;``, ``{``, ``=`` or a
    qualifier (gmock's ``STDMETHOD_(int, CTDecimal)`` then ``(bool b, …) = 0;``: the call is the name)."""
    end = _balanced_end(data, start, budget)
    if end is None:  # the text may end inside the list: no `;` or brace after it
        return len(data) - start < MACRO_SPAN and _STATEMENT_END.search(data, start) is None
    after = _skip_comments(data, end)
    return data[after : after + 1] in (b";", b"{", b"=") or data.startswith(_QUALIFIERS, after)


_STATEMENT_END = re.compile(rb"[;{}]")


_QUALIFIERS = (b"const", b"override", b"noexcept", b"final", b"volatile")


def _scan_budget(data: bytes) -> list[int]:
    """The bytes one pass's parenthesis scans may read in all: linear time."""
    return [2 * len(data) + MACRO_SPAN]


def _function_follows(data: bytes, start: int, call: bytes, budget: list[int]) -> bool:
    """Whether a function's declaration or definition starts at ``start`` (the line after a macro call with
    no ``;``, ``call`` its name and ``(``): a name and ``(``, its ``)`` followed by ``;`` or ``{``, or not in
    the text yet, and not the same macro called again (openssl's ``OSSL_CORE_MAKE_FUNC(…)`` lines).  The call
    then expands to the function's type (NSPR's ``NSPR_API( PRFileMap *)`` then ``PR_OpenAnonFileMap(``), not
    to declarations of its own as the calls of a list do (``DECLARE_ASN1_FUNCTIONS(A)`` then ``…(B)``)."""
    declarator = _DECLARATOR_CALL.match(data, start)
    if declarator is None or declarator.group(1) in _KEYWORDS or call.rstrip(b"( \t") == declarator.group(1):
        # `if (a) {`: a statement, the calls before it too; a list of the same macro's calls
        return False
    end = _balanced_end(data, declarator.end() - 1, budget)
    if end is None:
        return True
    after = _skip_comments(data, end)
    return after >= len(data) or data[after] in b";{"


_DECLARATOR_CALL = re.compile(rb"([A-Za-z_]\w*)\s*\(")
_OPERAND_BEFORE = frozenset(bytes([byte]) for byte in b"=+-/%&|^!<?(,")
"""The last code before a line that an operand starts (``_code_before``): not ``*`` (a pointer's type before
its declarator), ``>`` (a template's header) nor ``:`` (an access specifier)."""


def _after_statement(data: bytes, start: int) -> bool:
    """Whether the text before ``start`` (past blanks and comments, ``_code_before``) ends a statement, a
    declaration, a block or a directive, or is empty: a declaration may come there, in a struct's body as in a
    function's."""
    return _code_before(data, start, -1, b"") in b";{}"


def _declaration(out: bytearray, start: int, parenthesis: int, end: int) -> None:
    """The blanked macro call from ``start`` to ``end`` (its ``(`` at ``parenthesis``) written as a
    declaration ``_____ _`` before its ``;``: a blanked call leaves a lone ``;``, which tree-sitter-c rejects
    in a struct's body (the kernel's ``__DECLARE_FLEX_ARRAY(struct b, bufs);``)."""
    out[start:parenthesis] = b"_" * (parenthesis - start)
    out[end - 1] = ord("_")


def _continued(data: bytes, newline: int) -> bool:
    """Whether the line ending at the offset ``newline`` ends in a backslash (before any ``\\r``): read from
    the line's end back, never a copy of what precedes it."""
    index = newline
    while index > 0 and data[index - 1] == 13:
        index -= 1
    return index > 0 and data[index - 1] == 92


def _after_tag(data: bytes, start: int) -> bool:
    """Whether ``class``, ``struct``, ``union`` or ``enum`` and blanks come just before ``start`` on its line
    (read back over the blanks only, so that the matches on one long line cost linear time in all)."""
    index = start
    while index > 0 and data[index - 1] in b" \t":
        index -= 1
    return index < start and data.endswith(_TAGS, 0, index)


class _LineComments:
    """Whether an offset is inside a ``//`` comment, for offsets asked in increasing order: each line's first
    ``//`` is looked for once, so that many questions on one long line cost linear time."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._line_end = -1
        self._comment = -1

    def __call__(self, offset: int) -> bool:
        data = self._data
        if offset > self._line_end:
            line_start = data.rfind(b"\n", 0, offset) + 1
            line_end = data.find(b"\n", offset)
            self._line_end = len(data) if line_end < 0 else line_end
            self._comment = data.find(b"//", line_start, self._line_end)
        return self._comment >= 0 and self._comment + 2 <= offset


def _directive_spans(data: bytes) -> list[int]:
    """Start and end offsets of every directive (continued lines included), in one sorted list."""
    spans: list[int] = []
    for found in _DIRECTIVE_START.finditer(data):
        if spans and found.start() < spans[-1]:
            continue  # a line continuing the directive before
        spans += [found.start(), _line_end(data, found.start())]
    return spans


def _blank_attributes(data: bytes, out: bytearray, start: int, after_parenthesis: bool,
                      budget: list[int]) -> int:
    """Blank the attribute macros from ``start`` on (each with its argument list) when a declaration's end
    or the text's end (glibc's ``f (int a) __THROW __wur`` cut before its ``;``) follows them and, after a
    ``)``, that ``)`` closes a parameter list (``f (int a) __THROW;``, not the cast in ``(size_t) __n;``).
    Gives where the walk over them stopped (``start`` if none was made): a walk from any of them reaches the
    same end with the same outcome (lines of calls ``F(a)`` are walked once)."""
    if after_parenthesis and not _closes_parameters(data, data.rfind(b")", 0, start), budget):
        return start
    spans, index = [], start
    while (name := _ATTRIBUTE.match(data, index)) is not None:
        end = name.end()
        arguments = _skip_spaces(data, end)
        if data[arguments : arguments + 1] == b"(":
            closed = _balanced_end(data, arguments, budget)
            if closed is None:
                return arguments
            end = closed
        spans.append((name.start(), end))
        index = _skip_comments(data, end)
    if spans and (index == len(data) or data[index] in _DECLARATION_END):  # the end: a declaration cut there
        for span_start, span_end in spans:
            _blank_span(out, span_start, span_end)
    return index


def _closes_parameters(data: bytes, close: int, budget: list[int]) -> bool:
    """Whether the ``)`` at ``close`` ends a parameter list: its ``(`` follows a name that is no keyword, or
    a ``)`` (``(*f)(int)``)."""
    depth, index = 0, close
    limit = max(0, close - min(MACRO_SPAN, budget[0]))
    while index >= limit:
        byte = data[index]
        if byte == 41:
            depth += 1
        elif byte == 40:
            depth -= 1
            if depth == 0:
                break
        index -= 1
    budget[0] -= close - index
    if index < limit:
        return False
    before = data[max(0, index - 64) : index].rstrip()
    name = _LAST_NAME.search(before)
    if name is not None and _TYPE_MACRO_START.search(before, 0, name.start()) is not None:
        return False  # `extern FORM_EXPORT_VAR(FIELDTYPE *) TYPE_ALPHA;`: no type before, a macro type's call
    return before.endswith(b")") or (name is not None and name.group() not in _KEYWORDS)


_TYPE_MACRO_START = re.compile(rb"(?:[;{}]|\*/|^[ \t]*#[^\n]*\n)\s*(?:(?:extern|static)\s+)?\Z", re.MULTILINE)
"""What ends before a name that starts a declaration, maybe after a storage class: a statement's or block's
end, a comment's or a directive's line; a call of that name is a macro that expands to the declaration's type
(ncurses' ``extern FORM_EXPORT_VAR(FIELDTYPE *) TYPE_ALPHA;``), not a function's parameters."""


_ATTRIBUTE = re.compile(_ATTRIBUTE_NAME)


def _skip_spaces(data: bytes | bytearray, index: int) -> int:
    while index < len(data) and data[index] in _BLANKS:
        index += 1
    return index


def _skip_comments(data: bytes, index: int) -> int:
    """``_skip_spaces``, and past block comments between the blanks."""
    index = _skip_spaces(data, index)
    while data.startswith(b"/*", index):
        close = data.find(b"*/", index + 2)
        if close < 0:
            return index
        index = _skip_spaces(data, close + 2)
    return index


_LAST_NAME = re.compile(rb"[A-Za-z_]\w*$")


class _DeclarationOpen:
    """Whether the line before an offset leaves a declaration open, so that ``NAME(…)`` there is its
    declarator (``CMS_ContentInfo *`` on the line before ``CMS_create_ex(…);``), not a macro call; asked for
    increasing offsets of ``out`` as the calls before them are blanked.  A walk back over blanks that
    reaches the previous offset asked about ends where that one's did, and has its answer: calls blanked
    one after another after a long line cost linear time, not a walk back over all of them each."""

    def __init__(self, out: bytearray, in_directive: Callable[[int], bool]) -> None:
        self._out = out
        self._in_directive = in_directive
        """Whether an offset lies in a directive (a ``#define``'s continued lines end no declaration)."""
        self._asked = -1
        self._answer = False

    def __call__(self, start: int) -> bool:
        out = self._out
        end = start
        while end > 0 and out[end - 1] in _BLANKS:  # back over the blanks only: no copy of what precedes
            end -= 1
            if end == self._asked:
                break
        else:
            self._answer = self._line_leaves_open(end)
        self._asked = start
        return self._answer

    def _line_leaves_open(self, end: int) -> bool:
        out = self._out
        if end and self._in_directive(end - 1):
            return False
        line = bytes(out[out.rfind(b"\n", 0, end) + 1 : end]).split(b"//", 1)[0].strip()  # a comment ends it
        if not line or line.startswith((b"#", b"*", b"/*")) or line.endswith(b"*/"):
            return False
        return line[-1:].isalnum() or line[-1:] in b"_*&,=("


_BLANKS = b" \t\n\r\x0b\x0c"


def _blank_span(out: bytearray, start: int, end: int) -> None:
    out[start:end] = out[start:end].translate(_TO_BLANK)


_TO_BLANK = bytes(byte if byte in b"\r\n" else 32 for byte in range(256))
"""Every byte to a blank but line breaks (``bytes.translate``'s table)."""


def _balanced_end(data: bytes, start: int, budget: list[int]) -> int | None:
    """The offset after the ``)`` matching the ``(`` at ``start`` (``_scan_balanced``), its scan charged to
    ``budget``."""
    end, scanned = _scan_balanced(data, start, min(len(data), start + min(MACRO_SPAN, budget[0])))
    budget[0] -= scanned
    return end


def _scan_balanced(data: bytes, start: int, limit: int) -> tuple[int | None, int]:
    """The offset after the ``)`` matching the ``(`` at ``start``, skipping strings and comments; a ``;``
    only on the line the ``)`` ends (``ASSERT_DEATH(f(); return, "")``), no brace.  The ``(`` between two
    stops are counted, not stopped at; a line break is a stop once a ``;`` has come."""
    depth, index = 0, start
    stops = _SCAN_STOP
    while index < limit:
        found = stops.search(data, index, limit)  # the next byte that can matter: the others pass
        if found is None:
            return None, limit - start
        depth += data.count(b"(", index, found.start())
        index = found.start()
        byte = data[index]
        if byte in b"\"'":
            close = data.find(bytes([byte]), index + 1, limit)
            while close > 0 and data[close - 1] == 92 and data[close - 2] != 92:
                close = data.find(bytes([byte]), close + 1, limit)
            if close < 0:
                return None, index - start
            index = close
        elif byte == 47 and data.startswith(b"/*", index):
            close = data.find(b"*/", index + 2, limit)
            if close < 0:
                return None, index - start
            index = close + 1
        elif byte == 41:
            depth -= 1
            if depth == 0:
                return index + 1, index + 1 - start
        elif byte == 59:
            stops = _SCAN_STOP_AFTER_STATEMENT
        elif byte in b"{}" or byte == 10:
            return None, index - start
        index += 1
    return None, index - start


_SCAN_STOP = re.compile(rb"[\"'/);{}]")
"""The bytes ``_scan_balanced`` acts on before a ``;`` (a ``/`` may open a comment)."""
_SCAN_STOP_AFTER_STATEMENT = re.compile(rb"[\"'/);{}\n]")
"""And after one: a line break ends the statement."""


def _blank(line: bytes) -> bytes:
    body = line.rstrip(b"\r\n")
    return b" " * len(body) + line[len(body) :]

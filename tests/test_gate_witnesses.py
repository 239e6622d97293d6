"""Every ``Witnessed`` pattern's witness matches wherever its pattern does.

A witness that misses a match would skip a preprocessor pass or a stand-in on a
text that needs it, and the gate would block valid C or C++.  The promise is
checked where the patterns really match: around each match in real headers
and sources (the C and C++ corpora that ``.ci/run`` installs, the witness read
on the match's own lines), on every example the patterns' docstrings quote,
and on generated soups of C tokens.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from policy.runtime.gates import grammars, preprocessor
from policy.runtime.gates.witnessed import Witnessed

WITNESSED = {f"{module.__name__.rsplit('.', 1)[-1]}.{name}": value
             for module in (preprocessor, grammars) for name, value in vars(module).items()
             if isinstance(value, Witnessed)}

SOURCES = [Path("/usr/src/googletest"), Path("/usr/include/fmt"), Path("/usr/include/nlohmann"),
           Path("/usr/share/doc/libcurl4/examples"), Path("/usr/include")]
SUFFIXES = {".c", ".h", ".cc", ".hpp", ".cpp"}
CORPUS_BYTES = 4_000_000
"""How much real code is read: the first files of each folder in turn, up to this in all."""
MATCHES_PER_FILE = 20
"""The matches of one pattern checked in one file (the first ones)."""

EXAMPLES = [
    b"FMT_TRY {\n  f();\n}\n",
    b"inline null<> localtime_r FMT_NOMACRO(...) {}\n",
    b"FMT_BEGIN_NAMESPACE\nGTEST_NO_SANITIZE_A_ GTEST_NO_SANITIZE_B_\n  JSON_PRIVATE_UNLESS_TESTED:\n",
    b"GTEST_API_ void f();\nFMT_CONSTEXPR inline T f(int);\nGL_API void (*f)(int);\n",
    b"FFI_API ffi_status\nffi_prep_cif (ffi_cif *cif);\n  FMT_API ~buffered_file() noexcept;\n",
    b"__owur const BIO_METHOD *BIO_f_ssl(void);\nEXTERN mp_err TclBN_mp_add(int a);\n",
    b"OSSL_DEPRECATEDIN_3_0 __owur BIGNUM *f(int);\n__owur const struct t *f(void);\n",
    b"class GTEST_API_ Cardinality {\n};\nclass GTEST_API_ Matcher<const T&> : public M {};\n",
    b"U_CAPI UFormatter* U_EXPORT2\nufmt_open(int a);\nstatic DWORD WINAPI ThreadMain(void *p);\n",
    b"typedef void (GL_APIENTRYP PFNGLPROC) (GLenum t);\nGLAPI void GLAPIENTRY glClearIndex(float c);\n",
    b"const GLubyte * GLAPIENTRY glGetString(GLenum name);\n",
    b"typedef T MP_DEPRECATED(x) name;\nstatic inline void _X_ATTRIBUTE_PRINTF(2, 3)\nprmsg(int a);\n",
    b"extern int __REDIRECT_NTH (timerfd_settime, (int __ufd, int f), __timerfd_settime64);\n",
    b"__owur int f(void);\nstatic ossl_unused ossl_inline int h(void);\n",
    b"int f(void) __THROW __nonnull ((1));\nvoid g() const GTEST_LOCK_EXCLUDED_(mu) = 0;\n",
    b"int __data __ONCE_ALIGNMENT;\nvoid f(int sig _X_UNUSED);\nCARD32 length B32;\n",
    b"x = y + GTEST_MACRO_(a);\nf(a, FMT_STRING(\"x\"));\n",
    b"struct s {\n  DECLARE_FIELDS(a, b,\n    c);\n};\n",
    b"a->operator()(x);\nreturn operator new[](n);\nb.operator==(c);\n} operator()(int a);\n",
    b"p->*member;\n(a)->*f;\n",
    b"int* p = nullptr;\nchar *q /* c */ = 0;\n",
    b"decltype(a, b) c;\nstd::vector<GTEST_MACRO_(a, b)> v;\nswitch (x) y;\n",
    b"p = new const int(1);\nx = typename T::type{};\nf(typename A<B>::c(1));\n",
    b"int& r = cond ? a : b;\nconst T &x(c ? a : b);\nint *p = new int*[4];\n",
    b"f(a = {}, b);\nvoid g() const = delete;\nint (Class::*p)(int);\n",
    b"template class A<int>;\nextern template struct B<int>;\nT f(typename GTEST_REMOVE_(x) y);\n",
    b"enum : int { A };\nenum class E GTEST_ENUM_(x) {\n};\n",
    b"template <typename T = const char *, class U = int&> struct S;\n",
    b"f(a, struct s)\nf(1, enum e )\n",
]
"""The constructs the patterns' docstrings name (each at least once), written as code."""


def _corpus() -> list[bytes]:
    texts: list[bytes] = []
    total = 0
    for folder in SOURCES:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and path.stat().st_size < 400_000:
                texts.append(path.read_bytes())
                total += len(texts[-1])
                if total >= CORPUS_BYTES * (SOURCES.index(folder) + 1) // len(SOURCES):
                    break
    return texts


def _window(data: bytes, match: re.Match[bytes]) -> bytes:
    """The match's lines, the line before them, and the next 400 bytes to their line's end."""
    start = data.rfind(b"\n", 0, max(data.rfind(b"\n", 0, match.start()), 0)) + 1
    end = data.find(b"\n", min(match.end() + 400, len(data)))
    return data[start : len(data) if end < 0 else end + 1]


def test_the_preprocessor_passes_and_the_cpp_stand_ins_are_witnessed() -> None:
    assert len(WITNESSED) == 33
    for name, scan in WITNESSED.items():
        assert scan.found_in(b"int x;\n") is False, name  # compiles, and is no empty promise


def test_witnesses_hold_around_every_match_in_real_code() -> None:
    corpus = _corpus()
    assert sum(map(len, corpus)) > 1_000_000 or not Path("/usr/include").is_dir()
    matched: Counter[str] = Counter()
    for data in [*corpus, *EXAMPLES]:
        for name, scan in WITNESSED.items():
            for index, found in enumerate(scan.pattern.finditer(data)):
                if index == MATCHES_PER_FILE:
                    break
                window = _window(data, found)
                if scan.pattern.search(window) is not None:
                    matched[name] += 1
                    assert scan.found_in(window), (name, window[:300])
            if scan.pattern.search(data) is not None:
                assert scan.found_in(data), name
    assert not [name for name in WITNESSED if not matched[name]], "patterns no text exercised"


def test_a_text_without_the_witness_is_not_scanned() -> None:
    text = b"GMOCK_DEFINE_DEFAULT_ACTION_FOR_RETURN_TYPE_(bool, false);\n" * 50
    scan = WITNESSED["preprocessor._DECLARATOR_MACRO"]
    assert not scan.found_in(text)
    assert list(scan.finditer(text)) == []
    assert scan.sub(b"_", text) is text
    found = b"GLAPI void GLAPIENTRY glClearIndex(float c);\n" + text
    assert [m.span() for m in scan.finditer(found)] == [m.span() for m in scan.pattern.finditer(found)] != []


_TOKENS = [b" ", b"\t", b"\n", b"\r\n", b"\x0b", b"(", b")", b"((", b"{", b"}", b"[", b"]", b";", b",",
           b":", b"::", b"*", b"&", b"&&", b"=", b"==", b"->", b"->*", b".", b"<", b">", b"?", b"~",
           b"+", b"-", b"/", b"//", b"/*", b"*/", b"\"", b"'", b"#", b"a", b"b1", b"f", b"name", b"T",
           b"AB", b"A_", b"_A_B", b"FMT_API", b"GTEST_API_", b"__owur", b"__attr", b"__declspec",
           b"WINAPI", b"B32", b"int", b"void", b"bool", b"unsigned", b"const", b"volatile", b"static",
           b"struct", b"union", b"enum", b"class", b"final", b"override", b"noexcept", b"operator",
           b"return", b"else", b"new", b"delete", b"template", b"extern", b"typename", b"decltype",
           b"switch", b"\xff", b"\xe9"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=40))
def test_witnesses_hold_on_token_soups(tokens: list[bytes]) -> None:
    text = b"".join(tokens)
    for name, scan in WITNESSED.items():
        if scan.pattern.search(text) is not None:
            assert scan.found_in(text), (name, text)

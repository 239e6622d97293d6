"""The C and C++ gates: what the preprocessor shapes, and what tree-sitter-c/-cpp read wrongly."""

from __future__ import annotations

import pytest

from policy.runtime.gates import syntax_tree
from policy.runtime.gates.grammars import parser
from policy.runtime.gates.syntax_tree import check_syntax_tree


def status(language: str, text: str, before: str | None = None) -> str:
    return check_syntax_tree(language, text, partial=True, before=before).status


@pytest.mark.parametrize(("language", "text", "broken"), [
    # export and attribute macros before a declaration expand to a specifier or to nothing
    ("cpp", "class GTEST_API_ Cardinality {\n public:\n  Cardinality() {}\n  int n;\n};\n",
     "class GTEST_API_ Cardinality {\n public:\n  Cardinality() {}\n  int n(;\n};\n"),
    ("cpp", "template <class M>\nclass GTEST_EMPTY_BASE NiceMock\n    : private Impl<M> {\n  int n;\n};\n",
     "template <class M>\nclass GTEST_EMPTY_BASE NiceMock\n    : private Impl<M> {\n  int n(;\n};\n"),
    ("cpp", "namespace a {\nGTEST_API_ std::string Join(const Strings& values);\nint x;\n}\n",
     "namespace a {\nGTEST_API_ std::string Join(const Strings& values;\nint x;\n}\n"),
    ("cpp", "template <typename T>\nFMT_CONSTEXPR inline T f(T a) {\n  return a;\n}\n"
     "constexpr FMT_INLINE int g(int a) { return a; }\n",
     "template <typename T>\nFMT_CONSTEXPR inline T f(T a) {\n  return (a;\n}\n"
     "constexpr FMT_INLINE int g(int a) { return a; }\n"),
    ("c", "CURL_EXTERN void curl_free(void *p);\nint x;\n", "CURL_EXTERN void curl_free(void *p;\nint x;\n"),
    # a calling convention between a function's type and its name
    ("c", "U_CAPI UFormatter* U_EXPORT2\nufmt_open(const char* locale,\n    UErrorCode* status);\n"
     "U_CAPI void U_EXPORT2\nufmt_close(UFormatter* f);\n",
     "U_CAPI UFormatter* U_EXPORT2\nufmt_open(const char* locale,\n    UErrorCode* status);\n"
     "U_CAPI void U_EXPORT2\nufmt_close(UFormatter* f;\nint x;\n"),
    # an operator called by name through `->` or `.`
    ("cpp", "struct R {\n  int f(int n) { return *(this->operator+(n)); }\n"
     "  bool g() { return a.operator bool(); }\n};\n",
     "struct R {\n  int f(int n) { return *(this->operator+(n); }\n"
     "  bool g() { return a.operator bool(); }\n};\n"),
    # an export macro before a destructor
    ("cpp", "class B {\n  FMT_API ~file() noexcept;\n  FMT_CONSTEXPR20 ~memory_buffer() { f(); }\n};\n",
     "class B {\n  FMT_API ~file() noexcept;\n  FMT_CONSTEXPR20 ~memory_buffer() { f(; }\n};\n"),
    # a pointer to member applied through a pointer
    ("cpp", "struct C {\n  auto operator()(int a) const -> decltype((p->*m)(a)) {\n"
     "    return (obj_ptr->*m)(a);\n  }\n};\n",
     "struct C {\n  auto operator()(int a) const -> decltype((p->*m)(a)) {\n"
     "    return (obj_ptr->*m)(a;\n  }\n};\n"),
    # a macro that expands to a string, after a string; a header name in a macro wrapping __has_include
    ("cpp", "#if FMT_HAS_INCLUDE(<version>)\n#  include <version>\n#endif\nvoid f() {\n"
     "  g(P(\"adir\" SEP_ \"b\"), P(\"c\" SEP_));  // it's\n  printf(\"%\" PRIu64 \"\\n\", x);\n}\n",
     "#if FMT_HAS_INCLUDE(<version>)\n#  include <version>\n#endif\nvoid f() {\n"
     "  g(P(\"adir\" SEP_ \"b\"), P(\"c\" SEP_);  // it's\n  printf(\"%\" PRIu64 \"\\n\", x);\n}\n"),
    # a calling convention after a type that ends in `enum`, before a function pointer's name
    ("c", "GL_APICALL GLenum GL_APIENTRY glCheck (GLenum target);\n"
     "typedef void (GL_APIENTRYP PFNGLPROC) (GLenum texture);\n",
     "GL_APICALL GLenum GL_APIENTRY glCheck (GLenum target;\n"
     "typedef void (GL_APIENTRYP PFNGLPROC) (GLenum texture);\nint x;\n"),
    # Windows' calling convention before a method's name; one before a function pointer's `*`
    ("cpp", "class T {\n  static DWORD WINAPI ThreadMain(void* ptr) {\n    return 0;\n  }\n};\n",
     "class T {\n  static DWORD WINAPI ThreadMain(void* ptr {\n    return 0;\n  }\n};\n"),
    ("c", "typedef napi_value(NAPI_CDECL* napi_callback)(napi_env env, int b);\nint x;\n",
     "typedef napi_value(NAPI_CDECL* napi_callback)(napi_env env, int b;\nint x;\n"),
    # a block comment inside a #define's body, more of the body after it
    ("c", "#define F(r, p) \\\n    (g(r, 1 /* asn1 */, 0) && h(r, \"POST\", p))\nint x;\n",
     "#define F(r, p) \\\n    (g(r, 1 /* asn1 */, 0) && h(r, \"POST\", p))\nint x(;\nint y;\n"),
    # an operator called by name after a condition, with template arguments
    ("cpp", "struct C {\n  void f(bool v) {\n    if (t != 's') operator()<bool>(v);\n"
     "    else operator()(1);\n  }\n};\n",
     "struct C {\n  void f(bool v) {\n    if (t != 's') operator()<bool>(v;\n"
     "    else operator()(1);\n  }\n};\n"),
    # an operator returned by name, `new const`, a value of a dependent type
    ("cpp", "struct R {\n  int& value() const { return operator*(); }\n"
     "  const char* p = new const char('a');\n};\n",
     "struct R {\n  int& value() const { return operator*(; }\n"
     "  const char* p = new const char('a');\n};\n"),
    ("cpp", "void f() {\n  it = typename object_t::iterator();\n}\n",
     "void f() {\n  it = typename object_t::iterator(;\n}\n"),
    # macros in a class head's place: an access specifier, a run of attribute macros, a macro with a body
    ("cpp", "class A {\n JSON_PRIVATE_UNLESS_TESTED:\n  int x;\n};\nGTEST_NO_SAN_A_ GTEST_NO_SAN_B_\n"
     "    GTEST_NO_SAN_C_\nstatic int f(int a);\n"
     "MATCHER(IsEmpty, negation ? \"no\" : \"yes\") {\n  return 1;\n}\n",
     "class A {\n JSON_PRIVATE_UNLESS_TESTED:\n  int x(;\n};\n"),
    # a switch whose body is one statement
    ("cpp", "void f() {\n  switch (0)\n  default:\n    g();\n}\n",
     "void f() {\n  switch (0)\n  default:\n    g(;\n}\n"),
    ("c", "void f(void) {\n  switch (a) case 1: g();\n}\n", "void f(void) {\n  switch (a) case 1: g(;\n}\n"),
    # a macro call with statements in its arguments
    ("cpp", "void f() {\n  ASSERT_DEATH(LOG(INFO) << \"a\"; return, \"\")\n      << \"b\";\n}\n",
     "void f() {\n  ASSERT_DEATH(LOG(INFO) << \"a\"; return, \"\")\n      << \"b\";\n  g(;\n}\n"),
    # macro calls after a line that a comment ends
    ("cpp", "K_(char, kInt);  // NOLINT\nK_(short, kInt);  // NOLINT\nK_(int, kInt);\n",
     "K_(char, kInt);  // NOLINT\nK_(short, kInt);  // NOLINT\nint f(;\nK_(int, kInt);\n"),
    # an unnamed pointer with a default, a comma expression in a decltype, a macro as a template parameter
    ("cpp", "template <typename T>\nA(const T& s, typename E<T>::type*\n  /*on*/\n  = nullptr);\nint x;\n",
     "template <typename T>\nA(const T& s, typename E<T>::type*\n  /*on*/\n  = nullptr;\nint x;\n"),
    ("cpp", "template <typename U>\nstatic auto check(U* p) -> decltype((void)p->find('a'), int());\n",
     "template <typename U>\nstatic auto check(U* p) -> decltype((void)p->find('a', int());\nint x;\n"),
    ("cpp", "template <typename T, FMT_ENABLE_IF(!is_x<T>::value &&\n  !is_y<T>::value)>\nvoid f(T a);\n",
     "template <typename T, FMT_ENABLE_IF(!is_x<T>::value &&\n  !is_y<T>::value)>\nvoid f(T a;\nint x;\n"),
    # a macro after a parameter list: a trailing return type, an attribute
    ("cpp", "template <typename T>\nauto begin(T&& r) FMT_DECLTYPE_RETURN(static_cast<T&&>(r).begin());\n",
     "template <typename T>\nauto begin(T&& r) FMT_DECLTYPE_RETURN(static_cast<T&&>(r).begin();\nint x;\n"),
    ("c", "struct s {\n  unsigned int __g_refs[2] __LOCK_ALIGNMENT;\n  int __data __ONCE_ALIGNMENT;\n};\n",
     "struct s {\n  unsigned int __g_refs[2] __LOCK_ALIGNMENT;\n  int __data __ONCE_ALIGNMENT;\n;\nint x;\n"),
    ("c", "extern int ftime (struct timeb *t)\n  __nonnull ((1)) __THROW;\nint x;\n",
     "extern int ftime (struct timeb *t\n  __nonnull ((1)) __THROW;\nint x;\n"),
    # a macro call after a `#define` continued on the next line: that line ends no declaration
    ("c", "#define B_D \\\n    B_A | B_V\n\nDECLARE_A_FUNCTIONS_name(T, T)\nint f(void);\n",
     "#define B_D \\\n    B_A | B_V\n\nDECLARE_A_FUNCTIONS_name(T, T)\nint f(void;\nint g(void);\n"),
    # lower-case specifier macros in a row before a basic type
    ("c", "static ossl_unused ossl_inline int G(unsigned long e)\n{\n    return e != 0;\n}\n",
     "static ossl_unused ossl_inline int G(unsigned long e)\n{\n    return (e != 0;\n}\nint x;\n"),
    # a lower-case attribute macro called with `((` after a parameter list
    ("c", "int p(B *b, const char *f, ...)\n    o_attr__((__format__(o_printf__, 2, 3)));\nint g(void);\n",
     "int p(B *b, const char *f, ...\n    o_attr__((__format__(o_printf__, 2, 3)));\nint g(void);\n"),
    # an upper-case type alone on its line, its declarator on the next
    ("c", "MACRO_CALL(a b)\nint s(M *m);\nASN1_STR\n*get0_token(const M *m);\nint g(void);\n",
     "MACRO_CALL(a b)\nint s(M *m);\nASN1_STR\n*get0_token(const M *m;\nint g(void);\n"),
    # a macro call declaring a member: no lone `;` left in the struct's body
    ("c", "struct r {\n\tunion {\n\t\tint t;\n\t\t__DECLARE_FLEX_ARRAY(struct b, bufs);\n\t};\n};\n",
     "struct r {\n\tunion {\n\t\tint t;\n\t\t__DECLARE_FLEX_ARRAY(struct b, bufs);\n\t};\n\tint f(;\n};\n"),
    # an array of pointers made with `new`; an attribute macro after a method's `const`
    ("cpp", "T const** G() {\n  auto const** const t = new const T*[static_cast<size_t>(\n      u.c())];\n"
     "  return t;\n}\n",
     "T const** G() {\n  auto const** const t = new const T*[static_cast<size_t>(\n      u.c()];\n"
     "  return t;\n}\n"),
    ("cpp", "class A {\n  virtual void U(const void* a,\n      ::std::ostream* os) const\n"
     "      GTEST_LOCK_EXCLUDED_(g_gmock_mutex) = 0;\n  T* F(const A& a)\n      const GTEST_L_(mu) {}\n};\n",
     "class A {\n  virtual void U(const void* a,\n      ::std::ostream* os const\n"
     "      GTEST_LOCK_EXCLUDED_(g_gmock_mutex) = 0;\n  T* F(const A& a)\n      const GTEST_L_(mu) {}\n};\n"),
    # an attribute macro on the line after a parameter list, before the body
    ("cpp", "class A {\n  const T* G(const F* m,\n      ::std::ostream* why)\n"
     "      GTEST_EXCLUSIVE_LOCK_REQUIRED_(g_gmock_mutex) {\n    return 0;\n  }\n};\n",
     "class A {\n  const T* G(const F* m,\n      ::std::ostream* why)\n"
     "      GTEST_EXCLUSIVE_LOCK_REQUIRED_(g_gmock_mutex) {\n    return (0;\n  }\n};\n"),
    # an implementation's or an upper-case macro before a type and a declarator; an upper-case type before
    # a function's name, not blanked as such a macro
    ("c", "__owur const BIO_METHOD *BIO_f_ssl(void);\n__owur BIO *BIO_new_ssl(SSL_CTX *ctx, int client);\n"
     "__owur STACK_OF(X509_NAME) *SSL_load_CA(const char *file);\nO_DEPRECATED_3 __owur BIGNUM *g(SSL *s);\n"
     "__owur OSSL_HANDSHAKE_STATE SSL_get_state(const SSL *ssl);\n__owur __owur SSL_CTX *SSL_new(void);\n"
     "__owur const struct s_test *SSL_test_functions(void);\n"
     "EXTERN mp_err\t\tTclBN_mp_add(const mp_int *a,\n\t\t\t\tmp_int *c);\n"
     "X509_LOOKUP_TYPE X509_OBJECT_get_type(const X509_OBJECT *a);\nDES_LONG DES_cksum(const char *input,\n"
     "    long length);\n",
     "__owur const BIO_METHOD *BIO_f_ssl(void);\n__owur BIO *BIO_new_ssl(SSL_CTX *ctx, int client;\n"
     "X509_LOOKUP_TYPE X509_OBJECT_get_type(const X509_OBJECT *a);\nint x;\n"),
    # an attribute macro after a parameter's name
    ("c", "static void\nlost(int sig _X_UNUSED)\n{\n}\nstatic inline int\n"
     "d(void (* func)(void *), void * arg _GLIBCXX_UNUSED)\n{\n  return 0;\n}\n",
     "static void\nlost(int sig _X_UNUSED)\n{\n}\nstatic inline int\n"
     "d(void (* func)(void *, void * arg _GLIBCXX_UNUSED)\n{\n  return 0;\n}\n"),
    # an export macro, its type, then the function's name on the next line
    ("c", "int x;\nFFI_API ffi_status\nffi_prep_closure (ffi_closure*,\n\t\t  void *user_data);\nint y;\n",
     "int x;\nFFI_API ffi_status\nffi_prep_closure (ffi_closure*,\n\t\t  void *user_data;\nint y;\n"),
    # macro calls in a list, each with no `;`, then a declaration
    ("c", "/* on */\n\nDECLARE_ASN1_FUNCTIONS(CMS_ContentInfo)\nDECLARE_ASN1_FUNCTIONS(CMS_ReceiptRequest)\n"
     "DECLARE_ASN1_PRINT_FUNCTION(CMS_ContentInfo)\n\nCMS_ContentInfo *CMS_new(int x, const char *q);\n",
     "/* on */\n\nDECLARE_ASN1_FUNCTIONS(CMS_ContentInfo)\nDECLARE_ASN1_FUNCTIONS(CMS_ReceiptRequest)\n"
     "DECLARE_ASN1_PRINT_FUNCTION(CMS_ContentInfo)\n\nCMS_ContentInfo *CMS_new(int x, const char *q;\n"),
    # an attribute macro before a constructor in its class
    ("cpp", "template <typename T> struct typed_node : node<> {\n  T value;\n\n  template <typename Arg>\n"
     "  FMT_CONSTEXPR typed_node(const Arg& arg) : value(arg) {}\n};\n",
     "template <typename T> struct typed_node : node<> {\n  T value;\n\n  template <typename Arg>\n"
     "  FMT_CONSTEXPR typed_node(const Arg& arg : value(arg) {}\n};\n"),
    # a statement macro with no `;`, then an `if` statement
    ("cpp", "void f(bool found) {\n  for (int i = 1; i < 2; i++) {\n    GMOCK_PARSE_FLAG(verbose)\n\n"
     "    if (found) {\n      g(i);\n    }\n  }\n}\n",
     "void f(bool found) {\n  for (int i = 1; i < 2; i++) {\n    GMOCK_PARSE_FLAG(verbose)\n\n"
     "    if (found) {\n      g(i;\n    }\n  }\n}\n"),
    # Microsoft's `__declspec(…)` alone on its line
    ("c", "#ifdef _MSC_VER\n__declspec(align(8))\n#endif\ntypedef struct {\n  int x;\n} ffi_closure;\n",
     "#ifdef _MSC_VER\n__declspec(align(8))\n#endif\ntypedef struct {\n  int x(;\n} ffi_closure;\n"),
    # a type as a macro's argument
    ("c", "enum b {\n\tBR_OK = _IO('r', 1),\n\tBR_T = _IOR('r', 2,\n\t\t     struct binder_t),\n};\n",
     "enum b {\n\tBR_OK = _IO('r', 1,\n\tBR_T = _IOR('r', 2,\n\t\t     struct binder_t),\n};\nint x;\n"),
    # attribute macros after a parameter list with a comment between them
    ("c", "extern NCURSES_EXPORT(int) vwprintw (WINDOW *, va_list) GCC_DEPRECATED(use vw_printw)\t/* i */\n"
     "\t\tGCC_PRINTFLIKE(2,0);\nint x;\n",
     "extern NCURSES_EXPORT(int) vwprintw (WINDOW *, va_list GCC_DEPRECATED(use vw_printw)\t/* i */\n"
     "\t\tGCC_PRINTFLIKE(2,0);\nint x;\n"),
    # `#define`s between an enum's members and between a struct's declarators
    ("c", "enum __ptrace_request\n{\n  PTRACE_TRACEME = 0,\n#define PT_TRACE_ME PTRACE_TRACEME\n\n"
     "  /* Return the word.  */\n  PTRACE_PEEKTEXT = 1,\n#define PT_READ_I PTRACE_PEEKTEXT\n"
     "  PTRACE_LAST = 2\n#define PT_LAST PTRACE_LAST\n};\n"
     "struct f {\n\tunsigned char\tgap,\t\t/* gap1 size */\n\n"
     "\t\t\trate,\t\t/* data rate */\n#define FD_2M 0x4\n#define FD_SIZE(f) \\\n  ((f) & 3)\n"
     "\t\t\tspec1;\n};\n",
     "enum __ptrace_request\n{\n  PTRACE_TRACEME = (0,\n#define PT_TRACE_ME PTRACE_TRACEME\n\n"
     "  PTRACE_PEEKTEXT = 1,\n};\nint x;\n"),
    # a reference initialized in parentheses with a conditional, read as a function declaration
    ("cpp", "bool F::D() const {\n  const F& path(IsRoot() ? *this\n      : R());\n  return 1;\n}\n",
     "bool F::D() const {\n  const F& path(IsRoot() ? *this\n      : R();\n  return 1;\n}\n"),
])
def test_valid_code_the_grammar_cannot_parse_is_allowed(language: str, text: str, broken: str) -> None:
    assert parser(language).parse(text.encode()).root_node.has_error
    assert status(language, text) == "valid"
    assert status(language, broken) == "invalid"


def test_a_cast_before_a_reserved_name_keeps_it() -> None:
    # `(size_t) __n;` is a cast: `__n` is no attribute of a declarator, so it is not blanked
    assert check_syntax_tree("c", "#define X\nint f(void) {\n  return (int) __n;\n}\nint g(;\n",
                             partial=False).problem.line == 5  # type: ignore[union-attr]


def test_a_parenthesis_in_a_comment_ends_no_declarator() -> None:
    # `// Tests Factorial()` then `TEST_F(…) {`: the macro is no attribute after a parameter list
    text = "// Tests Factorial()\nTEST_F(IntegerTest, Factorial) {\n  EXPECT_EQ(1, Factorial(-5));\n"
    assert status("cpp", text) == "incomplete"


def test_a_type_name_after_a_tag_keyword_is_not_read_as_a_macro() -> None:
    # `struct NODE_T f(` names a type: blanking NODE_T would leave `struct f(`, an error of the gate's making
    text = "struct NODE_T f(int a);\nstruct NODE_T g(int b);\nint h(;\n"
    assert check_syntax_tree("c", text, partial=False).problem.line == 3  # type: ignore[union-attr]


@pytest.mark.parametrize("prefix", [
    "int x;\n#if defined(A) || \\\n",                                       # a condition continued
    # an enum member alone on its line, its value on the next (valgrind's memcheck.h): no macro line
    "#ifndef M_H\n/* for client (your!) code. */\n   enum {\n      /* don't use it */\n"
    "      _VG_USERREQ__MEMCHECK_RECORD_OVERLAP_ERROR \n         = VG_USERREQ_TOOL_BASE('M','C') + 256\n",
    "int x;\n#if defined(A) || \\\n    defined(B",                           # not ended yet
    '#ifdef __cplusplus\nextern "C" {\n#endif\n#define F(a) \\\n  { int x = a; \\\n',  # a macro's body
])
def test_a_text_that_ends_inside_a_directive_is_incomplete(prefix: str) -> None:
    assert status("c", prefix) == "incomplete"


@pytest.mark.parametrize("text", [
    "#define LL_MUL32(r, a) { \\\n  _y1 += _y2;   /* can't carry */ \\\n  (r).hi = _y3; \\\n}\nint x;\n",
    "#ifdef __has_include\n#if __has_include(<version>)\n#include <version>\n#endif\n#endif\nint x;\n",
    # a condition's `?:` (linux/aio_abi.h), a named variadic parameter (linux/netfilter/x_tables.h)
    "struct iocb {\n#if defined(__BYTE_ORDER) ? __BYTE_ORDER == __LITTLE_ENDIAN : defined(__LITTLE_ENDIAN)\n"
    "  int aio_key;\n#endif\n};\n",
    "#define XT_MATCH_ITERATE(type, e, fn, args...) \\\n({ fn(e, ## args); })\nint x;\n",
    # a directive quoted in a block comment (glibc's cdefs.h), a `/*` in a string and after `//`
    "/* Compilers may object to\n       #if defined __has_attribute && __has_attribute (...)\n"
    "   even so. */\n#if (defined __has_attribute \\\n     && 3 < __clang_major__)\n# define A 1\n#endif\n"
    "int x;\n",
    # a string a macro in a condition is given (hedley's warning test)
    "#  if JSON_HEDLEY_HAS_WARNING(\"-Wc++98-compat\") && !defined(A)\n#    define B 1\n#  endif\nint x;\n",
    # a quoted header name (glibc's sys/mount.h, fmt's os.h), also on a condition's continued line
    "#ifdef __has_include\n# if __has_include (\"linux/mount.h\")\n#  include \"linux/mount.h\"\n"
    "# endif\n#endif\n",
    "#ifndef F\n#  if FMT_HAS_INCLUDE(\"w.h\")\n#    include <w.h>\n#  endif\n"
    "#  if (FMT_HAS_INCLUDE(<fcntl.h>) || \\\n       FMT_HAS_INCLUDE(\"x.h\"))\n#    define F 1\n#  endif\n"
    "#endif\nint x;\n",
])
def test_directives_tree_sitter_misreads_are_valid(text: str) -> None:
    lines = text.splitlines(keepends=True)
    assert status("c", text) == "valid"
    assert status("c", text, before="".join(lines[:2])) == "valid"  # an append after the first two lines


@pytest.mark.parametrize("text", [
    'char *s = "/*";\n#if defined(A) && (\n#endif\nint x; /* */\n',  # a `/*` in a string opens no comment
    "int x; // it's /* no comment\n#if defined(A) && (\n#endif\nint y; /* */\n",  # nor one after `//`
])
def test_a_broken_condition_after_a_comment_opener_that_opens_none_is_seen(text: str) -> None:
    assert status("c", text) == "invalid"


CPP_IN_A_C_HEADER = (
    "#ifndef A_H\n#define A_H\n#include <stddef.h>\n#if U_SHOW_CPLUSPLUS_API\nnamespace icu {\n"
    "class U_API Piece : public UMemory {\n public:\n  Piece() {}\n};\n}\n#else\nint piece(void);\n#endif\n"
    "int after(void);\n#endif\n"
)


def test_cpp_in_a_c_header_is_a_branch_a_c_compiler_skips() -> None:
    assert status("c", CPP_IN_A_C_HEADER) == "valid"
    assert status("cpp", CPP_IN_A_C_HEADER) == "valid"
    assert status("c", CPP_IN_A_C_HEADER.replace("int piece(void)", "int piece(void")) == "invalid"  # kept


def test_a_class_head_with_macros_is_cpp_in_a_c_header() -> None:
    # ICU's `class U_COMMON_API CanonicalIterator U_FINAL : public UObject {`, in a nested conditional
    header = ("#if U_SHOW_CPLUSPLUS_API\n#if !UCONFIG_NO_NORMALIZATION\nU_NAMESPACE_BEGIN\n"
              "class U_COMMON_API CanonicalIterator U_FINAL : public UObject {\npublic:\n  int x;\n};\n"
              "U_NAMESPACE_END\n#endif\n#endif\nint after(void);\n")
    assert status("c", header) == "valid"
    assert status("c", header.replace("int after(void)", "int after(void")) == "invalid"


def test_a_namespace_with_a_visibility_macro_is_cpp_in_a_c_header() -> None:
    # libstdc++'s `namespace std _GLIBCXX_VISIBILITY(default)`, its `{` on the next line
    header = ("#if __cplusplus >= 201402L\nnamespace std _GLIBCXX_VISIBILITY(default)\n{\n"
              "inline int f(int a) { return a; }\n}\n#endif\nint after(void);\n")
    assert status("c", header) == "valid"
    assert status("c", header.replace("int after(void)", "int after(void")) == "invalid"


def test_a_statement_line_ends_with_its_semicolon() -> None:
    # a deleted `)` before the `;`: no append closes what the `;` ended, though the grammar reads on
    text = "struct s {\n\tint tag[];\n} __attribute__((packed);\n\n#endif\n"
    verdict = check_syntax_tree("c", text, partial=True)
    assert (verdict.status, verdict.problem.line if verdict.problem else None) == ("invalid", 3)
    assert status("c", "void f(void) {\n  for (i = 0;\n") == "incomplete"  # a `for` header goes on


def test_a_macros_parameter_list_ends_with_its_line() -> None:
    broken = "int x;\n#define F(a, b \\\n  a + b\n\n#endif\n"  # only a directive follows the broken line
    verdict = check_syntax_tree("c", broken, partial=True)
    assert (verdict.status, verdict.problem.line if verdict.problem else None) == ("invalid", 2)


@pytest.mark.parametrize(("text", "line"), [
    # a deleted `}`: tree-sitter-cpp reads `catch (...) {` as a nested function named `catch`
    ("void f() {\n  try {\n    g();\n  catch (...) {\n    h();\n  }\n  try {\n    g();\n", 4),
    # a deleted `}` before the next function: read as a function defined inside the one before
    ("int f(int a) {\n  if (a) {\n    return 1;\n\n  return 0;\n}\n\ninline int g() {\n  return 2;\n", 8),
    # a class body's `}` deleted: a macro's body read as a member function with no type
    ("class A : public T {\n;\n\nTEST_F(A, B) {\n  x();\n}\n\nTEST_F(A, C) {\n", 4),
    # a deleted `)`: the body read as braces around `const` read as a name
    ("TEST(MessageTest, DefaultConstructor {\n  const Message msg;\n  EXPECT_EQ(1, msg);\n}\n\nint x;\n", 2),
])
def test_what_tree_sitter_cpp_reads_into_a_deleted_brace_is_an_error(text: str, line: int) -> None:
    verdict = check_syntax_tree("cpp", text, partial=True)
    assert (verdict.status, verdict.problem.line if verdict.problem else None) == ("invalid", line)


@pytest.mark.parametrize("prefix", [
    "void f() {\n  try {\n    g();\n  } catch (...) {\n    h();\n  }\n",
    "class A {\n public:\n  A() {}\n  ~A() {}\n  explicit operator bool() const { return true; }\n",
    "template <typename T>\nstruct B<T*> {\n  B() {}\n",
    "template <typename OutputIt,\n          typename Enable = typename std::is_void<OutputIt>::type>\n",
    "namespace a {\ntemplate <typename OutputIt,\n          typename Enable = typename std::is_void<\n",
    # an enum's initializer cut after an operator: ` _)} _;`, no `;` inside the enum
    "template <typename T> class S {\n  template <typename U> struct C {\n    enum {\n"
    "      value = !(is_a<U>::value ||\n                is_b<U>::value ||\n",
    # a constructor's initializer list cut inside an initializer: `) {}`, then the class's `};`
    "namespace {\nclass H : public P {\n public:\n  H(bool f, int m)\n      : a_(new A),\n        b_(f\n",
    # an initializer list cut after a `,`, comment lines after it: the next initializer, then the body
    "class H : public P {\n public:\n  H(int m)\n      : a_(m),\n        // b_ cannot be set here\n",
    # a macro call whose arguments span lines, an operand of the next line's `<<`
    "namespace a {\nTEST_F(D, E) {\n  EXPECT_TRUE(e == \"a\" ||  // GCC\n      e == \"b\")   // MSVC\n"
    "      << \" where \" << e;\n}\n\n",
    # type arguments cut in a conditional: ` : _>;`
    "namespace a {\ntemplate <int K, typename F>\nusing L = std::integral_constant<\n    bool,\n"
    "    (K == 1) ? true\n",
])
def test_cpp_prefixes_stay_incomplete(prefix: str) -> None:
    assert status("cpp", prefix) == "incomplete"


@pytest.mark.parametrize(("language", "prefix"), [
    ("c", "typedef enum {\n    A,\n    B,\n"),                               # `} _;`: a typedef's name
    ("c", "PR_BEGIN_EXTERN_C\nint x(int a);\n/* the map */\nNSPR_API( PRFileMap *)\nPR_OpenAnonFileMap(\n"
          "    const char *dirName,\n"),  # the macro call a type, read as one name
    ("c", "struct p {\n\tint cmd;\n\n\tunion {\n\t\tstruct {\n\t\t\tint s;\n"),   # members' `};`
    ("c", 'extern "C" {\ntypedef struct s {\n  int *type;\n  /* content\n'),  # a comment, then `} _;}`
    ("c", "struct f {\n\tunsigned int\n\t  a,    /* one */\n\t  b,\n\n\t  /*\n\t   * Threshold\n"),  # `*/ _}`
])
def test_a_struct_body_closes_with_a_name_and_semicolon(language: str, prefix: str) -> None:
    assert status(language, prefix) == "incomplete"


@pytest.mark.parametrize("language", ["c", "cpp"])
def test_a_string_a_line_break_ends_is_broken_whatever_follows(language: str) -> None:
    text = 'void f(void) {\n  g("once.\\n);\n  h();\n  }\n\n'
    verdict = check_syntax_tree(language, text + "#if X\n", partial=True)
    assert (verdict.status, verdict.problem.line if verdict.problem else None) == ("invalid", 2)
    assert status(language, 'void f(void) {\n  g("a \\\n  b");\n  const char *r = "x";\n') == "incomplete"


def test_cpp_raw_strings_span_lines() -> None:
    assert status("cpp", 'const char *s = R"x(one\ntwo "\n)x";\nint a(;\nint b;\n') == "invalid"
    assert status("cpp", 'const char *s = R"x(one\ntwo "\n)x";\nint a;\n') == "valid"
    assert status("cpp", 'int a(;\nconst char *s = R"(one\ntwo "\n') == "invalid"


@pytest.mark.parametrize(("language", "text", "broken"), [
    # macros named with one leading underscore: an attribute after a parameter list, one after a `*`
    ("c", "int g (int s,\n                 ...) _GCRY_GCC_ATTR_SENTINEL(0);\n"
     "const struct c * _NETTLE_ATTRIBUTE_PURE n_get(void);\nconst struct n * const * _NETTLE_ATTRIBUTE_PURE\n"
     "n_list (void);\n",
     "int g (int s,\n                 ... _GCRY_GCC_ATTR_SENTINEL(0);\n"
     "const struct c * _NETTLE_ATTRIBUTE_PURE n_get(void);\n"),
    # calling conventions with no underscore (gl.h): after a basic type, a macro and a type, a `*`, a `(`
    ("c", "GLAPI void GLAPIENTRY glClearIndex( GLfloat c );\n"
          "GLAPI GLboolean GLAPIENTRY glIsEnabled( GLenum cap );\n"
     "GLAPI const GLubyte * GLAPIENTRY glGetString( GLenum name );\n"
     "typedef void (APIENTRYP PFNGLPROC) (GLenum mode, GLuint start);\n",
     "GLAPI void GLAPIENTRY glClearIndex( GLfloat c );\nGLAPI GLboolean GLAPIENTRY glIsEnabled( GLenum cap;\n"
     "GLAPI const GLubyte * GLAPIENTRY glGetString( GLenum name );\n"),
    # a macro's call as an enum's member (v4l2-mediabus.h)
    ("c", "enum v {\n\tV4L2_FROM_FMT(FIXED),\n\n\tV4L2_FROM_FMT(RGB444_2X8),\n\tV4L2_FROM_FMT(RGB555),\n};\n",
     "enum v {\n\tV4L2_FROM_FMT(FIXED),\n\n\tV4L2_FROM_FMT(RGB444_2X8,\n\tV4L2_FROM_FMT(RGB555),\n};\n"
     "int x;\n"),
    # an attribute macro's call between a type and a declarator (Tcl, X11)
    ("c", "typedef private_cb MP_DEPRECATED(mp_rand_source) ltm_cb;\n"
          "static inline void  _X_ATTRIBUTE_PRINTF(2, 3)\n"
     "prmsg(int lvl, const char *f, ...)\n{\n}\n",
     "typedef private_cb MP_DEPRECATED(mp_rand_source) ltm_cb;\n"
     "static inline void  _X_ATTRIBUTE_PRINTF(2, 3)\n"
     "prmsg(int lvl, const char *f, ...\n{\n}\n"),
    # a bit-field's macro after a member's name (X11's SMproto.h)
    ("c", "typedef struct {\n    CARD8\tmajorOpcode;\n    CARD32\tlength B32;\n} smMsg;\n",
     "typedef struct {\n    CARD8\tmajorOpcode(;\n    CARD32\tlength B32;\n} smMsg;\n"),
    # macros wrapping a declarator with its parameters (glibc's ctype.h, timerfd.h)
    ("c", "__extern_inline int\n__NTH (tolower (int __c))\n{\n  return __c >= -128 ? __c : 0;\n}\n"
     "extern int __REDIRECT_NTH (timerfd_settime,\n                           (int __ufd, int __flags),\n"
     "                           __timerfd_settime64) __nonnull ((3));\n"
     "struct i {\n\tstruct idletimer_tg *timer __attribute__((aligned(8)));\n};\n",
     "__extern_inline int\n__NTH (tolower (int __c))\n{\n  return (__c >= -128 ? __c : 0;\n}\n"),
    # a group of members given to a macro (the kernel's linux/ip.h)
    ("c", "struct iphdr {\n\t__u8\tttl;\n\t__struct_group(/* no tag */, addrs, /* no attrs */,\n"
          "\t\t__be32\tsaddr;\n"
     "\t\t__be32\tdaddr;\n\t);\n};\n",
     "struct iphdr {\n\t__u8\tttl(;\n\t__struct_group(/* no tag */, addrs, /* no attrs */,\n"
     "\t\t__be32\tsaddr;\n"
     "\t\t__be32\tdaddr;\n\t);\n};\n"),
    # a directive's comment that goes on over more lines (Xtransint.h)
    ("c", "#ifdef __cplusplus\nextern \"C\" {\n#endif\n#ifdef XTRANS_C /* only provide prototypes when\n"
     "\t\t\t     building the transport.c file */\nint x;\n#endif\n#ifdef __cplusplus\n}\n#endif\n",
     "#ifdef __cplusplus\nextern \"C\" {\n#endif\n#ifdef XTRANS_C /* only provide prototypes when\n"
     "\t\t\t     building the transport.c file */\nint x(;\n#endif\nint y;\n#ifdef __cplusplus\n}\n#endif\n"),
    # C++ in a C header's conditional (ICU's utext.h), a scoped attribute in a condition (llvm's
    # DemangleConfig.h)
    ("c", "#if U_SHOW_CPLUSPLUS_API\nU_CAPI UText * U_EXPORT2\n"
          "utext_open(UText *ut, icu::UnicodeString *s);\n"
     "#endif\n#if __has_cpp_attribute(fallthrough)\n#define D_F [[fallthrough]]\n"
     "#elif __has_cpp_attribute(gnu::fallthrough)\n#define D_F [[gnu::fallthrough]]\n#endif\n",
     "#if U_SHOW_CPLUSPLUS_API\nU_CAPI UText * U_EXPORT2\nutext_open(UText *ut, icu::UnicodeString *s);\n"
     "#endif\nint x(;\nint y;\n"),
    # C++: a parameter's default `{}`, a deleted function outside a class, a pointer to member function's type
    ("cpp", "class A {\n  static J array(list_t init = {}, int b = {})\n  {\n    return 0;\n  }\n};\n"
     "template <typename R, R* = nullptr>\nA<R> ReturnRef(R&&) = delete;\n"
     "static_assert(!is_callable_r<void, void (C::*)(), C*>::value, \"\");\n",
     "class A {\n  static J array(list_t init = {}, int b = {})\n  {\n    return (0;\n  }\n};\n"),
    # an explicit instantiation, `typename` before a value as an argument and before a macro giving a type
    ("cpp", "template class file_access<tag, std::filebuf,\n"
            "                           &std::filebuf::_Myfile>;\n"
     "template <typename Types>\nvoid G(int i) {\n  G<N>(typename Types::Tail(), result,\n    i + 1);\n"
     "  typedef typename GTEST_BIND_(TestSel, Type) TestClass;\n}\n",
     "template class file_access<tag, std::filebuf,\n                           &std::filebuf::_Myfile>;\n"
     "template <typename Types>\nvoid G(int i) {\n  G<N>(typename Types::Tail(), result,\n    i + 1;\n"
     "  typedef typename GTEST_BIND_(TestSel, Type) TestClass;\n}\n"),
    # macros: a specialization's export macro, a matcher's arguments over lines, a pragma macro before a
    # declaration, one that expands to `try`, one between a function's name and parameters, a calling
    # convention
    # after a linkage specification
    ("cpp", "template <>\nclass GTEST_API_ Matcher<const std::string&>\n"
            "    : public M<const std::string&> {\n};\n"
     "MATCHER_P2(EqSumOf, x, y,\n           std::string(n ? \"a\" : \"b\") +\n               P(x)) {\n"
     "  return 1;\n}\n"
     "FMT_MSC_WARNING(suppress : 4566) constexpr unsigned char micro[] = \"u\";\n"
     "void f() {\n  FMT_TRY {\n    auto ec = std::error_code(e, g());\n  }\n}\n"
     "inline null<> localtime_r FMT_NOMACRO(...) { return null<>(); }\n"
     "extern \"C\" __declspec(dllimport) int __stdcall WriteConsoleW(  //\n    void*, dword*, void*);\n",
     "template <>\nclass GTEST_API_ Matcher<const std::string&>\n    : public M<const std::string&> {\n};\n"
     "void f() {\n  FMT_TRY {\n    auto ec = std::error_code(e, g();\n  }\n}\n"),
    # a method named by a macro, its parameters on the next line; a macro's arguments that are no expressions
    ("cpp", "class F {\n  STDMETHOD_(int, CTDecimal)\n  (bool b, char c,  // NOLINT\n   float g) = 0;\n"
     "  STDMETHOD_(char, CTConst)(int x) const = 0;\n};\n"
     "static_assert(GMOCK_PP_HAS_COMMA(b, ), \"\");\nstatic_assert(!GMOCK_PP_IS_EMPTY(()), \"\");\n"
     "static_assert(!GMOCK_PP_IS_BEGIN_PARENS(sss() sss), \"\");\n",
     "class F {\n  STDMETHOD_(int, CTDecimal)\n  (bool b, char c,  // NOLINT\n   float g = 0;\n"
     "  STDMETHOD_(char, CTConst)(int x) const = 0;\n};\n"),
    # a comma list in a trailing `decltype` holding empty braces (nlohmann's from_json.hpp)
    ("cpp", "template <typename B>\nauto from_json(const B& j, A& arr)\n"
     "-> decltype(f(j, arr, priority_tag<3> {}),\nj.template get<typename A::value_type>(),\nvoid())\n{\n}\n",
     "template <typename B>\nauto from_json(const B& j, A& arr)\n"
     "-> decltype(f(j, arr, priority_tag<3> {}),\nj.template get<typename A::value_type>(),\nvoid())\n{\n"
     "  g(;\n}\n"),
    # an indented constructor after two macros; enum bases; a type parameter's default with a declarator
    ("cpp", "template <typename T> struct A {\n  template <typename... U>\n"
     "  FMT_CONSTEXPR FMT_INLINE arg_data(const U&... init) : args_{init...} {}\n};\n"
     "enum : unsigned long long { is_unpacked_bit = 1ULL << 63 };\n"
     "enum type FMT_ENUM_UNDERLYING_TYPE(unsigned char){none, left,\n    numeric};\n"
     "template <bool IS_CONSTEXPR, typename T, typename Ptr = const T*>\nauto find(Ptr first) -> bool;\n"
     "template <typename T, std::size_t N,\n    typename Array = T (&)[N], int M>\nvoid g(Array a);\n",
     "template <typename T> struct A {\n  template <typename... U>\n"
     "  FMT_CONSTEXPR FMT_INLINE arg_data(const U&... init : args_{init...} {}\n};\n"
     "enum : unsigned long long { is_unpacked_bit = 1ULL << 63 };\n"),
    # an operator called by name starting a statement, a literal operator, explicit instantiation
    # declarations,
    # a pointer to member declarator, a dependent type's value with template arguments
    ("cpp", "void f() {\n  if (a) {\n  }\n  else\n  {\n    operator[](it.key()).merge_patch(it.value());\n"
            "  }\n"
     "  return vis(typename basic_format_arg<Context>::handle(arg.value_.custom));\n}\n"
     "using nlohmann::literals::json_literals::operator \"\" _json; // NOLINT\n"
     "extern template FMT_API auto thousands_sep_impl<char>(locale_ref)\n    -> thousands_sep_result<char>;\n"
     "extern template class basic_format<char>;\n"
     "class N {\n  void (NativeArray::*clone_)(const Element*, size_t);\n};\n",
     "void f() {\n  if (a) {\n  }\n  else\n  {\n    operator[](it.key()).merge_patch(it.value();\n  }\n"
     "  return vis(typename basic_format_arg<Context>::handle(arg.value_.custom));\n}\n"),
])
def test_more_valid_code_the_grammar_cannot_parse_is_allowed(language: str, text: str, broken: str) -> None:
    assert parser(language).parse(text.encode()).root_node.has_error
    assert status(language, text) == "valid"
    assert status(language, broken) == "invalid"


@pytest.mark.parametrize(("language", "prefix"), [
    # an operand alone on its line after a `|`, in a header's open conditional (siw-abi.h)
    ("c", "#ifndef S_H\nenum e {\n\tA = (1 << 0),\n\tALL = A_B | A_C |\n\t\t A_D\n};\n\nenum f {\n\tB,\n"),
    # a function's name alone on its line, its parameters on the next, after a macro call that is its type
    # (NSPR's plbase64.h)
    ("c", "#ifndef _p_h\n#define _p_h\n#include \"prtypes.h\"\nPR_BEGIN_EXTERN_C\nPR_EXTERN(char *)\n"
          "PL_Base64Encode\n(\n    const char *src,\n    PRUint32    srclen,\n"),
    # an enum cut after the `#define`s that follow its members (linux/xfrm.h)
    ("c", "enum {\n\tXFRMA_A,\n\tXFRMA_B,\t/* __u32 */\n\t__XFRMA_MAX\n\n"
          "#define XFRMA_OUT XFRMA_A\t/* Compat */\n"
          "#define XFRMA_MAX (__XFRMA_MAX - 1)\n"),
    # a declarator's wrapping macro cut inside its arguments (glibc's timerfd.h)
    ("c", "extern int __REDIRECT_NTH (timerfd_settime,\n"
          "                           (int __ufd, int __flags,\n"),
    # a group of members cut inside
    ("c", "struct iphdr {\n\t__u8\tttl;\n\t__struct_group(/* no tag */, addrs, /* no attrs */,\n"
          "\t\t__be32\tsaddr;\n"),
    # a parameter list cut after a `,` and a comment (Xtransint.h)
    ("c", "static\tint TRANS(ReadV)(\n    XtransConnInfo,\t/* ciptr */\n"),
    # a statement macro cut inside its arguments (gmock-function-mocker_test.cc)
    ("cpp", "template <typename T>\nclass M : public S<T> {\n public:\n  M() {}\n\n"
            "  MOCK_METHOD(void, Push, (const T& elem),\n"),
    # a constructor's braced initializer cut inside type arguments (fmt's core.h)
    ("cpp", "class S {\n public:\n  template <typename... T>\n"
            "  FMT_CONSTEXPR FMT_INLINE format_arg_store(T&&... args)\n      :\n"
            "        data_{detail::make_arg<\n            is_packed, Context,\n"),
    # a template macro cut inside its arguments (fmt's xchar.h)
    ("cpp", "template <typename S, typename Char = char_t<S>,\n"
            "          FMT_ENABLE_IF(!std::is_same<Char, char>::value &&\n"),
    # an initializer cut inside a conditional (gtest-assertion-result.cc)
    ("cpp", "namespace t {\nA::A(const A& other)\n    : s_(other.s_),\n      m_(other.m_.get() != nullptr\n"
            "             ? new ::std::string(*other.m_)\n"),
    # nested classes cut after an initializer's `,` and comment lines (gmock-actions.h)
    ("cpp", "namespace internal {\ntemplate <typename R>\nclass ReturnAction final {\n private:\n"
            "  template <typename U>\n  class Impl final {\n   private:\n    struct State {\n"
            "      explicit State(R&& in)\n          : input_value(std::move(in)),\n"
            "            // For the same reason as above\n            //\n"),
    # a template header cut three angle brackets deep (nlohmann's to_json.hpp)
    ("cpp", "template <\n    typename BasicJsonType, typename T, std::size_t N,\n"
            "    enable_if_t < !std::is_constructible<typename BasicJsonType::string_t,\n"),
])
def test_more_prefixes_stay_incomplete(language: str, prefix: str) -> None:
    assert status(language, prefix) == "incomplete"


def test_a_whole_text_that_leaves_a_macro_call_open_is_broken() -> None:
    # cut off in a chunk, but a whole write that ends inside the call is broken
    prefix = "class M {\n public:\n  M() {}\n  MOCK_METHOD(void, Push, (const T& elem),\n"
    assert status("cpp", prefix) == "incomplete"
    assert check_syntax_tree("cpp", prefix, partial=False).status == "invalid"
    wrapper = "extern int __REDIRECT_NTH (timerfd_settime,\n    (int __ufd, int __flags,\n"
    assert status("c", wrapper) == "incomplete"
    assert check_syntax_tree("c", wrapper, partial=False).status == "invalid"


def test_a_list_of_macro_calls_is_read_whole_after_many_attributes() -> None:
    # openssl's core_dispatch.h: hundreds of `F(…)` lines; the attributes' scans (each line's call read as an
    # attribute after the line before) no longer spend the calls' budget
    body = "".join(f"OSSL_CORE_MAKE_FUNC(int, f{i}, (OSSL_CORE_BIO * bio, void *d, size_t n))\n"
                   for i in range(400))
    text = body + ("#define N_L 1\nOSSL_CORE_MAKE_FUNC(const OSSL_PARAM *,\n"
                   "    g, (const OSSL_CORE_HANDLE *p))\n")
    assert status("c", text) == "valid"
    assert status("c", text + "int h(;\nint k;\n") == "invalid"


UNKNOWN_MACROS = [
    # a lowercase storage-class macro (X11's Vendor.h, Intrinsic.h)
    ("typedef struct W *WidgetClass;\nexternalref WidgetClass vendorShellWidgetClass;\n"
     "externalref XtConvertArgRec const colorConvertArgs[];\nint x;\n",
     "typedef struct W *WidgetClass;\nexternalref WidgetClass vendorShellWidgetClass;\n"
     "externalref XtConvertArgRec const colorConvertArgs[];\nint x = (1;\nint y;\n"),
    # a qualifier macro on many lines of parameters (X11's Xlib.h): blanked wherever it occurs
    ("extern Cursor XCreateGlyphCursor(\n    Display*\t\t/* display */,\n    XColor _Xconst *\t/* fg */,\n"
     "    XColor _Xconst *\t/* bg */\n);\nextern int XStoreColors(\n    Display*\t\t/* display */,\n"
     "    XColor _Xconst *\t/* color */,\n    int\t\t\t/* ncolors */\n);\n",
     "extern Cursor XCreateGlyphCursor(\n    Display*\t\t/* display */,\n    XColor _Xconst *\t/* fg */,\n"
     "    XColor _Xconst *\t/* bg */\n);\nextern int XStoreColors(\n    Display*\t\t/* display */,\n"
     "    XColor _Xconst *\t/* color */,\n    int\t\t\t/* ncolors */\n;\nint x;\n"),
    # two macros between a function's type and its name (freeglut_std.h)
    ("static void FGAPIENTRY FGUNUSED glutInit_ATEXIT_HACK(int *argcp, char **argv) { f(argcp, argv); }\n"
     "int x;\n",
     "static void FGAPIENTRY FGUNUSED glutInit_ATEXIT_HACK(int *argcp, char **argv) { f(argcp, argv; }\n"
     "int x;\n"),
]


@pytest.mark.parametrize(("text", "broken"), UNKNOWN_MACROS)
def test_an_unknown_macro_the_grammar_cannot_place_is_allowed(text: str, broken: str) -> None:
    assert check_syntax_tree("c", text, partial=True).status != "invalid"
    assert check_syntax_tree("c", text, partial=False).status == "valid"
    assert status("c", broken) == "invalid"


@pytest.mark.parametrize(("text", "broken"), UNKNOWN_MACROS)
def test_an_unknown_macro_in_a_long_texts_first_lines_is_allowed(text: str, broken: str) -> None:
    # the start, read alone first, is broken until the macro's name is blanked: the whole is then read
    body = "int f(int a) {\n  return a + 1;\n}\n" * 1_000
    assert status("c", text + body) == "valid"
    assert status("c", text + body + "int g(int a) {\n  return a +") == "incomplete"
    assert status("c", broken + body) == "invalid"
    assert status("c", text + body + "int g(;\nint h;\n") == "invalid"  # the start is fine, the rest is not


@pytest.mark.parametrize("prefix", [
    # glibc's declarations cut after their attribute macros, before the `;` or the next line's attribute
    "extern ssize_t readlink (const char *__restrict __path,\n\t\t\t char *__restrict __buf, size_t __len)\n"
    "     __THROW __nonnull ((1, 2)) __wur\n",
    "extern void swab (const void *__restrict __from, void *__restrict __to,\n\t\t  ssize_t __n) __THROW"
    " __nonnull ((1, 2))\n    __attr_access ((__read_only__, 1, 3))\n",
])
def test_a_declaration_cut_after_its_attributes_is_incomplete(prefix: str) -> None:
    assert status("c", "#ifndef U_H\n#define U_H 1\n" + prefix) == "incomplete"
    assert status("c", "#ifndef U_H\n#define U_H 1\n" + prefix + "int x;\n") == "invalid"


def test_a_macro_that_gives_a_declarations_type_is_kept() -> None:
    # ncurses' form.h: `FORM_EXPORT_VAR(T)` expands to the type; the name after it is no attribute macro
    head = "#ifdef __cplusplus\nextern \"C\" {\n#endif\n/* standard field types */\n"
    text = head + "".join(f"extern FORM_EXPORT_VAR(FIELDTYPE *) TYPE_{name};\n" for name in ("ALPHA", "ENUM"))
    end = "#ifdef __cplusplus\n}\n#endif\n"
    assert status("c", text + end) == "valid"
    assert status("c", text + "int f(;\n" + end) == "invalid"


def test_unknown_macros_are_tried_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    analysed = []
    analyse = syntax_tree._analyse
    monkeypatch.setattr(syntax_tree, "_analyse", lambda *args: analysed.append(1) or analyse(*args))
    names = " ".join(f"a{index}" for index in range(50))
    assert status("c", f"int f(void) {{\n  g({names} +);\n  return 0;\n}}\n") == "invalid"
    assert len(analysed) == 1 + syntax_tree._MACRO_TRIES
    analysed.clear()
    assert status("c", "int f(void) {\n  return 0;\n}\n") == "valid"
    assert len(analysed) == 1  # no try on a valid text


def test_a_member_macro_with_a_comment_after_its_semicolon_is_a_declaration() -> None:
    # rdma's ib_user_ioctl_verbs.h: `RDMA_UAPI_PTR(void *, p); /* … */` declares a member
    text = ("struct e {\n\tRDMA_UAPI_PTR(void *, val_ptr); /* pointer to a filter */\n"
            "\tRDMA_UAPI_PTR(struct e *, next_ptr);\n\t__u16\tlen;\n};\n")
    assert status("c", text) == "valid"
    assert status("c", text.replace("__u16\tlen;", "__u16\tlen(;")) == "invalid"


def test_a_text_cut_inside_the_last_of_a_line_of_macro_calls_is_incomplete() -> None:
    # openssl's core_dispatch.h: calls with no `;`, the last cut inside its arguments over lines
    calls = "".join(f"OSSL_CORE_MAKE_FUNC(int, f{index},\n    (void *vctx, int n))\n" for index in range(3))
    prefix = ("#ifdef __cplusplus\nextern \"C\" {\n#endif\n" + calls
              + "OSSL_CORE_MAKE_FUNC(int, provider_register_child_cb,\n    (const OSSL_CORE_HANDLE *handle,\n"
              + "        int (*create_cb)(const OSSL_CORE_HANDLE *provider, void *cbdata),\n")
    assert status("c", prefix) == "incomplete"
    assert status("c", "int f(;\n" + prefix) == "invalid"


def test_a_directive_cut_after_a_comment_over_its_continued_lines_is_incomplete() -> None:
    # libuv's tree.h: a `#define` body holding a comment whose lines end in backslashes, cut after it
    prefix = ("#define SPLAY_GENERATE(name, type)                                   \\\n"
              "void name##_SPLAY(struct name *head)                                   \\\n"
              "{                                                                      \\\n"
              "}                                                                      \\\n"
              "/* Splay with either the minimum or the maximum element             \\\n"
              " * Used to find minimum or maximum element in tree.                 \\\n"
              " */                                                                 \\\n"
              "void name##_SPLAY_MINMAX(struct name *head, int __comp)              \\\n"
              "{                                                                      \\\n")
    assert status("c", prefix) == "incomplete"
    assert status("c", "int f(;\n" + prefix) == "invalid"


def test_an_error_over_many_lines_is_read_by_the_macros_of_the_errors_before_it() -> None:
    # gpgrt.h (reduced): tree-sitter reads the write's lines and the macro's line before them as one error;
    # the macro nearest the error the file had before the write, blanked wherever it occurs, mends it
    before = ("static GPGRT_INLINE void\ngpgrt_annotate_leaked_object (const void *p)\n{\n"
              "gpgrt_stream_t gpgrt_fopencookie (void *_GPGRT__RESTRICT cookie,\n"
              "                   void (*fnc) (gpgrt_stream_t, void*), void *fnc_value);\n")
    chunk = ("gpg_error_t      gpgrt_b64dec_proc (gpgrt_b64state_t state,\n"
             "                                    void *buffer, size_t length,\n"
             "                                    size_t *r_nbytes);\n"
             "gpg_error_t      gpgrt_b64dec_finish (gpgrt_b64state_t state);\n\n\n\f\n"
             "/*\n * Logging functions\n")
    assert status("c", before + chunk, before) == "incomplete"  # the comment still open
    assert status("c", before + chunk.replace("state);", "state;"), before) == "invalid"


def test_a_condition_a_cpp_branch_has_is_false_for_c_everywhere() -> None:
    # gmp.h: `extern "C" {` opens in a branch with C++ lines; the `}` closing it is under the same condition
    text = ("#if defined (__cplusplus)\nextern \"C\" {\nusing std::FILE;\n#endif\n\n"
            "void mpz_init (mpz_ptr);\n\n#if defined (__cplusplus)\n}\n#endif\n")
    assert status("c", text) == "valid"
    assert status("c", text.replace("(mpz_ptr);", "(mpz_ptr;")) == "invalid"

"""The tree-sitter gates: what blocks, what a block says, chunked writes, old errors, lazy loading."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from policy.language.loader import check_policy, load_policy
from policy.model.compiled import CompiledPolicy
from policy.model.events import ToolCall
from policy.model.validators import SYNTAX_TREE_LANGUAGES
from policy.runtime.gates import check_write
from policy.runtime.gates import grammars as grammars_module
from policy.runtime.gates.grammars import GRAMMARS, GrammarUnavailable, parser
from policy.runtime.gates.literal_nesting import nesting_closing
from policy.runtime.gates.syntax_tree import check_syntax_tree

EXTENSIONS = {"javascript": "js", "typescript": "ts", "tsx": "tsx", "go": "go", "rust": "rs", "java": "java",
              "c": "c", "cpp": "cpp", "ruby": "rb", "php": "php", "shell": "sh", "html": "html", "css": "css"}


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> CompiledPolicy:
    gates = "\n".join(f'gate {name} {{ files "*.{EXTENSIONS[name]}"; check {name}; partial allow }}'
                      for name in SYNTAX_TREE_LANGUAGES)
    path = tmp_path_factory.mktemp("policy") / "team.policy"
    path.write_text('policy "team" {}\ntool write_file { writes path=path content=content append=append }\n'
                    "tool str_replace { edits path=path old=old_str new=new_str }\n" + gates + "\n")
    return load_policy(path)


def write(policy: CompiledPolicy, path: str, content: str, files: dict[str, str] | None = None,
          append: bool = False) -> Any:
    call = ToolCall(id="c1", name="write_file", args={"path": path, "content": content, "append": append})
    return check_write(policy, call, (files or {}).get)


def edit(policy: CompiledPolicy, path: str, old: str, new: str, files: dict[str, str]) -> Any:
    call = ToolCall(id="c1", name="str_replace", args={"path": path, "old_str": old, "new_str": new})
    return check_write(policy, call, files.get)


VALID = {
    "javascript": "export function total(items) {\n  return items.reduce((a, b) => a + b, 0);\n}\n",
    "typescript": "export interface Point { x: number }\nexport const p: Point = { x: 1 };\n",
    "tsx": "export const App = () => <div className=\"a\">{1 + 2}</div>;\n",
    "go": "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
    "rust": "fn main() {\n    let v: Vec<i32> = vec![1, 2];\n    println!(\"{:?}\", v);\n}\n",
    "java": "class A {\n  int f(int x) { return x + 1; }\n}\n",
    "c": "#include <stdio.h>\nint main(void) {\n  printf(\"hi\\n\");\n  return 0;\n}\n",
    "cpp": "#include <vector>\nint main() {\n  std::vector<int> v{1, 2};\n  return v.size();\n}\n",
    "ruby": "class A\n  def f(x)\n    x + 1\n  end\nend\n",
    "php": "<?php\nfunction f($x) {\n  return $x + 1;\n}\n",
    "shell": "#!/bin/sh\nif [ -f x ]; then\n  echo yes\nfi\n",
    "html": "<!DOCTYPE html>\n<html><body><p class=\"a\">hi</p></body></html>\n",
    "css": "a { color: red; }\n.b > c { margin: 0 auto; }\n",
}
BROKEN = {
    "javascript": ("function f() {\n  return (1;\n}\nf();\n", 2),
    "typescript": ("const a: number = (1;\nconst b = 2;\n", 1),
    "tsx": ("const a = (1;\nconst b = 2;\n", 1),
    "go": ("package main\n\nfunc main() {\n\tx := 1)\n\tprintln(x)\n}\n", 4),
    "rust": ("fn main() {\n    let x = (1;\n    println!(\"{}\", x);\n}\n", 2),
    "java": ("class A {\n  int f(int x) { return (x + 1; }\n}\n", 2),
    "c": ("int main(void) {\n  return (1;\n}\n", 2),
    "cpp": ("int main() {\n  return (1;\n}\n", 2),
    "ruby": ("def f(x)\n  x + )\nend\n", 2),
    "php": ("<?php\nfunction f($x) {\n  return ($x;\n}\n", 3),
    "shell": ("if [ -f x ]; then\n  echo )\nfi\n", 2),
    "html": ("<div>\n<p>hi</p\n<p>x</p>\n</div>\n", 3),
    "css": ("a { color: red;; }\nb { margin: 0; }\nc { top: 1px; }\n", 1),
}


@pytest.mark.parametrize("language", SYNTAX_TREE_LANGUAGES)
def test_valid_code_is_allowed(language: str, policy: CompiledPolicy) -> None:
    assert write(policy, f"m.{EXTENSIONS[language]}", VALID[language]).action == "allow"


@pytest.mark.parametrize("language", SYNTAX_TREE_LANGUAGES)
def test_a_syntax_error_is_blocked_at_its_line(language: str, policy: CompiledPolicy) -> None:
    text, line = BROKEN[language]
    decision = write(policy, f"m.{EXTENSIONS[language]}", text)
    assert decision.action == "block"
    assert decision.metadata["line"] == line
    assert decision.metadata["validator"] == language
    assert "^" in decision.metadata["snippet"]


def test_a_block_says_what_tree_sitter_expected(policy: CompiledPolicy) -> None:
    decision = write(policy, "app.js", "function f() {\n  return g(1;\n}\nf();\n")
    assert decision.metadata["message"] == "missing `)`"
    assert (decision.metadata["line"], decision.metadata["column"]) == (2, 13)
    assert "`javascript` check failed at line 2, column 13: missing `)`" in decision.hint
    assert decision.metadata["snippet"] == "1 | function f() {\n2 |   return g(1;\n  |             ^"


@pytest.mark.parametrize("prefix", [
    "function f(a, b) {\n  if (a) {\n    return [a,\n",       # open brackets
    "/**\n * Adds things.\n",                                    # a block comment
    "const s = `line one\nline two ${x}\n",                      # a template literal
    "export class A {\n  m(): void\n",                           # a method header with no body
    "const x =\n",                                               # an unfinished statement
])
def test_an_incomplete_javascript_prefix_is_allowed_with_partial(prefix: str, policy: CompiledPolicy) -> None:
    decision = write(policy, "app.ts", prefix)
    assert (decision.action, decision.metadata.get("incomplete")) == ("allow", True)


@pytest.mark.parametrize(("language", "prefix"), [
    ("shell", "cat <<EOF\nhello\n"),
    ("shell", "for f in *; do\n  echo \"$f\"\n"),
    ("ruby", "class A\n  def f(x)\n    x + 1\n"),
    ("php", "<?php\n$s = <<<EOT\nhello\n"),
    ("go", "package a\n\nfunc f() {\n\tx := 1\n"),
    ("css", "a {\n  color: red;\n"),
    ("shell", "f() {\n  if [ -n \"$x\" ]; then\n    echo yes\n"),    # keyword blocks: fi, }
    ("shell", "case $1 in\n  a)\n    while true; do\n"),           # esac, done
    ("shell", "if [ -r x ] \\\n"),                                  # the `then` still to come
    ("tsx", "export const A = () => (\n  <Ctx.Provider value={v}>\n    {children}\n"),  # an open element
    ("typescript", "export function f<\n  T = unknown,\n"),       # type parameters
    ("typescript", "export const A = ({\n  children,\n  options = {},\n"),  # arrow parameters
    ("html", "<html>\n<head>\n<style>\na { color: red }\n"),       # raw text still open
    ("php", "<?php\nfunction f() {\n  $e = g(substr($a, 1),\n"),   # arguments, then `;` before `}`
    ("php", "<?php\nclass A {\n  public function g()\n"),         # a finished line that needs a body
    ("php", "<?php\nfunction f() {\n  do {\n    $x = g($x);\n"),      # a `do` block waiting for `while`
    ("php", "<?php\nfunction f() {\n  $t = $a ? $b['c']\n"),            # `;` before the `}`
    ("shell", "f() {\n  P=\"$D/$(basename \"$C\" .crt | sed -e 's/ /_/g' \\\n"),  # `)`, then `"`, then `}`
    ("shell", "if [ -x \"$a\" ] &&  \\\n   [ \"$b\" = x ] &&  \\\n"),        # a condition continued
    ("php", "<?php\nfunction f() {\n  $log = \"\n---- OUT\n$out\n"),     # a string, then `;` before the `}`
    ("java", "class A {\n  void f() {\n    do {\n      x++;\n"),
    ("typescript", "try {\n  do {\n    x++;\n  } while (x < 3);\n  do {\n"),  # `while`, `finally`
    ("ruby", "def f\n  [1, 2].map do |x| x end\n"),                 # a finished line that ends in `end`
    ("c", "#ifndef A_H\n#define A_H\n#ifdef __cplusplus\nextern \"C\" {\n#endif\nint f(void);\n"),
    ("javascript", "import { a } from './a'\nimport {\n  b,\n"),   # an import list, `from` still to come
    ("javascript", "var c = (this && this.c) || (Object.create ? (function(o, m) {\n  if (m) m = o;\n"),
    ("javascript", "module.exports = d && typeof d.get === 'function'\n\t? f([d.get])\n"
                   "\t: typeof g === 'function'\n\t\t? function getDunder(v) {\n\t\t\treturn g(v);\n"),
    ("javascript", "m.map((a) => {\n\treturn !a.p ? a.o.t(r, (p) => {\n\t\tif (!t.has(p)) {\n"),
    *((language, "function f(t) {\n  switch (t) {\n    default:\n      switch (\n"  # `)) {}}`: a block
                  "        (\"string\" === typeof t.s\n          ? t.then(n, n)\n")
      for language in ("javascript", "typescript", "tsx")),
    *((language, "function f(i) {\n  switch (i.c) {\n    case 1:\n      if (i.a)\n        m = `A ${\n"
                  "          i.e ? \"e\" : i.b ? `at` : `mo`\n")  # `}`, the template's `` ` ``, then `}}`
      for language in ("javascript", "typescript", "tsx")),
    ("javascript", "(function () {\n  function jsxDEVImpl(\n    type,\n"),  # a function's body still to come
    ("javascript", "const a = 1;\n\n/**\n * Scans a glob (`isGlob`, `path`).\n *\n * ```js\n"  # `/*` inside
                   " * console.log(pm.scan('foo/bar/*.js'));\n * { glob: '*.js' }\n"),
    ("php", "<?php\n$a = foo(\n  1,\n  2\n"),                     # a call at top level: `);` to come
    ("rust", "const X: &[u8] = &[\n  1,\n"),
    ("tsx", "import type {\n  DefaultError,\n  InfiniteData,\n"),
    ("typescript", "export const f = <\n  TData,\n  TError,\n"),   # a generic arrow function's `<`
    ("typescript", "export type V<T> = T extends { kind: 'N' }\n"),  # a conditional type: `? :` to come
    ("typescript", "type V<T> = T extends A\n  ? T extends { v: infer V }\n    ? V\n"),  # `: _ : _`
    ("typescript", "type P<T> = T extends Z<infer S> ? Z<{\n  [K in keyof S]: P<S[K]>;\n"),  # `}>`
    ("rust", 'fn t() {\n    snapshot!(f, @r###"\n    File {\n        s: Some("#!/x"),\n'),  # `"###` to come
    ("rust", "fn f(n: u8) -> u8 {\n    match n {\n        0 => 1,\n        #[cfg(x)]\n"),  # an arm to come
    ("css", "a {\n  background: url(data:image/png;base64,iVBO);\n  b: c;\n"),  # a `;` inside a line's `url(`
    ("shell", "f() {\n\tcase $1 in\n\tfirefox | iceweasel | \\\n\tchrome | chromium | \\\n"),  # `_) ;;`
    ("typescript", "type G<T> = T extends {\n  queryFnData: infer D;\n  error?: infer E;\n"),  # `} ? _ : _`
    ("typescript", "declare class S {\n  constructor(\n    v: V,\n    f: <D>(\n      d: D,\n"),  # `) => _`
    ("typescript", "declare class Z {\n  required<M extends E<{\n    [k in keyof T]?: true;\n"),  # `}>>():`
    ("typescript", "export interface O<\n  A = unknown,\n  B = never,\n> extends F<\n"),  # `> {}`
    ("typescript", "export type O = {\n  p: P | ((arg0: {\n    popper: Rect;\n"),  # `}) => _)}`
    ("typescript", "export type H = (ctx: {\n  z: T;\n  /** The error, e.g. an `undefined`\n"),  # `*/}) => _`
    ("typescript", "type Q<T> = T extends []\n  ? []\n  : T extends A<\n    O<\n      infer D,\n"),  # `>> ?`
    *((language, "function f(c) {\n  if (c)\n    for (\n      i === c.e &&\n        (d = !0),\n")  # `;;)`
      for language in ("javascript", "typescript")),
    ("javascript", "function f() {\n  for (\n    let i = 0;\n    i < g(\n      a,\n"),  # `_);) {}}`
    ("typescript", "export namespace u {\n  type I<T> = (T extends U ? (k: T) => void : never) extends (\n"
                   "    k: infer I\n"),  # `) => _ ? _ : _}`
    ("shell", 'if test -z "$a" || {\n\ttest "$b" = x &&\n\ttest ! -f "$c" 2>/dev/null\n'),  # `}`, then `then`
    ("shell", "if case $o in\n  (a | b)\n    :;;\n  (*)\n    eval x;;\n"),  # `esac`, then `then`
    ("shell", "while\n  echo a\n  for i in 1 2\n  do\n    b\n"),  # the `for`'s `do`, not the `while`'s
    ("shell", 'if [ $# -eq 1 ]; then\n  (\n    case `echo "$1"` in\n      *.a)\n'),  # `a)`: no closer
    ("shell", 'if [ $# -eq 1 ]; then\n  (\n    case "$1" in\n      *.a)\n'
              '        if [ -x "`which ar`" ]; then\n          ar tv "$1"\n'
              '        else echo "No ar"; fi ;;\n\n      *.bz2)\n'
              '        if [ -x "`which b`" ]; then\n          b -dc "$1" | tar tvvf -\n'),
    ("go", "package a\n\nfunc f() {\n\tif !(a ||\n\t\tb ||\n"),  # a header waiting for its block
    ("go", "package a\n\nfunc f() error {\n\tif err := g(F{\n\t\tw: 1,\n"),  # `}); _ {}`: a condition to come
    ("go", "package a\n\nfunc f() {\n\tswitch x := g(\n\t\ta,\n"),
    ("go", "package a\n\nfunc f() {\n\tfor _, c := range []struct {\n\t\tPath []string\n"),  # `}{} {}`
    ("go", "package a\n\nfunc f() {\n\tfor _, c := range []struct {\n\t\tPath []string\n\t}{\n"
           "\t\t{ // empty\n\t\t\t[]string{},\n"),  # the literal's `{` opens no block
    ("go", "package a\n\nfunc f() {\n\tfor _, c := range []struct {\n\t\tt, c string\n\t}{\n"
           "\t\t{\"yaml\", `\na: 1\n"),  # a raw string, then `}}{} {}}`: the literal, the header's block
    ("go", "package a\n\nvar names = []struct {\n\tn string\n"),  # `}{}`: a type waiting for its literal
    ("go", "package a\n\nconst (\n\tconfData = `\n\t; name\n"),  # a line break before the group's `)`
    ("rust", "macro_rules! m {\n    (\n        $name:ident, // the name\n        $n:tt,\n"),  # `) => {}}`
    ("rust", "mod a {\n    macro_rules! m {\n        ($x:expr, $($y:tt"),            # `)*) => {}}}`
    ("rust", "macro_rules! m {\n    ($($x:expr),*) => {\n        $(\n            f($x);\n"),  # `)*}}`
    ("rust", "fn f() {\n    match t.next() {\n        Some(T::Token(\n            Token {\n"
             "                kind: K::Eq,\n"),                                          # `})) => {}}}`
    ("rust", "fn f() {\n    if let Some(x) = y.map(|z| {\n        z + 1\n"),     # `}) {}}`
    ("rust", "macro_rules! m {\n    () => {\n        /*\n        loop {\n            /*\n"
             "            f(x,\n"),                                                    # `*/*/`: comments nest
    ("rust", "fn f() {\n    /* a\n    /* b */\n    let c = 1;\n"),   # the inner comment closed, the outer not
    ("rust", "fn f() {\n    if match x {\n        A => {\n            g(\n"),   # `)}} {}}`
    ("rust", "fn f() {\n    if {\n        let a = i.fork();\n        a.is_some()\n"
             "            && (a.peek(X)\n"),                                     # `)} {}`: a block condition
    ("rust", "fn t() {\n    for &input in &[\n        \"tuple .0.0\",\n"),   # `] {}}`: the loop's block
    ("ruby", "module M\n  class_eval %{\n    def do_parse\n      #{r}(x)\n"),          # `}`, then `end`
    ("ruby", "def w3cdtf(date)\n  if /\\A\\s*\n      (-?\\d+)-(\\d\\d)\n"),             # a regex's `/`
    ("ruby", "def d(arg)\n  _,          _,\n  goto_table, goto_check,\n"),         # ` = _`: a list assigned
    ("ruby", "unless A.method_defined?(:count)\n  A.class_eval <<-'end;', __FILE__, __LINE__+1\n"
             "    require 'rbconfig'\n\n    def count\n"),                               # a heredoc's `end;`
    ("ruby", "def f(e)\n  case e\n  when :a\n    true\n=begin\n  when :b\n    false\n"),  # `=end`, `end`
    ("ruby", "def f\n  if $1 =~ /a/m then\n    re = %r%\n      \\A(\n      (^\\s*\\n)+\n"),  # `%`, `end`s
    ("ruby", "def t\n  e.each do |t, v|\n    a(t) do\n      p(m(<<-EOR, {x => u}))\n#{c()}\n"
             "#{i((\"<\" + p + \":\" + t.to_s + \" r=\\\"\" +\n"),  # ` _))}`, then `EOR`, then `end`s
    ("ruby", "def m(mk)\n  mk << %{\nruby = #{a.sub(%r[\\A#{b}]) {'c'}}\n"),  # `}`: the `%{`, not the `%r[`
    ("ruby", "def f\n  @content.scan(%r%rb_define\\(\n  \\s*([\\w.]+),\n"),  # `%r%`: `%` closes it
    ("ruby", "def g\n  @f.printf u(<<-End),\n    module_eval(<<'%s', '%s', %d)\n      def x\n"),  # `End`
    ("ruby", "class R\n  def inspect\n    \"< #{to_s} #{@events.collect{|e|\n      p = e ? 1 : 2\n"),  # `}}"`
    ("ruby", "class C\n  def f\n    if a\n      eval %[\n        def #{n}(*o)\n          args = 1\n"
             "          eval %[\n            def self.#{n}_(\\#{args})\n"),  # `]`, `]]`: two `%[` open
    ("ruby", "def d\n  @content.scan(\n    %r(\n      (?<v>[\\w.]+)\\s* =\n      \\s*rb_(?:\n"),  # `))`, `)`
    ("ruby", "module O\n  class C\n    if !(a &&\n         b)\n      P.merge!(\n        ciphers: %w{\n"
             "          E-A\n"),  # `}`, then the `)` that the tree with the `}` hides in its error
    ("ruby", "class W\n  TYPE_H = /^[#{ %W(\n    \\u{20A9}\n    \\u{FF61}-\\u{FFBE}\n"),  # `)}/`: a regex's
    ("ruby", "def t\n  x.each do\n    a(m(<<-EOR))\n#{c(%Q[\n#{i(%Q[\n<e\n"
             "  #{s.join(\"\\n\")} />\n"),  # `])}])}`, then `EOR`: literals in interpolations in a heredoc
    # a JSX tag cut among its attributes: `/>`, then what was open before it (create-vite's App.jsx)
    ("javascript", "function App() {\n  return (\n    <>\n      <button\n        type=\"button\"\n"
                   "        onClick={() => setCount((count) => count + 1)}\n"),
    ("javascript", "const a = <div>\n  <Nav.Link {...props}\n"),
    ("javascript", "const a = <div>\n  <button\n    onClick={() => {\n      f(1);\n"),  # `}}/></div>`
    ("tsx", "export const A = () => (\n  <div>\n    <svg\n      className=\"icon\"\n"),
    ("javascript", "const A = () => (\n  <div>\n    <Link to=\"/\">\n"),  # `</Link>`: JSX keeps the case
    # an `&` read as JSX reads it is no error that the completions cannot reach (reactstrap's types)
    ("tsx", "const A = () => <img src=\"/t?a=3&w=318\" />;\n\nconst B = () => {\n  return (\n    <Card>\n"
            "      <img\n        width=\"100%\"\n"),
    # a constructor cut among its parameters (` _ _) {}}`), an annotation cut inside its arguments (Capacitor)
    ("java", "class A {\n  public A(\n      String globalJS,\n      String bridgeJS,\n"),
    # PHP: a conditional continued on the next line, attributes before what they annotate, a `foreach (` cut
    # inside its array, an anonymous class's body (`};`) (Monolog, Doctrine, Guzzle)
    ("php", "<?php\nfunction f($v) {\n    $v = is_array($v)\n        ? sprintf('%s', $v)\n"),
    ("php", "<?php\nclass A {\n    #[\\ReturnTypeWillChange]\n"),
    ("php", "<?php\nclass A {\n    public function c(\n        #[SensitiveParameter]\n"),
    ("php", "<?php\nforeach (\n    [\n        'host' => 'HOSTNAME',\n"),
    ("php", "<?php\nclass E {\n    public function wrap($d) {\n        return new class ($d) extends M {\n"
            "            public function connect(\n                #[SensitiveParameter]\n"),
    ("java", "@CapacitorPlugin(\n    name = \"Http\",\n    permissions = {\n"
             "        @Permission(alias = \"W\"),\n"),
])
def test_incomplete_prefixes_of_other_languages(language: str, prefix: str, policy: CompiledPolicy) -> None:
    assert write(policy, f"m.{EXTENSIONS[language]}", prefix).metadata.get("incomplete") is True


@pytest.mark.parametrize(("data", "closer", "closing"), [
    (b"/^[#{ %W(\n  a\n", b"/", b")}/"),                         # a %-literal in a regex's interpolation
    (b'\n#{c(%Q[\n#{i(%Q[\n<e #{s.join("\\n")} />\n', b"", b"])}])}"),  # a heredoc body: no closer of its own
    (b'"a #{f(%w[x] ', b'"', b')}"'),  # a literal closed inside, the call's `(` open
    (b'"a #{f(]', b'"', None),                                     # does not nest as read: the other endings
    (b'"a %w(', b'"', None),                                       # no interpolation open
])
def test_nesting_closing_reads_literals_in_interpolations(data: bytes, closer: bytes,
                                                          closing: bytes | None) -> None:
    delimited = GRAMMARS["ruby"].delimited
    assert delimited is not None
    assert nesting_closing(data, 1 if closer else 0, delimited, closer) == closing


def test_an_error_followed_by_more_text_blocks_even_in_a_prefix(policy: CompiledPolicy) -> None:
    files = {"app.js": "function f(a) {\n"}
    chunk = "  const x = g(a;\n  const y = 2;\n  return x + y;\n"
    decision = write(policy, "app.js", chunk, files, append=True)
    assert decision.action == "block"
    assert decision.metadata["line"] == 2


@pytest.mark.parametrize("text", [
    "const a = <div>\n  <button\n    type=\"button\n    disabled\n    id=\"b\"\n",  # a string not closed
    "const a = <div>\n  <button\n    onClick={() => f(1}\n    id=\"b\"\n",  # `)` deleted in a handler
])
def test_an_error_in_a_jsx_tag_cut_among_its_attributes_blocks(text: str, policy: CompiledPolicy) -> None:
    """Closing a tag left open as ``/>`` completes only a cut-off tag: an error inside it still blocks."""
    assert write(policy, "m.js", text).action == "block"


@pytest.mark.parametrize(("language", "text", "line"), [
    ("go", "package a\n\nfunc f() {\n\tif err != nil {\n\t\tb.Fatal(err\n\t}\n", 5),  # seen on the last line
    ("java", "class A {\n  int f() {\n    return 1;\n\n  public int g() {\n", 5),  # a method in a method
    ("java", "class A {\n  public A(\n      int a,,\n      int b,\n", 2),  # tree-sitter's error: the header
    ("go", "package a\n\nfunc f() {\n\tx := g(1\n\t}\n\ty := `a`\n", 4),  # a tail that closes no string
    ("ruby", "def as_json\n  {\n    'o' => options,\n\n  end\n", 5),  # a finished last line: `end` in a hash
    ("ruby", "class W\n  T = /^[#{ %W(\n    a\n  ).join }]/\n  U = f(1\n  V = 2\n", 5),  # past a `%W(`
    ("css", ':root {\n  --font: a, "Segoe UI, Roboto;\n  --b: 1;\n}\n', 2),  # a line break ends a CSS string
    ("php", "<?php\nclass A {\n  function f() {\n    $x = 1;\n\n  public function g()\n", 6),
    ("typescript", "type P<T> = T extends Z<infer S> ? Z<{\n  a: (1;\n  b: 2;\n", 2),  # `}>` closes no `(`
    ("typescript", "const f = <T,>(a: T) => a ? (b;\nconst g = 1;\n", 1),
    ("rust", 'fn t() {\n    let a = r#"x"#;\n    let b = (1;\n    s!(f, @r##"\n    F {\n', 3),
    ("rust", "fn f(n: u8) -> u8 {\n    match n {\n        0 => (1,\n        2 => 3,\n        #[cfg(x)]\n", 4),
    ("rust", "struct S {\n    #[cfg(not(x)]\n    a: u8,\n    b: u8,\n}\n", 2),  # an attribute without `)`
    ("css", "a {\n  color: var(--x;\n  top: 0;\n  left: 0;\n", 2),  # `)` deleted: all else in it
    ("css", 'a {\n  font: "Mono, ", Courier New", monospace;\n}\nb { top: 0 }\n', 2),  # a tree with no error
])
def test_an_error_valid_text_follows_blocks_in_a_prefix(language: str, text: str, line: int,
                                                       policy: CompiledPolicy) -> None:
    decision = write(policy, f"m.{EXTENSIONS[language]}", text)
    assert (decision.action, decision.metadata["line"]) == ("block", line)


@pytest.mark.parametrize(("language", "text", "broken"), [
    ("shell", "for file do\n  echo \"$file\"\ndone\n", "for file do\n  echo )\ndone\n"),  # POSIX for-do
    ("css", "tr:nth-child(2n-1) td { color: red }\n", "tr:nth-child(2n-1) td { top: 0;; }\nb { x: 0 }\n"),
    ("shell", 'if [ \\( -n "$a" \\) -o "$b" = ~ ]; then\n  echo "$a"\nfi\n',  # `\\(` and `~` in a test
     'if [ \\( -n "$a" \\) -o "$b" = ~ ]; then\n  echo )\nfi\n'),
    ("html", "<pre>\ninfo->skip = 0;\n</pre>\n<p>$ node\n> .save a.js</p>\n",   # a `>` in text
     "<pre>\ninfo->skip = 0;\n</pre>\n<p>$ node</p\n<p>x</p>\n"),
    ("php", '<?php\n$s = "<e>$p[extends]</e>";\n$u = 2;\n',                 # a bare key that is a keyword
     '<?php\n$s = "<e>$p[extends]</e>";\n$t = (1;\n$u = 2;\n'),
    ("html", '<?xml version="1.0"?>\n<html><body><p>&#x3C;string></p></body></html>\n',
     '<?xml version="1.0"?>\n<html><body><p>&#x3C;string></p\n<p>x</p></body></html>\n'),
    ("c", "DECLARE_PEM_rw(CMS, CMS_ContentInfo)\nint f(void);\n",            # a macro call with no `;`
     "DECLARE_PEM_rw(CMS, CMS_ContentInfo)\nint f(void;\nint g(void);\n"),
    # a declarator on the line after its type, then a macro call
    ("c", "typedef struct s S;\nS *\nS_create_ex(const char *name, int n);\nMACRO_CALL(a b)\nint f(void);\n",
     "typedef struct s S;\nS *\nS_create_ex(const char *name, int n);\nint f(void;\nint g(void);\n"),
    ("cpp", "class A {\n  MOCK_METHOD(void, F, ());\n};\n",                  # a macro argument no expression
     "class A {\n  MOCK_METHOD(void, F, ());\n  int f(;\n};\n"),
    ("shell", 'a=`echo "$o"`\nb=` echo x`\necho "$b"\n',                 # an opening backtick, then blanks
     'a=`echo "$o"`\nb=` echo x`\necho )\necho ok\n'),
    ("shell", "case $v in\nless' '45* | \\\nless' '4[6-9]*) x=1 ;;\nesac\n",  # `' '` in continued patterns
     "case $v in\nless' '45* | \\\nless' '4[6-9]*) x=1 ;;\nesac\necho )\necho ok\n"),
    ("shell", 'n=$(($1 + 0)) 2>/dev/null && test "$n" = "$1"\n',          # an assignment with a redirection
     'n=$(($1 + 0)) 2>/dev/null && test "$n" = "$1"\necho )\necho ok\n'),
    ("shell", 'case ${l%%[ \t]*} in\n1) x ;;\nesac\n[ \\( -n "$l" \\) ] && echo "$l"\n',  # `[ ` not a test
     'case ${l%%[ \t]*} in\n1) x ;;\nesac\n[ \\( -n "$l" \\) ] && echo )\necho ok\n'),
    ("shell", "lvs -S lv_name=~\\(e2scrub$\\) \\\n  --noheadings\n",             # `$\`: a plain `$`
     "lvs -S lv_name=~\\(e2scrub$\\) \\\n  --noheadings\necho )\necho ok\n"),
    ("shell", '((gzip -cdfq -- "$f" 4>&-\n  echo $? >&4) 3>&- | cat)\n',        # `((`: two subshells
     '((gzip -cdfq -- "$f" 4>&-\n  echo $? >&4) 3>&- | cat)\necho )\necho ok\n'),
    ("shell", "(cat <<'EOF' &&\n#!/bin/sh\nEOF\n:)\n",                          # a quoted heredoc's body
     "(cat <<'EOF' &&\n#!/bin/sh\nEOF\n:)\necho )\necho ok\n"),
    ("typescript", "export interface C<in T = never> {\n  z: I<T>;\n}\n",           # variance (TS 4.7)
     "export interface C<in T = never> {\n  z: I<T;\n}\nconst a = 1;\n"),
    ("typescript", "export interface M<\n/** @ts-ignore */\nout S extends Z = Z> {\n  s: S;\n}\n",  # `/**`
     "export interface M<\n/** @ts-ignore */\nout S extends Z = Z> {\n  s: (S;\n}\nconst a = 1;\n"),
    ("typescript", "type M<T> = {\n  <R extends string>(path: R): T\n  <F = H>(path: P): T\n}\n",  # no `;`
     "type M<T> = {\n  <R extends string>(path: R): T\n  <F = H>(path: (P): T\n}\nconst a = 1;\n"),
    ("typescript", 'export type * from "./fp/types.ts";\nexport const a = 1;\n',    # TS 5.0
     'export type * from "./fp/types.ts";\nexport const a = (1;\nexport const b = 2;\n'),
    ("typescript", "interface R<T> {\n  readonly [S.u]: {\n    [K in keyof readonly any[]]?: 1;\n  };\n}\n",
     "interface R<T> {\n  readonly [S.u]: {\n    [K in keyof readonly any[]]?: (1;\n  };\n}\nconst a = 1;\n"),
    ("typescript", 'declare module "d" {\n  export default function (\n    t: string\n  ): string;\n}\n',
     'declare module "d" {\n  export default function (\n    t: (string\n  ): string;\n}\nconst a = 1;\n'),
    ("typescript", "export default function <T>(a: T): T;\nexport default function (a: A): A {\n  a;\n}\n",
     "export default function <T>(a: T): T;\nexport default function (a: A): A {\n  (a;\n}\n"),
    ("javascript", "export { anyType as any, functionType as function,\n  nullType as null };\n",  # names
     "export { anyType as any, functionType as function,\n  nullType as null };\nconst a = (1;\nf();\n"),
    ("javascript", 'import { function as f, default as g } from "x";\nexport { f as if } from "y";\n',
     'import { function as f, default as g } from "x";\nexport { f as if } from "y";\nf(;\ng();\n'),
    ("shell", "t=`m`\nx=`\n  echo a\n`\necho \"$x\"\n",                  # `=`, then a backtick ending a line
     "t=`m`\nx=`\n  echo a\n`\necho )\necho ok\n"),
    ("html", '<a class="nav" href="{{< docsref "/components/navbar" >}}">Navbar</a>\n',  # a Hugo shortcode
     '<a class="nav" href="{{< docsref "/components/navbar" >}}">Navbar</a\n<p>x</p>\n'),
    ("html", "<p>Default: <code>'> '</code> or <code>a >= 0</code>, <code><%= data.a %></code></p>\n",
     "<p>Default: <code>'> '</code> or <code>a >= 0</code>, <code><%= data.a %></code></p\n<p>x</p>\n"),
    ("html", "<p>Use <tt>zpipe < foo.txt > foo.txt.z</tt>, prompt <code>'> '</code>.</p>\n",  # `< `
     "<p>Use <tt>zpipe < foo.txt > foo.txt.z</tt>, prompt <code>'> '</code>.</p\n<p>x</p>\n"),
    ("ruby", "def t(v)\n  case v\n  when :$_, :$\\, :$,, :$;, :$.\n    1\n  when :$*, :$\", :$'\n    2\n"
             "  end\nend\n",  # special globals
     "def t(var)\n  case var\n  when :$_, :$/, :$\\, :$,, :$;\n    f(1\n  end\nend\nx = 1\n"),
    ("rust", "struct _Test\nwhere\n    Error: Send + Sync;\nfn f() {}\n",  # a unit struct's where clause
     "struct _Test\nwhere\n    Error: Send + Sync;\nfn f( {}\nfn g() {}\n"),
    ("rust", "#[cfg(any())]\nimpl !Trait {}\nimpl !! {}\nfn f() {}\n",                  # negative impls
     "#[cfg(any())]\nimpl !Trait {}\nimpl !! {}\nfn f( {}\nfn g() {}\n"),
    ("rust", "fn f() -> io::Result<()> {\n    let x = try!(g());\n    Ok(())\n}\n",        # 2015's `try!`
     "fn f() -> io::Result<()> {\n    let x = try!(g();\n    Ok(())\n}\n"),
    ("rust", "fn f() {\n    if p(Token![~]) {}\n}\nmacro_rules! m {\n    (~) => { 1 };\n    [$] => {};\n}\n",
     "fn f() {\n    if p(Token![~] {}\n}\nmacro_rules! m {\n    (~) => { 1 };\n    [$] => {};\n}\n"),
    ("rust", "fn f() {\n    let r: Option<raw> = if i.peek(raw) { g() } else { None };\n"  # `raw` a name
             "    let p = &raw const x;\n}\n",
     "fn f() {\n    let r: Option<raw> = if i.peek(raw { g() } else { None };\n"
     "    let p = &raw const x;\n}\n"),
    ("rust", "fn f(t: T) {\n    match t {\n        L {\n            #[cfg(x)]\n"  # field attributes
             "            inner: a,\n            #[cfg(not(x))] inner: b, ..\n        } => {}\n    }\n}\n",
     "fn f(t: T) {\n    match t {\n        L {\n            #[cfg(x)]\n"
     "            inner: a,\n            #[cfg(not(x))] inner: b, ..\n        } => {}\n    }\n    g(;\n}\n"),
    # heredocs: `<<\EOF` (git's scripts), one with no command (pre-rebase.sample), `<<=cut` before POD
    ("shell", "cat >s.json <<\\EOF ||\n{\nEOF\ndie \"no\"\n",
     "cat >s.json <<\\EOF ||\n{\nEOF\ndie \"no\" )\necho\n"),
    ("shell", "exit 0\n\n<<\\DOC_END\nThis hook checks the topic.\n\n * a\nDOC_END\n",
     "exit 0 )\n\n<<\\DOC_END\nThis hook checks the topic.\n\n * a\nDOC_END\necho\n"),
    ("shell", "exit 0\n\n: <<=cut\n=head1 NAME\n\npg_getwal - (\n\n=cut\n",
     "exit 0 )\n\n: <<=cut\n=head1 NAME\n\npg_getwal - (\n\n=cut\necho\n"),
    # a `$` that starts no expansion (makesetup), `!` before assignments continued to a redirect (npm)
    ("shell", "line=`echo $line| sed s/.$//`$extraline\n",
     "line=`echo $line| sed s/.$//`$extraline )\necho\n"),
    ("shell", "f() {\n  if ! IFS=$'\\n' R=($(A=\"$c\" \\\n      2>/dev/null)); then\n    return 1\n  fi\n}\n",
     "f() {\n  if ! IFS=$'\\n' R=($(A=\"$c\" \\\n      2>/dev/null)); then\n    return 1 )\n  fi\n}\n"),
    # keyframe selectors with fractions (animate.css), IE's star hack (tachyons), custom media (primer)
    ("css", "@keyframes j {\n  from,\n  11.1%,\n  to {\n    x: 1;\n  }\n  .5% { y: 2 }\n}\n",
     "@keyframes j {\n  from,\n  11.1%,\n  to {\n    x: 1;\n  \n  .5% { y: 2 }\n}\n.a { b: c }\n"),
    ("css", ".cf { *zoom: 1; }\n", ".cf { *zoom: 1; }}\n.a { b: c }\n"),
    ("css", "@custom-media --b screen and (min-width: 30em);\n",
     "@custom-media --b screen and (min-width: 30em;\n.a { b: c }\n"),
    # an `&` that starts no character reference, in JSX text and in an attribute's string
    ("javascript",
     "const A = () => (\n  <a href=\"/css2?f=N&display=swap\">\n    Terms & Conditions\n  </a>\n);\n",
     "const A = () => (\n  <a href=\"/css2?f=N&display=swap\">\n    Terms & Conditions\n  </a>\n;\n"),
    ("tsx", "export const A = () => <p>Terms & Conditions</p>;\n",
     "export const A = () => <p>{a & }</p>;\n"),
    # reserved words as JSX attribute names (Preact's `class`, preact-router's `default`); the values are code
    ("javascript", "const A = () => (\n  <a\n    class=\"r\" for={new Date()}\n    title=\"a class\">\n"
                   "    <Route default component={N} />\n  </a>\n);\n",
     "const A = () => (\n  <a\n    class=\"r\" for={new Date(}\n    title=\"a class\">\n"
     "    <Route default component={N} />\n  </a>\n);\n"),
])
def test_valid_code_the_grammar_cannot_parse_is_allowed(language: str, text: str, broken: str,
                                                        policy: CompiledPolicy) -> None:
    assert parser(language).parse(text.encode()).root_node.has_error
    assert check_syntax_tree(language, text, False).status == "valid"  # read whole, not as a prefix
    assert write(policy, f"m.{EXTENSIONS[language]}", text).action == "allow"
    assert write(policy, f"m.{EXTENSIONS[language]}", broken).action == "block"


C_WITH_A_LIST_MACRO = "#define LIST(x) x,\nenum e { LIST(a) LIST(b) };\nint main(void) { return a; }\n"
"""Valid C (gcc accepts it) that tree-sitter-c cannot parse: what the macro expands to is a list."""


def _confirmed_policy(tmp_path: Path, checker: str) -> CompiledPolicy:
    path = tmp_path / "p.policy"
    path.write_text('policy "p" {}\ntool write_file { writes path=path content=content }\n'
                    f'gate c {{ files "*.c"; check c; confirm command "{checker}"; partial allow }}\n')
    return load_policy(path)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed (.ci/run installs it)")
def test_the_languages_own_checker_decides_what_the_grammar_calls_an_error(tmp_path: Path) -> None:
    assert check_syntax_tree("c", C_WITH_A_LIST_MACRO, False).status == "invalid"
    policy = _confirmed_policy(tmp_path, "gcc -fsyntax-only -x c {file}")
    assert write(policy, "list.c", C_WITH_A_LIST_MACRO).action == "allow"
    broken = write(policy, "list.c", C_WITH_A_LIST_MACRO.replace("(void)", "(void"))
    assert broken.action == "block"
    assert broken.metadata["line"] == 3  # gcc's verdict, not the grammar's first error (line 2)
    assert "expected" in broken.metadata["message"]
    assert write(policy, "list.c", "int f(void) {\n  return 1;\n").action == "allow"  # a prefix: no run


def test_a_confirming_checker_that_cannot_run_leaves_the_grammars_verdict(tmp_path: Path) -> None:
    policy = _confirmed_policy(tmp_path, "policyctl-no-such-checker {file}")
    assert write(policy, "list.c", C_WITH_A_LIST_MACRO).action == "block"


def test_confirm_belongs_to_a_built_in_check(tmp_path: Path) -> None:
    path = tmp_path / "p.policy"
    path.write_text('policy "p" {}\ngate sh { files "*.sh"; check command "bash -n {file}"; '
                    'confirm command "sh -n {file}" }\n')
    diagnostics = check_policy(path).diagnostics
    diagnostics = [d for d in diagnostics if d.code.startswith("E")]
    assert [d.code for d in diagnostics] == ["E107"]
    assert "already is a command" in diagnostics[0].message


def test_without_partial_an_incomplete_text_blocks(tmp_path: Path) -> None:
    path = tmp_path / "p.policy"
    path.write_text('policy "p" {}\ntool write_file { writes path=path content=content }\n'
                    'gate js { files "*.js"; check javascript }\n')
    decision = write(load_policy(path), "a.js", "function f() {\n  return 1;\n")
    assert decision.action == "block"


C_WITH_SPLIT_BRACES = (
    '#ifndef API_H\n#define API_H\n#ifdef __cplusplus\nextern "C" {\n#endif\n\nint add(int a, int b);\n\n'
    "#if 0\nnot C at all (\n#else\nint sub(int a, int b);\n#endif\n"
    "#ifdef __cplusplus\n}\n#endif\n#endif\n"
)


def test_preprocessor_conditionals_parse_one_branch(policy: CompiledPolicy) -> None:
    # tree-sitter alone cannot parse the file: the braces are split across conditionals
    assert parser("c").parse(C_WITH_SPLIT_BRACES.encode()).root_node.has_error
    assert write(policy, "api.c", C_WITH_SPLIT_BRACES).action == "allow"
    lines = C_WITH_SPLIT_BRACES.splitlines(keepends=True)
    files: dict[str, str] = {}
    for index, line in enumerate(lines):
        assert write(policy, "api.c", line, files, append=index > 0).action == "allow", line
        files["api.c"] = files.get("api.c", "") + line
    broken = edit(policy, "api.c", "int add(int a, int b);", "int add(int a, int b;", files)
    assert broken.action == "block"
    assert broken.metadata["line"] == 7
    condition = edit(policy, "api.c", "#ifdef __cplusplus\n}", "#if defined(__cplusplus\n}", files)
    assert condition.action == "block"
    assert condition.metadata["line"] == 14


C_WITH_AN_OLD_ERROR = "int broken(;\n\nint add(int a, int b);\n\nint mul(int a, int b);\n"


def test_an_error_the_file_already_had_is_not_the_edits_doing(policy: CompiledPolicy) -> None:
    assert check_syntax_tree("c", C_WITH_AN_OLD_ERROR, False).status == "invalid"
    files = {"api.c": C_WITH_AN_OLD_ERROR}
    assert edit(policy, "api.c", "int add(int a, int b);", "int add(int a, int b);\nint sub(int a, int b);",
                files).action == "allow"
    broken = edit(policy, "api.c", "int mul(int a, int b);", "int mul(int a, int b;", files)
    assert broken.action == "block"
    assert broken.metadata["line"] == 5


@pytest.mark.parametrize(("language", "unit"), [
    ("c", "int f(int a) {\n  return a + 1;\n}\n"),
    ("rust", "fn f(a: i32) -> i32 {\n    a + 1\n}\n"),
])
def test_a_long_files_old_error_in_its_first_lines_is_not_an_appends_doing(language: str, unit: str) -> None:
    # the start of a long text is read alone first: its old error is excused there, and the whole is read
    # (it was the start's errors alone that were read, all excused: an error the write added later passed)
    before = "int broken(;\n" + unit * 1_000
    assert check_syntax_tree(language, before, True).status == "invalid"
    assert check_syntax_tree(language, before + unit, True, before).status == "valid"
    if language == "rust":  # (C blocks a cut-off append after an old error, long text or short: the first
        # completion's old error stops the others)
        assert check_syntax_tree(language, before + unit + unit[:20], True, before).status != "invalid"
    assert check_syntax_tree(language, before + "int g(;\n" + unit, True, before).status == "invalid"


def test_an_edit_inside_an_error_that_spans_it_is_not_the_edits_doing() -> None:
    before = "((echo a) | cat)\nf() {\n  echo 2\n}\n"  # `((` opening two subshells: one error from line 1 on
    assert check_syntax_tree("shell", before, False).status == "invalid"
    after = before.replace("echo 2", "echo 3")
    assert check_syntax_tree("shell", after, False, before).status == "valid"


def test_typescript_import_types_are_not_errors(policy: CompiledPolicy) -> None:
    text = 'export declare const a: import("./types").Fn<\n  Date,\n  number\n>;\n'
    assert write(policy, "a.d.ts", text).action == "allow"


def test_a_grammar_that_does_not_load_lets_the_write_through(
    policy: CompiledPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(name: str) -> Any:
        raise GrammarUnavailable(f"the {name} grammar does not load")

    monkeypatch.setattr(grammars_module, "_THREAD", type("Empty", (), {})())
    monkeypatch.setattr(grammars_module, "_language", missing)
    decision = write(policy, "a.go", "package a\nfunc (\n")
    assert decision.action == "allow"
    assert decision.metadata["checker"] == "unavailable"
    assert "go grammar does not load" in decision.metadata["reason"]


def test_every_grammar_loads_from_its_wheel() -> None:
    for name in GRAMMARS:
        assert check_syntax_tree(name, "", False).status == "valid"


def test_lint_knows_every_language_and_suggests_the_closest(tmp_path: Path) -> None:
    path = tmp_path / "p.policy"
    path.write_text('tool write_file { writes path=path content=content }\n'
                    'gate js { files "*.js"; check javscript }\n')
    [diagnostic] = check_policy(path).diagnostics
    assert (diagnostic.code, diagnostic.message) == ("E501", "unknown validator `javscript`")
    assert diagnostic.help is not None and diagnostic.help.startswith("did you mean `javascript`?")
    for name in SYNTAX_TREE_LANGUAGES:
        path.write_text(f'tool write_file {{ writes path=path content=content }}\n'
                        f'gate g {{ files "*.x"; check {name} }}\n')
        assert check_policy(path).diagnostics == [], name


def test_a_policy_gating_only_python_never_imports_tree_sitter(tmp_path: Path) -> None:
    path = tmp_path / "p.policy"
    path.write_text('tool write_file { writes path=path content=content }\n'
                    'gate python { files "*.py"; check python; partial allow }\n')
    script = (
        "import sys\n"
        "from policy.language.loader import load_policy\n"
        "from policy.model.events import ToolCall\n"
        "from policy.runtime.gates import check_write\n"
        f"policy = load_policy({str(path)!r})\n"
        "call = ToolCall(id='c', name='write_file', args={'path': 'a.py', 'content': 'def f(:\\n'})\n"
        "assert check_write(policy, call, lambda p: None).action == 'block'\n"
        "print(sorted(m for m in sys.modules if m.startswith('tree_sitter')))\n"
    )
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


def test_a_tree_error_no_node_holds_does_not_crash_the_check() -> None:
    text = 'package main\n\nfunc main() {\n\tvar (\n\t\tt = f("a",\n\t\t\t"b"+\n _))}'
    tree = parser("go").parse(text.encode())
    assert tree.root_node.has_error  # tree-sitter-go flags an error, yet no ERROR or MISSING node holds it
    assert check_syntax_tree("go", text, partial=False).status == "valid"

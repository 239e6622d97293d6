"""Hint templates: one sandboxed Jinja2 environment and the filters hint authors use
(the variables each kind of rule provides are ``policy.model.variables``).

Untrusted text (tool output, arguments) only ever enters a template as a
variable; it is never compiled as a template itself.
"""

from __future__ import annotations

import json
import keyword
import logging
import marshal
import posixpath
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from policy.model.diagnostics import Span
from policy.model.hint_program import Program, Unsupported, program_of, run

if TYPE_CHECKING:  # Jinja2 itself is imported when the first template is parsed or rendered
    from jinja2 import Template, nodes

    from policy.model.hint_compiler import Render
    from policy.model.hint_sandbox import BoundedEnvironment

log = logging.getLogger("policy.hints")

_PIP_NAMES = {
    "yaml": "PyYAML",
    "cv2": "opencv-python",
    "PIL": "Pillow",
    "sklearn": "scikit-learn",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyOpenSSL",
    "serial": "pyserial",
    "usb": "pyusb",
    "magic": "python-magic",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "git": "GitPython",
    "attr": "attrs",
    "google.protobuf": "protobuf",
    "skimage": "scikit-image",
    "fitz": "PyMuPDF",
    "Levenshtein": "python-Levenshtein",
    "zmq": "pyzmq",
    "lxml": "lxml",
    "psycopg2": "psycopg2-binary",
    "MySQLdb": "mysqlclient",
    "win32api": "pywin32",
    "erfa": "pyerfa",
    "jose": "python-jose",
    "nacl": "PyNaCl",
    "Bio": "biopython",
    "dns": "dnspython",
    "socks": "PySocks",
    "slugify": "python-slugify",
    "multipart": "python-multipart",
    "websocket": "websocket-client",
    "gi": "PyGObject",
    "wx": "wxPython",
    "ldap": "python-ldap",
    "OpenGL": "PyOpenGL",
    "mpl_toolkits": "matplotlib",
    "pkg_resources": "setuptools",
    "umap": "umap-learn",
    "faiss": "faiss-cpu",
}


def pip_name(module: str) -> str:
    """The distribution to install for an import name (``yaml`` → ``PyYAML``)."""
    if module in _PIP_NAMES:
        return _PIP_NAMES[module]
    top = module.split(".", 1)[0]
    return _PIP_NAMES.get(top, top)


def truncate_middle(text: Any, length: int = 200, marker: str = " … ") -> str:
    """Keep the start and the end of a long text, cut out the middle."""
    value = str(text)
    if len(value) <= length:
        return value
    keep = max(length - len(marker), 2)
    head = keep // 2
    return value[:head] + marker + value[len(value) - (keep - head):]


def plain_json(value: Any, indent: int | None = None) -> str:
    """JSON for plain text (Jinja2's ``tojson`` escapes <, >, & for HTML)."""
    return json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=True, default=str)


def basename(path: Any) -> str:
    return posixpath.basename(str(path).replace("\\", "/"))


FILTERS: dict[str, Any] = {"basename": basename, "truncate_middle": truncate_middle, "json": plain_json,
                           "pip_name": pip_name}
"""policyctl's own filters (beside Jinja2's): plain functions, which a hint program also calls."""


@cache
def environment() -> BoundedEnvironment:
    """The one environment every hint template is compiled in."""
    from jinja2 import StrictUndefined

    from policy.model.hint_sandbox import (
        LOOP_FILTER,
        BoundedEnvironment,
        bounded_filter,
        bounded_range,
        each_item,
    )

    env = BoundedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(FILTERS, **{LOOP_FILTER: each_item})
    env.filters = {name: bounded_filter(function) for name, function in env.filters.items()}
    env.globals["range"] = bounded_range
    return env


def jinja2_loaded() -> bool:
    """Whether this process has imported Jinja2 (a hint's render never imports it for a program)."""
    return "jinja2" in sys.modules


def _jinja2_version() -> str:
    import jinja2

    return str(getattr(jinja2, "__version__", ""))


def template_variables(source: str) -> frozenset[str]:
    """Top-level names a template reads (it must parse; see ``environment().parse``)."""
    simple = _placeholder_variables(source)
    if simple is not None:
        return simple
    from jinja2 import meta

    return frozenset(meta.find_undeclared_variables(parse_bounded(source)))


def parse_bounded(source: str) -> nodes.Template:
    """A template's syntax tree with its loops bounded (``policy.model.hint_sandbox.bounded_loops``)."""
    from policy.model.hint_sandbox import bounded_loops

    return bounded_loops(environment().parse(source))


_WORD = "[A-Za-z_][A-Za-z0-9_]*"
_PLACEHOLDER = re.compile(rf"\{{\{{ *(?P<name>{_WORD})(?:\.{_WORD})*(?P<filters>(?: *\| *{_WORD})*) *\}}\}}")
_NOT_NAMES = frozenset({*keyword.kwlist, "true", "false", "none"})


def _placeholder_variables(source: str) -> frozenset[str] | None:
    """The names read by a template that is text and ``{{ name.attribute | filter }}`` placeholders
    only, without asking Jinja2 (a policy may hold thousands); None for any other template.

    Such a template cannot fail to compile unless a filter is unknown, which is left to Jinja2.
    """
    if "{%" in source or "{#" in source or "{{{" in source:
        return None
    placeholders = list(_PLACEHOLDER.finditer(source))
    if len(placeholders) != source.count("{{"):
        return None
    names: set[str] = set()
    for placeholder in placeholders:
        name = placeholder["name"]
        if name in _NOT_NAMES:
            return None
        if placeholder["filters"]:
            known = environment().filters
            if any(f.strip(" |") not in known for f in placeholder["filters"].split("|")[1:]):
                return None
        names.add(name)
    return frozenset(names)


@dataclass(frozen=True)
class HintTemplate:
    """A named hint template, checked when its policy compiles.

    The Python code behind it is generated on first render and kept: a
    policy's many hints cost only a parse each until one is needed.  A
    template that carries ``code`` (``with_code``: how a cached policy keeps
    its templates) is rebuilt from that code, without Jinja2's lexer, parser
    and code generator.  A template within the subset of
    ``policy.model.hint_program`` renders through its program instead, to the
    same text: the program is made once from the parsed tree (a cached
    template carries it, ``program``), interpreted where Jinja2 is not
    loaded (what a hook process needs) and compiled into a Python function
    where it is (``policy.model.hint_compiler``: what an agent that renders
    many hints needs).  Jinja2 renders whatever the program leaves to it.
    """

    name: str
    source: str
    variables: frozenset[str]
    span: Span | None = None
    code: tuple[str, bytes] | None = field(default=None, compare=False, repr=False)
    """(Jinja2's version, its compiled code for ``source`` as ``marshal`` bytes); used only
    under that Jinja2 version."""
    program: Program | None = field(default=None, compare=False, repr=False)
    """The program kept with ``code`` (None: the template is outside its subset, or carries no code)."""

    @cached_property
    def template(self) -> Template:
        env = environment()
        if self.code is not None and self.code[0] == _jinja2_version():
            code = marshal.loads(self.code[1])  # from an HMAC-checked cache entry, as the pickle around it
            return env.template_class.from_code(env, code, env.make_globals(None))
        return env.from_string(self._parsed[0])

    @cached_property
    def _parsed(self) -> tuple[nodes.Template, Program | None]:
        """The bounded syntax tree and its program (made first: compiling the tree rewrites it)."""
        tree = parse_bounded(self.source)
        return tree, program_of(tree, frozenset(FILTERS))

    @cached_property
    def _executors(self) -> _Executors | None:
        """The program's executors: the program kept with the code, else the program of the parse."""
        program = self.program if self.code is not None else self._parsed[1]
        return None if program is None else _Executors(program, self.variables)

    def with_code(self) -> HintTemplate:
        """This template with its compiled code and its program attached (itself when the source
        does not compile)."""
        from jinja2 import TemplateError

        try:
            tree = parse_bounded(self.source)
            program = program_of(tree, frozenset(FILTERS))
            compiled = environment().compile(tree)
        except TemplateError:
            return self
        return replace(self, code=(_jinja2_version(), marshal.dumps(compiled)), program=program)

    def compiled_program(self) -> Render | None:
        """The template's program compiled into a function of a plain mapping of its variables
        (``policy.model.hint_compiler``), for a caller that renders the template many times: it
        returns ``render_checked``'s text before its strip of newlines, or None where
        ``render_checked`` must render (a variable it lacks, Jinja2's part, the fallback).  None
        while Jinja2 is not loaded (the compiler imports it: a process that did not load it renders
        through ``render_checked``) and for a template outside the compiler's subset."""
        if not jinja2_loaded():
            return None
        executors = self._executors
        return None if executors is None else executors.compiled

    def render(self, variables: Mapping[str, Any]) -> str:
        """Render; a failure is logged and replaced by a plain one-line hint."""
        return self.render_checked(variables).text

    def render_checked(self, variables: Mapping[str, Any]) -> RenderedHint:
        """Render within the sandbox's bounds (``policy.model.hint_sandbox``); a failure or a bound
        exceeded is logged and gives the plain one-line hint, with the reason.

        Only the variables the template reads are taken from ``variables`` (a
        ``policy.model.variables.HintVariables`` computes no others).
        """
        try:
            executors = self._executors
            text = executors.text(variables) if executors is not None else None
            if text is None:
                text = environment().render_bounded(self.template, self._context(variables))
            return RenderedHint(text.strip("\n"))
        except Exception as err:  # a hint must never break the agent
            log.warning("hint %s failed to render: %s", self.name, err)
            return RenderedHint(fallback_hint(variables), f"{type(err).__name__}: {err}")

    def _context(self, variables: Mapping[str, Any]) -> dict[str, Any]:
        """The variables the template reads, as Jinja2's render takes them."""
        context: dict[str, Any] = {}
        for name in self.variables:
            try:
                value = variables[name]
            except KeyError:  # a global, or a name nothing provides (StrictUndefined reports it)
                continue
            context[name] = value
        return context


class _Executors:
    """A template's program and its two executors: the compiled function
    (``policy.model.hint_compiler``, the faster) in a process that has loaded Jinja2 already (an
    agent that compiled its policy), whose sandbox it reads attributes through; the interpreter
    (``run``) in one that has not (a hook process, a resident one), which then never loads it for
    a hint, and for a program the compiler declines."""

    def __init__(self, program: Program, readable: frozenset[str]) -> None:
        self.program = program
        self.readable = readable

    @cached_property
    def compiled(self) -> Render | None:
        from policy.model.hint_compiler import compiled
        from policy.model.hint_sandbox import MAX_HINT_CHARS

        return compiled(self.program, environment(), MAX_HINT_CHARS)

    def text(self, variables: Mapping[str, Any]) -> str | None:
        """The program's text; None where both executors leave the render to Jinja2."""
        if jinja2_loaded() and self.compiled is not None:
            return self.compiled(variables)
        try:
            return run(self.program, variables, self.readable, FILTERS)
        except Unsupported:  # Jinja2 is needed now anyway: the compiled function may answer
            compiled = self.compiled
            return None if compiled is None else compiled(variables)


class RenderedHint(NamedTuple):
    """A rendered hint; ``fallback`` says why the plain fallback text was used instead (None: it was not)."""

    text: str
    fallback: str | None = None

    def facts(self) -> dict[str, Any]:
        """What a decision's metadata says about the render: nothing, or why it fell back."""
        return {} if self.fallback is None else {"hint_fallback": self.fallback}


def compile_hint(name: str, source: str, span: Span | None = None) -> HintTemplate:
    """Check a template and find the variables it reads.

    Raises ``TemplateSyntaxError`` (or its subclass ``TemplateAssertionError``
    for an unknown filter or test): finding the variables runs Jinja2's code
    generator, which reports everything compiling would.
    """
    return HintTemplate(name=name, source=source, variables=template_variables(source), span=span)


_FALLBACK_LABELS = {"hint": "HINT", "warn": "WARNING", "block": "BLOCKED", "stop": "STOPPED"}
FALLBACK_LIMIT = 300
"""Longest fallback hint, in characters."""


def fallback_hint(variables: Mapping[str, Any]) -> str:
    """A plain one-line hint from the facts alone: the rule, the call, and the error message if any."""
    label = _FALLBACK_LABELS.get(str(variables.get("action")), "POLICY")
    text = f"[{label}] Policy rule `{variables.get('rule', 'policy')}`"
    if variables.get("call"):
        text += f" fired on {variables['call']}"
    details = [str(variables[name]) for name in ("path", "message") if variables.get(name)]
    if variables.get("line"):
        details.append(f"line {variables['line']}")
    text += (": " + ", ".join(details) if details else "") + "."
    return truncate_middle(" ".join(text.split()), FALLBACK_LIMIT)

"""The compiled policy: immutable, built once, shared by every run and thread.

Everything here is plain frozen data plus RE2 patterns and Jinja2 templates,
compiled on first use, which are safe to share between threads.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, TypeVar

from policy.model.decision import Action, RuleRef
from policy.model.diagnostics import Span
from policy.model.hint_template import HintTemplate
from policy.model.re2_spans import FindSpans, Spans, compile_re2, group_text, iter_spans, spans_finder

ToolRole = Literal["write", "edit", "multiedit", "notebookedit", "read", "run", "other"]
ROLE_FIELDS: dict[str, tuple[str, ...]] = {
    "write": ("path", "content", "append"),
    "edit": ("path", "old", "new", "all"),
    "multiedit": ("path", "edits", "old", "new", "all"),
    "notebookedit": ("path", "source", "cell", "type", "mode"),
    "read": ("path", "start", "end", "limit"),
    "run": ("command",),
}
"""For each role, the fields a ``tool`` mapping may bind to argument names.

``multiedit``: ``edits`` names the list argument; ``old``/``new``/``all`` name
the keys inside each of its items.  ``notebookedit``: a Jupyter notebook's
cell (``cell``: its id) gets ``source``; ``type`` is ``code`` or
``markdown``, ``mode`` is ``replace``, ``insert`` or ``delete``
(Claude Code's ``NotebookEdit``).  ``read``: ``limit`` is a line count from
``start`` (Claude Code's ``Read(offset, limit)``), an alternative to ``end``.
"""

WRITING_ROLES: frozenset[str] = frozenset({"write", "edit", "multiedit", "notebookedit"})
"""Roles whose calls change a file (write gates apply to them)."""

ROLE_STATEMENTS: dict[str, ToolRole] = {
    "writes": "write",
    "edits": "edit",
    "multiedits": "multiedit",
    "notebookedits": "notebookedit",
    "reads": "read",
    "runs": "run",
}


@dataclass(frozen=True)
class Pattern:
    """A linear-time (RE2) pattern: its source text and flags, compiled on first use (an event
    that reaches none of a policy's patterns compiles none, and a policy of thousands does not
    keep thousands of compiled programs it may never run)."""

    source: str
    flags: str
    groups: tuple[str, ...] = ()
    """Named capture groups, in pattern order."""

    @property
    def expression(self) -> str:
        """The text RE2 compiles: the source with its flags."""
        return f"(?{self.flags}){self.source}" if self.flags else self.source

    @cached_property
    def regex(self) -> Any:  # re2._Regexp; typed loosely because google-re2 ships no stubs
        """The compiled RE2 regex."""
        return compile_re2(self.expression)

    @cached_property
    def group_numbers(self) -> tuple[tuple[str, int], ...]:
        """Each named group and its number."""
        return tuple(self.regex.groupindex.items())

    @cached_property
    def _find(self) -> FindSpans:
        return spans_finder(self.regex)

    def spans(self, data: bytes, pos: int = 0) -> Spans | None:
        """The spans of the first match in UTF-8 ``data`` at or after ``pos``, or None
        (``policy.model.re2_spans``: the cheap way to match bytes)."""
        return self._find(data, pos)

    def iter_spans(self, data: bytes) -> Iterator[Spans]:
        """Every match's spans in UTF-8 ``data``, as ``finditer`` finds them."""
        return iter_spans(self._find, data)

    def search(self, text: str) -> Any:
        """The first match in ``text``; a lone surrogate (which RE2 cannot read, and a model's
        JSON can hold) is read as ``?``."""
        try:
            return self.regex.search(text)
        except UnicodeEncodeError:
            return self.regex.search(text.encode("utf-8", "replace").decode("utf-8"))


@dataclass(frozen=True)
class ToolSpec:
    """How the policy reads one tool: its role and which argument carries what."""

    name: str
    role: ToolRole = "other"
    args: Mapping[str, str] = field(default_factory=dict)
    """Role field (path, content, append, old, new, all, start, end, command) → argument name."""
    key_args: tuple[str, ...] | None = None
    """When set, only these arguments form the call's key."""
    ignore_args: frozenset[str] = frozenset()
    """Free-text arguments left out of the call's key (``description``)."""
    mutates_when: Pattern | None = None
    """A ``run`` call whose command matches this changes state (pip install, git checkout…)."""
    fails_when: Pattern | None = None
    """A result whose text matches this is failed even with status success."""
    span: Span | None = None

    def arg(self, role_field: str, args: Mapping[str, Any]) -> Any:
        name = self.args.get(role_field)
        return args.get(name) if name is not None else None


@dataclass(frozen=True)
class Validator:
    """A syntax checker: a built-in (python, json, toml, yaml, a tree-sitter language) or a command."""

    kind: str
    command: str | None = None
    timeout: float = 10.0
    confirm: Validator | None = None
    """For a built-in: the language's own checker (a command), which decides whether what the built-in
    finds is an error (``confirm command "node --check {file}"``)."""


@dataclass(frozen=True)
class GateRule:
    """A ``gate``: the files it covers and the validator that checks what a write would leave."""

    ref: RuleRef
    globs: tuple[str, ...]
    validator: Validator
    partial: bool
    """``partial allow``: an incomplete prefix (later appends may complete it) is allowed."""
    hint: HintTemplate | None = None


@dataclass(frozen=True)
class SignatureRule:
    """A ``signature``: a known failure a tool result shows, and the hint for it."""

    ref: RuleRef
    pattern: Pattern
    on_error_only: bool = True
    tools: frozenset[str] | None = None
    """Only results of these tools (None: any tool)."""
    key: tuple[str, ...] = ()
    """Captures that identify "the same error" for error_streak (default: all named groups)."""
    hint: HintTemplate | None = None
    action: Action = "hint"


@dataclass(frozen=True)
class Normalizer:
    """``normalize /pattern/ "replacement"``."""

    pattern: Pattern
    replacement: str
    template: tuple[bytes | int, ...]
    """The replacement as UTF-8 literals and group numbers (``language.patterns.replacement_template``)."""

    @cached_property
    def _constant(self) -> bytes | None:
        """The replacement's bytes when it refers to no group (most do)."""
        literals = [part for part in self.template if isinstance(part, bytes)]
        return b"".join(literals) if len(literals) == len(self.template) else None

    def apply(self, data: bytes) -> bytes:
        """Replace every match in UTF-8 ``data``, as RE2's ``sub`` does, without its cost per
        match (it expands the template anew for each)."""
        pieces: list[bytes] = []
        end = 0
        template = self.template
        constant = self._constant
        for spans in self.pattern.iter_spans(data):
            start, stop = spans[0]
            pieces.append(data[end:start])
            if constant is not None:
                pieces.append(constant)
            else:
                pieces += [part if isinstance(part, bytes) else group_text(data, spans[part]) or b""
                           for part in template]
            end = stop
        if not pieces:
            return data
        pieces.append(data[end:])
        return b"".join(pieces)


@dataclass(frozen=True)
class ToolLimit:
    """A tool's own ``warn``/``stop`` counts in ``loop frequency``."""

    warn: int
    stop: int


class LoopRule:
    """Base of every loop rule (``loop NAME { … }``): each kind's rule is a frozen dataclass
    subclassing it, and the compiled policy keeps them in ``CompiledPolicy.loops``, read by type
    (``policy.loop(RepeatRule)``).  Each declares ``ref`` and ``hint`` itself: as fields of a base,
    ``hint`` would have to be keyword-only, and the hooks' policy cache rebuilds a dataclass
    from its fields in order."""

    ref: RuleRef
    hint: HintTemplate | None


L = TypeVar("L", bound=LoopRule)


@dataclass(frozen=True)
class RepeatRule(LoopRule):
    """``loop repeat``: the same call made again and again."""

    ref: RuleRef
    window: int
    warn: int
    stop: int
    until_progress: bool = False
    hint: HintTemplate | None = None


@dataclass(frozen=True)
class FrequencyRule(LoopRule):
    """``loop frequency``: one tool called too often within a window."""

    ref: RuleRef
    window: int
    warn: int
    stop: int
    overrides: Mapping[str, ToolLimit] = field(default_factory=dict)
    hint: HintTemplate | None = None

    def limit_for(self, tool: str) -> ToolLimit:
        return self.overrides.get(tool) or ToolLimit(self.warn, self.stop)

    @staticmethod
    def window_for(window: int, stop: int, overrides: Mapping[str, ToolLimit]) -> int:
        """The window counted in: never shorter than the largest stop limit, which it could not reach."""
        return max(window, stop, *(limit.stop for limit in overrides.values()))


@dataclass(frozen=True)
class ErrorStreakRule(LoopRule):
    """``loop error_streak``: the same error again and again."""

    ref: RuleRef
    warn: int
    stop: int
    same_captures: bool = True
    """The same error is the same signature with the same key captures (else: the same signature)."""
    hint: HintTemplate | None = None


@dataclass(frozen=True)
class OscillationRule(LoopRule):
    """``loop oscillation``: the same few calls in a cycle."""

    ref: RuleRef
    min_period: int
    max_period: int
    repeats: int
    no_progress: bool = False
    action: Action = "warn"
    hint: HintTemplate | None = None


@dataclass(frozen=True)
class WorkspaceRule:
    """``workspace { … }``: what the guard does with the files the agent works on."""

    ref: RuleRef
    sweep: bool = False
    """After a command, re-check the gated files it changed; a file it broke gets a hint."""
    shell_writes: bool = False
    """Gate a command whose text says what it writes (``cat > f <<'EOF'``) before it runs."""
    progress: bool = False
    """A state change is a new content fingerprint of the workspace (else ``mutates_when``)."""
    track: tuple[str, ...] = ()
    """Globs of files the snapshot covers beyond the gated ones (their content counts as progress)."""
    max_files: int = 20_000
    hint: HintTemplate | None = None
    """The sweep's hint (kind ``sweep``)."""
    incomplete_hint: HintTemplate | None = None
    """What the model reads about a file still left as an incomplete prefix (kind ``incomplete``)."""


@dataclass(frozen=True)
class TestCall:
    """A call of a policy test's ``turn``."""

    name: str
    args: Mapping[str, Any]
    span: Span | None = None


@dataclass(frozen=True)
class TestStep:
    """One step of a policy test: ``file``, ``turn`` (one or more calls), ``result`` or ``expect``."""

    kind: Literal["file", "turn", "result", "expect"]
    span: Span | None = None
    path: str | None = None
    content: str | None = None
    calls: tuple[TestCall, ...] = ()
    status: Literal["success", "error"] = "success"
    action: Action | None = None
    rule: str | None = None
    """``kind name`` of the rule expected to fire."""
    hint_contains: str | None = None
    hint_matches: Pattern | None = None


@dataclass(frozen=True)
class PolicyTest:
    """A ``test`` block: a scripted session and what it expects."""

    name: str
    steps: tuple[TestStep, ...]
    span: Span | None = None


@dataclass(frozen=True)
class CompiledPolicy:
    """A policy, compiled: every rule and hint, ready for the guard."""

    name: str
    description: str = ""
    sources: tuple[str, ...] = ()
    """Every file that went into this policy, base files first."""
    max_scopes: int = 1000
    scan_limit: int = 64 * 1024
    max_check_bytes: int = 2 * 1024 * 1024
    """The largest text a write gate reads, builds or checks (a file, a write's result, an edit's)."""
    on_internal_error: Literal["allow", "block"] = "allow"
    deliver_warnings: Literal["tool_message", "next_request"] = "tool_message"
    """Where a loop warning reaches the model: appended to its call's ToolMessage, or queued and
    added to the next model request (``Guard.take_warnings``), outside the run's history."""
    tools: Mapping[str, ToolSpec] = field(default_factory=dict)
    default_ignore_args: frozenset[str] = frozenset()
    default_key_args: tuple[str, ...] | None = None
    """The policy's ``key``: the arguments that form an undeclared tool's call key (None: all)."""
    gates: tuple[GateRule, ...] = ()
    signatures: tuple[SignatureRule, ...] = ()
    normalizers: tuple[Normalizer, ...] = ()
    loops: tuple[LoopRule, ...] = ()
    """One rule per ``loop`` declaration, at most one of each kind (``loop``)."""
    workspace: WorkspaceRule | None = None
    hints: Mapping[str, HintTemplate] = field(default_factory=dict)
    tests: tuple[PolicyTest, ...] = ()

    def tool(self, name: str) -> ToolSpec:
        """The tool's spec; an undeclared tool is an ``other`` tool with the policy's defaults."""
        spec = self.tools.get(name)
        if spec is None:
            return ToolSpec(name=name, key_args=self.default_key_args, ignore_args=self.default_ignore_args)
        return spec

    def loop(self, kind: type[L]) -> L | None:
        """The policy's loop rule of this kind (``policy.loop(RepeatRule)``), or None when it has none."""
        for rule in self.loops:
            if isinstance(rule, kind):
                return rule
        return None

    def normalize(self, text: str) -> str:
        """Strip volatile text (durations, addresses…) before results are compared."""
        data = text.encode("utf-8", "surrogatepass")
        for rule in self.normalizers:
            data = rule.apply(data)
        return data.decode("utf-8", "surrogatepass")

"""Error signatures: which known failure a tool result shows, and the hint for it.

Only the tail of an output is read (its last ``policy.scan_limit`` bytes, cut
at a line start) and only with RE2, so a 10 MB output costs what its tail
costs.  One pass of an RE2 set over the tail tells which signatures match;
only the winner, the first of them in policy order, is searched again for
its captures and position.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import re2

from policy.compiled import CompiledPolicy, SignatureRule
from policy.decision import Decision
from policy.events import ToolCall, ToolResult
from policy.hints import truncate_middle
from policy.variables import common_variables

ERROR_PREFIX = "Error:"
"""A result whose text starts with this is failed, whatever its status."""
HEAD_CHARS = 256
"""How much of an output's start is looked at for ``ERROR_PREFIX``."""
CAPTURE_LIMIT = 200
"""Longest capture kept (longer ones keep their start and end)."""
ERROR_TEXT_LIMIT = 1024
"""Bytes of a failed output's tail that identify an error no signature names."""
EXCERPT_CONTEXT_LINES = 1
EXCERPT_MAX_LINES = 8
EXCERPT_LINE_LIMIT = 240
EXCERPT_WINDOW = 4096
"""Bytes looked at on each side of a match when finding its lines."""
SET_MAX_MEMORY = 64 << 20
"""Memory budget of a policy's RE2 set (its DFA grows lazily up to this)."""

_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
"""UTF-8 bytes that cannot start a character."""


@dataclass(frozen=True)
class Diagnosis:
    """What a tool result shows: whether it failed, and which signature it matches."""

    failed: bool
    signature: SignatureRule | None = None
    """The first matching signature in policy order."""
    captures: dict[str, str] = field(default_factory=dict)
    """The winner's named groups that took part in the match."""
    matches: tuple[str, ...] = ()
    """Names of every matching signature, in policy order."""
    excerpt: str = ""
    """The matched lines with a line of context on each side, trimmed."""
    key: tuple[str, ...] = ()
    """What identifies "the same error": (signature name, key captures…), or, when no
    signature matched, ("text", the normalised end of the output) for a failed result
    and () for one that did not fail."""


def diagnose(policy: CompiledPolicy, call: ToolCall, result: ToolResult) -> Diagnosis:
    """Diagnose one tool result: failed or not, and the signature it shows."""
    tail = scanned_tail(_text(result.content), policy.scan_limit)
    failed = _is_failed(policy, call, result, tail)
    index = _signature_index(policy)
    matching = index.matching(index.candidates(failed, call.name), tail)
    for position, signature in enumerate(matching):
        rule = policy.signatures[signature]
        match = rule.pattern.regex.search(tail)
        if match is None:  # the set and the pattern disagree: trust the pattern
            continue
        captures = {
            name: truncate_middle(_decode(value), CAPTURE_LIMIT)
            for name, group in index.groups[signature]
            if (value := match[group]) is not None
        }
        return Diagnosis(
            failed=failed,
            signature=rule,
            captures=captures,
            matches=tuple(policy.signatures[i].ref.name for i in matching[position:]),
            excerpt=excerpt(tail, match.start(), match.end()),
            key=(rule.ref.name, *(captures.get(name, "") for name in rule.key)),
        )
    return Diagnosis(failed=failed, key=("text", _error_text(policy, tail)) if failed else ())


def hint_decision(
    policy: CompiledPolicy, call: ToolCall, result: ToolResult, diagnosis: Diagnosis
) -> Decision:
    """The decision for a diagnosed result: the winning signature's action and rendered
    hint, or allow when no signature matched."""
    rule = diagnosis.signature
    if rule is None:
        return Decision(call_id=call.id)
    captures = dict(diagnosis.captures)
    hint = None
    if rule.hint is not None:
        reads_output = "output" in rule.hint.variables  # decode the tail only for templates that show it
        output = _decode(scanned_tail(_text(result.content), policy.scan_limit)) if reads_output else ""
        hint = rule.hint.render(_hint_variables(policy, call, result, diagnosis, rule, output))
    return Decision(
        action=rule.action,
        rule=rule.ref,
        call_id=call.id,
        signature=rule.ref.name,
        captures=captures,
        hint=hint,
        metadata={"matches": list(diagnosis.matches), "failed": diagnosis.failed},
    )


def _hint_variables(
    policy: CompiledPolicy,
    call: ToolCall,
    result: ToolResult,
    diagnosis: Diagnosis,
    rule: SignatureRule,
    output: str,
) -> dict[str, Any]:
    """Every named group of the pattern (None when it did not take part, so that
    ``{% if port %}`` works), then the common and signature variables, which win
    over a group of the same name."""
    variables: dict[str, Any] = {name: diagnosis.captures.get(name) for name in rule.pattern.groups}
    variables.update(common_variables(policy, rule.ref, rule.action, call))
    variables.update(
        signature=rule.ref.name,
        captures=dict(diagnosis.captures),
        excerpt=diagnosis.excerpt,
        output=output,
        status=result.status,
    )
    return variables


# --- reading the output ---------------------------------------------------------


def scanned_tail(text: str, limit: int) -> bytes:
    """The last ``limit`` bytes of ``text`` as UTF-8 (CRLF read as LF), cut as
    ``_last_bytes`` cuts.  Costs O(limit) whatever the length of ``text``."""
    if limit <= 0:
        return b""
    tail = _last_bytes(text[-(limit + 1) :].encode("utf-8", "replace"), limit)
    return tail.replace(b"\r\n", b"\n") if b"\r" in tail else tail  # a 1-byte test is a memchr


def _last_bytes(data: bytes, limit: int) -> bytes:
    """The last ``limit`` bytes of UTF-8 ``data``; when that cuts into a line, from the
    next line start, or, inside one huge line, from the next whole character."""
    if len(data) <= limit:
        return data
    tail = data[-limit:]
    if data[-limit - 1 : -limit] == b"\n":
        return tail
    newline = tail.find(b"\n")
    return tail[newline + 1 :] if 0 <= newline < len(tail) - 1 else tail.lstrip(_CONTINUATION_BYTES)


def excerpt(text: bytes, start: int, end: int) -> str:
    """The lines ``text[start:end]`` spans and a line of context on each side; long
    lines keep their start and end, and a long span its first and last lines."""
    if end > start and text[end - 1 : end] == b"\n":
        end -= 1
    low, high = max(0, start - EXCERPT_WINDOW), min(len(text), end + EXCERPT_WINDOW)
    first = text.rfind(b"\n", low, start) + 1 or low
    for _ in range(EXCERPT_CONTEXT_LINES):
        if first <= low:
            break
        first = text.rfind(b"\n", low, first - 1) + 1 or low
    last = text.find(b"\n", end, high)
    last = high if last < 0 else last
    for _ in range(EXCERPT_CONTEXT_LINES):
        if last >= high:
            break
        following = text.find(b"\n", last + 1, high)
        last = high if following < 0 else following
    lines = [
        truncate_middle(line.rstrip(), EXCERPT_LINE_LIMIT)
        for line in _decode(text[first:last]).strip("\n").split("\n")
    ]
    if len(lines) > EXCERPT_MAX_LINES:
        half = EXCERPT_MAX_LINES // 2
        lines = [*lines[:half], "…", *lines[-half:]]
    return "\n".join(lines)


def _text(content: Any) -> str:
    """Tool output as text, whatever a harness put there."""
    if isinstance(content, str):
        return content
    if isinstance(content, bytes | bytearray):
        return bytes(content).decode("utf-8", "replace")
    return "" if content is None else str(content)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _is_failed(policy: CompiledPolicy, call: ToolCall, result: ToolResult, tail: bytes) -> bool:
    if result.status == "error":
        return True
    if _text(result.content)[:HEAD_CHARS].lstrip().startswith(ERROR_PREFIX):
        return True
    fails_when = policy.tool(call.name).fails_when
    return fails_when is not None and fails_when.regex.search(tail) is not None


def _error_text(policy: CompiledPolicy, tail: bytes) -> str:
    """The normalised last lines of an output: what makes two failures the same
    when no signature names them."""
    return policy.normalize(_decode(_last_bytes(tail, ERROR_TEXT_LIMIT))).strip()


# --- what a policy's signatures need at run time, built once ----------------------


class _SignatureIndex:
    """A policy's signatures prepared for matching: one RE2 set over every pattern (a
    single pass over a text tells which of them match), which signatures apply to
    failed and to other results, and each pattern's named groups by number."""

    def __init__(self, signatures: Sequence[SignatureRule]) -> None:
        self._signatures = signatures
        self._set = _compile_set(signatures) if signatures else None
        self._open = {
            failed: tuple(i for i, rule in enumerate(signatures) if failed or not rule.on_error_only)
            for failed in (False, True)
        }
        self._all_tools = all(rule.tools is None for rule in signatures)
        self.groups = tuple(tuple(rule.pattern.regex.groupindex.items()) for rule in signatures)

    def candidates(self, failed: bool, tool: str) -> tuple[int, ...]:
        """Signatures (indexes, in policy order) that look at this result."""
        open_ = self._open[failed]
        if self._all_tools:
            return open_
        return tuple(i for i in open_ if (tools := self._signatures[i].tools) is None or tool in tools)

    def matching(self, candidates: tuple[int, ...], text: bytes) -> list[int]:
        """The candidates whose pattern matches ``text``."""
        if not candidates:
            return []
        if self._set is None:
            return [i for i in candidates if self._signatures[i].pattern.regex.search(text) is not None]
        hits = frozenset(self._set.Match(text) or ())
        return [i for i in candidates if i in hits]


def _compile_set(signatures: Sequence[SignatureRule]) -> Any:
    """An RE2 set of every signature pattern, or None when RE2 cannot build one."""
    options = re2.Options()
    options.max_mem = SET_MAX_MEMORY
    pattern_set = re2.Set.SearchSet(options)
    try:
        for rule in signatures:
            flags = rule.pattern.flags
            pattern_set.Add(f"(?{flags}){rule.pattern.source}" if flags else rule.pattern.source)
        pattern_set.Compile()
    except re2.error:
        return None
    return pattern_set


_INDEXES: dict[int, _SignatureIndex] = {}
"""Keyed by ``id(policy)``; an entry is dropped when its policy is freed, before the
id can be reused."""
_INDEXES_LOCK = threading.Lock()


def _signature_index(policy: CompiledPolicy) -> _SignatureIndex:
    """The policy's index, built on first use."""
    key = id(policy)
    index = _INDEXES.get(key)
    if index is not None:
        return index
    with _INDEXES_LOCK:
        if key not in _INDEXES:
            _INDEXES[key] = _SignatureIndex(policy.signatures)
            weakref.finalize(policy, _INDEXES.pop, key, None)
        return _INDEXES[key]

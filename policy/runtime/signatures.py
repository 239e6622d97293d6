"""Error signatures: which known failure a tool result shows, and the hint for it.

The output is read once (``policy.runtime.output``): its tail, and one pass of an
RE2 set that tells which signatures match it.  Only the winner is searched again,
for its captures and position: the first of them in policy order, except that the
final error wins.  When the tail holds more than one Python traceback (a chained
one: "During handling of the above exception…"), a signature that matches only
before the last traceback yields to one that matches from there on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policy.model.compiled import CompiledPolicy, SignatureRule
from policy.model.decision import Decision
from policy.model.events import ToolCall, ToolResult
from policy.model.hint_template import truncate_middle
from policy.model.re2_spans import Spans, group_text
from policy.model.variables import COMMON_VARIABLES, HintVariables
from policy.runtime.exit_status import by_design, may_be_by_design, reported_status
from policy.runtime.loops.layer import ErrorKey
from policy.runtime.output import Output, decode, last_bytes, output_reader

if TYPE_CHECKING:  # module_origin is imported when a hint reads it (a module signature's)
    from policy.runtime.module_origin import ReadFile

ERROR_PREFIX = "Error:"
"""A result whose text starts with this is failed, whatever its status."""
ERROR_PREFIX_WINDOW = 256
"""How much of an output's start is looked at for ``ERROR_PREFIX``."""
CAPTURE_LIMIT = 200
"""Longest capture kept (longer ones keep their start and end)."""
ERROR_TEXT_LIMIT = 1024
"""Bytes of a failed output's tail that identify an error no signature names."""
TRACEBACK_HEADER = b"Traceback (most recent call last):"
"""Where a Python traceback starts: the last one in an output holds its final error."""
EXCERPT_CONTEXT_LINES = 1
EXCERPT_MAX_LINES = 8
EXCERPT_LINE_LIMIT = 240
EXCERPT_WINDOW = 4096
"""Bytes looked at on each side of a match when finding its lines."""


@dataclass(slots=True)
class Diagnosis:
    """What a tool result shows: whether it failed, and which signature it matches."""

    failed: bool
    signature: SignatureRule | None = None
    """The first matching signature in policy order."""
    captures: dict[str, str] = field(default_factory=dict)
    """The winner's named groups that took part in the match."""
    matches: tuple[str, ...] = ()
    """Names of every matching signature, in policy order."""
    key: ErrorKey | None = None
    """What identifies "the same error" of a failed result: the winner with its key captures,
    or, when no signature matched, the normalised end of the output (None: it did not fail)."""
    tail: bytes = b""
    """The output's scanned tail."""
    span: tuple[int, int] = (0, 0)
    """Where in ``tail`` the winner matched."""
    _excerpt: str | None = field(default=None, repr=False, compare=False)

    @property
    def excerpt(self) -> str:
        """The matched lines with a line of context on each side, trimmed ("" with no
        signature); worked out when first read."""
        if self._excerpt is None:
            self._excerpt = excerpt(self.tail, *self.span) if self.signature is not None else ""
        return self._excerpt


def diagnose(
    policy: CompiledPolicy, call: ToolCall, result: ToolResult, output: Output | None = None
) -> Diagnosis:
    """Diagnose one tool result: failed or not, and the signature it shows.  ``output`` is
    the result's content as ``policy.runtime.output.OutputReader.read`` read it (read here when None)."""
    if output is None:
        output = output_reader(policy).read(result.content)
    tail = output.tail
    failed = _is_failed(policy, call, result, output)
    signatures = policy.signatures
    matching = [i for i in sorted(output.signatures) if _applies(signatures[i], failed, call.name)]
    final = max(tail.rfind(TRACEBACK_HEADER), 0)
    winner: tuple[int, Spans] | None = None
    yielded: tuple[int, Spans] | None = None
    missed: set[int] = set()
    for index in matching:
        spans = signatures[index].pattern.spans(tail)
        if spans is None:  # the set and the pattern disagree: trust the pattern
            missed.add(index)
            continue
        if spans[0][1] <= final:  # it matched before the final traceback: does it match in it?
            later = signatures[index].pattern.spans(tail, final)
            if later is None:
                yielded = yielded or (index, spans)
                continue
            spans = later
        winner = (index, spans)
        break
    winner = winner or yielded
    if winner is None:
        key = ErrorKey.of_text(_error_text(policy, output)) if failed else None
        return Diagnosis(failed=failed, key=key, tail=tail)
    index, spans = winner
    rule = signatures[index]
    captures = {
        name: truncate_middle(decode(value), CAPTURE_LIMIT)
        for name, group in rule.pattern.group_numbers
        if (value := group_text(tail, spans[group])) is not None
    }
    return Diagnosis(
        failed=failed,
        signature=rule,
        captures=captures,
        matches=tuple(signatures[i].ref.name for i in matching if i not in missed),
        key=ErrorKey.of_signature(rule.ref.name, rule.key, captures),
        tail=tail,
        span=spans[0],
    )


def hint_decision(
    policy: CompiledPolicy, call: ToolCall, result: ToolResult, diagnosis: Diagnosis,
    read_file: ReadFile | None = None,
) -> Decision:
    """The decision for a diagnosed result: the winning signature's action and rendered
    hint, or allow when no signature matched.  ``read_file`` is the guard's reader, for
    the hint variables that look at the workspace (``module_origin``)."""
    rule = diagnosis.signature
    if rule is None:
        return Decision(call_id=call.id)
    hint = None
    metadata: dict[str, Any] = {"matches": list(diagnosis.matches), "failed": diagnosis.failed}
    if rule.hint is not None:
        rendered = rule.hint.render_checked(hint_variables(policy, call, result, diagnosis, rule, read_file))
        hint = rendered.text
        metadata.update(rendered.facts())
    return Decision(
        action=rule.action,
        rule=rule.ref,
        call_id=call.id,
        signature=rule.ref.name,
        captures=dict(diagnosis.captures),
        hint=hint,
        metadata=metadata,
    )


def hint_variables(
    policy: CompiledPolicy, call: ToolCall, result: ToolResult, diagnosis: Diagnosis, rule: SignatureRule,
    read_file: ReadFile | None = None,
) -> HintVariables:
    """The variables of a signature's hint: every named group of the pattern (None
    when it did not take part, so that ``{% if port %}`` works), then the signature
    variables; the common variables win over a group of the same name."""
    values: dict[str, Any] = {
        name: diagnosis.captures.get(name) for name in rule.pattern.groups if name not in COMMON_VARIABLES
    }
    values.update(signature=rule.ref.name, captures=dict(diagnosis.captures), status=result.status)

    def origin() -> str | None:
        module = diagnosis.captures.get("module")
        if module is None:
            return None
        from policy.runtime.module_origin import module_origin

        command = policy.tool(call.name).arg("command", call.args)
        return module_origin(module, decode(diagnosis.tail), command if isinstance(command, str) else "",
                             read_file)

    lazy = {"excerpt": lambda: diagnosis.excerpt, "output": lambda: decode(diagnosis.tail),
            "module_origin": origin}
    return HintVariables(policy.name, rule.ref, rule.action, call, values, lazy)


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
        for line in decode(text[first:last]).strip("\n").split("\n")
    ]
    if len(lines) > EXCERPT_MAX_LINES:
        half = EXCERPT_MAX_LINES // 2
        lines = [*lines[:half], "…", *lines[-half:]]
    return "\n".join(lines)


def _is_failed(policy: CompiledPolicy, call: ToolCall, result: ToolResult, output: Output) -> bool:
    """Failed: an error status, an ``Error:`` start, the tool's ``fails_when``, or, for a
    tool that runs commands, a non-zero exit status the output reports; except a status
    the command returns by design (``grep`` found nothing) with no error in the output."""
    spec = policy.tool(call.name)
    failed = (
        result.status == "error"
        or output.text[:ERROR_PREFIX_WINDOW].lstrip().startswith(ERROR_PREFIX)
        or (spec.fails_when is not None and spec.fails_when.spans(output.tail) is not None)
    )
    if spec.role != "run":
        return failed
    reported = reported_status(output.text)
    if reported is not None and reported.code != 0:
        failed = True
    if not failed:
        return False
    command = (reported.command if reported is not None else None) or spec.arg("command", call.args)
    if not isinstance(command, str) or not may_be_by_design(command):
        return True
    code = reported.code if reported is not None else None
    named = any(policy.signatures[i].on_error_only for i in output.signatures)
    return not by_design(command, code, decode(output.tail), named)


def _error_text(policy: CompiledPolicy, output: Output) -> str:
    """The last lines of the normalised output: what makes two failures the same
    when no signature names them."""
    return decode(last_bytes(output_reader(policy).normalized(output), ERROR_TEXT_LIMIT)).strip()


def _applies(rule: SignatureRule, failed: bool, tool: str) -> bool:
    """Does the signature look at this result?"""
    return (failed or not rule.on_error_only) and (rule.tools is None or tool in rule.tools)

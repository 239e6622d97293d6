"""Incomplete writes followed up: a file left as an incomplete prefix that nothing completes.

A write (or a command whose text writes, ``cat > f.py <<'EOF'``) allowed as an
incomplete prefix may be the first chunk of a file sent in parts.  When the
next call on that file is not an append, or the batch ends and the next one
does not go on with it (nor reads it), the model is told on that call's result
that the file is still incomplete and where (``policy.runtime.gates.open_end``).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Literal

from policy.model.compiled import WRITING_ROLES, CompiledPolicy
from policy.model.decision import Decision, RuleRef
from policy.model.events import ToolCall
from policy.model.variables import HintVariables
from policy.runtime.gates.effects import flag
from policy.runtime.gates.gate import matching_gate, validator_name
from policy.runtime.gates.open_end import open_end
from policy.runtime.gates.problems import snippet
from policy.runtime.gates.shell_writes import shell_writes
from policy.runtime.gates.validators import validate
from policy.runtime.shipped_hints import shipped_hint

Touch = Literal["append", "read", "other"]


def touches(policy: CompiledPolicy, call: ToolCall, path: str) -> Touch | None:
    """How ``call`` concerns the file ``path``: it appends to it, reads it (as a harness may require
    before each append), does something else with it, or does not name it (None)."""
    spec = policy.tool(call.name)
    if spec.role in WRITING_ROLES or spec.role == "read":
        named = spec.arg("path", call.args)
        if not isinstance(named, str) or not same_path(named, path):
            return None
        if spec.role == "read":
            return "read"
        return "append" if spec.role == "write" and flag(spec.arg("append", call.args)) else "other"
    if spec.role == "run":
        command = spec.arg("command", call.args)
        if not isinstance(command, str) or not _mentions(command, path):
            return None
        writes = [w for w in shell_writes(command) if same_path(w.path, path)]
        return "append" if writes and writes[0].append else "other"
    return None


def same_path(one: str, other: str) -> bool:
    first, second = posixpath.normpath(one), posixpath.normpath(other)
    if first == second:
        return True
    # a relative and an absolute name of one file: the relative one is a suffix of the other
    if first.startswith("/") != second.startswith("/"):
        relative, absolute = (first, second) if not first.startswith("/") else (second, first)
        return absolute.endswith("/" + relative)
    return False


def _mentions(command: str, path: str) -> bool:
    name = posixpath.basename(path)
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", command) is not None


def notice(policy: CompiledPolicy, call: ToolCall, path: str, text: str | None) -> Decision | None:
    """The hint that ``path`` is still incomplete; None when it is not (any longer)."""
    gate = matching_gate(policy.gates, path) if policy.gates else None
    if gate is None or text is None:
        return None
    if validate(gate.validator, text, path, partial=True).status != "incomplete":
        return None
    end = open_end(text, gate.validator.kind)
    facts: dict[str, Any] = {
        "path": path,
        "line": end.line,
        "column": end.column,
        "where": end.where,
        "snippet": snippet(text, end.line, end.column),
        "validator": validator_name(gate),
    }
    ref = RuleRef("incomplete", gate.ref.name, gate.ref.span)
    template = policy.workspace.incomplete_hint if policy.workspace is not None else None
    variables = HintVariables(policy.name, ref, "hint", call, facts)
    hint = (template or shipped_hint("still_incomplete")).render(variables)
    return Decision(action="hint", rule=ref, hint=hint, call_id=call.id, metadata=facts)

"""Write gates: block a write or edit whose result would leave a file syntactically broken."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from policy.model.compiled import CompiledPolicy, GateRule, ToolSpec
from policy.model.decision import Decision
from policy.model.events import ToolCall
from policy.model.variables import HintVariables
from policy.runtime.gates.bounds import TooLarge
from policy.runtime.gates.effects import FileEffect, ReadFile, bounded_effect
from policy.runtime.gates.problems import Problem, snippet
from policy.runtime.gates.validators import validate
from policy.runtime.shipped_hints import shipped_hint


def matching_gate(gates: Sequence[GateRule], path: str) -> GateRule | None:
    """The first gate with a glob matching the path's file name or the whole (``/``-separated) path."""
    whole = path.replace("\\", "/")
    name = posixpath.basename(whole)
    for gate in gates:
        if any(fnmatchcase(name, glob) or fnmatchcase(whole, glob) for glob in gate.globs):
            return gate
    return None


def gate_applies(policy: CompiledPolicy, spec: ToolSpec, args: Mapping[str, Any]) -> bool:
    """Whether a gate may check the file this writing call names: its path matches a gate's glob
    (a notebook cell: any gate, since its language is read from the notebook)."""
    if not policy.gates:
        return False
    if spec.role == "notebookedit":
        return True
    path = spec.arg("path", args)
    return isinstance(path, str) and matching_gate(policy.gates, path) is not None


def check_write(policy: CompiledPolicy, call: ToolCall, read_file: ReadFile,
                effect: FileEffect | TooLarge | None = None) -> Decision:
    """Block the call when the file it would leave fails its gate's validator.

    ``effect`` is the call's :func:`bounded_effect` when the caller has it already;
    the file is read only when a gate's glob matches its path.
    ``partial allow`` applies to writes only: a write may be the first chunk
    of a file that appends complete, an edit leaves the whole file as it is.
    An allowed call's metadata says when the text was an incomplete prefix
    (``"incomplete": True``) or the checker could not run
    (``"checker": "unavailable"`` and its ``"reason"``, also for a text larger
    than ``max_check_bytes``, which is neither read nor checked).
    """
    allow = Decision(call_id=call.id)
    spec = policy.tool(call.name)
    path = spec.arg("path", call.args)
    if spec.role == "notebookedit" and policy.gates:  # its cell is checked as a file of its language
        if effect is None:
            effect = bounded_effect(spec, call.args, read_file, policy.max_check_bytes)
        path = effect.gate_path if isinstance(effect, FileEffect) else None
    gate = matching_gate(policy.gates, path) if isinstance(path, str) and policy.gates else None
    if gate is None:
        return allow
    if effect is None:
        effect = bounded_effect(spec, call.args, read_file, policy.max_check_bytes)
    if isinstance(effect, TooLarge):
        return Decision(call_id=call.id, metadata={"path": path, "gate": gate.ref.name,
                                                   "validator": validator_name(gate),
                                                   "checker": "unavailable", "reason": str(effect)})
    if effect is None or not effect.changes_file:
        return allow
    return check_effect(policy, gate, call, effect, writes=spec.role == "write")


def check_effect(policy: CompiledPolicy, gate: GateRule, call: ToolCall, effect: FileEffect, *,
                 writes: bool) -> Decision:
    """The gate's decision on the text ``effect`` leaves; ``writes``: the call writes (or appends)
    text rather than editing it, so ``partial allow`` applies."""
    allow = Decision(call_id=call.id)
    partial = gate.partial and writes
    verdict = validate(gate.validator, effect.after, effect.path, partial=partial, before=effect.before)
    if verdict.status == "valid":
        return allow
    if verdict.problem is not None:
        return _block(policy, gate, call, effect, verdict.problem)
    facts: dict[str, Any] = {"path": effect.path, "gate": gate.ref.name, "validator": validator_name(gate)}
    if verdict.status == "incomplete":
        facts["incomplete"] = True
    else:
        facts.update(checker="unavailable", reason=verdict.reason)
    return Decision(call_id=call.id, metadata=facts)


def validator_name(gate: GateRule) -> str:
    """``python``, ``json`` …; for a command checker, the gate's name (``shell``)."""
    return gate.ref.name if gate.validator.kind == "command" else gate.validator.kind


LANGUAGE_NAMES = {"python": "Python", "json": "JSON", "toml": "TOML", "yaml": "YAML"}
"""How hints name the languages of the built-in validators (the ``language`` hint variable)."""


def language_name(gate: GateRule) -> str | None:
    """``Python``, ``JSON`` …: the language a gate's built-in validator checks; None for the others."""
    return LANGUAGE_NAMES.get(gate.validator.kind)


def _block(
    policy: CompiledPolicy, gate: GateRule, call: ToolCall, effect: FileEffect, problem: Problem
) -> Decision:
    facts: dict[str, Any] = {
        "path": effect.path,
        "line": problem.line,
        "column": problem.column,
        "message": problem.message,
        "snippet": snippet(effect.after, problem.line, problem.column),
        "validator": validator_name(gate),
        "language": language_name(gate),
        "output": problem.output,
    }
    variables = HintVariables(policy.name, gate.ref, "block", call, facts)
    checked = (gate.hint or shipped_hint("syntax_error")).render_checked(variables)
    hint, rendered = checked.text, checked.facts()
    return Decision(action="block", rule=gate.ref, hint=hint, call_id=call.id, metadata={**facts, **rendered})


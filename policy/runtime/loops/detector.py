"""The loop detector: the layers of a policy, and the order their findings are decided in.

Ordering (docs/design.md, "Decision ordering"): on a turn, ``repeat`` counts
the batch and ``frequency`` counts each call in the model's order.  A stop
from either ends the scan at once (it rejects the whole batch); a warning
candidate never does, so every call of an admitted batch is counted.  A stop
outranks any warning; when nothing stops, a ``repeat`` warning precedes a
``frequency`` one, and among frequency warnings the first crossing in call
order wins.  Only the selected warning is marked (so it is not repeated) and
logged; the others can warn in a later batch.  On a result, an
``error_streak`` finding outranks an ``oscillation`` one of equal severity.
The layers and their order are ``policy.runtime.loops.layers.LAYERS``.

A turn's warning may be decided without its text (``render=False``): the
guard renders it with ``render`` when it is delivered, so a warning that is
superseded by a stop or dropped at the end of a run costs no rendering.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from policy.model.compiled import CompiledPolicy
from policy.model.decision import ALLOW, Action, Decision, RuleRef, most_severe
from policy.model.events import ToolCall, ToolResult
from policy.model.fingerprint import fingerprint
from policy.model.hint_template import HintTemplate
from policy.model.variables import MADE_ON_READ, HintVariables, call_summary, common_variables
from policy.runtime.loops.finding import Finding
from policy.runtime.loops.keys import CallKeys
from policy.runtime.loops.layer import ErrorKey, Layer, Observed
from policy.runtime.loops.layers import LAYERS
from policy.runtime.loops.state import MAX_OPEN_CALLS, ScopeState, drop_oldest
from policy.runtime.output import Output, output_reader

log = logging.getLogger("policy.loops")


class LoopDetector:
    """The loop layers of one compiled policy.  It holds no state: that is the ``ScopeState`` passed in."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.policy = policy
        self.keys = CallKeys(policy)
        self._outputs = output_reader(policy)
        built = [(index, layer.from_policy(policy)) for index, layer in enumerate(LAYERS)]
        layers: list[tuple[int, Layer[Any]]] = [(index, layer) for index, layer in built if layer is not None]
        self._turn_steps = tuple((index, layer.on_turn) for index, layer in layers if layer.takes_turns())
        self._result_steps = tuple(
            (index, layer.on_result) for index, layer in layers if layer.takes_results()
        )
        self.stored_rules = {layer.rule.ref.name: layer.rule.ref.to_state() for _, layer in layers}
        """Rule name -> the rule as a store keeps it (``RuleRef.to_state``): a decision of this
        detector's, kept in a scope's state, names its rule with it (read back, never changed)."""
        self._templates: dict[str, HintTemplate | None] = {
            layer.rule.ref.name: layer.rule.hint for _, layer in layers}
        """Rule name -> its template (a finding's ``hint`` is its rule's)."""
        self._programs: dict[str, Callable[[Mapping[str, Any]], str | None]] = {}
        """Rule name -> its template's compiled program, once there is one: programs exist only once
        Jinja2 is loaded (``HintTemplate.compiled_program``), so ``_hint`` looks until it finds one."""

    def on_turn(self, state: ScopeState, calls: Sequence[ToolCall], *, render: bool = True) -> Decision:
        """The layers over one batch of calls: the first stop, else the first warning candidate.
        ``render=False``: a warning comes without its hint (None), for ``render`` to fill in when
        it is delivered."""
        if not calls:
            return ALLOW
        open_calls = state.open_calls  # each call's key, until its result arrives
        if len(calls) == 1:  # the common batch: its key in one call
            call = calls[0]
            keys = [self.keys.by_tool.get(call.name, self.keys.undeclared)(call)]
            open_calls[call.id] = keys[0]
        else:
            call_key = self.keys.call_key
            keys = [call_key(call) for call in calls]
            for call, key in zip(calls, keys, strict=True):
                open_calls[call.id] = key
        if len(open_calls) > MAX_OPEN_CALLS:  # results that never came age out
            drop_oldest(open_calls, MAX_OPEN_CALLS)
        states = state.layers
        selected: Finding | None = None
        for index, on_turn in self._turn_steps:
            finding = on_turn(states[index], calls, keys)
            if finding is None:
                continue
            if finding.action == "stop":
                return self._decide(finding)
            if selected is None:
                selected = finding
        return ALLOW if selected is None else self._decide(selected, render=render)

    def on_result(
        self,
        state: ScopeState,
        call: ToolCall,
        result: ToolResult,
        *,
        failed: bool,
        error_key: ErrorKey | None,
        state_changed: bool,
        output: Output | None = None,
    ) -> Decision:
        """Every layer records the result; the most severe finding (ties: the earlier layer's).

        ``output`` is the result's content as ``policy.runtime.output`` read it (read here when None).
        """
        if output is None:
            output = self._outputs.read(result.content)
        key_text = state.open_calls.pop(call.id, None) or self.keys.call_key(call)
        observed = Observed(call, result, failed, error_key, state_changed, fingerprint(key_text), key_text,
                            self._outputs.fingerprint(output), output.text)
        states = state.layers
        findings = [on_result(states[index], observed) for index, on_result in self._result_steps]
        selected = most_severe(finding for finding in findings if finding is not None)
        return ALLOW if selected is None else self._decide(selected)

    def render(self, decision: Decision, call: ToolCall) -> Decision:
        """A loop decision made with ``render=False``, with its hint (for ``call``, the call it concerns)."""
        rule = decision.rule
        template = self._templates.get(rule.name) if rule is not None else None
        if decision.hint is not None or template is None or rule is None:
            return decision
        metadata = decision.metadata
        if not isinstance(metadata.get("call"), str):  # decided without it: made now, for hint and metadata
            metadata = {**metadata, "call": call_summary(call)}
        hint, facts = self._hint(template, rule, decision.action, call, metadata)
        return decision._replace(hint=hint, metadata={**metadata, **facts} if facts else metadata)

    def _hint(self, template: HintTemplate, rule: RuleRef, action: Action, call: ToolCall,
              values: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """A loop hint's text and what the decision's metadata adds to say about its render (why it
        fell back; None when it did not).  ``values`` is the decision's metadata, ``call`` (the
        call's summary) included; ``template`` is the rule's (``_templates``: one per rule name, so
        its program is kept by that name).  Through the template's compiled program with the
        variables as a plain dict where it can (every warning and stop renders here: the text
        ``render_checked`` gives, without the mapping ``HintVariables`` builds), else
        ``render_checked`` with ``HintVariables``."""
        program = self._programs.get(rule.name)
        if program is None and not template.variables & MADE_ON_READ:
            program = template.compiled_program()
            if program is not None:
                self._programs[rule.name] = program
        if program is not None:
            # ``HintVariables`` as one plain dict: the same value for every name the program reads
            # (a name it lacks fails the program, and ``render_checked`` renders below).
            text = program(common_variables(self.policy.name, rule, action, call, values))
            if text is not None:
                return text.strip("\n"), None
        checked = template.render_checked(HintVariables(self.policy.name, rule, action, call, values))
        return checked.text, None if checked.fallback is None else checked.facts()

    def _decide(self, finding: Finding, *, render: bool = True) -> Decision:
        """Mark, log and (unless ``render`` is False and it has a template) render the selected
        finding.  Its facts, completed with ``layer`` (and ``call`` once rendered), become the
        decision's metadata."""
        if finding.mark is not None:
            finding.mark()
        call, rule, action, metadata = finding.call, finding.ref, finding.action, finding.facts
        # The call's arguments stay out of the log (they may hold secrets).
        log.info("loop %s %s on call %s: %s, count %s", rule.name, action, call.id, call.name,
                 metadata.get("count"))
        metadata["layer"] = finding.kind
        template = finding.hint
        if template is not None and not render:  # the call's summary is made with the hint
            return Decision(action, rule, None, call.id, metadata=metadata)
        metadata["call"] = finding.summary or call_summary(call)  # ``call_text()``, without its call
        if template is None:
            hint = f"[policy] loop {rule.name} {action}: {finding}."
        else:
            hint, facts = self._hint(template, rule, action, call, metadata)
            if facts is not None:  # only a fallback has facts to add
                metadata.update(facts)
        return Decision(action, rule, hint, call.id, metadata=metadata)
